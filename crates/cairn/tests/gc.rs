//! Garbage collection on the real binary: `cairn gc` beside a running server frees the disk a
//! deleted upload used unless another account still stores it, compacts a pack that is mostly
//! dead, keeps every live byte readable, and survives being killed at any moment (`cairn
//! fsck` stays clean).

use cairn_harness::server;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use server::{admin, cairn, content, create_account, start, stored_upload, terminate, Running};

/// Bytes of every pack file in the data directory.
fn pack_bytes(data: &Path) -> u64 {
    std::fs::read_dir(data.join("packs"))
        .unwrap()
        .map(|entry| entry.unwrap().metadata().unwrap().len())
        .sum()
}

fn gc(data: &Path) -> serde_json::Value {
    serde_json::from_slice(&admin(&["gc", "--json"], data)).unwrap()
}

fn fsck(data: &Path) -> Output {
    cairn()
        .args(["fsck", "--data-dir"])
        .arg(data)
        .output()
        .unwrap()
}

fn assert_fsck_clean(data: &Path) {
    let output = fsck(data);
    assert!(
        output.status.success(),
        "fsck: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

async fn delete(running: &Running, token: &str, id: &str) {
    let response = reqwest::Client::new()
        .delete(format!("{}/api/uploads/{id}", running.upload))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204, "deleting {id}");
}

async fn read(running: &Running, path: &str) -> Vec<u8> {
    let response = reqwest::get(format!("{}/ipfs/{path}", running.upload))
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "reading {path}");
    response.bytes().await.unwrap().to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_frees_what_no_one_keeps_and_compacts_mostly_dead_packs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let running = start(&data, &["--gc-interval", "0s"]);
    let first = running.token.clone();
    let second = create_account(&data, "second", &[]);

    // The same 3 MB in two accounts: stored once.
    let shared = content(3_000_000, 1);
    let (first_shared, shared_cid) =
        stored_upload(&running, &first, "shared.bin", shared.clone()).await;
    let (second_shared, _) = stored_upload(&running, &second, "shared.bin", shared.clone()).await;
    // A directory of a small file and a large one; the small file is also uploaded alone.
    let small = content(200_000, 2);
    let large = content(4_000_000, 3);
    let archive = server::tar_of(&[("small.bin", &small), ("large.bin", &large)]);
    let (tree, tree_cid) = stored_upload(&running, &first, "tree.tar", archive).await;
    let (_, small_cid) = stored_upload(&running, &first, "small.bin", small.clone()).await;
    let stored = pack_bytes(&data);
    assert!(stored > 7_200_000, "{stored}");

    // Nothing is dead yet.
    let report = gc(&data);
    assert_eq!(report["deadBlocks"], 0, "{report}");
    assert_eq!(pack_bytes(&data), stored);

    // One account deletes the shared content; the other still stores it: nothing to free.
    delete(&running, &first, &first_shared).await;
    let report = gc(&data);
    assert_eq!(report["deadBlocks"], 0, "{report}");
    assert_eq!(pack_bytes(&data), stored);
    assert_eq!(read(&running, &shared_cid).await, shared);

    // Now no one does: its pack goes.
    delete(&running, &second, &second_shared).await;
    let dry =
        serde_json::from_slice::<serde_json::Value>(&admin(&["gc", "--dry-run", "--json"], &data))
            .unwrap();
    assert_eq!(dry["packsDeleted"], 1, "{dry}");
    assert_eq!(pack_bytes(&data), stored, "a dry run changes nothing");
    let report = gc(&data);
    assert_eq!(report["packsDeleted"], 1, "{report}");
    let after_shared = pack_bytes(&data);
    assert!(
        stored - after_shared >= shared.len() as u64,
        "{stored} -> {after_shared}"
    );

    // Deleting the directory leaves its pack mostly dead, but the small file lives on: the
    // pack is compacted, and the small file is still read byte for byte.
    delete(&running, &first, &tree).await;
    let report = gc(&data);
    assert_eq!(report["packsCompacted"], 1, "{report}");
    assert!(report["bytesCopied"].as_u64().unwrap() >= small.len() as u64);
    let after_tree = pack_bytes(&data);
    assert!(
        after_shared - after_tree >= large.len() as u64,
        "{after_shared} -> {after_tree}"
    );
    assert_eq!(read(&running, &small_cid).await, small);
    let gone = reqwest::get(format!("{}/ipfs/{tree_cid}?format=car", running.upload))
        .await
        .unwrap();
    assert!(!gone.status().is_success(), "{}", gone.status());
    assert_fsck_clean(&data);

    // Collecting again finds nothing more.
    let report = gc(&data);
    assert_eq!(report["deadBlocks"], 0, "{report}");
    assert_eq!(pack_bytes(&data), after_tree);
}

