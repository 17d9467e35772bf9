//! `cairn serve --database-url postgres://...`: metadata in the machine's PostgreSQL
//! (`CAIRN_TEST_POSTGRES_URL`, default `postgres://postgres@127.0.0.1:5432/postgres`), in a
//! database created for the test with `psql` and dropped afterwards.

mod server;

use std::process::Command;

use server::{cairn, start, terminate};

fn psql(server_url: &str, sql: &str) {
    let output = Command::new("psql")
        .arg(server_url)
        .args(["-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .expect("psql is on the machine");
    assert!(
        output.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_node_on_postgres_keeps_accounts_and_operations_there() {
    let server_url = std::env::var("CAIRN_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    let name = format!("cairn_test_serve_{}", std::process::id());
    psql(&server_url, &format!("DROP DATABASE IF EXISTS {name}"));
    psql(&server_url, &format!("CREATE DATABASE {name}"));
    let base = server_url.rsplit_once('/').unwrap().0;
    let url = format!("{base}/{name}");

    let data = tempfile::tempdir().unwrap();
    let running = start(data.path(), &["--database-url", &url]);
    let token = running.token.clone();
    assert!(!token.is_empty(), "the first start creates an account");
    let file = data.path().join("a.txt");
    std::fs::write(&file, b"hello world").unwrap();
    let client = |running: &server::Running, args: &[&str]| -> String {
        let output = cairn()
            .args(args)
            .env("CAIRN_URL", &running.upload)
            .env("CAIRN_ACCOUNT_URL", &running.account)
            .env("CAIRN_TOKEN", &token)
            .env("HOME", data.path())
            .env("XDG_STATE_HOME", data.path().join("state"))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    let uploaded: serde_json::Value = serde_json::from_str(&client(
        &running,
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
        &["status", "--json", &uploaded["operationId"].to_string()],
    ))
    .unwrap();
    assert_eq!(operation["status"], "completed", "{operation}");
    assert_eq!(operation["cid"], cid);
    let back = data.path().join("back.txt");
    client(&running, &["get", cid, "-o", back.to_str().unwrap()]);
    assert_eq!(std::fs::read(&back).unwrap(), b"hello world");
    terminate(running);
    psql(&server_url, &format!("DROP DATABASE {name} WITH (FORCE)"));
}
