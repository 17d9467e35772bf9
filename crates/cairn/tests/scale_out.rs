//! Two `cairn serve` nodes sharing PostgreSQL (metadata, queue) and S3 (content): what one
//! node stores, the other serves, and queued work is done once by whichever node claims it.

mod server;

#[path = "../../store/tests/support/moto.rs"]
mod moto;

use std::process::Command;

use moto::Moto;
use server::{client, start, terminate, TestDatabase};

#[test]
fn two_nodes_share_uploads_operations_and_content() {
    let moto = Moto::start();
    let store = moto.bucket("scale-out");
    let database = TestDatabase::create("scale_out");
    let work = tempfile::tempdir().unwrap();
    let shared = ["--database-url", &database.url, "--store", &store];
    let a = start(&work.path().join("a"), &shared);
    let token = a.token.clone();
    assert!(!token.is_empty());
    let b = start(&work.path().join("b"), &shared);
    assert!(
        b.token.is_empty(),
        "node B finds the account node A created"
    );

    // A file stored through A comes back through B.
    let file = work.path().join("notes.txt");
    std::fs::write(&file, b"hello world").unwrap();
    let out = client(&a, &token, work.path(), &["upload", file.to_str().unwrap()]);
    let cid = out.split('\t').next().unwrap();
    assert_eq!(
        cid,
        "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"
    );
    let back = work.path().join("notes.back");
    client(
        &b,
        &token,
        work.path(),
        &["get", cid, "-o", back.to_str().unwrap()],
    );
    assert_eq!(std::fs::read(&back).unwrap(), b"hello world");

    // Archives queued on both nodes are each extracted once, by either node, and readable
    // through the other.
    let site = work.path().join("site");
    std::fs::create_dir_all(&site).unwrap();
    let mut cids = Vec::new();
    for (i, node) in [&a, &b, &a, &b].into_iter().enumerate() {
        std::fs::write(site.join("index.html"), format!("<h1>site {i}</h1>")).unwrap();
        let archive = work.path().join(format!("site{i}.tar.gz"));
        let status = Command::new("tar")
            .arg("czf")
            .arg(&archive)
            .arg("-C")
            .arg(work.path())
            .arg("site")
            .status()
            .unwrap();
        assert!(status.success());
        let out = client(
            node,
            &token,
            work.path(),
            &["upload", "--wait", "--json", archive.to_str().unwrap()],
        );
        let result: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        cids.push((i, result["cid"].as_str().unwrap().to_owned()));
    }
    for (i, cid) in &cids {
        let reader = if i % 2 == 0 { &b } else { &a };
        let page = work.path().join(format!("page{i}"));
        let path = format!("{cid}/site/index.html");
        client(
            reader,
            &token,
            work.path(),
            &["get", &path, "-o", page.to_str().unwrap()],
        );
        assert_eq!(
            std::fs::read_to_string(&page).unwrap(),
            format!("<h1>site {i}</h1>")
        );
    }
    let listed = client(&a, &token, work.path(), &["ls", "--json", &cids[0].1]);
    assert!(listed.contains("site"), "{listed}");

    // TUS keeps bytes on the receiving node, so on a shared store it says it is off, clearly.
    let limited = server::cairn()
        .args(["account", "set", "default", "--upload-limit", "1000"])
        .args(["--database-url", &database.url])
        .status()
        .unwrap();
    assert!(limited.success());
    let big = work.path().join("big.bin");
    std::fs::write(&big, vec![7u8; 5000]).unwrap();
    let refused = server::cairn()
        .args(["upload", big.to_str().unwrap()])
        .env("CAIRN_URL", &a.upload)
        .env("CAIRN_ACCOUNT_URL", &a.account)
        .env("CAIRN_TOKEN", &token)
        .env("HOME", work.path())
        .env("XDG_STATE_HOME", work.path().join("state"))
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("shared content store"), "{message}");

    assert!(terminate(a).0.success());
    assert!(terminate(b).0.success());
    assert!(
        !work.path().join("a/packs").exists() && !work.path().join("b/packs").exists(),
        "content went to the shared store, not the nodes' disks"
    );
}