/// The gateway suite's own dag-cbor document: a dag-cbor root whose links reach UnixFS files.
const DAG_CBOR_WITH_LINKS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../server/tests/conformance/trustless_gateway_car/dir-with-dag-cbor-with-links.car"
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dag_of_another_codec_is_counted_kept_and_collected_as_any() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let running = start(&data, &["--gc-interval", "0s"]);
    let token = running.token.clone();
    let car = std::fs::read(DAG_CBOR_WITH_LINKS).unwrap();
    let (id, root) = stored_upload(&running, &token, "document.car", car.clone()).await;
    let blocks = server::dag_cids(&running.upload, &root).await;
    assert!(
        blocks.iter().any(|cid| cid.codec() == 0x71),
        "the DAG holds dag-cbor blocks: {blocks:?}"
    );

    // Counted: what the account stores is what the CAR's blocks hold, each once.
    let mut held = std::collections::HashMap::new();
    for block in cairn_car::CarReader::new(&car[..], cairn_car::CarLimits::default()).unwrap() {
        let (cid, bytes) = block.unwrap();
        held.insert(cid, bytes.len() as u64);
    }
    let usage = server::get_json(&format!("{}/api/usage", running.account), &token).await;
    assert_eq!(usage["storedBytes"], held.values().sum::<u64>(), "{usage}");

    // Kept while uploaded, every block read back whole; collected once deleted.
    assert_eq!(gc(&data)["deadBlocks"], 0);
    assert_eq!(server::dag_cids(&running.upload, &root).await, blocks);
    delete(&running, &token, &id).await;
    let report = gc(&data);
    assert_eq!(report["deadBlocks"], held.len(), "{report}");
    let gone = reqwest::get(format!("{}/ipfs/{root}?format=raw", running.upload))
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
    assert_fsck_clean(&data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_collects_on_its_own_every_gc_interval() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let running = start(&data, &["--gc-interval", "1s"]);
    let token = running.token.clone();
    let (id, _) = stored_upload(&running, &token, "a.bin", content(1_000_000, 7)).await;
    let stored = pack_bytes(&data);
    assert!(stored > 1_000_000);
    delete(&running, &token, &id).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while pack_bytes(&data) >= 1_000_000 {
        assert!(Instant::now() < deadline, "not collected in 30 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let metrics = reqwest::get(format!("{}/metrics", running.upload))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let reclaimed = metrics
        .lines()
        .find(|l| l.starts_with("cairn_gc_reclaimed_bytes_total "))
        .unwrap_or_else(|| panic!("{metrics}"));
    let bytes: u64 = reclaimed.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(bytes >= 1_000_000, "{reclaimed}");
}

/// `cairn gc` killed (SIGKILL) at a random moment, round after round, while the server keeps
/// taking uploads and deletes: every live upload stays readable and `cairn fsck` clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_killed_at_any_moment_loses_no_live_block() {
    let rounds: usize = std::env::var("CAIRN_GC_KILL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let running = start(
        &data,
        &["--gc-interval", "0s", "--uploads-per-minute", "100000"],
    );
    let token = running.token.clone();
    let mut live: Vec<(String, String, Vec<u8>)> = Vec::new();
    let mut seed = 100;
    let mut random = rand_from(std::process::id() as u64);
    // Rounds killed before the collection ended, and rounds where it had freed some bytes.
    let (mut interrupted, mut reclaimed_some) = (0, 0);
    for round in 0..rounds {
        // New garbage every round: directories whose files partly live on (compactions),
        // whole uploads deleted (dead packs), and content kept.
        for _ in 0..3 {
            seed += 1;
            let kept = content(150_000 + (seed as usize % 7) * 10_000, seed);
            let dropped = content(600_000, seed + 1000);
            let archive = server::tar_of(&[("kept.bin", &kept), ("dropped.bin", &dropped)]);
            let (tree, _) = stored_upload(&running, &token, "tree.tar", archive).await;
            let (id, cid) = stored_upload(&running, &token, "kept.bin", kept.clone()).await;
            live.push((id, cid, kept));
            delete(&running, &token, &tree).await;
        }
        if round % 3 == 2 {
            let (id, _, _) = live.remove(random() as usize % live.len());
            delete(&running, &token, &id).await;
        }
        // A dry run (the walk and the plan) takes most of what a collection takes: kill
        // anywhere up to three times as long.
        let timed = Instant::now();
        admin(&["gc", "--dry-run"], &data);
        let whole = timed.elapsed() * 3;
        let before = pack_bytes(&data);
        let mut child = cairn()
            .args(["gc", "--data-dir"])
            .arg(&data)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let delay = whole.mul_f64((random() % 1000) as f64 / 1000.0);
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            interrupted += 1;
        }
        let _ = child.kill();
        child.wait().unwrap();
        if pack_bytes(&data) < before {
            reclaimed_some += 1;
        }
        assert_fsck_clean(&data);
        for (_, cid, bytes) in &live {
            assert_eq!(&read(&running, cid).await, bytes, "round {round}: {cid}");
        }
    }
    eprintln!(
        "{rounds} rounds: {interrupted} collections killed before they finished, \
         {reclaimed_some} had freed bytes"
    );
    assert!(interrupted > 0, "no collection was interrupted");
    // A collection left to finish after all that removes every dead byte; the compacted
    // packs that killed collections wrote and never referenced go with the orphan sweep of
    // the next start (`serve.rs`), as they would on a node.
    std::thread::sleep(Duration::from_millis(100));
    let before = pack_bytes(&data);
    gc(&data);
    assert!(terminate(running).0.success());
    let running = start(&data, &["--gc-interval", "0s"]);
    let kept: u64 = live.iter().map(|(_, _, b)| b.len() as u64).sum();
    let after = pack_bytes(&data);
    assert!(after <= before);
    assert!(
        after < kept * 2 + 1_000_000,
        "{after} bytes left for {kept} live"
    );
    assert_fsck_clean(&data);
    for (_, cid, bytes) in &live {
        assert_eq!(&read(&running, cid).await, bytes);
    }
}

