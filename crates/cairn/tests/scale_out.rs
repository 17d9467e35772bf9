//! Two `cairn serve` nodes sharing PostgreSQL (metadata, queue, upload leases) and S3
//! (content): what one node stores, the other serves; queued work is done once by whichever
//! node claims it; a TUS upload begun on a node that dies is finished on the other; and
//! `cairn gc` on the shared stores empties the bucket of what no one keeps while a node reads;
//! an event raised on one node reaches a subscriber and a webhook through the other.

use cairn_harness::server;

use cairn_test_support::moto;

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use cairn_test_support::postgres::Database;
use moto::Moto;
use server::{
    cairn, client, content, finished_operation, post_upload, stalled_patch, start, terminate,
    Running,
};

#[test]
fn two_nodes_share_uploads_operations_and_content() {
    let moto = Moto::start();
    let store = moto.bucket("scale-out");
    let database = Database::create("scale_out");
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

    // Exactly once, as the nodes themselves count it: the operations each node's workers
    // completed add up to the archives queued.
    let completed_on = |node: &Running| -> u64 {
        let url = format!("{}/metrics", node.upload);
        let metrics = tokio::runtime::Runtime::new()
            .unwrap()
            .block_on(async { reqwest::get(url).await.unwrap().text().await.unwrap() });
        metrics
            .lines()
            .find_map(|l| {
                l.strip_prefix("cairn_operation_duration_seconds_count{status=\"completed\"} ")
            })
            .map_or(0, |n| n.trim().parse().unwrap())
    };
    assert_eq!(completed_on(&a) + completed_on(&b), cids.len() as u64);

    assert!(terminate(a).0.success());
    assert!(terminate(b).0.success());
    assert!(
        !work.path().join("a/packs").exists() && !work.path().join("b/packs").exists(),
        "content went to the shared store, not the nodes' disks"
    );
}

fn tus_request(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    token: &str,
) -> reqwest::RequestBuilder {
    http.request(method, url)
        .bearer_auth(token)
        .header("Tus-Resumable", "1.0.0")
}

