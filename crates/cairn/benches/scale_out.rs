//! Concurrent uploads against one node and against two nodes on the same shared backends
//! (PostgreSQL, the machine's or one the bench starts, and a SeaweedFS S3 server on loopback), beside one node on the
//! embedded store. 64 uploads of 4 MiB of distinct content, 8 in flight, spread round-robin:
//! once as POSTs, once as TUS uploads (creation, then one PATCH).
//!
//! Run: `cargo bench -p cairn --bench scale_out`. Needs `python3` (SeaweedFS from PyPI) and
//! PostgreSQL (`cairn_test_support::postgres`). Every process shares this 2-core machine, so the figures show what a second node
//! costs and keeps, not what a second machine would add.

use cairn_harness::server;

use cairn_test_support::seaweedfs;

use cairn_test_support::noise;

use std::sync::Arc;
use std::time::Instant;

use cairn_test_support::postgres::Database;
use noise::noise;
use server::{cairn, start, terminate, Running};

const UPLOADS: usize = 64;
const SIZE: usize = 4 << 20;
const IN_FLIGHT: usize = 8;

#[derive(Clone, Copy)]
enum Protocol {
    Post,
    Tus,
}

async fn post(client: &reqwest::Client, node: &str, token: &str, body: Vec<u8>) {
    let part = reqwest::multipart::Part::bytes(body).file_name("f.bin");
    let response = client
        .post(format!("{node}/api/upload"))
        .bearer_auth(token)
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
}

async fn tus(client: &reqwest::Client, node: &str, token: &str, body: Vec<u8>) {
    server::tus_upload(client, node, token, "file.bin", body).await;
}

/// Upload every file, `IN_FLIGHT` at a time, to the nodes in turn; returns MB/s (of bytes
/// acknowledged: a TUS upload is then processed in the background, as it is for users).
async fn run(protocol: Protocol, nodes: &[Running], token: &str, files: &Arc<Vec<Vec<u8>>>) -> f64 {
    let client = reqwest::Client::new();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..UPLOADS {
        let node = nodes[i % nodes.len()].upload.clone();
        let (client, token, files) = (client.clone(), token.to_owned(), files.clone());
        let permit = semaphore.clone().acquire_owned().await.unwrap();
        tasks.push(tokio::spawn(async move {
            let body = files[i].clone();
            match protocol {
                Protocol::Post => post(&client, &node, &token, body).await,
                Protocol::Tus => tus(&client, &node, &token, body).await,
            }
            drop(permit);
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    (UPLOADS * SIZE) as f64 / 1e6 / started.elapsed().as_secs_f64()
}

fn allow_large_posts(store_args: &[&str], data_dir: &std::path::Path) {
    let status = cairn()
        .args(["account", "set", "default", "--upload-limit", "67108864"])
        .args(store_args)
        .arg("--data-dir")
        .arg(data_dir)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Both protocols against `nodes`; each run uploads distinct content (the seed moves on), so
/// nothing is deduplicated away.
async fn both(nodes: &[Running], token: &str, round: u64) -> [f64; 2] {
    let files = |seed: u64| -> Arc<Vec<Vec<u8>>> {
        Arc::new(
            (0..UPLOADS)
                .map(|i| noise(SIZE, seed * 1000 + i as u64))
                .collect(),
        )
    };
    [
        run(Protocol::Post, nodes, token, &files(round * 2)).await,
        run(Protocol::Tus, nodes, token, &files(round * 2 + 1)).await,
    ]
}

const READ_BYTES: usize = 60 << 20;

/// Store a 60 MiB file through `node`, then read it back with `GET /ipfs/{cid}` (every block
/// verified), best of 3; returns MB/s.
async fn read_back(node: &Running, token: &str) -> f64 {
    let client = reqwest::Client::new();
    let part = reqwest::multipart::Part::bytes(noise(READ_BYTES, 0xead)).file_name("f.bin");
    let stored: serde_json::Value = client
        .post(format!("{}/api/upload", node.upload))
        .bearer_auth(token)
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let cid = stored["cid"].as_str().unwrap().to_owned();
    let mut best = f64::MAX;
    for _ in 0..3 {
        let started = Instant::now();
        let body = client
            .get(format!("{}/ipfs/{cid}", node.upload))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(body.len(), READ_BYTES);
        best = best.min(started.elapsed().as_secs_f64());
    }
    READ_BYTES as f64 / 1e6 / best
}

#[tokio::main]
async fn main() {
    let work = tempfile::tempdir().unwrap();
    let seaweedfs = seaweedfs::SeaweedFs::start(&["bench1", "bench2"]);
    let mut rows = Vec::new();
    let mut reads = Vec::new();

    // One node, embedded store.
    let dir = work.path().join("embedded");
    let node = start(&dir, &["--uploads-per-minute", "100000"]);
    let token = node.token.clone();
    allow_large_posts(&[], &dir);
    let nodes = [node];
    rows.push((
        "1 node, embedded (SQLite + local files)",
        both(&nodes, &token, 0).await,
    ));
    reads.push((
        "embedded (local pack files)",
        read_back(&nodes[0], &token).await,
    ));
    let [node] = nodes;
    terminate(node);

    for count in [1, 2] {
        let database = Database::create(&format!("bench{count}"));
        let store = seaweedfs.bucket(&format!("bench{count}"));
        let shared = [
            "--uploads-per-minute",
            "100000",
            "--database-url",
            database.url.as_str(),
            "--store",
            store.as_str(),
        ];
        let nodes: Vec<Running> = (0..count)
            .map(|i| start(&work.path().join(format!("shared{count}-{i}")), &shared))
            .collect();
        let token = nodes[0].token.clone();
        allow_large_posts(&["--database-url", &database.url], work.path());
        let speeds = both(&nodes, &token, count as u64).await;
        if count == 1 {
            reads.push((
                "PostgreSQL + S3 (SeaweedFS)",
                read_back(&nodes[0], &token).await,
            ));
        }
        for node in nodes {
            terminate(node);
        }
        rows.push((
            if count == 1 {
                "1 node, PostgreSQL + S3 (SeaweedFS)"
            } else {
                "2 nodes, PostgreSQL + S3 (SeaweedFS)"
            },
            speeds,
        ));
    }

    println!(
        "{UPLOADS} uploads of {} MiB per protocol, {IN_FLIGHT} in flight\n",
        SIZE >> 20
    );
    println!(
        "| configuration | POST MB/s | TUS MB/s | POST, TUS ratio to 1 node on the same backends |"
    );
    println!("|---|---|---|---|");
    let one_shared = rows[1].1;
    for (name, [post, tus]) in &rows {
        let ratio = if name.contains("S3") {
            format!("{:.2}, {:.2}", post / one_shared[0], tus / one_shared[1])
        } else {
            "-".to_owned()
        };
        println!("| {name} | {post:.0} | {tus:.0} | {ratio} |");
    }
    println!();
    println!(
        "| {} MiB read back with GET /ipfs/{{cid}}, one node | MB/s |",
        READ_BYTES >> 20
    );
    println!("|---|---|");
    for (name, speed) in &reads {
        println!("| {name} | {speed:.0} |");
    }
}
