//! Upgrades: what earlier releases wrote, opened by today's `cairn serve`.
//!
//! `tests/upgrades/schema-N/` holds, for each schema version a landed release ran, a data
//! directory and a PostgreSQL database that release's own `cairn` wrote through its own
//! commands (`make_fixture`, run by `scripts/make-upgrade-fixtures`, which builds the release
//! from git). Today's binary opens each, on SQLite and on PostgreSQL, and a user finds
//! everything as they left it: every upload reads back byte for byte (a file sent in one POST,
//! one sent over TUS, a directory, an extracted archive), the pin is kept, the deleted upload
//! stays deleted, the old token still works, a new upload completes, and `cairn fsck` finds
//! the store whole.

mod server;

use std::path::{Path, PathBuf};
use std::process::Command;

use cairn_test_support::postgres::{self, Database};
use serde_json::{json, Value};
use server::*;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upgrades")
}

/// The files every fixture uploads, made the same way each time (so the repository keeps only
/// what the old release wrote): path under the upload directory, and bytes.
fn sources() -> Vec<(&'static str, Vec<u8>)> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut noise = |len: usize| -> Vec<u8> {
        (0..len)
            .map(|_| {
                // xorshift64: bytes that do not compress, cut into several blocks.
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    };
    // Kept small: the repository holds each fixture twice (SQLite, PostgreSQL).
    let large = noise(300_000);
    let photo = noise(50_000);
    vec![
        (
            "small.txt",
            "a small file, sent in one POST\n".repeat(30).into_bytes(),
        ),
        ("large.bin", large),
        (
            "site/index.html",
            b"<!doctype html><title>kept</title><img src=img/photo.bin>\n".to_vec(),
        ),
        ("site/css/style.css", b"body { margin: 0 }\n".to_vec()),
        ("site/img/photo.bin", photo),
        (
            "archive.tar",
            tar_of(&[
                ("docs/readme.txt", b"read me after the upgrade\n"),
                ("docs/notes/one.txt", b"one\n"),
            ]),
        ),
        ("deleted.txt", b"deleted before the upgrade\n".to_vec()),
    ]
}

fn source(path: &str) -> Vec<u8> {
    sources()
        .into_iter()
        .find(|(name, _)| *name == path)
        .unwrap_or_else(|| panic!("no source {path}"))
        .1
}

/// `binary serve` on `data_dir` (and the database at `database_url`, if any).
fn serve(binary: &Path, data_dir: &Path, database_url: Option<&str>) -> Running {
    let mut command = cairn_at(binary);
    command.args(serve_args(data_dir));
    if let Some(url) = database_url {
        command.args(["--database-url", url]);
    }
    start_command(command)
}

/// An admin command's `args`, on the database at `database_url` if any (else the data
/// directory's).
fn on<'a>(database_url: Option<&'a str>, args: &[&'a str]) -> Vec<&'a str> {
    let mut args = args.to_vec();
    if let Some(url) = database_url {
        args.extend(["--database-url", url]);
    }
    args
}

/// Make one store's part of a fixture with the old release at `binary`: its uploads, a pin and
/// a deletion, through its own client; what it listed is returned for the check.
fn write_with_old_release(binary: &Path, data_dir: &Path, database_url: Option<&str>) -> Value {
    let running = serve(binary, data_dir, database_url);
    let token = running.token.clone();
    assert!(!token.is_empty(), "the old release printed no first token");
    let home = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    for (path, bytes) in sources() {
        let at = files.path().join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, bytes).unwrap();
    }
    // Made small so that large.bin (and the directory's CAR) goes over TUS.
    let set_limit = ["account", "set", "default", "--upload-limit", "100000"];
    admin_with(cairn_at(binary), &on(database_url, &set_limit), data_dir);

    let mut uploaded = Vec::new();
    for path in [
        "small.txt",
        "large.bin",
        "site",
        "archive.tar",
        "deleted.txt",
    ] {
        let at = files.path().join(path).display().to_string();
        let mut args = vec!["upload", &at, "--wait"];
        if path == "large.bin" {
            // 256 KiB chunks: a file of two blocks under a dag-pb root, in CIDv0.
            args.extend(["--profile", "unixfs-v0-2015"]);
        }
        let printed = client_with(cairn_at(binary), &running, &token, home.path(), &args);
        let cid = printed
            .split('\t')
            .next()
            .filter(|cid| cid.starts_with("baf") || cid.starts_with("Qm"))
            .unwrap_or_else(|| panic!("upload {path} printed {printed:?}"));
        uploaded.push(json!({"source": path, "cid": cid}));
    }
    let small = uploaded[0]["cid"].as_str().unwrap().to_owned();
    client_with(
        cairn_at(binary),
        &running,
        &token,
        home.path(),
        &["pin", &small, "--name", "kept", "--wait"],
    );
    let deleted = uploaded[4]["cid"].as_str().unwrap().to_owned();
    client_with(
        cairn_at(binary),
        &running,
        &token,
        home.path(),
        &["rm", &deleted],
    );
    let listed = |args: &[&str]| -> Value {
        let printed = client_with(cairn_at(binary), &running, &token, home.path(), args);
        serde_json::from_str(&printed).unwrap()
    };
    let fixture = json!({
        "token": token,
        "uploaded": uploaded,
        "uploads": listed(&["uploads", "--json"]),
        "pins": listed(&["pins", "--json"]),
    });
    let (status, _) = terminate(running);
    assert!(status.success(), "the old release stopped with {status}");
    fixture
}

/// `dir`'s contents into the gzipped tar file `archive`.
fn pack(dir: &Path, archive: &Path) {
    tar(Command::new("tar")
        .arg("-czf")
        .arg(archive)
        .arg("-C")
        .arg(dir)
        .arg("."));
}

/// The gzipped tar file `archive` unpacked into `dir`.
fn unpack(archive: &Path, dir: &Path) {
    tar(Command::new("tar")
        .arg("-xzf")
        .arg(archive)
        .arg("-C")
        .arg(dir));
}

fn tar(command: &mut Command) {
    let status = command.status().unwrap();
    assert!(status.success(), "{command:?}: {status}");
}

/// Writes `tests/upgrades/schema-N/` with the release `scripts/make-upgrade-fixtures` built:
/// `sqlite.tar.gz` (a data directory), `postgres.sql` and `postgres-packs.tar.gz` (a database
/// and the data directory beside it), and `fixture.json` (what the release listed).
#[test]
#[ignore = "run by scripts/make-upgrade-fixtures with an earlier release's binary"]
fn make_fixture() {
    let binary = PathBuf::from(std::env::var("CAIRN_UPGRADE_FROM").expect("CAIRN_UPGRADE_FROM"));
    let schema: u32 = std::env::var("CAIRN_UPGRADE_SCHEMA")
        .unwrap()
        .parse()
        .unwrap();
    let commit = std::env::var("CAIRN_UPGRADE_COMMIT").unwrap();
    let out = fixtures().join(format!("schema-{schema}"));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();

    let sqlite_dir = tempfile::tempdir().unwrap();
    let sqlite = write_with_old_release(&binary, sqlite_dir.path(), None);
    pack(sqlite_dir.path(), &out.join("sqlite.tar.gz"));

    let database = Database::create("upgrade_fixture");
    let packs_dir = tempfile::tempdir().unwrap();
    let on_postgres = write_with_old_release(&binary, packs_dir.path(), Some(&database.url));
    std::fs::write(out.join("postgres.sql"), postgres::dump(&database.url)).unwrap();
    pack(packs_dir.path(), &out.join("postgres-packs.tar.gz"));

    let fixture = json!({
        "schema": schema,
        "commit": commit,
        "sqlite": sqlite,
        "postgres": on_postgres,
    });
    std::fs::write(
        out.join("fixture.json"),
        serde_json::to_string_pretty(&fixture).unwrap() + "\n",
    )
    .unwrap();
}

/// Every fixture's directory, oldest schema first.
fn schemas() -> Vec<(u32, PathBuf)> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter_map(|dir| {
            let version = dir
                .file_name()?
                .to_str()?
                .strip_prefix("schema-")?
                .parse()
                .ok()?;
            Some((version, dir))
        })
        .collect();
    found.sort();
    assert!(
        !found.is_empty(),
        "no fixtures under {}",
        fixtures().display()
    );
    found
}

