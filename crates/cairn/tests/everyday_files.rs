//! What you send is what is stored (issue 46): the files people really upload, made in the
//! test run by the tools that make them (`everyday/make_files.py`: Office, OpenDocument and
//! EPUB containers written as their formats specify, a JAR by the JDK's `jar`, a wheel by
//! `pip wheel`, single files compressed by `gzip`, `bzip2`, `xz` and `zstd`, random bytes
//! that begin like an archive, broken archives named as archives, and real archives of a
//! tree), each sent by `POST /api/upload`, by TUS and by `cairn upload` to a real server:
//! - a document, a compressed file or a look-alike is stored as one file and comes back from
//!   the gateway byte for byte, with the CID `cairn cid` gives for it, and its record says
//!   `"kind": "file"` and the media type its bytes bear out;
//! - a real archive is extracted to the CID of the tree it holds, its record saying
//!   `"kind": "archive"` and its format;
//! - a broken archive named as one is refused as `invalid_archive` (by POST at once, by TUS
//!   when its operation fails, by `cairn upload` with exit status 1).

use cairn_harness::server;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde::Deserialize;
use server::{
    cairn, cid_of_path, finished_operation, post_upload, start, terminate, tus_upload, Running,
};

#[derive(Deserialize, Debug)]
struct Case {
    file: String,
    send_as: String,
    expect: String,
    mime: Option<String>,
    tree: Option<String>,
    why: String,
}

/// The cases `make_files.py` writes into `out`.
fn make_files(out: &Path) -> Vec<Case> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/everyday/make_files.py");
    let made = Command::new("python3")
        .arg(&script)
        .arg(out)
        .output()
        .expect("python3 runs make_files.py (Debian package python3)");
    assert!(
        made.status.success(),
        "make_files.py failed: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap()
}

/// What a case must come to, whichever way it was sent.
struct Expected {
    /// The root CID (`None` for a refusal).
    cid: Option<String>,
    kind: &'static str,
}

fn expected(case: &Case, files: &Path) -> Expected {
    match case.expect.as_str() {
        "file" => Expected {
            cid: Some(cid_of_path(&files.join(&case.file))),
            kind: "file",
        },
        "archive" => Expected {
            cid: Some(cid_of_path(&files.join(case.tree.as_ref().unwrap()))),
            kind: "archive",
        },
        "invalid_archive" => Expected {
            cid: None,
            kind: "invalid_archive",
        },
        other => panic!("unknown expectation {other}"),
    }
}

/// A finished operation (or a POST's answer) against what the case expects; the failures
/// found, each naming the case and the way it was sent.
fn check(case: &Case, how: &str, want: &Expected, got: &serde_json::Value) -> Vec<String> {
    let label = format!(
        "{} sent as {:?} by {how} ({})",
        case.file, case.send_as, case.why
    );
    let mut failures = Vec::new();
    let mut expect = |ok: bool, what: String| {
        if !ok {
            failures.push(format!("{label}: {what}: {got}"));
        }
    };
    match &want.cid {
        Some(cid) => {
            expect(got["status"] == "completed", "not completed".into());
            expect(got["cid"] == cid.as_str(), format!("the CID is not {cid}"));
            expect(
                got["kind"] == want.kind,
                format!("its kind is not {}", want.kind),
            );
            if let Some(mime) = &case.mime {
                expect(
                    got["mimeType"] == mime.as_str(),
                    format!("its type is not {mime}"),
                );
            }
            if want.kind == "archive" {
                let format = got["archiveFormat"].as_str().unwrap_or_default();
                expect(
                    case.send_as.ends_with(&format!(".{format}"))
                        || (format == "tar.gz" && case.send_as.ends_with(".tgz")),
                    "its archive format is not the one it was made in".into(),
                );
            }
        }
        None => {
            let code = (got["error"]["error"].as_str()).or(got["error"].as_str());
            expect(
                code == Some("invalid_archive"),
                "not refused as invalid_archive".into(),
            );
        }
    }
    failures
}

