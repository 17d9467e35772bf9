//! A full disk on the server's side (a small tmpfs that only the server sees, in a private
//! mount namespace): every write that does not fit answers `507 insufficient_storage` or
//! waits, what was stored stays intact and readable, and Cairn works again as soon as space
//! is freed, without a restart. POST, TUS, an archive's extraction and a compaction.

use cairn_harness::server;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use server::{
    content, finished_operation, namespaces_allowed, operation, post_upload, seen_by,
    start_on_small_disk, tar_of, terminate, Running,
};

async fn upload(running: &Running, bytes: Vec<u8>, name: &str) -> (StatusCode, Value) {
    post_upload(running, &running.token, name, bytes).await
}

/// Fill the disk under `dir` but for about `leave` bytes, with a file the test removes to free
/// the space again.
fn fill(dir: &Path, leave: u64) -> std::path::PathBuf {
    let output = Command::new("stat")
        .args(["-f", "-c", "%a %S"])
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    let (blocks, size) = text.trim().split_once(' ').unwrap();
    let free = blocks.parse::<u64>().unwrap() * size.parse::<u64>().unwrap();
    let filler = dir.join("filler");
    // Written, not sparse: tmpfs counts only pages that hold bytes.
    let len = free.saturating_sub(leave) as usize;
    std::fs::write(&filler, vec![1u8; len]).unwrap();
    filler
}

async fn read(running: &Running, path: &str) -> (StatusCode, Vec<u8>) {
    // A new client each time: a 507 may close its connection before reading the body.
    let response = reqwest::get(format!("{}/ipfs/{path}", running.upload))
        .await
        .unwrap();
    (response.status(), response.bytes().await.unwrap().to_vec())
}

/// `cairn ARGS --data-dir DATA` in the mount namespace of `running`, whatever its outcome.
/// (Not through `/proc/PID/root`: SQLite resolves that path to the directory outside.)
fn admin_output(running: &Running, args: &[&str], data: &Path) -> std::process::Output {
    Command::new("nsenter")
        .arg("--mount")
        .arg("--target")
        .arg(running.child.id().to_string())
        .arg(cairn_harness::server::binary())
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .output()
        .unwrap()
}

