//! Nothing lost (issue 38): a byte flipped on disk is found by scrubbing (`--scrub-interval`),
//! reported on `GET /api/node` and `/metrics`, and repaired from a second node over Bitswap;
//! `cairn fsck --deep` names what the pack store and the index lack of each other.

use cairn_harness::server;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use cairn_test_support::netns;
use server::{cairn, content, post_upload, start, terminate, Running};

/// The non-empty packs in `data`'s pack store (empty ones are made ahead for writers).
fn packs_in(data: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(data.join("packs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| std::fs::metadata(p).unwrap().len() > 0)
        .collect()
}

fn fsck(data: &Path, extra: &[&str]) -> Output {
    cairn()
        .arg("fsck")
        .args(extra)
        .arg("--data-dir")
        .arg(data)
        .output()
        .unwrap()
}

fn upload(running: &Running, name: &str, bytes: Vec<u8>) -> String {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (status, body) = runtime.block_on(post_upload(running, &running.token, name, bytes));
    assert!(status.is_success(), "{status}: {body}");
    body["cid"].as_str().unwrap().to_owned()
}

fn get(url: &str, token: Option<&str>) -> (reqwest::StatusCode, Vec<u8>) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let mut request = reqwest::Client::new().get(url);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        (response.status(), response.bytes().await.unwrap().to_vec())
    })
}

/// The value of the sample `name` on `/metrics` of `running`.
fn metric(running: &Running, name: &str) -> f64 {
    let (_, text) = get(&format!("{}/metrics", running.upload), None);
    let text = String::from_utf8(text).unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{text}"))
        .parse()
        .unwrap()
}

/// `cairn serve` on `data` with its IPFS node on a loopback TCP port; its `/p2p/` address.
fn start_node(data: &Path, extra: &[&str]) -> (Running, String) {
    let mut args = vec!["--p2p-listen", "/ip4/127.0.0.1/tcp/0"];
    args.extend_from_slice(extra);
    let mut running = start(data, &args);
    let addr = running.printed("p2p listening on ");
    (running, addr)
}

#[test]
fn a_flipped_byte_is_found_by_scrubbing_and_repaired_from_a_second_node() {
    netns::isolated(
        "a_flipped_byte_is_found_by_scrubbing_and_repaired_from_a_second_node",
        || {
            let work = tempfile::tempdir().unwrap();
            let file = content(3 << 20, 38);
            let (b, b_addr) = start_node(&work.path().join("b"), &[]);
            let cid = upload(&b, "data.bin", file.clone());

            let data_a = work.path().join("a");
            let (a, _) = start_node(
                &data_a,
                &[
                    "--p2p-bootstrap",
                    &b_addr,
                    "--scrub-interval",
                    "1s",
                    "--scrub-rate",
                    "1000000000",
                ],
            );
            assert_eq!(upload(&a, "data.bin", file.clone()), cid, "the same CID");
            // Rot one byte in the middle of A's pack: inside one of the file's leaves.
            let [pack] = &packs_in(&data_a)[..] else {
                panic!("one pack: {:?}", packs_in(&data_a));
            };
            let mut bytes = std::fs::read(pack).unwrap();
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0x01;
            std::fs::write(pack, bytes).unwrap();
            let pack_name = pack.file_name().unwrap().to_str().unwrap().to_owned();

            // A's next pass finds it, and fetches a good copy from B.
            let node_url = format!("{}/api/node", a.upload);
            let deadline = Instant::now() + Duration::from_secs(90);
            let scrub = loop {
                let (status, body) = get(&node_url, Some(&a.token));
                assert!(status.is_success(), "{status}");
                let node: serde_json::Value = serde_json::from_slice(&body).unwrap();
                let scrub = node["scrub"].clone();
                if scrub["damaged"][0]["repaired"] == true {
                    break scrub;
                }
                assert!(
                    Instant::now() < deadline,
                    "not repaired within 90 s: {scrub}"
                );
                std::thread::sleep(Duration::from_millis(200));
            };
            assert_eq!(scrub["enabled"], true);
            assert_eq!(scrub["rateBytesPerSecond"], 1_000_000_000);
            assert!(scrub["passesCompleted"].as_u64().unwrap() >= 1, "{scrub}");
            assert!(scrub["lastPassFinishedAt"].is_string(), "{scrub}");
            assert!(scrub["bytesChecked"].as_u64().unwrap() >= file.len() as u64);
            let damaged = scrub["damaged"].as_array().unwrap();
            assert_eq!(damaged.len(), 1, "{scrub}");
            assert_eq!(damaged[0]["pack"], pack_name.as_str());
            assert!(damaged[0]["cid"].as_str().unwrap().starts_with("bafk"));
            assert!(!damaged[0]["error"].as_str().unwrap().is_empty());
            assert_eq!(metric(&a, "cairn_scrub_damaged_blocks_total"), 1.0);
            assert_eq!(metric(&a, "cairn_scrub_repaired_blocks_total"), 1.0);
            assert!(metric(&a, "cairn_scrub_blocks_total") >= 4.0);
            assert!(metric(&a, "cairn_scrub_bytes_total") >= file.len() as f64);

            // A serves the file whole, and its store checks clean; later passes find nothing
            // more.
            let (status, served) = get(&format!("{}/ipfs/{cid}", a.upload), None);
            assert!(status.is_success(), "{status}");
            assert!(served == file, "A serves other bytes than were uploaded");
            let passes = |node: &serde_json::Value| node["scrub"]["passesCompleted"].as_u64();
            let repaired_in = scrub["passesCompleted"].as_u64().unwrap();
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let (_, body) = get(&node_url, Some(&a.token));
                let node: serde_json::Value = serde_json::from_slice(&body).unwrap();
                // Two more: at least one whole pass after the repair.
                if passes(&node).unwrap() >= repaired_in + 2 {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "no later pass within 30 s: {node}"
                );
                std::thread::sleep(Duration::from_millis(200));
            }
            assert_eq!(metric(&a, "cairn_scrub_damaged_blocks_total"), 1.0);
            assert!(terminate(a).0.success());
            let checked = fsck(&data_a, &[]);
            assert!(
                checked.status.success(),
                "fsck after the repair: {}",
                String::from_utf8_lossy(&checked.stdout)
            );
            // Where the pass stands is kept for the next start.
            let kept: serde_json::Value =
                serde_json::from_slice(&std::fs::read(data_a.join("scrub.json")).unwrap()).unwrap();
            assert!(kept["lastPassFinishedAtMs"].as_i64().unwrap() > 0, "{kept}");
            terminate(b);
        },
    );
}

