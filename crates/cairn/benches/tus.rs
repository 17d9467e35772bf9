//! TUS upload speed and memory beside tusd, the reference TUS server (v2.9.1, Go, built from
//! the Go module proxy by this bench), in one run on this machine:
//!
//! 1. the limits: single-core sha2-256 over 1 GiB, and the disk writing 1 GiB durably (the
//!    better of one `fdatasync` at the end and `fdatasync`s overlapped with the writing);
//! 2. three cases, each against a fresh server of each kind, the servers alternated round by
//!    round (`TUS_BENCH_ROUNDS`, 3 by default; medians reported): one 1 GiB PATCH; 1 GiB in
//!    8 MiB PATCHes; 16 uploads of 64 MiB at once, in 8 MiB PATCHes. Throughput is the bytes
//!    over the time from the first creation request to the last `204`, sent by the same Rust
//!    client to both. Cairn syncs every PATCH before its `204`; tusd never syncs.
//! 3. each server's peak resident memory (`VmHWM`) over a case; Cairn's is read once every
//!    upload of the case has its CID (its workers import the bytes after the last `204`), so
//!    its figure holds the import too. And Cairn's peak over one 4 GiB upload: it must not
//!    grow with the size.
//!
//! Run: `cargo bench -p cairn --bench tus` (`TUS_BENCH_CASES=one,patches,parallel` for some
//! of the cases). Needs Go (for tusd).

use cairn_test_support::disk;
use cairn_test_support::noise;
use cairn_test_support::tusd::{self, Tusd};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use disk::disk_write;
use noise::noise;
use sha2::{Digest, Sha256};

const MIB: usize = 1 << 20;
const GIB: usize = 1 << 30;
const PATCH: usize = 8 * MIB;
const PARALLEL: usize = 16;
const PARALLEL_SIZE: usize = 64 * MIB;

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

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A server under test: where uploads are created, the token it wants (Cairn's), its process.
struct Target {
    endpoint: String,
    token: Option<String>,
    pid: u32,
    /// The server's process, killed when dropped.
    _running: Box<dyn std::any::Any>,
}

/// Cairn's process, killed on drop (as [`Tusd`] is).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_cairn(data: &Path) -> Target {
    let mut child = cairn_harness::server::cairn()
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
    std::thread::spawn(move || lines.for_each(drop));
    Command::new(cairn_harness::server::binary())
        .args(["account", "set", "default", "--quota", "none", "--data-dir"])
        .arg(data)
        .output()
        .unwrap();
    Target {
        endpoint: format!("{base}/api/upload/tus"),
        token: Some(token),
        pid: child.id(),
        _running: Box::new(Killed(child)),
    }
}

fn start_tusd(data: &Path) -> Target {
    let tusd = Tusd::start(data);
    Target {
        endpoint: tusd.endpoint.clone(),
        token: None,
        pid: tusd.child.id(),
        _running: Box::new(tusd),
    }
}

fn authorised(target: &Target, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    match &target.token {
        Some(token) => request.bearer_auth(token),
        None => request,
    }
}

/// Upload `size` bytes from `content(offset, len)` in PATCHes of `patch` bytes; the upload's
/// URL once its last PATCH is answered `204`.
async fn upload(
    client: &reqwest::Client,
    target: &Target,
    size: usize,
    patch: usize,
    content: &(dyn Fn(usize, usize) -> Bytes + Sync),
) -> String {
    let created = authorised(target, client.post(&target.endpoint))
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
        let origin: String = target
            .endpoint
            .splitn(4, '/')
            .take(3)
            .collect::<Vec<_>>()
            .join("/");
        format!("{origin}{location}")
    };
    let mut offset = 0;
    while offset < size {
        let len = patch.min(size - offset);
        let reply = authorised(target, client.patch(&url))
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
    url
}

