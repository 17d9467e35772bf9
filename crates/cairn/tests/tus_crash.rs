//! F2: a `204` means the bytes are durable. Each round sends one chunk, SIGKILLs the server as
//! soon as the `204` arrives, restarts it on the same data directory, and checks that HEAD
//! reports at least the acknowledged offset. At the end the upload's CID proves every stored
//! byte is the byte that was sent.
//!
//! `CAIRN_CRASH_ROUNDS` sets the number of rounds (default 50, as CI runs it); the soak script
//! `scripts/tus-crash-soak` runs many more.

use cairn_harness::server;

use server::{content, start, Running};

fn rounds() -> usize {
    std::env::var("CAIRN_CRASH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(50)
}

#[tokio::test]
async fn every_acknowledged_byte_survives_sigkill_right_after_the_204() {
    let rounds = rounds();
    let chunk = 64 * 1024;
    let bytes = content(rounds * chunk, 0x9e37_79b9_7f4a_7c15);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // A short lease: if the killed server had already claimed the completed upload, the next
    // server takes it over within a second.
    let args = ["--workers", "1", "--worker-lease-seconds", "1"];
    let mut running: Running = start(&data, &args);
    let token = running.token.clone();
    let client = reqwest::Client::new();

    let (path, operation) = server::tus_create(&client, &running.upload, &token, bytes.len()).await;

    let mut acknowledged = 0u64;
    for round in 0..rounds {
        let url = format!("{}{path}", running.upload);
        let offset = server::tus_offset(&client, &url, &token).await;
        assert!(
            offset >= acknowledged,
            "round {round}: HEAD says {offset}, but {acknowledged} were acknowledged"
        );
        let start_at = offset as usize;
        let end = (start_at + chunk).min(bytes.len());
        acknowledged =
            server::tus_patch(&client, &url, &token, offset, bytes[start_at..end].to_vec()).await;
        // Kill -9 right after the 204, then come back on the same data directory.
        running.child.kill().unwrap();
        running.child.wait().unwrap();
        running = start(&data, &args);
        if acknowledged == bytes.len() as u64 {
            break;
        }
    }
    assert_eq!(acknowledged, bytes.len() as u64, "all bytes were sent");

    // The stored bytes are exactly the bytes sent: the CID says so.
    let expected = server::cid_of(&bytes);
    let op = server::finished_operation(&running, &token, &operation).await;
    assert_eq!(op["status"], "completed", "{op}");
    assert_eq!(op["cid"], expected);
    server::terminate(running);
}