#[test]
fn fsck_deep_names_a_missing_pack_and_an_orphan_pack() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let running = start(&data, &[]);
    upload(&running, "one.bin", content(200_000, 1));
    upload(&running, "two.bin", content(300_000, 2));
    assert!(terminate(running).0.success());
    let packs = packs_in(&data);
    assert_eq!(packs.len(), 2, "{packs:?}");
    assert!(fsck(&data, &["--deep"]).status.success());

    // As a restore from a database copy and a bucket copy of different moments leaves it:
    // one pack the index names is not there, one that is there the index does not name.
    let lost = packs[0].file_name().unwrap().to_str().unwrap().to_owned();
    std::fs::remove_file(&packs[0]).unwrap();
    std::fs::copy(&packs[1], data.join("packs/0123456789abcdef.car")).unwrap();

    let deep = fsck(&data, &["--deep"]);
    let printed = String::from_utf8(deep.stdout).unwrap();
    assert_eq!(deep.status.code(), Some(1), "{printed}");
    assert!(
        printed.contains(&format!("pack {lost}: missing from the pack store")),
        "{printed}"
    );
    assert!(
        printed.contains("note: pack 0123456789abcdef.car ("),
        "{printed}"
    );
    assert!(printed.contains(", 1 orphan packs"), "{printed}");

    let deep_json = fsck(&data, &["--deep", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&deep_json.stdout).unwrap();
    assert_eq!(
        report["orphanPacks"],
        serde_json::json!([{"name": "0123456789abcdef.car", "bytes": std::fs::metadata(&packs[1]).unwrap().len()}])
    );

    // Plain fsck says what it always said: the lost blocks, nothing of the orphan.
    let plain = fsck(&data, &[]);
    let printed = String::from_utf8(plain.stdout).unwrap();
    assert_eq!(plain.status.code(), Some(1), "{printed}");
    assert!(!printed.contains("orphan"), "{printed}");
    assert!(
        !printed.contains("missing from the pack store"),
        "{printed}"
    );
}

/// The same on PostgreSQL and S3, as a restore of a dump and a bucket copy taken at different
/// moments leaves them.
#[test]
fn fsck_deep_checks_a_postgres_and_s3_deployment() {
    use cairn_store::blobs::BlobStore;
    use cairn_test_support::moto::Moto;
    use cairn_test_support::postgres::Database;
    use std::io::Write;

    let moto = Moto::start();
    let bucket = moto.bucket("scrub-deep");
    let database = Database::create("scrub_deep");
    let shared = ["--database-url", &database.url, "--store", &bucket];
    let dir = tempfile::tempdir().unwrap();
    let running = start(&dir.path().join("node"), &shared);
    upload(&running, "one.bin", content(200_000, 3));
    assert!(terminate(running).0.success());
    let deep = |extra: &[&str]| {
        cairn()
            .args(["fsck", "--deep"])
            .args(shared)
            .args(extra)
            .output()
            .unwrap()
    };
    let clean = deep(&[]);
    assert!(
        clean.status.success(),
        "{}",
        String::from_utf8_lossy(&clean.stdout)
    );

    let packs = cairn_store::s3::S3Blobs::open(&bucket, "packs").unwrap();
    let [lost] = &packs.list(Duration::ZERO).unwrap()[..] else {
        panic!("one pack");
    };
    packs.delete(lost).unwrap();
    let mut orphan = packs.create("0123456789abcdef.car").unwrap();
    orphan.write_all(b"written after the dump").unwrap();
    orphan.commit().unwrap();

    let checked = deep(&[]);
    let printed = String::from_utf8(checked.stdout).unwrap();
    assert_eq!(checked.status.code(), Some(1), "{printed}");
    assert!(
        printed.contains(&format!("pack {lost}: missing from the pack store")),
        "{printed}"
    );
    assert!(
        printed.contains("note: pack 0123456789abcdef.car (22 bytes)"),
        "{printed}"
    );
}
