//! TUS upload speed and memory, measured in one run on this machine, beside the reference Node
//! server (`@tus/server` + `@tus/file-store`, installed by this bench from npm):
//!
//! 1. the limits: single-core sha2-256 over 1 GiB, and the disk writing 1 GiB durably (the
//!    better of one `fdatasync` at the end and `fdatasync`s overlapped with the writing);
//! 2. a 1 GiB upload over loopback in 8 MiB PATCHes and in one PATCH, to each server, by the
//!    same Rust client (time from the creation request to the last `204`);
//! 3. each server's peak RSS, and Cairn's over a 4 GiB upload (it must not grow with the size).
//!
//! Run: `cargo bench -p cairn --bench tus`. Needs `node` and `npm`.

use cairn_test_support::disk;
use cairn_test_support::noise;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use disk::disk_write;
use noise::noise;
use sha2::{Digest, Sha256};

const GIB: usize = 1 << 30;
const PATCH: usize = 8 << 20;

fn mb_per_s(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / 1e6 / time.as_secs_f64()
}

/// Peak resident memory of a process, in MiB (Linux `VmHWM`).
fn peak_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

struct Target {
    endpoint: String,
    token: Option<String>,
    child: Child,
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_cairn(data: &Path) -> Target {
    let mut child = Command::new(cairn_harness::server::binary())
        .env("CAIRN_P2P_LISTEN", "none")
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--account-listen",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let upload = lines.next().unwrap().unwrap();
    let base = upload.rsplit(' ').next().unwrap().to_owned();
    lines.next();
    lines.next();
    let token = lines.next().unwrap().unwrap().trim().to_owned();
    // Let the server keep printing without blocking on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Command::new(cairn_harness::server::binary())
        .args(["account", "set", "default", "--quota", "none", "--data-dir"])
        .arg(data)
        .output()
        .unwrap();
    Target {
        endpoint: format!("{base}/api/upload/tus"),
        token: Some(token),
        child,
    }
}

fn start_node(install: &Path, data: &Path) -> Target {
    std::fs::create_dir_all(data).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new("node")
        .arg(install.join("tus_node_server.mjs"))
        .arg(port.to_string())
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.next().unwrap().unwrap().starts_with("listening"));
    Target {
        endpoint: format!("http://127.0.0.1:{port}/files"),
        token: None,
        child,
    }
}

/// `@tus/server` and `@tus/file-store` in `dir`, with the server script beside them.
fn install_node_server(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    if !dir.join("node_modules/@tus/server").exists() {
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(dir)
            .args(["@tus/server@2.4.5", "@tus/file-store@2.1.1"])
            .status()
            .unwrap();
        assert!(status.success(), "npm install @tus/server");
    }
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/tus_node_server.mjs"),
        dir.join("tus_node_server.mjs"),
    )
    .unwrap();
}

/// Upload `size` bytes from `content(offset, len)` in PATCHes of `patch` bytes; time to the
/// last 204.
async fn upload(
    client: &reqwest::Client,
    target: &Target,
    size: usize,
    patch: usize,
    content: &dyn Fn(usize, usize) -> Bytes,
) -> Duration {
    let with_auth = |request: reqwest::RequestBuilder| match &target.token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    let started = Instant::now();
    let created = with_auth(client.post(&target.endpoint))
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Length", size.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let location = created.headers()["location"].to_str().unwrap().to_owned();
    let url = if location.starts_with("http") {
        location
    } else {
        let base = target.endpoint.split("/files").next().unwrap();
        format!("{base}{location}")
    };
    let mut offset = 0;
    while offset < size {
        let len = patch.min(size - offset);
        let reply = with_auth(client.patch(&url))
            .header("Tus-Resumable", "1.0.0")
            .header("Content-Type", "application/offset+octet-stream")
            .header("Upload-Offset", offset.to_string())
            .body(content(offset, len))
            .send()
            .await
            .unwrap();
        assert_eq!(
            reply.status(),
            204,
            "{}",
            reply.text().await.unwrap_or_default()
        );
        offset += len;
    }
    started.elapsed()
}

#[tokio::main]
async fn main() {
    let base: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-tmp");
    std::fs::create_dir_all(&base).unwrap();
    let work = tempfile::tempdir_in(&base).unwrap();
    let node_install = base.join("tus-node");
    install_node_server(&node_install);

    let data = Bytes::from(noise(GIB, 3));
    let started = Instant::now();
    std::hint::black_box(Sha256::digest(&data));
    let sha = mb_per_s(GIB, started.elapsed());
    // The disk's speed is the better of the two ways of driving it.
    let disk = [false, true]
        .map(|overlapped| mb_per_s(GIB, disk_write(work.path(), &data, overlapped)))
        .into_iter()
        .fold(0.0, f64::max);
    let limit = sha.min(disk);
    let from_memory = |offset: usize, len: usize| data.slice(offset..offset + len);

    let client = reqwest::Client::new();
    let mut rows = Vec::new();
    let mut peaks = Vec::new();
    for (name, is_cairn) in [("cairn", true), ("@tus/server + @tus/file-store", false)] {
        let target = if is_cairn {
            start_cairn(&work.path().join("cairn"))
        } else {
            start_node(&node_install, &work.path().join("node"))
        };
        let chunked = upload(&client, &target, GIB, PATCH, &from_memory).await;
        let whole = upload(&client, &target, GIB, GIB, &from_memory).await;
        rows.push((name, mb_per_s(GIB, chunked), mb_per_s(GIB, whole)));
        peaks.push((name, peak_rss_mib(target.child.id())));
    }

    // Cairn's memory over a 4 GiB upload, generated on the fly (never held whole).
    let big = start_cairn(&work.path().join("cairn-4g"));
    let generated = |offset: usize, len: usize| Bytes::from(noise(len, offset as u64 + 1));
    upload(&client, &big, 4 * GIB, PATCH, &generated).await;
    let big_peak = peak_rss_mib(big.child.id());
    drop(big);

    println!("limits: sha2-256 one core {sha:.0} MB/s, disk durable write {disk:.0} MB/s, limit {limit:.0} MB/s");
    println!();
    println!("| 1 GiB TUS upload over loopback | 8 MiB PATCHes MB/s | ratio to limit | one PATCH MB/s | ratio to limit | 8 MiB / one |");
    println!("|---|---|---|---|---|---|");
    for (name, chunked, whole) in &rows {
        println!(
            "| {name} | {chunked:.0} | {:.2} | {whole:.0} | {:.2} | {:.2} |",
            chunked / limit,
            whole / limit,
            chunked / whole
        );
    }
    println!();
    println!("| server | peak RSS after the two 1 GiB uploads |");
    println!("|---|---|");
    for (name, peak) in &peaks {
        println!("| {name} | {peak:.1} MiB |");
    }
    println!("| cairn, one 4 GiB upload in 8 MiB PATCHes | {big_peak:.1} MiB |");
    println!();
    let (cairn, node) = (&rows[0], &rows[1]);
    println!(
        "cairn / node: throughput {:.2}x (8 MiB PATCHes), {:.2}x (one PATCH); peak RSS {:.2}x",
        cairn.1 / node.1,
        cairn.2 / node.2,
        peaks[0].1 / peaks[1].1
    );
}
