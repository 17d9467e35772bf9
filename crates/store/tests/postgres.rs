//! The metadata suite against PostgreSQL: one fresh database per test, dropped afterwards, on
//! the server the tests use (`cairn_test_support::postgres`: the machine's, or one the tests
//! start).

use cairn_store::packs::Packs;
use cairn_store::postgres::PostgresStore;
use cairn_store::suite;
use cairn_store::Accounts;
use cairn_test_support::postgres::Database;
use sqlx::Connection;

mod released;

#[tokio::test]
async fn postgres_store_passes_the_metadata_suite() {
    let database = Database::create("suite");
    let dir = tempfile::tempdir().unwrap();
    let store = PostgresStore::open(&database.url).await.unwrap();
    let packs = Packs::open(dir.path().join("packs")).unwrap();
    suite::run(&store, &packs).await;
    store.close().await;
}

#[tokio::test]
async fn two_nodes_claim_each_operation_once() {
    let database = Database::create("claims");
    let a = PostgresStore::open(&database.url).await.unwrap();
    let b = PostgresStore::open(&database.url).await.unwrap();
    suite::run_two_nodes(&a, &b).await;
    a.close().await;
    b.close().await;
}

#[tokio::test]
async fn nodes_opening_one_database_together_migrate_it_once() {
    let database = Database::create("migrate");
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
}

/// The schema of the database at `url`: columns, indexes, constraints and recorded versions.
/// A database a newer Cairn wrote is refused before anything in it is changed.
#[tokio::test]
async fn a_database_of_a_newer_release_is_refused_untouched() {
    let database = Database::create("newer");
    PostgresStore::open(&database.url)
        .await
        .unwrap()
        .close()
        .await;
    let mut connection = sqlx::PgConnection::connect(&database.url).await.unwrap();
    sqlx::query("INSERT INTO cairn_schema (version) VALUES (999)")
        .execute(&mut connection)
        .await
        .unwrap();
    let before = postgres_schema(&database.url).await;
    let refused = PostgresStore::open(&database.url)
        .await
        .err()
        .expect("refused");
    let message = refused.to_string();
    assert!(message.contains("newer Cairn"), "{message}");
    assert_eq!(
        postgres_schema(&database.url).await,
        before,
        "nothing changed"
    );
    connection.close().await.unwrap();
}

async fn postgres_schema(url: &str) -> Vec<String> {
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let mut schema = Vec::new();
    for sql in [
        "SELECT concat_ws(' ', table_name, ordinal_position, column_name, data_type, is_nullable,
                column_default, is_identity)
           FROM information_schema.columns WHERE table_schema = 'public'
          ORDER BY table_name, ordinal_position",
        "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname",
        "SELECT conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
           FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1",
        "SELECT 'version ' || version FROM cairn_schema ORDER BY version",
    ] {
        let lines: Vec<String> = sqlx::query_scalar(sql).fetch_all(&mut conn).await.unwrap();
        schema.extend(lines);
    }
    conn.close().await.unwrap();
    schema
}

/// A database of the previous release, at every schema version it may have been left at,
/// opens, migrates to the schema a new database gets, and works; its rows are kept.
#[tokio::test]
async fn a_database_of_the_previous_release_opens_and_works() {
    let fresh = Database::create("fresh");
    PostgresStore::open(&fresh.url).await.unwrap().close().await;
    let expected = postgres_schema(&fresh.url).await;
    for version in 0..=released::POSTGRES.len() {
        let database = Database::create(&format!("released{version}"));
        let mut conn = sqlx::PgConnection::connect(&database.url).await.unwrap();
        if version > 0 {
            sqlx::raw_sql("CREATE TABLE cairn_schema (version BIGINT NOT NULL)")
                .execute(&mut conn)
                .await
                .unwrap();
        }
        for (index, script) in released::POSTGRES[..version].iter().enumerate() {
            sqlx::raw_sql(script).execute(&mut conn).await.unwrap();
            sqlx::query("INSERT INTO cairn_schema (version) VALUES ($1)")
                .bind(index as i64 + 1)
                .execute(&mut conn)
                .await
                .unwrap();
        }
        let with_rows = version == released::POSTGRES.len();
        if with_rows {
            sqlx::raw_sql(released::POSTGRES_ROWS)
                .execute(&mut conn)
                .await
                .unwrap();
        }
        conn.close().await.unwrap();
        let store = PostgresStore::open(&database.url).await.unwrap();
        if with_rows {
            released::check_rows(&store).await;
            let dir = tempfile::tempdir().unwrap();
            let packs = Packs::open(dir.path().join("packs")).unwrap();
            suite::run(&store, &packs).await;
        }
        store.close().await;
        assert_eq!(
            postgres_schema(&database.url).await,
            expected,
            "from version {version}"
        );
    }
}