fn fixture(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("fixture.json")).unwrap()).unwrap()
}

/// Each upload's id, root and status, as listed.
fn ids_cids_statuses(uploads: &Value) -> Vec<(Value, Value, Value)> {
    uploads
        .as_array()
        .unwrap_or_else(|| panic!("a list of uploads, not {uploads}"))
        .iter()
        .map(|upload| {
            (
                upload["id"].clone(),
                upload["cid"].clone(),
                upload["status"].clone(),
            )
        })
        .collect()
}

/// What a user of the old release finds after the upgrade to today's on `data_dir` (and the
/// database at `database_url`), as `written` lists it.
async fn everything_is_as_it_was(
    label: &str,
    data_dir: &Path,
    database_url: Option<&str>,
    written: &Value,
) {
    let running = serve(
        Path::new(env!("CARGO_BIN_EXE_cairn")),
        data_dir,
        database_url,
    );
    let token = written["token"].as_str().unwrap();
    let http = reqwest::Client::new();
    let read = |path: String| {
        let http = http.clone();
        let url = format!("{}/ipfs/{path}", running.upload);
        async move {
            let response = http.get(&url).send().await.unwrap();
            let status = response.status();
            (status, response.bytes().await.unwrap().to_vec())
        }
    };

    // Every upload reads back byte for byte; the deleted one stays deleted.
    let uploaded = written["uploaded"].as_array().unwrap();
    let cid_of_source = |source: &str| {
        uploaded
            .iter()
            .find(|upload| upload["source"] == source)
            .unwrap()["cid"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    for path in [
        "small.txt",
        "large.bin",
        "site/index.html",
        "site/css/style.css",
        "site/img/photo.bin",
    ] {
        // A file is its upload's root; a directory's files are paths under its root.
        let (upload, under) = path.split_once('/').unwrap_or((path, ""));
        let at = match under {
            "" => cid_of_source(upload),
            under => format!("{}/{under}", cid_of_source(upload)),
        };
        let (status, bytes) = read(at.clone()).await;
        assert_eq!(status, 200, "{label}: {path} at {at}");
        assert!(bytes == source(path), "{label}: {path} reads back changed");
    }
    let archive = cid_of_source("archive.tar");
    let (status, bytes) = read(format!("{archive}/docs/readme.txt")).await;
    assert_eq!(status, 200, "{label}: the extracted archive");
    assert_eq!(bytes, b"read me after the upgrade\n", "{label}");

    // The uploads the old release listed, with the same ids, roots and statuses.
    let listed = get_json(&format!("{}/api/uploads?limit=100", running.upload), token).await;
    let now = ids_cids_statuses(&listed["uploads"]);
    let then = ids_cids_statuses(&written["uploads"]);
    assert_eq!(now, then, "{label}: the uploads listed");
    let deleted = cid_of_source("deleted.txt");
    assert!(
        !now.iter().any(|(_, cid, _)| cid == deleted.as_str()),
        "{label}: the deleted upload is listed again"
    );

    // The pin, as it was.
    let pins_then = &written["pins"];
    let kept = pins_then
        .as_array()
        .unwrap()
        .iter()
        .find(|pin| pin["pin"]["name"] == "kept")
        .unwrap_or_else(|| panic!("{label}: no pin named kept in {pins_then}"));
    let request = kept["requestid"].as_str().unwrap();
    let pin = get_json(&format!("{}/pins/{request}", running.upload), token).await;
    assert_eq!(pin["status"], "pinned", "{label}: {pin}");
    assert_eq!(pin["pin"]["cid"], kept["pin"]["cid"], "{label}");

    // New work on the old data.
    let bytes = b"the first upload after the upgrade".to_vec();
    let (_, cid) = stored_upload(&running, token, "new.txt", bytes.clone()).await;
    assert_eq!(cid, cid_of(&bytes), "{label}");

    // The whole store, read.
    // Exits 1, failing `admin`, on any problem.
    admin(&on(database_url, &["fsck", "--deep"]), data_dir);
    let (status, _) = terminate(running);
    assert!(status.success(), "{label}: serve stopped with {status}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_past_schema_opens_on_sqlite_with_everything_as_it_was() {
    for (version, dir) in schemas() {
        let data = tempfile::tempdir().unwrap();
        unpack(&dir.join("sqlite.tar.gz"), data.path());
        let label = format!("schema {version} on SQLite");
        everything_is_as_it_was(&label, data.path(), None, &fixture(&dir)["sqlite"]).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_past_schema_opens_on_postgres_with_everything_as_it_was() {
    for (version, dir) in schemas() {
        let database = Database::create("upgrade");
        postgres::restore(&database.url, &dir.join("postgres.sql"));
        let data = tempfile::tempdir().unwrap();
        unpack(&dir.join("postgres-packs.tar.gz"), data.path());
        let label = format!("schema {version} on PostgreSQL");
        let written = &fixture(&dir)["postgres"];
        everything_is_as_it_was(&label, data.path(), Some(&database.url), written).await;
    }
}
