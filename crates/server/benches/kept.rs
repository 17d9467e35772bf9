//! Listing what an account keeps when it keeps a lot: `GET /api/uploads` and `GET /pins`
//! answering a page for an account with 1,000,000 uploads, on the embedded SQLite store and
//! on PostgreSQL (a fresh database, dropped afterwards, on the server the tests use:
//! `cairn_test_support::postgres`).
//!
//! The rows are written straight into the schema the store migrated (one `INSERT ... SELECT`
//! over a generated series: a million uploads through HTTP would take the run's hour), then
//! each request is asked 20 times over real HTTP; the table shows the median and the slowest,
//! and the ratio of the median to its goal: 50 ms for pages (issue 16), 100 ms for a
//! key-value filter (issue 34). Every upload is tagged `user` (one of 100,000: ten uploads
//! each) and `kind` (one of 4: a quarter of them each).
//!
//! Run: `cargo bench -p cairn-server --bench kept` (`KEPT_ROWS=N` for another size).

mod support;
use support::host;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_server::ServerConfig;
use cairn_service::ServiceConfig;
use cairn_store::access::NewKey;
use cairn_store::packs::Packs;
use cairn_store::postgres::PostgresStore;
use cairn_store::sqlite::SqliteStore;
use cairn_store::{tokens, AccountLimits, MetadataStore};
use cairn_test_support::postgres::Database;
use host::{serve_upload_host, state_in};
use sqlx::Connection;

const PAGE_GOAL: Duration = Duration::from_millis(50);
const KEYVALUE_GOAL: Duration = Duration::from_millis(100);
const ASKED: usize = 20;
/// When the first upload was made; one a second after it.
const EPOCH_MS: i64 = 1_700_000_000_000;

fn rows() -> i64 {
    std::env::var("KEPT_ROWS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000)
}

/// The rows' numbers, 1 to `rows()`, in transactions of a thousand. Uploads arrive one
/// transaction each; one transaction of a million would update the account's row in
/// `kept_counts` a million times over, which PostgreSQL keeps every version of until it ends.
fn batches() -> impl Iterator<Item = (i64, i64)> {
    const BATCH: i64 = 1000;
    let rows = rows();
    (0..(rows + BATCH - 1) / BATCH).map(move |b| (b * BATCH + 1, ((b + 1) * BATCH).min(rows)))
}

/// The columns every upload fills, from the series' `i`, in either database's SQL.
fn upload_columns(account_id: i64) -> String {
    format!(
        "'u' || i, {account_id}, 'upload', 'completed', 'stored', 100, 'bafy' || i,
         'file-' || i || '.bin', 1000, 'application/octet-stream', 'unixfs-v1-2025',
         {EPOCH_MS} + i * 1000, {EPOCH_MS} + i * 1000, {EPOCH_MS} + i * 1000, 1000,
         '{{\"user\":\"u' || (i % 100000) || '\",\"kind\":\"k' || (i % 4) || '\"}}'"
    )
}

/// One upload's root is a real CID (the others' are only text), for the CID filter.
const FOUND_CID: &str = "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e";

fn set_found_cid() -> String {
    format!(
        "UPDATE operations SET cid = '{FOUND_CID}' WHERE upload_id = 'u{}'",
        rows() / 3
    )
}

const INSERT: &str = "INSERT INTO operations (upload_id, account_id, kind, status, status_message,
    progress, cid, name, size, mime_type, profile, created_at, updated_at, completed_at, dag_size,
    meta)";

async fn account(store: &dyn MetadataStore) -> (i64, String) {
    let account = store
        .create_account("many", AccountLimits::default())
        .await
        .unwrap();
    let token = tokens::generate();
    store
        .create_key(&NewKey::all(account.id), &token.hash, &token.prefix)
        .await
        .unwrap();
    (account.id, token.secret)
}

