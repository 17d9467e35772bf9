//! `cairn backup` of a running server while a client keeps uploading, `cairn restore` into a
//! new data directory, and `cairn backup --verify`: everything acknowledged before the backup
//! began comes back (uploads byte for byte, the pin, keys, a name that still signs), `cairn
//! fsck` finds the restored store whole, and one flipped byte fails verification.

use cairn_harness::server;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::json;
use server::*;

const IPNS_RECORD: &str = "application/vnd.ipfs.ipns-record";

/// An upload the server acknowledged: its id, root, bytes and when the answer came.
#[derive(Clone)]
struct Acknowledged {
    id: String,
    cid: String,
    bytes: Vec<u8>,
    at: Instant,
}

async fn upload(running: &Running, token: &str, bytes: Vec<u8>) -> Acknowledged {
    let (id, cid) = stored_upload(running, token, "file.bin", bytes.clone()).await;
    Acknowledged {
        id,
        cid,
        bytes,
        at: Instant::now(),
    }
}

/// `cairn ARGS` to its end.
fn cairn_output(args: &[&str]) -> Output {
    cairn().args(args).output().unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

async fn status_of(request: reqwest::RequestBuilder) -> (u16, String) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_uploads_go_on_restores_everything_acknowledged_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let running = start(&data, &[]);
    let token = running.token.clone();
    let http = reqwest::Client::new();

    // Before the backup: uploads of one block, several blocks and none, a pin, a key, a name.
    let mut before = Vec::new();
    for (i, len) in [1usize, 300_000, 3 << 20, 0].into_iter().enumerate() {
        before.push(upload(&running, &token, content(len, 100 + i as u64)).await);
    }
    let pin: serde_json::Value = http
        .post(format!("{}/pins", running.upload))
        .bearer_auth(&token)
        .json(&json!({"cid": before[1].cid, "name": "kept twice"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(pin["status"], "pinned", "{pin}");
    let (names_api_key, _) =
        create_key(&running, &token, json!({"scopes": ["names", "read"]})).await;
    let created: serde_json::Value = http
        .post(format!("{}/api/names", running.upload))
        .bearer_auth(&names_api_key)
        .json(&json!({"cid": before[0].cid, "label": "site"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let name = created["name"].as_str().expect("a name").to_owned();

    // A client keeps uploading, before, during and after the backup.
    let running = Arc::new(running);
    let acknowledged = Arc::new(Mutex::new(Vec::<Acknowledged>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let uploader = {
        let (running, token) = (running.clone(), token.clone());
        let (acknowledged, stop) = (acknowledged.clone(), stop.clone());
        tokio::spawn(async move {
            let mut seed = 1_000;
            while !stop.load(Ordering::Relaxed) {
                seed += 1;
                let len = 200_000 + (seed as usize % 7) * 50_000;
                let done = upload(&running, &token, content(len, seed)).await;
                acknowledged.lock().unwrap().push(done);
            }
        })
    };
    while acknowledged.lock().unwrap().len() < 5 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    let backup_dir = dir.path().join("backup");
    let backup_started = Instant::now();
    let (data_arg, dest_arg) = (data.display().to_string(), backup_dir.display().to_string());
    let output = tokio::task::spawn_blocking(move || {
        cairn_output(&["backup", &dest_arg, "--data-dir", &data_arg])
    })
    .await
    .unwrap();
    let backup_ended = Instant::now();
    assert!(output.status.success(), "backup: {}", text(&output));
    // Let the client upload a little more after the backup, then stop it.
    let after_backup = acknowledged.lock().unwrap().len();
    while acknowledged.lock().unwrap().len() < after_backup + 2 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    uploader.await.unwrap();
    let during: Vec<Acknowledged> = acknowledged.lock().unwrap().clone();
    let (acked_before, acked_after): (Vec<_>, Vec<_>) =
        during.into_iter().partition(|a| a.at < backup_started);
    let while_running = acked_after.iter().filter(|a| a.at <= backup_ended).count();
    eprintln!(
        "backup took {:?}; {} uploads acknowledged before it, {while_running} while it ran, {} after",
        backup_ended - backup_started,
        acked_before.len(),
        acked_after.len() - while_running,
    );
    before.extend(acked_before);
    let running = Arc::into_inner(running).expect("the uploader is done");
    let (status, _) = terminate(running);
    assert!(status.success());

    // The keys came along with their modes; the backup verifies.
    assert_eq!(mode(&data.join("names.key")), 0o600);
    assert_eq!(mode(&backup_dir.join("names.key")), 0o600);
    let verified = cairn_output(&["backup", "--verify", &backup_dir.display().to_string()]);
    assert!(verified.status.success(), "verify: {}", text(&verified));

    // Restore: refused into a directory that holds something, done into a new one.
    let restored = dir.path().join("restored");
    let backup_arg = backup_dir.display().to_string();
    let refused = cairn_output(&[
        "restore",
        &backup_arg,
        "--data-dir",
        &data.display().to_string(),
    ]);
    assert!(!refused.status.success());
    assert!(text(&refused).contains("not empty"), "{}", text(&refused));
    let restore = cairn_output(&[
        "restore",
        &backup_arg,
        "--data-dir",
        &restored.display().to_string(),
    ]);
    assert!(restore.status.success(), "restore: {}", text(&restore));
    assert_eq!(mode(&restored.join("names.key")), 0o600);

    let again = start(&restored, &[]);
    // Every upload acknowledged before the backup began reads back byte for byte; the rest,
    // if the snapshot caught them, also exactly.
    for upload in &before {
        let response = http
            .get(format!("{}/ipfs/{}", again.upload, upload.cid))
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body = response.bytes().await.unwrap();
        assert_eq!(status, 200, "{} ({} bytes)", upload.cid, upload.bytes.len());
        assert!(body == upload.bytes, "{} reads back changed", upload.cid);
        let op = operation(&again, &token, &upload.id).await;
        assert_eq!(op["cid"], upload.cid.as_str(), "{op}");
    }
    for upload in &acked_after {
        let response = http
            .get(format!("{}/ipfs/{}", again.upload, upload.cid))
            .send()
            .await
            .unwrap();
        if response.status() == 200 {
            assert!(response.bytes().await.unwrap() == upload.bytes);
        }
    }
    // The pin, as it was.
    let request_id = pin["requestid"].as_str().unwrap();
    let pin_again = get_json(&format!("{}/pins/{request_id}", again.upload), &token).await;
    assert_eq!(pin_again["status"], "pinned", "{pin_again}");
    assert_eq!(pin_again["pin"], pin["pin"]);

    // The restricted key still authenticates, for what it may do only.
    let (status, listed) = status_of(
        http.get(format!("{}/api/names", again.upload))
            .bearer_auth(&names_api_key),
    )
    .await;
    assert_eq!(status, 200, "{listed}");
    assert!(listed.contains(&name), "{listed}");
    let (status, _) = status_of(
        http.post(format!("{}/api/upload", again.upload))
            .bearer_auth(&names_api_key)
            .multipart(reqwest::multipart::Form::new().text("file", "x")),
    )
    .await;
    assert_eq!(status, 403, "a names key uploads nothing");

    // The name resolves, and its key (sealed with the names key) signs a new record.
    let (status, _) = status_of(
        http.get(format!("{}/routing/v1/ipns/{name}", again.upload))
            .header("Accept", IPNS_RECORD),
    )
    .await;
    assert_eq!(status, 200, "the name's record after the restore");
    let (status, pointed) = status_of(
        http.put(format!("{}/api/names/{name}", again.upload))
            .bearer_auth(&names_api_key)
            .json(&json!({"cid": before[2].cid})),
    )
    .await;
    assert_eq!(status, 200, "{pointed}");
    let pointed: serde_json::Value = serde_json::from_str(&pointed).unwrap();
    assert_eq!(
        pointed["sequence"],
        created["sequence"].as_u64().unwrap() + 1
    );
    let (status, _) = terminate(again);
    assert!(status.success());

    let fsck = cairn_output(&["fsck", "--data-dir", &restored.display().to_string()]);
    assert!(fsck.status.success(), "fsck: {}", text(&fsck));
    assert!(text(&fsck).contains(" 0 problems"), "{}", text(&fsck));

    // One byte flipped in a pack: verification fails naming the file, and restore refuses.
    let packs = backup_dir.join("packs");
    let pack = std::fs::read_dir(&packs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| std::fs::metadata(p).unwrap().len() > 1000)
        .expect("a pack");
    let mut bytes = std::fs::read(&pack).unwrap();
    bytes[500] ^= 1;
    std::fs::write(&pack, bytes).unwrap();
    let verified = cairn_output(&["backup", "--verify", &backup_arg]);
    assert_eq!(verified.status.code(), Some(1), "{}", text(&verified));
    let pack_name = pack.file_name().unwrap().to_str().unwrap();
    assert!(
        text(&verified).contains(pack_name),
        "names the pack: {}",
        text(&verified)
    );
    let elsewhere = dir.path().join("elsewhere");
    let refused = cairn_output(&[
        "restore",
        &backup_arg,
        "--data-dir",
        &elsewhere.display().to_string(),
    ]);
    assert!(!refused.status.success());
    assert!(text(&refused).contains(pack_name), "{}", text(&refused));
    assert!(!elsewhere.exists(), "nothing restored");
}
