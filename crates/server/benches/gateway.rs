//! Reading a 1 GiB file back through the gateway, every block verified on the way, as a ratio
//! to single-core sha2-256 over the same bytes, measured in the same run (target >= 0.7).
//!
//! Run: `cargo bench -p cairn-server --bench gateway`. Best of 3.

mod support;
use cairn_test_support::noise;
use support::host;
use support::stored;

use std::path::Path;
use std::time::{Duration, Instant};

use cairn_server::ServerConfig;
use cairn_service::ServiceConfig;
use host::{serve_upload_host, state_in};
use noise::noise;
use sha2::{Digest, Sha256};
use stored::{embedded_store, store_file};

const SIZE: usize = 1 << 30;

fn mb_per_s(time: Duration) -> f64 {
    SIZE as f64 / 1e6 / time.as_secs_f64()
}

#[tokio::main]
async fn main() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-tmp");
    std::fs::create_dir_all(&base).unwrap();
    let dir = tempfile::tempdir_in(&base).unwrap();
    let data = noise(SIZE, 0x2545_f491_4f6c_dd1d);
    let mut sha = Duration::MAX;
    for _ in 0..3 {
        let started = Instant::now();
        std::hint::black_box(Sha256::digest(&data));
        sha = sha.min(started.elapsed());
    }

    // Store the file as an upload would, straight through the engine and the store.
    let (store, packs, account_id) = embedded_store(dir.path()).await;
    let cid = store_file(store.as_ref(), &packs, account_id, "bench", &data).await;

    let state = state_in(
        dir.path(),
        store,
        packs,
        ServiceConfig::default(),
        ServerConfig::default(),
    );
    let url = format!("{}/ipfs/{cid}", serve_upload_host(state).await);

    let client = reqwest::Client::new();
    let mut read = Duration::MAX;
    for _ in 0..3 {
        let started = Instant::now();
        let mut response = client.get(&url).send().await.unwrap();
        let mut received = 0usize;
        while let Some(chunk) = response.chunk().await.unwrap() {
            received += chunk.len();
        }
        assert_eq!(received, SIZE);
        read = read.min(started.elapsed());
    }
    let (sha, read) = (mb_per_s(sha), mb_per_s(read));
    println!("| 1 GiB read back | MB/s | ratio to sha2-256 one core |");
    println!("|---|---|---|");
    println!("| sha2-256, one core | {sha:.0} | 1.00 |");
    println!(
        "| GET /ipfs/{{cid}}, every block verified | {read:.0} | {:.2} |",
        read / sha
    );
}
