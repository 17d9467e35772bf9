//! The upgrade tests' fixtures: what an earlier release writes through its own commands (its
//! uploads, a pin, a deletion, on SQLite and on PostgreSQL), made by
//! `scripts/make-upgrade-fixtures` (`make-upgrade-fixture`, this crate's binary) and opened by
//! today's `cairn serve` in `crates/cairn/tests/upgrades.rs`.

use std::path::Path;
use std::process::Command;

use cairn_test_support::postgres::{self, Database};
use serde_json::{json, Value};

use crate::server::{
    admin_with, cairn_at, client_with, serve_args, start_command, tar_of, terminate, Running,
};

/// The files every fixture uploads, made the same way each time (so the repository keeps only
/// what the old release wrote): path under the upload directory, and bytes.
pub fn sources() -> Vec<(&'static str, Vec<u8>)> {
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

pub fn source(path: &str) -> Vec<u8> {
    sources()
        .into_iter()
        .find(|(name, _)| *name == path)
        .unwrap_or_else(|| panic!("no source {path}"))
        .1
}

/// `binary serve` on `data_dir` (and the database at `database_url`, if any).
pub fn serve(binary: &Path, data_dir: &Path, database_url: Option<&str>) -> Running {
    let mut command = cairn_at(binary);
    command.args(serve_args(data_dir));
    if let Some(url) = database_url {
        command.args(["--database-url", url]);
    }
    start_command(command)
}

/// An admin command's `args`, on the database at `database_url` if any (else the data
/// directory's).
pub fn on<'a>(database_url: Option<&'a str>, args: &[&'a str]) -> Vec<&'a str> {
    let mut args = args.to_vec();
    if let Some(url) = database_url {
        args.extend(["--database-url", url]);
    }
    args
}

/// Make one store's part of a fixture with the old release at `binary`: its uploads, a pin and
/// a deletion, through its own client; what it listed is returned for the check.
pub fn write_with_old_release(binary: &Path, data_dir: &Path, database_url: Option<&str>) -> Value {
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
pub fn unpack(archive: &Path, dir: &Path) {
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

/// Writes the fixture of `schema` into `out` with the release at `binary` (built from
/// `commit`): `sqlite.tar.gz` (a data directory), `postgres.sql` and `postgres-packs.tar.gz`
/// (a database and the data directory beside it), and `fixture.json` (what the release
/// listed).
pub fn make_fixture(binary: &Path, schema: u32, commit: &str, out: &Path) {
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out).unwrap();

    let sqlite_dir = tempfile::tempdir().unwrap();
    let sqlite = write_with_old_release(binary, sqlite_dir.path(), None);
    pack(sqlite_dir.path(), &out.join("sqlite.tar.gz"));

    let database = Database::create("upgrade_fixture");
    let packs_dir = tempfile::tempdir().unwrap();
    let on_postgres = write_with_old_release(binary, packs_dir.path(), Some(&database.url));
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
