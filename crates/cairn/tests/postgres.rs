//! `cairn serve --database-url postgres://...`: metadata in the machine's PostgreSQL, in a
//! database created for the test (`server::TestDatabase`).

mod server;

use server::{cairn, client, start, terminate, TestDatabase};

#[test]
fn a_node_on_postgres_keeps_accounts_and_operations_there() {
    let database = TestDatabase::create("serve");
    let url = database.url.clone();
    let data = tempfile::tempdir().unwrap();
    let running = start(data.path(), &["--database-url", &url]);
    let token = running.token.clone();
    assert!(!token.is_empty(), "the first start creates an account");
    let file = data.path().join("a.txt");
    std::fs::write(&file, b"hello world").unwrap();
    let uploaded: serde_json::Value = serde_json::from_str(&client(
        &running,
        &token,
        data.path(),
        &["upload", "--json", file.to_str().unwrap()],
    ))
    .unwrap();
    let cid = "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e";
    assert_eq!(uploaded["cid"], cid, "{uploaded}");
    let (status, _) = terminate(running);
    assert!(status.success());
    assert!(
        !data.path().join("cairn.db").exists(),
        "no SQLite database beside the packs"
    );

    // The metadata is in PostgreSQL: an admin command sees the account, and a restarted node
    // the operation and its content.
    let listed = cairn()
        .args(["account", "list", "--json", "--database-url", &url])
        .output()
        .unwrap();
    assert!(listed.status.success());
    let accounts: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(accounts[0]["name"], "default");
    assert_eq!(accounts[0]["storedBytes"], 11);

    let running = start(data.path(), &["--database-url", &url]);
    let operation: serde_json::Value = serde_json::from_str(&client(
        &running,
        &token,
        data.path(),
        &["status", "--json", &uploaded["operationId"].to_string()],
    ))
    .unwrap();
    assert_eq!(operation["status"], "completed", "{operation}");
    assert_eq!(operation["cid"], cid);
    let back = data.path().join("back.txt");
    client(
        &running,
        &token,
        data.path(),
        &["get", cid, "-o", back.to_str().unwrap()],
    );
    assert_eq!(std::fs::read(&back).unwrap(), b"hello world");
    terminate(running);
}

/// A database that cannot be reached, or does not exist, stops the start at once with one line
/// saying which and why, each cause once.
#[test]
fn an_unreachable_or_missing_database_is_one_line_at_once() {
    let data = tempfile::tempdir().unwrap();
    for (url, why) in [
        ("postgres://127.0.0.1:1/cairn", "Connection refused"),
        (
            "postgres://postgres@127.0.0.1:5432/cairn_no_such_database",
            "database \"cairn_no_such_database\" does not exist",
        ),
    ] {
        let started = std::time::Instant::now();
        let output = cairn()
            .args(server::serve_args(data.path()))
            .args(["--database-url", url])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{url}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        let lines: Vec<_> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{stderr}");
        assert!(
            lines[0].starts_with("error: connecting to PostgreSQL"),
            "{stderr}"
        );
        assert!(lines[0].contains(why), "{stderr}");
        assert_eq!(
            lines[0].matches(why).count(),
            1,
            "each cause once: {stderr}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{url}: took {:?}",
            started.elapsed()
        );
    }
}
