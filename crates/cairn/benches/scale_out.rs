//! Concurrent uploads against one node and against two nodes on the same shared backends
//! (the machine's PostgreSQL and a moto S3 server on loopback), beside one node on the
//! embedded store. 64 POSTs of 4 MiB of distinct content, 8 in flight, spread round-robin.
//!
//! Run: `cargo bench -p cairn --bench scale_out`. Needs `python3` (moto from PyPI) and `psql`.
//! moto is a Python server: on shared backends it, not Cairn, is what the figures measure.

#[path = "../tests/server/mod.rs"]
mod server;

#[path = "../../store/tests/support/moto.rs"]
mod moto;

#[path = "../../server/benches/support/noise.rs"]
mod noise;

use std::sync::Arc;
use std::time::Instant;

use noise::noise;
use server::{cairn, start, terminate, Running, TestDatabase};

const UPLOADS: usize = 64;
const SIZE: usize = 4 << 20;
const IN_FLIGHT: usize = 8;

/// Upload every file, `IN_FLIGHT` at a time, to the nodes in turn; returns MB/s.
async fn run(nodes: &[Running], token: &str, files: &Arc<Vec<Vec<u8>>>) -> f64 {
    let client = reqwest::Client::new();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..UPLOADS {
        let url = format!("{}/api/upload", nodes[i % nodes.len()].upload);
        let (client, token, files) = (client.clone(), token.to_owned(), files.clone());
        let permit = semaphore.clone().acquire_owned().await.unwrap();
        tasks.push(tokio::spawn(async move {
            let part = reqwest::multipart::Part::bytes(files[i].clone()).file_name("f.bin");
            let response = client
                .post(url)
                .bearer_auth(token)
                .multipart(reqwest::multipart::Form::new().part("file", part))
                .send()
                .await
                .unwrap();
            assert!(response.status().is_success(), "{}", response.status());
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

#[tokio::main]
async fn main() {
    let work = tempfile::tempdir().unwrap();
    let files: Arc<Vec<Vec<u8>>> = Arc::new((0..UPLOADS).map(|i| noise(SIZE, i as u64)).collect());
    let moto = moto::Moto::start();
    let mut rows = Vec::new();

    // One node, embedded store.
    let dir = work.path().join("embedded");
    let node = start(&dir, &[]);
    let token = node.token.clone();
    allow_large_posts(&[], &dir);
    let nodes = [node];
    rows.push((
        "1 node, embedded (SQLite + local packs)",
        run(&nodes, &token, &files).await,
    ));
    let [node] = nodes;
    terminate(node);

    for count in [1, 2] {
        let database = TestDatabase::create(&format!("bench{count}"));
        let store = moto.bucket(&format!("bench{count}"));
        let shared = [
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
        let speed = run(&nodes, &token, &files).await;
        for node in nodes {
            terminate(node);
        }
        rows.push((
            if count == 1 {
                "1 node, PostgreSQL + S3 (moto)"
            } else {
                "2 nodes, PostgreSQL + S3 (moto)"
            },
            speed,
        ));
    }

    println!(
        "{UPLOADS} POSTs of {} MiB, {IN_FLIGHT} in flight\n",
        SIZE >> 20
    );
    println!("| configuration | MB/s | ratio to 1 node on the same backends |");
    println!("|---|---|---|");
    let one_shared = rows[1].1;
    for (name, speed) in &rows {
        let ratio = if name.contains("S3") {
            format!("{:.2}", speed / one_shared)
        } else {
            "-".to_owned()
        };
        println!("| {name} | {speed:.0} | {ratio} |");
    }
}