async fn patch(http: &reqwest::Client, url: &str, token: &str, offset: u64, body: &[u8]) -> u64 {
    let reply = tus_request(http, reqwest::Method::PATCH, url, token)
        .header("Content-Type", "application/offset+octet-stream")
        .header("Upload-Offset", offset.to_string())
        .body(body.to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 204, "{:?}", reply.text().await);
    reply.headers()["upload-offset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tus_upload_begun_on_a_node_that_is_killed_is_finished_on_another() {
    let moto = Moto::start();
    let store = moto.bucket("tus-takeover");
    let database = Database::create("tus_takeover");
    let work = tempfile::tempdir().unwrap();
    let shared = ["--database-url", &database.url, "--store", &store];
    let mut a = start(&work.path().join("a"), &shared);
    let token = a.token.clone();
    let b = start(&work.path().join("b"), &shared);
    let http = reqwest::Client::new();

    // 21 MiB and a bit: S3 parts of 8 MiB, then a tail.
    let bytes = content(21 * 1024 * 1024 + 12_345, 0x5eed);
    let created = tus_request(
        &http,
        reqwest::Method::POST,
        &format!("{}/api/upload/tus", a.upload),
        &token,
    )
    .header("Upload-Length", bytes.len().to_string())
    .header("Upload-Metadata", "filename ZGF0YS5iaW4=")
    .send()
    .await
    .unwrap();
    assert_eq!(created.status(), 201);
    let location = created.headers()["location"].to_str().unwrap().to_owned();
    let path = format!("/api/{}", location.split_once("/api/").unwrap().1);
    let operation = created.headers()["cairn-operation-id"]
        .to_str()
        .unwrap()
        .to_owned();

    let on = |node: &Running| format!("{}{path}", node.upload);
    let acknowledged = patch(&http, &on(&a), &token, 0, &bytes[..12 << 20]).await;
    assert_eq!(acknowledged, 12 << 20);

    // A second PATCH is half-way through its body when node A is SIGKILLed.
    let rest = bytes.len() - (12 << 20);
    let _stalled = stalled_patch(
        &a,
        &path,
        &token,
        acknowledged,
        rest,
        &bytes[12 << 20..15 << 20],
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    a.child.kill().unwrap();
    a.child.wait().unwrap();

    // Node B waits for A's lease to run out, then reports every acknowledged byte.
    let head = tus_request(&http, reqwest::Method::HEAD, &on(&b), &token)
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 200);
    let offset: u64 = head.headers()["upload-offset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        offset >= acknowledged,
        "B reports {offset}, {acknowledged} were acknowledged"
    );
    let done = patch(&http, &on(&b), &token, offset, &bytes[offset as usize..]).await;
    assert_eq!(done, bytes.len() as u64);

    // The CID is that of the bytes sent, as `cairn cid` computes it locally.
    let file = work.path().join("data.bin");
    std::fs::write(&file, &bytes).unwrap();
    let local = server::cairn()
        .args(["cid", file.to_str().unwrap()])
        .output()
        .unwrap();
    let expected = String::from_utf8(local.stdout)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    let op = finished_operation(&b, &token, &operation).await;
    assert_eq!(op["status"], "completed", "{op}");
    assert_eq!(op["cid"], expected.as_str());
    let back = http
        .get(format!("{}/ipfs/{expected}", b.upload))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(
        back == bytes,
        "the content read back through B is the content sent"
    );
    assert!(terminate(b).0.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn gc_on_shared_stores_frees_the_bucket_while_another_node_serves() {
    let moto = Moto::start();
    let store = moto.bucket("collected");
    let database = Database::create("scale_out_gc");
    let work = tempfile::tempdir().unwrap();
    let shared = [
        "--database-url",
        &database.url,
        "--store",
        &store,
        "--gc-interval",
        "0s",
    ];
    let a = start(&work.path().join("a"), &shared);
    let b = start(&work.path().join("b"), &shared);
    let token = a.token.clone();
    let dropped = content(2_000_000, 11);
    let kept = content(1_000_000, 12);
    let (_, gone) = post_upload(&a, &token, "dropped.bin", dropped).await;
    let (_, stays) = post_upload(&a, &token, "kept.bin", kept.clone()).await;
    let packs = |moto: &Moto| moto.bytes_under("collected", "cairn/packs/");
    let before = packs(&moto);
    assert!(before > 3_000_000, "{before}");

    // Deleted through B; collected by `cairn gc` on the shared stores while B keeps reading
    // the other upload.
    let deleted = reqwest::Client::new()
        .delete(format!(
            "{}/api/uploads/{}",
            b.upload,
            gone["id"].as_str().unwrap()
        ))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let url = format!("{}/ipfs/{}", b.upload, stays["cid"].as_str().unwrap());
    let reading = tokio::spawn(async move {
        let mut reads = 0;
        for _ in 0..40 {
            let body = reqwest::get(&url).await.unwrap().bytes().await.unwrap();
            assert_eq!(body.len(), kept.len());
            reads += 1;
        }
        reads
    });
    let on_shared = |command: &str| {
        let output = cairn()
            .args([
                command,
                "--json",
                "--database-url",
                &database.url,
                "--store",
                &store,
            ])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "cairn {command}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&output.stdout).unwrap()
    };
    // Two collectors started together (as on two nodes): one runs at a time, and one that
    // finds the other running says so.
    let both: Vec<_> = (0..2)
        .map(|_| {
            cairn()
                .args([
                    "gc",
                    "--json",
                    "--database-url",
                    &database.url,
                    "--store",
                    &store,
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut deleted = 0;
    for child in both {
        let output = child.wait_with_output().unwrap();
        if output.status.success() {
            let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            deleted += report["packsDeleted"].as_u64().unwrap();
        } else {
            let said = String::from_utf8_lossy(&output.stderr);
            assert!(said.contains("another collector is running"), "{said}");
        }
    }
    assert_eq!(deleted, 1, "the dead pack is deleted once");
    assert_eq!(reading.await.unwrap(), 40);
    let after = packs(&moto);
    assert!(before - after >= 2_000_000, "{before} -> {after}");
    assert_eq!(on_shared("fsck")["problems"], serde_json::json!([]));
    drop((a, b));
}

/// A bucket that does not exist stops the start with one line naming the store and the reason
/// (not S3's XML), and exit status 1.
#[test]
fn a_missing_bucket_is_one_line_at_start() {
    let moto = Moto::start();
    let missing = moto
        .bucket("present")
        .replace("s3://present/", "s3://no-such-bucket/");
    let data = tempfile::tempdir().unwrap();
    let output = cairn()
        .args(server::serve_args(data.path()))
        .args(["--store", &missing])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        stderr.trim_end(),
        "error: content store s3://no-such-bucket/cairn: the bucket does not exist",
        "{stderr}"
    );
}

/// A key revoked on one node is refused by the other within a second: keys are read from the
/// shared database on every request, never kept in a node's memory.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_revoked_on_one_node_is_refused_by_the_other_within_a_second() {
    let moto = Moto::start();
    let store = moto.bucket("revoked-keys");
    let database = Database::create("revoked_keys");
    let work = tempfile::tempdir().unwrap();
    let shared = ["--database-url", &database.url, "--store", &store];
    let a = start(&work.path().join("a"), &shared);
    let b = start(&work.path().join("b"), &shared);
    let (key, record) =
        server::create_key(&a, &a.token, serde_json::json!({"scopes": ["read"]})).await;
    let http = reqwest::Client::new();
    let on_b = || {
        http.get(format!("{}/api/uploads", b.upload))
            .bearer_auth(&key)
    };
    assert_eq!(on_b().send().await.unwrap().status(), 200);

    let revoked = http
        .delete(format!("{}/api/keys/{}", a.account, record["id"]))
        .bearer_auth(&a.token)
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 204);
    let since = std::time::Instant::now();
    loop {
        let status = on_b().send().await.unwrap().status();
        if status == 401 {
            break;
        }
        assert!(
            since.elapsed() < Duration::from_secs(1),
            "node B still answers {status} to a key revoked on A"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    terminate(a);
    terminate(b);
}

/// A webhook endpoint of the test's own: records each request's `webhook-id` and body, and
/// answers `503` until it is told to accept.
struct Endpoint {
    url: String,
    received: Arc<Mutex<Vec<(String, serde_json::Value)>>>,
    accepting: Arc<AtomicBool>,
}

impl Endpoint {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let accepting = Arc::new(AtomicBool::new(false));
        let (log, accept) = (received.clone(), accepting.clone());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (log, accept) = (log.clone(), accept.clone());
                tokio::spawn(async move {
                    let Some((id, body)) = read_request(&mut socket).await else {
                        return;
                    };
                    log.lock().unwrap().push((id, body));
                    let status = if accept.load(Ordering::SeqCst) {
                        "200 OK"
                    } else {
                        "503 Service Unavailable"
                    };
                    let answer = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
                    let _ = socket.write_all(answer.as_bytes()).await;
                });
            }
        });
        Self {
            url,
            received,
            accepting,
        }
    }

    fn received(&self) -> Vec<(String, serde_json::Value)> {
        self.received.lock().unwrap().clone()
    }

    async fn wait_for(&self, count: usize) -> Vec<(String, serde_json::Value)> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.received().len() < count && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.received()
    }
}

/// One HTTP/1.1 request: its `webhook-id` header and its JSON body.
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<(String, serde_json::Value)> {
    let mut bytes = Vec::new();
    let mut buf = [0; 8192];
    let head_end = loop {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(&buf[..n]);
        if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).to_lowercase();
    let header = |name: &str| {
        head.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")).map(str::to_owned))
    };
    let length: usize = header("content-length")?.trim().parse().ok()?;
    while bytes.len() < head_end + length {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(&buf[..n]);
    }
    let body = serde_json::from_slice(&bytes[head_end..head_end + length]).ok()?;
    Some((header("webhook-id")?.trim().to_owned(), body))
}

#[tokio::test(flavor = "multi_thread")]
async fn events_on_one_node_reach_subscribers_and_webhooks_through_another() {
    let moto = Moto::start();
    let store = moto.bucket("events");
    let database = Database::create("events_two_nodes");
    let work = tempfile::tempdir().unwrap();
    let shared = [
        "--database-url",
        &database.url,
        "--store",
        &store,
        "--webhook-allow-private",
        "true",
    ];
    let a = start(&work.path().join("a"), &shared);
    let b = start(&work.path().join("b"), &shared);
    let token = a.token.clone();
    let http = reqwest::Client::new();
    let endpoint = Endpoint::start().await;
    let made = http
        .post(format!("{}/api/webhooks", b.account))
        .bearer_auth(&token)
        .json(&serde_json::json!({"url": endpoint.url, "events": ["upload.completed"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201);

    // A subscriber on B; the upload on A.
    let mut stream = http
        .get(format!("{}/api/events", b.upload))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let (status, upload) = post_upload(&a, &token, "hello.txt", b"hello world".to_vec()).await;
    assert_eq!(status, 200, "{upload}");
    let uploaded = Instant::now();
    let mut text = String::new();
    while !text.contains("event: upload.completed") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), stream.chunk())
            .await
            .expect("an event within 5 s")
            .unwrap()
            .expect("the stream stays open");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    let seen_after = uploaded.elapsed();
    assert!(
        seen_after < Duration::from_secs(1),
        "node B's subscriber saw the upload on A after {seen_after:?}"
    );
    assert!(text.contains(upload["cid"].as_str().unwrap()), "{text}");

    // The webhook's first attempt is refused; the node that queued it dies; the other
    // delivers it, with the same webhook-id.
    let first = endpoint.wait_for(1).await;
    assert_eq!(first.len(), 1, "one attempt while refused");
    assert_eq!(first[0].1["data"]["cid"], upload["cid"]);
    let mut a = a;
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    endpoint.accepting.store(true, Ordering::SeqCst);
    let attempts = endpoint.wait_for(2).await;
    assert_eq!(attempts.len(), 2, "retried by node B: {attempts:?}");
    assert_eq!(attempts[1].0, attempts[0].0, "the same webhook-id");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(endpoint.received().len(), 2, "delivered once accepted");
    terminate(b);
}
