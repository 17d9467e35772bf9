//! The metadata suite against PostgreSQL: the machine's server (`CAIRN_TEST_POSTGRES_URL`,
//! default `postgres://postgres@127.0.0.1:5432/postgres`), one fresh database per test,
//! dropped afterwards.

use cairn_store::packs::Packs;
use cairn_store::postgres::PostgresStore;
use cairn_store::{suite, MetadataStore};
use sqlx::Connection;

fn server_url() -> String {
    std::env::var("CAIRN_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// A database created for one test; `drop_now` removes it.
struct FreshDatabase {
    name: String,
    url: String,
}

impl FreshDatabase {
    async fn create(tag: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let name = format!("cairn_test_{tag}_{}_{nanos}", std::process::id());
        let server = server_url();
        let mut admin = sqlx::PgConnection::connect(&server)
            .await
            .unwrap_or_else(|e| {
                panic!("PostgreSQL at {server}: {e} (set CAIRN_TEST_POSTGRES_URL)")
            });
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await
            .unwrap();
        let base = server.rsplit_once('/').map_or(server.as_str(), |(b, _)| b);
        Self {
            url: format!("{base}/{name}"),
            name,
        }
    }

    async fn drop_now(self) {
        let mut admin = sqlx::PgConnection::connect(&server_url()).await.unwrap();
        sqlx::query(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        ))
        .execute(&mut admin)
        .await
        .unwrap();
    }
}

#[tokio::test]
async fn postgres_store_passes_the_metadata_suite() {
    let database = FreshDatabase::create("suite").await;
    let dir = tempfile::tempdir().unwrap();
    let store = PostgresStore::open(&database.url).await.unwrap();
    let packs = Packs::open(dir.path().join("packs")).unwrap();
    suite::run(&store, &packs).await;
    store.close().await;
    database.drop_now().await;
}

#[tokio::test]
async fn two_nodes_claim_each_operation_once() {
    let database = FreshDatabase::create("claims").await;
    let a = PostgresStore::open(&database.url).await.unwrap();
    let b = PostgresStore::open(&database.url).await.unwrap();
    suite::run_two_nodes(&a, &b).await;
    a.close().await;
    b.close().await;
    database.drop_now().await;
}

#[tokio::test]
async fn nodes_opening_one_database_together_migrate_it_once() {
    let database = FreshDatabase::create("migrate").await;
    let (a, b) = tokio::join!(
        PostgresStore::open(&database.url),
        PostgresStore::open(&database.url)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    a.create_account("shared", Default::default())
        .await
        .unwrap();
    assert!(b.account_by_name("shared").await.unwrap().is_some());
    a.close().await;
    b.close().await;
    database.drop_now().await;
}
