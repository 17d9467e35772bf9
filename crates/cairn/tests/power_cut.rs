//! A `204` or a `200` means the bytes are on stable storage, not only in the page cache.
//!
//! The server runs under an LD_PRELOAD shim (`power_cut/shim.c`) that records what each
//! `fsync`/`fdatasync` made durable, in POSIX's strict model: a file's bytes as of its last
//! sync, a directory's names as of its last sync. After every acknowledgement the server is
//! killed and its data directory rebuilt from that record alone, as a disk would hold it after
//! losing power: every byte written but not synced is gone, and so is every name whose
//! directory was not synced. The next server starts on that directory, and every acknowledged
//! byte must be there.
//!
//! A shim rather than `dm-flakey`: the machines this runs on have no device-mapper in their
//! kernel (no `/dev/mapper`, no modules to load), and a shim needs no root. Its limit: it sees
//! only the calls a process makes through libc, which is how Rust's `std` and SQLite sync.
//!
//! `CAIRN_POWER_CUT_ROUNDS` sets the number of cuts (default 12).

use cairn_harness::server;

use std::path::{Path, PathBuf};
use std::process::Command;

use server::{content, start, start_command, Running};

fn rounds() -> usize {
    std::env::var("CAIRN_POWER_CUT_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(12)
}

/// Build the shim with the system's C compiler.
fn build_shim(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/power_cut/shim.c");
    let shim = dir.join("power-cut.so");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o"])
        .arg(&shim)
        .arg(&source)
        .arg("-ldl")
        .status()
        .expect("run cc (gcc is on every machine of this kind)");
    assert!(status.success(), "building {}", source.display());
    shim
}

/// `cairn serve` on `data`, recording what it makes durable in `shadow`.
fn start_recorded(shim: &Path, data: &Path, shadow: &Path) -> Running {
    std::fs::create_dir_all(shadow).unwrap();
    let mut command = server::cairn();
    command
        .args(server::serve_args(data))
        .args(["--workers", "1", "--worker-lease-seconds", "1"])
        .env("LD_PRELOAD", shim)
        .env("CAIRN_POWER_CUT_ROOT", data.canonicalize().unwrap())
        .env("CAIRN_POWER_CUT_SHADOW", shadow);
    start_command(command)
}

/// The data directory as the disk holds it after the cut: rebuilt at `target` from `shadow`.
fn rebuild_after_cut(shadow: &Path, target: &Path) {
    let root = std::fs::read_to_string(shadow.join("root")).unwrap();
    rebuild_dir(shadow, root.trim(), target);
}

fn rebuild_dir(shadow: &Path, inode: &str, target: &Path) {
    std::fs::create_dir(target).unwrap();
    // A directory never synced keeps no names.
    let Ok(entries) = std::fs::read_to_string(shadow.join("dirs").join(inode)) else {
        return;
    };
    for line in entries.lines() {
        let mut fields = line.splitn(3, ' ');
        let (kind, inode, name) = (
            fields.next().unwrap(),
            fields.next().unwrap(),
            fields.next().unwrap(),
        );
        let path = target.join(name);
        match kind {
            "d" => rebuild_dir(shadow, inode, &path),
            // A file never synced is empty.
            _ => match std::fs::copy(shadow.join("files").join(inode), &path) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    std::fs::File::create(&path).unwrap();
                }
                Err(e) => panic!("rebuilding {}: {e}", path.display()),
            },
        }
    }
}

/// Every `(cid, bytes)` of `posted` is served whole by the gateway.
async fn assert_served(
    client: &reqwest::Client,
    running: &Running,
    posted: &[(String, Vec<u8>)],
    when: &str,
) {
    for (cid, sent) in posted {
        let got = client
            .get(format!("{}/ipfs/{cid}", running.upload))
            .send()
            .await
            .unwrap();
        assert_eq!(got.status(), 200, "{when}: {cid}");
        assert_eq!(&got.bytes().await.unwrap()[..], &sent[..], "{when}: {cid}");
    }
}

#[tokio::test]
async fn every_acknowledged_byte_survives_losing_what_was_not_synced() {
    let rounds = rounds();
    let temp = tempfile::tempdir().unwrap();
    let shim = build_shim(temp.path());
    let chunk = 192 * 1024 + 7;
    let bytes = content(rounds * chunk, 0x51_7cc1_b727_220a);
    let client = reqwest::Client::new();

    // The starting state: an account, on a directory the disk holds whole.
    let mut data = temp.path().join("data-0");
    let first = start(&data, &[]);
    let token = first.token.clone();
    server::terminate(first);
    assert!(Command::new("sync").status().unwrap().success());

    let mut tus_path: Option<String> = None;
    let mut operation = String::new();
    let mut posted: Vec<(String, Vec<u8>)> = Vec::new();
    let mut acknowledged = 0u64;
    for round in 0..rounds {
        let shadow = temp.path().join(format!("shadow-{round}"));
        let running = start_recorded(&shim, &data, &shadow);

        // Everything acknowledged before the last cut is here.
        assert_served(&client, &running, &posted, &format!("round {round}")).await;
        if tus_path.is_none() {
            let (path, id) =
                server::tus_create(&client, &running.upload, &token, bytes.len()).await;
            tus_path = Some(path);
            operation = id;
        }
        let path = tus_path.as_deref().unwrap();
        let url = format!("{}{path}", running.upload);
        let offset = server::tus_offset(&client, &url, &token).await;
        assert!(
            offset >= acknowledged,
            "round {round}: HEAD says {offset} after the cut, but {acknowledged} were acknowledged"
        );

        // One more TUS chunk and one small POST, each acknowledged; then the power goes.
        let end = (offset as usize + chunk).min(bytes.len());
        acknowledged = server::tus_patch(
            &client,
            &url,
            &token,
            offset,
            bytes[offset as usize..end].to_vec(),
        )
        .await;
        let small = content(5000 + round, round as u64 + 1);
        let (status, body) =
            server::post_upload(&running, &token, &format!("r{round}.bin"), small.clone()).await;
        assert_eq!(status, 200, "{body}");
        posted.push((body["cid"].as_str().unwrap().to_owned(), small));

        let mut running = running;
        running.child.kill().unwrap();
        running.child.wait().unwrap();
        data = temp.path().join(format!("data-{}", round + 1));
        rebuild_after_cut(&shadow, &data);
        if acknowledged == bytes.len() as u64 {
            break;
        }
    }
    assert_eq!(acknowledged, bytes.len() as u64, "all bytes were sent");

    // After the last cut: the upload completes, and its CID proves every stored byte is the
    // byte that was sent.
    let running = start(&data, &["--workers", "1", "--worker-lease-seconds", "1"]);
    let expected = server::cid_of(&bytes);
    let op = server::finished_operation(&running, &token, &operation).await;
    assert_eq!(op["status"], "completed", "{op}");
    assert_eq!(op["cid"], expected);
    let found = client
        .get(format!("{}/ipfs/{expected}", running.upload))
        .send()
        .await
        .unwrap();
    assert_eq!(found.status(), 200);
    assert_eq!(&found.bytes().await.unwrap()[..], &bytes[..]);
    assert_served(&client, &running, &posted, "at the end").await;
    server::terminate(running);
}