/// By POST: a refusal is the answer itself; an archive's CID comes from its operation.
async fn by_post(server: &Running, case: &Case, bytes: Vec<u8>) -> serde_json::Value {
    let (status, body) = post_upload(server, &server.token, &case.send_as, bytes).await;
    if status != 200 {
        return body;
    }
    match body["status"].as_str() {
        Some("completed") => body,
        _ => finished_operation(server, &server.token, &body["operationId"].to_string()).await,
    }
}

/// By TUS (create, one PATCH): the operation, polled by the upload's id.
async fn by_tus(server: &Running, case: &Case, bytes: Vec<u8>) -> serde_json::Value {
    let client = reqwest::Client::new();
    let location = tus_upload(&client, &server.upload, &server.token, &case.send_as, bytes).await;
    let id = location.rsplit('/').next().unwrap();
    finished_operation(server, &server.token, id).await
}

/// By `cairn upload --wait --json`, from a file named as the case sends it: the record of its
/// operation (the command prints no `kind`), or the line it printed for a refusal, which must
/// come with exit status 1.
async fn by_cairn_upload(
    server: &Running,
    case: &Case,
    bytes: &[u8],
    home: &Path,
) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(&case.send_as);
    std::fs::write(&path, bytes).unwrap();
    let output = tokio::task::block_in_place(|| {
        cairn()
            .args(["upload", "--wait", "--json"])
            .arg(&path)
            .env("CAIRN_URL", &server.upload)
            .env("CAIRN_ACCOUNT_URL", &server.account)
            .env("CAIRN_TOKEN", &server.token)
            .env("HOME", home)
            .env("XDG_STATE_HOME", home.join("state"))
            .output()
            .unwrap()
    });
    let line: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "cairn upload printed no JSON: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let failed = line["status"] == "failed";
    assert_eq!(
        output.status.code(),
        Some(if failed { 1 } else { 0 }),
        "{line}"
    );
    match line["operationId"].as_i64() {
        // The record read back, for what the command does not print.
        Some(id) if !failed => finished_operation(server, &server.token, &id.to_string()).await,
        _ => line,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everyday_files_are_stored_as_sent_and_archives_are_still_extracted() {
    let work = tempfile::tempdir().unwrap();
    let files = work.path().join("files");
    let cases = make_files(&files);
    // Three uploads a case, more than the default limit a minute takes.
    let server = start(
        &work.path().join("data"),
        &["--uploads-per-minute", "100000"],
    );
    let home = work.path().join("home");
    let client = reqwest::Client::new();
    let mut failures = Vec::new();
    let mut answers: BTreeMap<&str, usize> = BTreeMap::new();
    for case in &cases {
        let bytes = std::fs::read(files.join(&case.file)).unwrap();
        let want = expected(case, &files);
        let sent = [
            ("POST", by_post(&server, case, bytes.clone()).await),
            ("TUS", by_tus(&server, case, bytes.clone()).await),
            (
                "cairn upload",
                by_cairn_upload(&server, case, &bytes, &home).await,
            ),
        ];
        for (how, got) in &sent {
            failures.extend(check(case, how, &want, got));
        }
        // A file comes back from the gateway byte for byte.
        if let (Some(cid), "file") = (&want.cid, want.kind) {
            let whole = client
                .get(format!("{}/ipfs/{cid}", server.upload))
                .send()
                .await
                .unwrap();
            let back = whole.bytes().await.unwrap();
            if back[..] != bytes[..] {
                failures.push(format!("{}: the gateway serves other bytes", case.file));
            }
        }
        *answers.entry(case.expect.as_str()).or_default() += 1;
    }
    terminate(server);
    assert!(
        failures.is_empty(),
        "{} failures over {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    // Every group of the script was there.
    assert!(answers["file"] >= 40 && answers["archive"] >= 6 && answers["invalid_archive"] >= 5);
    eprintln!("{answers:?}");
}
