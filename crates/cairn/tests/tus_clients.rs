//! Interoperability with the official TUS clients, installed by this test from their
//! registries on first use (into the target directory): tus-js-client (npm, pinned by
//! `interop/package-lock.json`) and tuspy (PyPI).
//! Each resumes an upload after being stopped part-way; tus-js-client also uploads in parallel
//! through concatenation. Every upload must end with the CID of the bytes sent.

mod interop;
use cairn_harness::server;

use cairn_test_support::pypi;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use server::{content, finished_operation, start, terminate, Running};

const TUSPY: &str = "tuspy==1.1.0";

/// A virtualenv with tuspy; returns its python.
fn tuspy() -> PathBuf {
    pypi::venv_with("tuspy-venv", TUSPY).join("python")
}

/// The value of the first line starting with `key `, from a client's output.
fn field(lines: &[String], key: &str) -> Option<String> {
    lines
        .iter()
        .find_map(|l| l.strip_prefix(&format!("{key} ")).map(str::to_owned))
}

/// Poll the operation of a TUS upload (by its id, as the interface document does) for its CID.
async fn cid_of_upload(server: &Running, url: &str) -> String {
    let id = url.rsplit('/').next().unwrap();
    let op = finished_operation(server, &server.token, id).await;
    assert_eq!(op["status"], "completed", "{op}");
    op["cid"].as_str().unwrap().to_owned()
}

/// Run a client to completion; its output lines.
fn finish(command: &mut Command) -> Vec<String> {
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout.lines().map(str::to_owned).collect()
}

#[tokio::test]
async fn tus_js_client_resumes_after_being_killed_and_uploads_in_parallel() {
    interop::clients();
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir.path().join("data"), &[]);
    let endpoint = format!("{}/api/upload/tus", server.upload);
    let bytes = content(6 << 20, 7);
    let file = dir.path().join("upload.bin");
    std::fs::write(&file, &bytes).unwrap();
    let storage = dir.path().join("urls.json");
    let client = |mode: &str| {
        let mut command = interop::script("tus_js.mjs");
        command
            .args([&endpoint, &server.token])
            .arg(&file)
            .arg(&storage)
            .arg(mode);
        command
    };

    // Killed (SIGKILL) once more than a MiB is acknowledged...
    let mut first = client("single").stdout(Stdio::piped()).spawn().unwrap();
    let mut created = None;
    for line in BufReader::new(first.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(url) = line.strip_prefix("url ") {
            created = Some(url.to_owned());
        }
        if line
            .strip_prefix("progress ")
            .and_then(|n| n.parse::<u64>().ok())
            > Some(1 << 20)
        {
            first.kill().unwrap();
            break;
        }
    }
    first.wait().unwrap();
    let created = created.expect("the upload was created");

    // ...then run again: it resumes the same upload instead of starting over.
    let lines = finish(&mut client("single"));
    assert_eq!(
        field(&lines, "resumed").as_deref(),
        Some(created.as_str()),
        "{lines:?}"
    );
    let first_progress: u64 = field(&lines, "progress").unwrap().parse().unwrap();
    // Progress counts bytes sent: past 1 MiB sent, at least 1 MiB (4 chunks) was acknowledged.
    assert!(
        first_progress >= 1 << 20,
        "resumed from the stored offset, not 0: {lines:?}"
    );
    assert_eq!(field(&lines, "done").as_deref(), Some(created.as_str()));
    assert_eq!(
        cid_of_upload(&server, &created).await,
        server::cid_of(&bytes)
    );

    // Parallel upload: partial uploads concatenated into a final one.
    std::fs::remove_file(&storage).ok();
    let other = content(3 << 20, 11);
    std::fs::write(&file, &other).unwrap();
    let lines = finish(&mut client("parallel"));
    let done = field(&lines, "done").expect("done");
    assert_eq!(cid_of_upload(&server, &done).await, server::cid_of(&other));
    terminate(server);
}

#[tokio::test]
async fn tuspy_resumes_an_interrupted_upload() {
    let python = tuspy();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/tuspy_upload.py");
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir.path().join("data"), &[]);
    let endpoint = format!("{}/api/upload/tus", server.upload);
    let bytes = content(2 << 20, 5);
    let file = dir.path().join("upload.bin");
    std::fs::write(&file, &bytes).unwrap();
    let storage = dir.path().join("urls.db");
    let client = |stop_at: Option<&str>| {
        let mut command = Command::new(&python);
        command
            .arg(&script)
            .args([&endpoint, &server.token])
            .arg(&file)
            .arg(&storage)
            .args(stop_at);
        command
    };
    let first = finish(&mut client(Some("1048576")));
    let stopped = field(&first, "stopped").expect("stopped part-way");
    let (offset, url) = stopped.split_once(' ').unwrap();
    assert_eq!(offset, "1048576", "{first:?}");
    let second = finish(&mut client(None));
    assert_eq!(
        field(&second, "resumed").as_deref(),
        Some(url),
        "the same upload, resumed"
    );
    assert_eq!(field(&second, "done").as_deref(), Some(url));
    assert_eq!(cid_of_upload(&server, url).await, server::cid_of(&bytes));
    terminate(server);
}