/// xorshift64 from `seed`.
fn rand_from(seed: u64) -> impl FnMut() -> u64 {
    let mut stream = cairn_test_support::xorshift::XorShift64::new(seed);
    move || stream.next_u64()
}

/// `cairn fsck` finds what storage lost or damaged, says where, and exits 1; a collection
/// refuses to guess past a damaged block that links to others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fsck_lists_damaged_and_missing_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let running = start(&data, &["--gc-interval", "0s"]);
    let token = running.token.clone();
    // Two files in a directory: its pack holds both files' leaves and the directory node.
    let archive = server::tar_of(&[
        ("a.bin", &content(300_000, 21)),
        ("b.bin", &content(300_000, 22)),
    ]);
    let (_, tree_cid) = stored_upload(&running, &token, "tree.tar", archive).await;
    let (_, single_cid) = stored_upload(&running, &token, "single.bin", content(200_000, 23)).await;
    assert_fsck_clean(&data);
    // Empty files are made ahead for packs to be written into.
    let packs: Vec<_> = std::fs::read_dir(data.join("packs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| std::fs::metadata(p).unwrap().len() > 0)
        .collect();
    assert_eq!(packs.len(), 2);
    let (tree_pack, single_pack) = {
        let big = |p: &std::path::PathBuf| std::fs::metadata(p).unwrap().len() > 500_000;
        let tree = packs.iter().find(|p| big(p)).unwrap().clone();
        let single = packs.iter().find(|p| !big(p)).unwrap().clone();
        (tree, single)
    };
    // Rot one byte near the end of the tree's pack (the directory node is written last),
    // and lose the single file's pack.
    let mut bytes = std::fs::read(&tree_pack).unwrap();
    let at = bytes.len() - 20;
    bytes[at] ^= 0xff;
    std::fs::write(&tree_pack, bytes).unwrap();
    std::fs::remove_file(&single_pack).unwrap();

    let output = fsck(&data);
    assert_eq!(output.status.code(), Some(1));
    let printed = String::from_utf8(output.stdout).unwrap();
    assert!(printed.contains(&format!("root {tree_cid}")), "{printed}");
    assert!(printed.contains(&format!("root {single_cid}")), "{printed}");
    assert!(printed.contains("2 problems"), "{printed}");

    let collected = cairn()
        .args(["gc", "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!collected.status.success());
    let said = String::from_utf8_lossy(&collected.stderr);
    assert!(said.contains("cairn fsck"), "{said}");
}
