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