#[tokio::test]
async fn a_full_disk_answers_507_keeps_what_was_stored_and_recovers_when_space_is_freed() {
    if !namespaces_allowed() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let running = start_on_small_disk(data.path(), 24, &[]);
    let client = reqwest::Client::new();

    let first = content(8 << 20, 1);
    let (status, body) = upload(&running, first.clone(), "first.bin").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let first_cid = body["cid"].as_str().unwrap().to_owned();

    // A POST that does not fit.
    let (status, body) = upload(&running, content(20 << 20, 2), "second.bin").await;
    assert_eq!(status, StatusCode::INSUFFICIENT_STORAGE, "{body}");
    assert_eq!(body["error"], "insufficient_storage");
    assert!(body["message"].as_str().unwrap().contains("full"), "{body}");

    // A TUS upload that fills the disk: 507, and its bytes stay until it is terminated.
    let created = client
        .post(format!("{}/api/upload/tus", running.upload))
        .bearer_auth(&running.token)
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Length", (20u64 << 20).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let location = created.headers()["location"].to_str().unwrap().to_owned();
    let patch = client
        .patch(&location)
        .bearer_auth(&running.token)
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Offset", "0")
        .header("Content-Type", "application/offset+octet-stream")
        .body(content(20 << 20, 3))
        .send()
        .await
        .unwrap();
    assert_eq!(patch.status(), StatusCode::INSUFFICIENT_STORAGE);
    let body: Value = patch.json().await.unwrap();
    assert_eq!(body["error"], "insufficient_storage");

    // What was stored is intact. On a new connection: the server answered the PATCH before
    // reading its body and closes that connection, which the pool may not have seen yet.
    let back = reqwest::Client::new()
        .get(format!("{}/ipfs/{first_cid}", running.upload))
        .send()
        .await
        .unwrap();
    assert_eq!(back.status(), StatusCode::OK);
    assert!(
        back.bytes().await.unwrap() == first,
        "the first upload changed"
    );

    // Freeing the space (terminating the TUS upload) is enough: no restart.
    let terminated = client
        .delete(&location)
        .bearer_auth(&running.token)
        .header("Tus-Resumable", "1.0.0")
        .send()
        .await
        .unwrap();
    assert_eq!(terminated.status(), StatusCode::NO_CONTENT);
    let (status, body) = upload(&running, content(4 << 20, 4), "third.bin").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    terminate(running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_extraction_waits_on_a_full_disk_and_finishes_once_space_is_freed() {
    if !namespaces_allowed() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let running = start_on_small_disk(
        data.path(),
        24,
        &["--workers", "1", "--worker-lease-seconds", "1"],
    );
    let disk = seen_by(&running, data.path());
    let first = content(1 << 20, 1);
    let (status, body) = upload(&running, first.clone(), "first.bin").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let first_cid = body["cid"].as_str().unwrap().to_owned();

    // The archive is staged whole (it fits); its extraction then finds the disk full: the
    // operation is neither completed nor failed, only waiting.
    let (a, b) = (content(3 << 20, 2), content(3 << 20, 3));
    let archive = tar_of(&[("a.bin", &a), ("b.bin", &b)]);
    let filler = fill(&disk, archive.len() as u64 + (1 << 20));
    let (status, body) = upload(&running, archive, "tree.tar").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = body["operationId"].to_string();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let waiting = operation(&running, &running.token, &id).await;
    assert!(
        waiting["status"] == "queued" || waiting["status"] == "processing",
        "{waiting}"
    );
    assert_eq!(read(&running, &first_cid).await, (StatusCode::OK, first));

    // Space comes back: the same operation completes, and its files read back.
    std::fs::remove_file(filler).unwrap();
    let done = finished_operation(&running, &running.token, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let cid = done["cid"].as_str().unwrap();
    assert_eq!(
        read(&running, &format!("{cid}/a.bin")).await,
        (StatusCode::OK, a)
    );
    assert_eq!(
        read(&running, &format!("{cid}/b.bin")).await,
        (StatusCode::OK, b)
    );
    terminate(running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_on_a_full_disk_fails_cleanly_and_succeeds_once_space_is_freed() {
    if !namespaces_allowed() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let running = start_on_small_disk(data.path(), 24, &["--gc-interval", "0s"]);
    let disk = seen_by(&running, data.path());
    // A directory of a small file and a large one, and the small file alone: once the
    // directory is deleted, its pack is mostly dead and compacting it copies the small file.
    let small = content(600_000, 1);
    let large = content(4 << 20, 2);
    let (status, tree) = upload(
        &running,
        tar_of(&[("small.bin", &small), ("large.bin", &large)]),
        "tree.tar",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{tree}");
    let extracted =
        finished_operation(&running, &running.token, &tree["operationId"].to_string()).await;
    assert_eq!(extracted["status"], "completed", "{extracted}");
    let (status, body) = upload(&running, small.clone(), "small.bin").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let small_cid = body["cid"].as_str().unwrap().to_owned();
    let deleted = reqwest::Client::new()
        .delete(format!(
            "{}/api/uploads/{}",
            running.upload,
            tree["id"].as_str().unwrap()
        ))
        .bearer_auth(&running.token)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);

    // Too little room to copy the small file out: the collector says so and changes nothing.
    let filler = fill(&disk, 100_000);
    let output = admin_output(&running, &["gc", "--json"], data.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "{stderr} {}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(stderr.contains("full"), "{stderr}");
    assert_eq!(
        read(&running, &small_cid).await,
        (StatusCode::OK, small.clone())
    );
    let fsck = admin_output(&running, &["fsck"], data.path());
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stdout)
    );

    // With the space back, the same collection compacts the pack.
    std::fs::remove_file(filler).unwrap();
    let output = admin_output(&running, &["gc", "--json"], data.path());
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["packsCompacted"], 1, "{report}");
    assert_eq!(read(&running, &small_cid).await, (StatusCode::OK, small));
    let fsck = admin_output(&running, &["fsck"], data.path());
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stdout)
    );
    terminate(running);
}
