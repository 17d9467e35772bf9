//! Metadata-heavy load: many small uploads, where the cost of each upload is the metadata
//! store's transactions (authentication, the rate limit, the block index, the operation), not
//! hashing or the disk's bandwidth.
//!
//! 1. many small uploads: one client posts 1,000 small files (1 KiB, distinct content) one
//!    after another; uploads per second and the median and 99th-percentile latency;
//! 2. 200 concurrent uploaders: 200 accounts, each with its own token, each posting 10 small
//!    files one after another, all at once; uploads per second over the whole run and the
//!    latencies.
//!
//! Both against the embedded SQLite store and against PostgreSQL (a fresh database, dropped
//! afterwards, on the server the tests use: `cairn_test_support::postgres`; the rate-limit
//! buckets are kept there, as nodes sharing a store keep them). Each figure is the best of 3 runs, each with fresh content.
//!
//! Run: `cargo bench -p cairn-server --bench metadata`.

mod support;
use cairn_test_support::noise;
use support::host;

use std::path::Path;
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
use noise::noise;
use reqwest::multipart::{Form, Part};

const SEQUENTIAL_UPLOADS: usize = 1_000;
const UPLOADERS: usize = 200;
const UPLOADS_EACH: usize = 10;
const FILE_BYTES: usize = 1024;

struct Server {
    url: String,
    tokens: Vec<String>,
    client: reqwest::Client,
    _stop: tokio::sync::watch::Sender<bool>,
}

async fn start_server(dir: &Path, store: Arc<dyn MetadataStore>, shared_store: bool) -> Server {
    std::fs::create_dir_all(dir).unwrap();
    let mut secrets = Vec::new();
    for i in 0..UPLOADERS {
        let account = store
            .create_account(&format!("bench{i}"), AccountLimits::default())
            .await
            .unwrap();
        let token = tokens::generate();
        store
            .create_key(&NewKey::all(account.id), &token.hash, &token.prefix)
            .await
            .unwrap();
        secrets.push(token.secret);
    }
    let service_config = ServiceConfig {
        shared_store,
        ..ServiceConfig::default()
    };
    let mut config = ServerConfig::default();
    // Counted, never refused: the bench measures the work, not the limit.
    config.rate_limits.upload.quota = 1_000_000;
    let packs = Packs::open(dir.join("packs")).unwrap();
    let state = state_in(dir, store, packs, service_config, config);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    cairn_service::worker::spawn(state.service.clone(), 2, stopped);
    let url = serve_upload_host(state).await;
    Server {
        url,
        tokens: secrets,
        client: reqwest::Client::builder()
            .pool_max_idle_per_host(UPLOADERS)
            .build()
            .unwrap(),
        _stop: stop,
    }
}

impl Server {
    /// One upload; how long it took.
    async fn post(&self, token: &str, bytes: Vec<u8>) -> Duration {
        let start = Instant::now();
        let form = Form::new().part("file", Part::bytes(bytes).file_name("data"));
        let response = self
            .client
            .post(format!("{}/api/upload", self.url))
            .bearer_auth(token)
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
        let body: serde_json::Value = response.json().await.unwrap();
        assert!(body["cid"].is_string(), "{body}");
        start.elapsed()
    }
}

/// Uploads a second, median and 99th-percentile latency (ms).
struct Figures {
    per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
}

impl Figures {
    fn of(total: Duration, mut latencies: Vec<Duration>) -> Self {
        latencies.sort();
        let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
        Self {
            per_second: latencies.len() as f64 / total.as_secs_f64(),
            p50_ms: at(0.5).as_secs_f64() * 1e3,
            p99_ms: at(0.99).as_secs_f64() * 1e3,
        }
    }

    fn best(runs: impl IntoIterator<Item = Self>) -> Self {
        runs.into_iter()
            .max_by(|a, b| a.per_second.total_cmp(&b.per_second))
            .unwrap()
    }
}

async fn sequential(server: &Server, seed: u64) -> Figures {
    let bodies: Vec<Vec<u8>> = (0..SEQUENTIAL_UPLOADS as u64)
        .map(|i| noise(FILE_BYTES, seed * 1_000_000 + i))
        .collect();
    let start = Instant::now();
    let mut latencies = Vec::with_capacity(bodies.len());
    for body in bodies {
        latencies.push(server.post(&server.tokens[0], body).await);
    }
    Figures::of(start.elapsed(), latencies)
}

async fn concurrent(server: &Arc<Server>, seed: u64) -> Figures {
    let start = Instant::now();
    let tasks: Vec<_> = (0..UPLOADERS)
        .map(|uploader| {
            let server = server.clone();
            let bodies: Vec<Vec<u8>> = (0..UPLOADS_EACH)
                .map(|i| noise(FILE_BYTES, seed * 1_000_000 + (uploader * 1000 + i) as u64))
                .collect();
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(bodies.len());
                for body in bodies {
                    latencies.push(server.post(&server.tokens[uploader], body).await);
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.unwrap());
    }
    Figures::of(start.elapsed(), latencies)
}

async fn measure(backend: &str, server: Server) {
    let server = Arc::new(server);
    let mut seed = 1;
    let mut next_seed = || {
        seed += 1;
        seed
    };
    let mut runs = Vec::new();
    for _ in 0..3 {
        runs.push(sequential(&server, next_seed()).await);
    }
    let one = Figures::best(runs);
    let mut runs = Vec::new();
    for _ in 0..3 {
        runs.push(concurrent(&server, next_seed()).await);
    }
    let many = Figures::best(runs);
    println!(
        "| {backend} | {SEQUENTIAL_UPLOADS} small uploads, one after another | {:.0} | {:.1} | {:.1} |",
        one.per_second, one.p50_ms, one.p99_ms
    );
    println!(
        "| {backend} | {UPLOADERS} concurrent uploaders x {UPLOADS_EACH} | {:.0} | {:.1} | {:.1} |",
        many.per_second, many.p50_ms, many.p99_ms
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}

async fn run() {
    // On the same disk as the data directory the server uses.
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-tmp");
    std::fs::create_dir_all(&base).unwrap();
    println!("| backend | load | uploads/s | p50 ms | p99 ms |");
    println!("|---|---|---|---|---|");

    let dir = tempfile::tempdir_in(&base).unwrap();
    let store = Arc::new(
        SqliteStore::open(&dir.path().join("cairn.db"))
            .await
            .unwrap(),
    );
    measure("SQLite", start_server(dir.path(), store, false).await).await;

    let database = Database::create("bench");
    let store = Arc::new(PostgresStore::open(&database.url).await.unwrap());
    let dir = tempfile::tempdir_in(&base).unwrap();
    measure(
        "PostgreSQL",
        start_server(dir.path(), store.clone(), true).await,
    )
    .await;
    store.close().await;
}