/// Ask each request `ASKED` times; print a table row for each.
async fn measure(backend: &str, url: &str, token: &str) {
    let client = reqwest::Client::new();
    let rows = rows();
    let middle = humantime::format_rfc3339_millis(
        std::time::UNIX_EPOCH + Duration::from_millis((EPOCH_MS + rows / 2 * 1000) as u64),
    );
    let first_page = format!("{url}/api/uploads?limit=50");
    let cursor = format!("{}.{}", EPOCH_MS + rows / 2 * 1000, rows / 2);
    let requests = [
        ("uploads, first page of 50", first_page, PAGE_GOAL),
        (
            "uploads, a page half-way (cursor)",
            format!("{url}/api/uploads?limit=50&cursor={cursor}"),
            PAGE_GOAL,
        ),
        (
            "pins, first page of 10 (with count)",
            format!("{url}/pins"),
            PAGE_GOAL,
        ),
        (
            "pins, a page half-way (before)",
            format!("{url}/pins?before={middle}"),
            PAGE_GOAL,
        ),
        (
            "pins by cid",
            format!("{url}/pins?cid={FOUND_CID}"),
            PAGE_GOAL,
        ),
        (
            "pins by name, ipartial",
            format!("{url}/pins?name=FILE-{}.&match=ipartial", rows / 3),
            PAGE_GOAL,
        ),
        (
            "uploads by a rare key-value (10 match)",
            format!("{url}/api/uploads?limit=50&kv=user:u4242"),
            KEYVALUE_GOAL,
        ),
        (
            "uploads by a common key-value (1 in 4 match)",
            format!("{url}/api/uploads?limit=50&kv=kind:k1"),
            KEYVALUE_GOAL,
        ),
        (
            "uploads by two key-values",
            format!("{url}/api/uploads?limit=50&kv=kind:k2&kv=user:u4242"),
            KEYVALUE_GOAL,
        ),
        (
            "pins by a rare meta (with count)",
            format!("{url}/pins?meta=%7B%22user%22%3A%22u4242%22%7D"),
            KEYVALUE_GOAL,
        ),
        (
            "pins by a common meta (with count)",
            format!("{url}/pins?meta=%7B%22kind%22%3A%22k1%22%7D"),
            KEYVALUE_GOAL,
        ),
    ];
    for (what, request, goal) in requests {
        let mut times = Vec::with_capacity(ASKED);
        for _ in 0..ASKED {
            let started = Instant::now();
            let response = client
                .get(&request)
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            assert!(
                response.status().is_success(),
                "{request}: {}",
                response.status()
            );
            response.bytes().await.unwrap();
            times.push(started.elapsed());
        }
        times.sort();
        let median = times[ASKED / 2];
        println!(
            "| {backend} | {what} | {:.1} | {:.1} | {:.0} | {:.2} |",
            median.as_secs_f64() * 1e3,
            times[ASKED - 1].as_secs_f64() * 1e3,
            goal.as_secs_f64() * 1e3,
            median.as_secs_f64() / goal.as_secs_f64(),
        );
    }
}

async fn serve(dir: &std::path::Path, store: Arc<dyn MetadataStore>) -> String {
    let packs = Packs::open(dir.join("packs")).unwrap();
    serve_upload_host(state_in(
        dir,
        store,
        packs,
        ServiceConfig::default(),
        ServerConfig::default(),
    ))
    .await
}

async fn sqlite(base: &std::path::Path) {
    let dir = tempfile::tempdir_in(base).unwrap();
    let path = dir.path().join("cairn.db");
    let store = Arc::new(SqliteStore::open(&path).await.unwrap());
    let (account_id, token) = account(store.as_ref()).await;
    let started = Instant::now();
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    for (first, last) in batches() {
        sqlx::query(&format!(
            "WITH RECURSIVE n(i) AS (SELECT {first} UNION ALL SELECT i + 1 FROM n WHERE i < {last})
             {INSERT} SELECT {} FROM n",
            upload_columns(account_id)
        ))
        .execute(&mut conn)
        .await
        .unwrap();
    }
    sqlx::query(&set_found_cid())
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query("ANALYZE").execute(&mut conn).await.unwrap();
    eprintln!(
        "sqlite: {} rows in {:.1} s",
        rows(),
        started.elapsed().as_secs_f64()
    );
    let url = serve(dir.path(), store).await;
    measure("SQLite", &url, &token).await;
}

async fn postgres(base: &std::path::Path) {
    let database = Database::create("bench_kept");
    let database = &database.url;
    {
        let store = Arc::new(PostgresStore::open(database).await.unwrap());
        let (account_id, token) = account(store.as_ref()).await;
        let started = Instant::now();
        let mut conn = sqlx::PgConnection::connect(database).await.unwrap();
        for (first, last) in batches() {
            sqlx::query(&format!(
                "{INSERT} SELECT {} FROM generate_series({first}::bigint, {last}) AS i",
                upload_columns(account_id),
            ))
            .execute(&mut conn)
            .await
            .unwrap();
        }
        sqlx::query(&set_found_cid())
            .execute(&mut conn)
            .await
            .unwrap();
        // As autovacuum leaves a table soon after a million inserts (PostgreSQL 13 and later
        // vacuum for inserts too): the visibility map lets counts read the index alone.
        sqlx::query("VACUUM ANALYZE")
            .execute(&mut conn)
            .await
            .unwrap();
        eprintln!(
            "postgres: {} rows in {:.1} s",
            rows(),
            started.elapsed().as_secs_f64()
        );
        let dir = tempfile::tempdir_in(base).unwrap();
        let url = serve(dir.path(), store.clone()).await;
        measure("PostgreSQL", &url, &token).await;
        store.close().await;
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-tmp");
        std::fs::create_dir_all(&base).unwrap();
        println!("| backend | request | median ms | slowest ms | goal ms | median / goal |");
        println!("|---|---|---|---|---|---|");
        sqlite(&base).await;
        postgres(&base).await;
    });
}
