//! `cairn serve --database-url postgres://...`: metadata in PostgreSQL, in a database created
//! for the test on the server the tests share (`cairn_test_support::postgres`), and in a
//! cluster of the test's own that it stops in the middle of work and starts again.

use cairn_harness::server;

use cairn_test_support::postgres::{self, Cluster, Database};
use server::{cairn, client, start, terminate};

#[test]
fn a_node_on_postgres_keeps_accounts_and_operations_there() {
    let database = Database::create("serve");
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
    let missing = postgres::server().url("cairn_no_such_database");
    for (url, why) in [
        ("postgres://127.0.0.1:1/cairn", "Connection refused"),
        (
            missing.as_str(),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgresql_restart_mid_work_loses_nothing_and_does_each_operation_once() {
    use server::{
        content, finished_operation, post_upload, tar_of, tus_create, tus_offset, tus_patch,
    };
    let pg = Cluster::start();
    let url = pg.url().to_database("postgres");
    let data = tempfile::tempdir().unwrap();
    let args = [
        "--database-url",
        &url,
        "--workers",
        "1",
        "--worker-lease-seconds",
        "1",
    ];
    let running = start(data.path(), &args);
    let token = running.token.clone();
    let http = reqwest::Client::new();

    // Before: a stored file, a TUS upload half sent, two archives queued.
    let first = content(300_000, 1);
    let (status, body) = post_upload(&running, &token, "first.bin", first.clone()).await;
    assert_eq!(status, 200, "{body}");
    let whole = content(3 << 20, 2);
    let (path, _) = tus_create(&http, &running.upload, &token, whole.len()).await;
    let url = format!("{}{path}", running.upload);
    tus_patch(&http, &url, &token, 0, whole[..1 << 20].to_vec()).await;
    // bzip2, slow to decompress: the first is still being extracted when PostgreSQL stops.
    let mut archives = Vec::new();
    for i in 0..2u64 {
        let (a, b) = (content(4 << 20, 10 + i), content(4 << 20, 20 + i));
        let tar = tar_of(&[("a.bin", &a), ("b.bin", &b)]);
        let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
        std::io::Write::write_all(&mut bz, &tar).unwrap();
        let (status, queued) =
            post_upload(&running, &token, "pair.tar.bz2", bz.finish().unwrap()).await;
        assert_eq!(status, 200, "{queued}");
        archives.push((queued["operationId"].to_string(), a, b));
    }

    // Stopped while the second is being extracted.
    for _ in 0..1000 {
        let op = server::operation(&running, &token, &archives[1].0).await;
        if op["status"] != "pending" {
            assert_eq!(op["status"], "processing", "{op}");
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    // PostgreSQL goes away: requests that need it answer 503 with Retry-After, never 500,
    // and acknowledge nothing.
    pg.crash();
    let part = reqwest::multipart::Part::bytes(content(1000, 3)).file_name("while-down.bin");
    let refused = http
        .post(format!("{}/api/upload", running.upload))
        .bearer_auth(&token)
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "unavailable", "{body}");

    // It comes back: the same server carries on, without a restart of its own.
    pg.restart();
    let mut stored = None;
    for _ in 0..100 {
        let (status, body) = post_upload(&running, &token, "second.bin", content(2000, 4)).await;
        if status == 200 {
            stored = Some(body);
            break;
        }
        assert_eq!(status, 503, "{body}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        stored.is_some(),
        "no upload succeeded after PostgreSQL came back"
    );
    assert_eq!(tus_offset(&http, &url, &token).await, 1 << 20);
    tus_patch(&http, &url, &token, 1 << 20, whole[1 << 20..].to_vec()).await;
    let id = path.rsplit('/').next().unwrap();
    let op = finished_operation(&running, &token, id).await;
    assert_eq!(op["cid"], server::cid_of(&whole), "{op}");
    for (id, a, b) in &archives {
        let op = finished_operation(&running, &token, id).await;
        assert_eq!(op["status"], "completed", "{op}");
        let cid = op["cid"].as_str().unwrap();
        for (name, bytes) in [("a.bin", a), ("b.bin", b)] {
            let back = http
                .get(format!("{}/ipfs/{cid}/{name}", running.upload))
                .send()
                .await
                .unwrap();
            assert_eq!(back.status(), 200);
            assert!(back.bytes().await.unwrap() == bytes[..]);
        }
    }
    // Each upload once: the first file, the TUS upload, two archives, the second file.
    let listed =
        server::get_json(&format!("{}/api/uploads?limit=100", running.upload), &token).await;
    let uploads = listed["uploads"].as_array().unwrap();
    assert_eq!(uploads.len(), 5, "{listed}");
    assert!(
        uploads.iter().all(|u| u["status"] == "completed"),
        "{listed}"
    );
    terminate(running);
}
