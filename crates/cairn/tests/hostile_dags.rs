//! The real binary against hostile content: `cairn get` refuses what would be too deep, too
//! many or too big before it writes anything and leaves nothing behind (a small disk
//! included); the server's memory stays bounded while it serves a self-repeating DAG. A full
//! disk on the server's side is `full_disk.rs`.

use cairn_harness::server;

use cairn_car::hostile;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;
use server::{cairn, content, namespaces_allowed, post_upload, start, terminate, Running};

async fn upload(running: &Running, bytes: Vec<u8>, name: &str) -> (StatusCode, Value) {
    post_upload(running, &running.token, name, bytes).await
}

async fn upload_car(running: &Running, dag: &hostile::Dag) -> String {
    let (status, body) = upload(running, dag.car(), "dag.car").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["cid"].as_str().unwrap().to_owned()
}

fn get(running: &Running, args: &[&str]) -> Output {
    cairn()
        .arg("get")
        .args(args)
        .env("CAIRN_URL", &running.upload)
        .env("CAIRN_TOKEN", &running.token)
        .output()
        .unwrap()
}

/// Everything in `dir`, by name.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn assert_refused(output: &Output, says: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(says), "{stderr:?} should say {says:?}");
}

/// Peak resident memory of a process, from /proc.
fn peak_rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[tokio::test]
async fn cairn_get_refuses_hostile_dags_before_writing_and_leaves_nothing_behind() {
    let data = tempfile::tempdir().unwrap();
    // The gateway may walk deeper than the client: the client's own limit is what is tested.
    let running = start(data.path(), &["--gateway-max-depth", "200000"]);
    let laughing = upload_car(&running, &hostile::laughing_directory(16, 10)).await;
    let deep = upload_car(&running, &hostile::deep_directory(5_000)).await;
    let out = tempfile::tempdir().unwrap();

    let started = Instant::now();
    let target = out.path().join("laughing");
    let refused = get(&running, &[&laughing, "-o", target.to_str().unwrap()]);
    assert_refused(&refused, "more than 1000000 entries");
    let target = out.path().join("deep");
    let refused = get(&running, &[&deep, "-o", target.to_str().unwrap()]);
    assert_refused(&refused, "deeper than 1024 levels");
    // A file nested deeper than a gateway with the default limits walks: its CAR is cut, and
    // `cairn get` says so and leaves nothing.
    let other_data = tempfile::tempdir().unwrap();
    let defaults = start(other_data.path(), &[]);
    let deep_file = upload_car(&defaults, &hostile::deep_file(100_000)).await;
    let target = out.path().join("deep-file");
    let cut = get(&defaults, &[&deep_file, "-o", target.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&cut.stderr);
    assert!(
        !cut.status.success() && stderr.contains("receiving the CAR"),
        "{stderr}"
    );
    terminate(defaults);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );

    // A real file over the byte limit, and over the free space of a small disk.
    let (status, body) = upload(&running, content(3 << 20, 7), "big.bin").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let big = body["cid"].as_str().unwrap();
    let target = out.path().join("big.bin");
    let refused = get(
        &running,
        &[
            big,
            "-o",
            target.to_str().unwrap(),
            "--max-bytes",
            "1000000",
        ],
    );
    assert_refused(&refused, "more than 1000000 bytes");
    if namespaces_allowed() {
        let small_disk = out.path().join("small");
        std::fs::create_dir(&small_disk).unwrap();
        let script = format!(
            "mount -t tmpfs -o size=1m tmpfs {disk} && exec \"$0\" get {big} -o {disk}/big.bin",
            disk = small_disk.display()
        );
        let output = Command::new("unshare")
            .args(["-m", "sh", "-c", &script])
            .arg(server::binary())
            .env("CAIRN_URL", &running.upload)
            .output()
            .unwrap();
        assert_refused(&output, "are free in");
    }
    assert_eq!(
        names(out.path()),
        ["small"][..(namespaces_allowed() as usize)]
    );
    terminate(running);
}

#[tokio::test]
async fn serving_a_self_repeating_dag_keeps_the_server_small() {
    let data = tempfile::tempdir().unwrap();
    let running = start(data.path(), &[]);
    let laughing = upload_car(&running, &hostile::laughing_directory(16, 10)).await;
    let client = reqwest::Client::new();
    let mut requests = Vec::new();
    for _ in 0..4 {
        let url = format!("{}/ipfs/{laughing}?format=car&car-dups=y", running.upload);
        let request = client.get(url).send();
        requests.push(tokio::spawn(async move {
            let mut response = request.await.unwrap();
            let mut received = 0usize;
            while let Ok(Some(chunk)) = response.chunk().await {
                received += chunk.len();
            }
            received
        }));
    }
    for request in requests {
        let received = request.await.unwrap();
        assert!(received < 1 << 30, "{received} bytes");
    }
    let health = client
        .get(format!("{}/healthz", running.upload))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    let peak = peak_rss_bytes(running.child.id());
    assert!(peak < 200 << 20, "peak RSS {} MiB", peak >> 20);
    terminate(running);
}
