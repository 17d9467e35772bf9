//! Upgrades: what earlier releases wrote, opened by today's `cairn serve`.
//!
//! `tests/upgrades/schema-N/` holds, for each schema version a landed release ran, a data
//! directory and a PostgreSQL database that release's own `cairn` wrote through its own
//! commands (`cairn_harness::upgrades`, run by `scripts/make-upgrade-fixtures`, which builds
//! the release from git). Today's binary opens each, on SQLite and on PostgreSQL, and a user finds
//! everything as they left it: every upload reads back byte for byte (a file sent in one POST,
//! one sent over TUS, a directory, an extracted archive), the pin is kept, the deleted upload
//! stays deleted, the old token still works, a new upload completes, and `cairn fsck` finds
//! the store whole.

use cairn_harness::server;

use std::path::{Path, PathBuf};

use cairn_harness::upgrades::{on, serve, source, unpack};
use cairn_test_support::postgres::{self, Database};
use serde_json::Value;
use server::*;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upgrades")
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
    let running = serve(&binary(), data_dir, database_url);
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