/// Wait until Cairn has imported the upload at `url` (its `HEAD` names the CID).
async fn imported(client: &reqwest::Client, target: &Target, url: &str) {
    loop {
        let head = authorised(target, client.head(url))
            .header("Tus-Resumable", "1.0.0")
            .send()
            .await
            .unwrap();
        if head.headers().contains_key("upload-cid") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Each round's MB/s and peak MiB.
type Rounds = Vec<(f64, f64)>;

#[derive(Clone, Copy, PartialEq)]
enum Case {
    OnePatch,
    Patches,
    Parallel,
}

impl Case {
    const ALL: [Case; 3] = [Case::OnePatch, Case::Patches, Case::Parallel];

    /// As `TUS_BENCH_CASES` names it.
    fn key(self) -> &'static str {
        match self {
            Case::OnePatch => "one",
            Case::Patches => "patches",
            Case::Parallel => "parallel",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Case::OnePatch => "1 GiB in one PATCH",
            Case::Patches => "1 GiB in 8 MiB PATCHes",
            Case::Parallel => "16 x 64 MiB at once, 8 MiB PATCHes",
        }
    }
}

/// One case against a fresh server: MB/s to the last `204`, and the server's peak RSS.
async fn run(case: Case, cairn: bool, dir: &Path, data: &Bytes, parts: &[Bytes]) -> (f64, f64) {
    let _ = std::fs::remove_dir_all(dir);
    let target = if cairn {
        start_cairn(dir)
    } else {
        start_tusd(dir)
    };
    let client = reqwest::Client::new();
    let whole = |offset: usize, len: usize| data.slice(offset..offset + len);
    let started = Instant::now();
    let urls = match case {
        Case::OnePatch => vec![upload(&client, &target, GIB, GIB, &whole).await],
        Case::Patches => vec![upload(&client, &target, GIB, PATCH, &whole).await],
        Case::Parallel => {
            let uploads = parts.iter().map(|part| {
                let (client, target) = (&client, &target);
                async move {
                    let slice = |offset: usize, len: usize| part.slice(offset..offset + len);
                    upload(client, target, PARALLEL_SIZE, PATCH, &slice).await
                }
            });
            futures_util::future::join_all(uploads).await
        }
    };
    let elapsed = started.elapsed();
    let at_last_204 = peak_rss_mib(target.pid);
    if cairn {
        for url in &urls {
            imported(&client, &target, url).await;
        }
        eprintln!(
            "  cairn's CIDs {:.2} s after the last 204",
            (started.elapsed() - elapsed).as_secs_f64()
        );
    }
    let bytes = match case {
        Case::Parallel => PARALLEL * PARALLEL_SIZE,
        _ => GIB,
    };
    let peak = peak_rss_mib(target.pid);
    if cairn {
        eprintln!(
            "  cairn's peak at the last 204: {at_last_204:.1} MiB; once imported: {peak:.1} MiB"
        );
    }
    drop(target);
    let _ = std::fs::remove_dir_all(dir);
    (mb_per_s(bytes, elapsed), peak)
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::var("TUS_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    // Which cases run (`one,patches,parallel`); all by default.
    let wanted = std::env::var("TUS_BENCH_CASES").unwrap_or_default();
    let cases: Vec<Case> = Case::ALL
        .into_iter()
        .filter(|case| wanted.is_empty() || wanted.split(',').any(|w| w == case.key()))
        .collect();
    let base: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-tmp");
    std::fs::create_dir_all(&base).unwrap();
    let work = tempfile::tempdir_in(&base).unwrap();
    tusd::binary();

    let data = Bytes::from(noise(GIB, 3));
    let parts: Vec<Bytes> = (0..PARALLEL)
        .map(|i| Bytes::from(noise(PARALLEL_SIZE, 100 + i as u64)))
        .collect();
    let started = Instant::now();
    std::hint::black_box(Sha256::digest(&data));
    let sha = mb_per_s(GIB, started.elapsed());
    // The disk's speed is the better of the two ways of driving it.
    let disk = [false, true]
        .map(|overlapped| mb_per_s(GIB, disk_write(work.path(), &data, overlapped)))
        .into_iter()
        .fold(0.0, f64::max);
    let limit = sha.min(disk);

    // (case, cairn?) -> each round's (MB/s, peak MiB).
    let mut results: Vec<((Case, bool), Rounds)> = cases
        .iter()
        .flat_map(|&case| [((case, true), Vec::new()), ((case, false), Vec::new())])
        .collect();
    for round in 0..rounds {
        for &case in &cases {
            // Alternated: Cairn first in even rounds, tusd first in odd ones.
            let order = if round % 2 == 0 {
                [true, false]
            } else {
                [false, true]
            };
            for cairn in order {
                let dir = work.path().join(if cairn { "cairn" } else { "tusd" });
                let measured = run(case, cairn, &dir, &data, &parts).await;
                eprintln!(
                    "round {} {} {}: {:.0} MB/s, peak {:.1} MiB",
                    round + 1,
                    if cairn { "cairn" } else { "tusd" },
                    case.name(),
                    measured.0,
                    measured.1
                );
                let slot = results
                    .iter_mut()
                    .find(|(key, _)| *key == (case, cairn))
                    .unwrap();
                slot.1.push(measured);
            }
        }
    }

    // Cairn's memory over a 4 GiB upload, generated on the fly (never held whole).
    let big = start_cairn(&work.path().join("cairn-4g"));
    let generated = |offset: usize, len: usize| Bytes::from(noise(len, offset as u64 + 1));
    upload(&reqwest::Client::new(), &big, 4 * GIB, PATCH, &generated).await;
    let big_peak = peak_rss_mib(big.pid);
    drop(big);

    let of = |case: Case, cairn: bool| -> (f64, f64) {
        let runs = &results
            .iter()
            .find(|(key, _)| *key == (case, cairn))
            .unwrap()
            .1;
        (
            median(runs.iter().map(|r| r.0).collect()),
            median(runs.iter().map(|r| r.1).collect()),
        )
    };
    println!(
        "limits: sha2-256 one core {sha:.0} MB/s, disk durable write {disk:.0} MB/s, limit \
         {limit:.0} MB/s; tusd {}; medians of {rounds} rounds",
        tusd::RELEASE
    );
    println!();
    println!("| case | Cairn MB/s | tusd MB/s | Cairn / tusd | Cairn / limit | Cairn peak MiB | tusd peak MiB | Cairn / tusd memory |");
    println!("|---|---|---|---|---|---|---|---|");
    for &case in &cases {
        let (cairn, tusd) = (of(case, true), of(case, false));
        println!(
            "| {} | {:.0} | {:.0} | {:.2} | {:.2} | {:.1} | {:.1} | {:.2} |",
            case.name(),
            cairn.0,
            tusd.0,
            cairn.0 / tusd.0,
            cairn.0 / limit,
            cairn.1,
            tusd.1,
            cairn.1 / tusd.1
        );
    }
    println!();
    println!("Cairn, one 4 GiB upload in 8 MiB PATCHes: peak {big_peak:.1} MiB");
}
