//! Knowing the moment work is done, as an app does: signed webhooks verified by the Python
//! `standardwebhooks` package (PyPI) in a receiver of its own, exactly once in the normal case
//! and at least once across `kill -9`; live events followed with curl and resumed with
//! `Last-Event-ID`; and the account's usage.

use cairn_harness::server;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::multipart::{Form, Part};
use reqwest::Client;
use serde_json::{json, Value};
use server::{cid_of, content, start, tar_of, Running};

/// The receiver: every request verified with the secret in `secret` (written once the
/// endpoint exists) by the `standardwebhooks` package, one JSON line per request in `log`.
const RECEIVER: &str = r#"
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from standardwebhooks.webhooks import Webhook

secret_path, log_path = sys.argv[1], sys.argv[2]

class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"]))
        try:
            Webhook(open(secret_path).read().strip()).verify(body, dict(self.headers))
            verified = True
        except Exception as e:
            verified = False
        with open(log_path, "a") as log:
            log.write(json.dumps({"id": self.headers["webhook-id"], "verified": verified,
                                  "body": json.loads(body)}) + "\n")
        self.send_response(204 if verified else 400)
        self.end_headers()
    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

struct Receiver {
    child: Child,
    url: String,
    secret: PathBuf,
    log: PathBuf,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    fn start(dir: &Path) -> Self {
        let bin = cairn_test_support::pypi::venv_with("standardwebhooks-venv", "standardwebhooks");
        let script = dir.join("receiver.py");
        std::fs::write(&script, RECEIVER).unwrap();
        let (secret, log) = (dir.join("secret"), dir.join("received.jsonl"));
        let mut child = Command::new(bin.join("python"))
            .arg(&script)
            .arg(&secret)
            .arg(&log)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the webhook receiver");
        let mut port = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        Self {
            child,
            url: format!("http://127.0.0.1:{}/hook", port.trim()),
            secret,
            log,
        }
    }

    fn received(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// What has arrived once `done` says it is all there (or 60 s passed).
    fn wait_for(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let received = self.received();
            if done(&received) || Instant::now() > deadline {
                return received;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

async fn upload(running: &Running, bytes: Vec<u8>, name: &str) -> Value {
    let part = Part::bytes(bytes).file_name(name.to_owned());
    let response = Client::new()
        .post(format!("{}/api/upload", running.upload))
        .bearer_auth(&running.token)
        .multipart(Form::new().part("file", part))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// A GET with `token`: the status and the body as JSON.
async fn get(url: &str, token: &str) -> (u16, Value) {
    let response = Client::new()
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (
        response.status().as_u16(),
        response.json().await.unwrap_or(Value::Null),
    )
}

async fn make_webhook(running: &Running, url: &str, events: &[&str]) -> (u16, Value) {
    let response = Client::new()
        .post(format!("{}/api/webhooks", running.account))
        .bearer_auth(&running.token)
        .json(&json!({"url": url, "events": events, "description": "the tests' receiver"}))
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// The upload ids of the `upload.completed` bodies received, each with how often it came.
fn completed_ids(received: &[Value]) -> HashMap<String, usize> {
    let mut ids = HashMap::new();
    for body in received.iter().map(|r| &r["body"]) {
        if body["type"] == "upload.completed" {
            *ids.entry(body["data"]["id"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
    }
    ids
}

#[tokio::test(flavor = "multi_thread")]
async fn webhooks_arrive_signed_once_each_and_none_is_lost_to_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let receiver = Receiver::start(dir.path());
    let allow = ["--webhook-allow-private", "true"];
    let mut running = start(&data, &allow);
    let token = running.token.clone();

    // Refused, naming why: a private address without the flag, a wrong event type.
    let strict = start(&dir.path().join("strict"), &[]);
    let (status, refused) = make_webhook(&strict, &receiver.url, &["upload.completed"]).await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("127.0.0.1"),
        "{refused}"
    );
    let (status, refused) = make_webhook(&running, &receiver.url, &["upload.done"]).await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("upload.done"),
        "{refused}"
    );

    let (status, hook) = make_webhook(
        &running,
        &receiver.url,
        &["upload.completed", "upload.deleted"],
    )
    .await;
    assert_eq!(status, 201, "{hook}");
    let secret = hook["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_"), "{hook}");
    std::fs::write(&receiver.secret, secret).unwrap();
    let (_, listed) = get(&format!("{}/api/webhooks", running.account), &token).await;
    assert_eq!(listed["webhooks"][0]["id"], hook["id"]);
    assert!(
        listed["webhooks"][0].get("secret").is_none(),
        "shown once: {listed}"
    );

    // The normal case: each event once, each signature verified.
    let mut uploads = Vec::new();
    for i in 0..5 {
        let bytes = content(1000 + i, i as u64);
        let made = upload(&running, bytes.clone(), &format!("file-{i}")).await;
        assert_eq!(made["cid"], cid_of(&bytes));
        uploads.push(made["id"].as_str().unwrap().to_owned());
    }
    let deleted = Client::new()
        .delete(format!("{}/api/uploads/{}", running.upload, uploads[0]))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success());
    receiver.wait_for(|r| r.len() >= 6);
    std::thread::sleep(Duration::from_secs(2)); // a duplicate would arrive meanwhile
    let received = receiver.received();
    assert_eq!(received.len(), 6, "{received:#?}");
    assert!(
        received.iter().all(|r| r["verified"] == true),
        "{received:#?}"
    );
    let ids: std::collections::HashSet<&str> =
        received.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 6, "each delivery has its own webhook-id");
    let completed = completed_ids(&received);
    assert!(
        uploads.iter().all(|id| completed.get(id) == Some(&1)),
        "{completed:?}"
    );
    let deletion = received
        .iter()
        .find(|r| r["body"]["type"] == "upload.deleted")
        .expect("the deletion's event");
    assert_eq!(deletion["body"]["data"]["id"], uploads[0].as_str());
    assert!(deletion["body"]["timestamp"]
        .as_str()
        .unwrap()
        .ends_with('Z'));

    let hook_id = hook["id"].as_str().unwrap();
    let deliveries = format!("{}/api/webhooks/{hook_id}/deliveries", running.account);
    let (_, deliveries) = get(&deliveries, &token).await;
    let deliveries = deliveries["deliveries"].as_array().unwrap().clone();
    assert_eq!(deliveries.len(), 6);
    for delivery in &deliveries {
        assert_eq!(delivery["status"], "delivered", "{delivery}");
        assert_eq!(delivery["attempts"][0]["responseStatus"], 204, "{delivery}");
    }

    // Killed with -9 right after each upload is acknowledged: every completion still
    // arrives, at least once, from the queue the restarted node finds.
    let mut acknowledged = Vec::new();
    for round in 0..20 {
        let bytes = content(2000 + round, 100 + round as u64);
        let made = upload(&running, bytes, &format!("killed-{round}")).await;
        acknowledged.push(made["id"].as_str().unwrap().to_owned());
        running.child.kill().unwrap();
        running.child.wait().unwrap();
        running = start(&data, &allow);
        // The token is printed only by the start that made the account.
        running.token = token.clone();
    }
    let received = receiver.wait_for(|r| {
        let completed = completed_ids(r);
        acknowledged.iter().all(|id| completed.contains_key(id))
    });
    let completed = completed_ids(&received);
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|id| !completed.contains_key(*id))
        .collect();
    assert!(lost.is_empty(), "lost over 20 kill rounds: {lost:?}");
    assert!(received.iter().all(|r| r["verified"] == true));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endpoint_that_never_answers_holds_up_no_other_endpoints_deliveries() {
    let dir = tempfile::tempdir().unwrap();
    let receiver = Receiver::start(dir.path());
    let running = start(
        &dir.path().join("data"),
        &["--webhook-allow-private", "true"],
    );
    // Accepts connections and never answers: each attempt waits out its 10 s.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_url = format!("http://{}/hook", silent.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    let (status, silent_hook) = make_webhook(&running, &silent_url, &["upload.completed"]).await;
    assert_eq!(status, 201, "{silent_hook}");
    let (status, hook) = make_webhook(&running, &receiver.url, &["upload.completed"]).await;
    assert_eq!(status, 201, "{hook}");
    std::fs::write(&receiver.secret, hook["secret"].as_str().unwrap()).unwrap();

    let began = Instant::now();
    let mut uploads = Vec::new();
    for i in 0..3 {
        let made = upload(&running, content(500 + i, 50 + i as u64), &format!("f-{i}")).await;
        uploads.push(made["id"].as_str().unwrap().to_owned());
        // Each in a batch of its own, behind the last one's silent attempt.
        tokio::time::sleep(Duration::from_millis(800)).await;
    }
    let received = receiver.wait_for(|r| completed_ids(r).len() == 3);
    let took = began.elapsed();
    assert_eq!(completed_ids(&received).len(), 3, "{received:#?}");
    assert!(
        took < Duration::from_secs(9),
        "the answering endpoint waited on the silent one: all three after {took:?}"
    );

    // The silent endpoint's attempts are recorded once they time out, due again later.
    let deliveries = format!(
        "{}/api/webhooks/{}/deliveries",
        running.account,
        silent_hook["id"].as_str().unwrap()
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let listed = loop {
        let (_, listed) = get(&deliveries, &running.token).await;
        let done = listed["deliveries"].as_array().is_some_and(|list| {
            list.len() == 3
                && list
                    .iter()
                    .all(|d| d["attempts"].as_array().unwrap().len() == 1)
        });
        if done || Instant::now() > deadline {
            break listed;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let list = listed["deliveries"].as_array().expect("deliveries");
    assert_eq!(list.len(), 3, "{listed}");
    for delivery in list {
        assert_eq!(delivery["status"], "pending", "{delivery}");
        let error = delivery["attempts"][0]["error"].as_str().unwrap_or("");
        assert!(error.contains("no answer within 10 s"), "{delivery}");
    }
    held.abort();
}

/// An SSE stream as curl shows it: each event's `id`, `event` and `data`. Without a `token`
/// the URL carries one (as a browser's `EventSource` must).
fn curl_events(
    url: &str,
    token: Option<&str>,
    last_event_id: Option<&str>,
    seconds: u32,
) -> Vec<Value> {
    let mut command = Command::new("curl");
    command.args(["-sN", "--max-time", &seconds.to_string()]);
    if let Some(token) = token {
        command
            .arg("-H")
            .arg(format!("Authorization: Bearer {token}"));
    }
    if let Some(id) = last_event_id {
        command.arg("-H").arg(format!("Last-Event-ID: {id}"));
    }
    let output = command.arg(url).output().expect("curl");
    let text = String::from_utf8(output.stdout).unwrap();
    let mut events = Vec::new();
    for block in text.split("\n\n") {
        let mut event = json!({});
        for line in block.lines() {
            if let Some((field, value)) = line.split_once(": ") {
                if matches!(field, "id" | "event" | "data") {
                    event[field] = json!(value);
                }
            }
        }
        if event.get("event").is_some() {
            events.push(event);
        }
    }
    events
}

/// Progress never goes back a stage.
fn assert_stages_move_forward(events: &[Value]) {
    const ORDER: [&str; 5] = ["receiving", "queued", "extracting", "importing", "storing"];
    let stages: Vec<usize> = events
        .iter()
        .filter(|e| e["event"] == "progress")
        .map(|e| {
            let data: Value = serde_json::from_str(e["data"].as_str().unwrap()).unwrap();
            let stage = data["stage"].as_str().unwrap();
            ORDER.iter().position(|s| *s == stage).unwrap()
        })
        .collect();
    assert!(stages.is_sorted(), "{events:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn uploads_are_followed_live_and_a_cut_stream_resumes_without_loss_or_repetition() {
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path(), &[]);
    let token = running.token.clone();

    // An archive: processed after the POST is answered; its stream ends with `completed`.
    let tar = tar_of(&[("a.txt", b"alpha"), ("b/c.txt", b"gamma")]);
    let tar_len = tar.len();
    let made = upload(&running, tar, "site.tar").await;
    let operation = made["operationId"].as_i64().unwrap();
    let url = format!("{}/api/operations/{operation}/events", running.upload);
    let events = curl_events(&url, Some(&token), None, 20);
    let last = events.last().expect("a final event");
    assert_eq!(last["event"], "completed", "{events:#?}");
    assert_stages_move_forward(&events);
    let record: Value = serde_json::from_str(last["data"].as_str().unwrap()).unwrap();
    assert!(
        record["cid"].as_str().unwrap().starts_with("bafy"),
        "{record}"
    );
    // Resumed after the final event: nothing is sent again, and the stream ends.
    let again = curl_events(&url, Some(&token), last["id"].as_str(), 5);
    assert!(again.is_empty(), "{again:#?}");

    // A TUS upload half sent: `receiving` with its bytes; the rest sent while no one
    // listens; resumed, the stream continues from there to `completed`.
    let body = content(300_000, 7);
    let created = Client::new()
        .post(format!("{}/api/upload/tus", running.upload))
        .bearer_auth(&token)
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Length", body.len().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let operation = created.headers()["cairn-operation-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let location = created.headers()["location"].to_str().unwrap().to_owned();
    let location = if location.starts_with("http") {
        location
    } else {
        format!("{}{location}", running.upload)
    };
    let patch = |offset: usize, bytes: &[u8]| {
        Client::new()
            .patch(&location)
            .bearer_auth(&token)
            .header("Tus-Resumable", "1.0.0")
            .header("Upload-Offset", offset.to_string())
            .header("Content-Type", "application/offset+octet-stream")
            .body(bytes.to_vec())
            .send()
    };
    assert_eq!(patch(0, &body[..100_000]).await.unwrap().status(), 204);
    let url = format!("{}/api/operations/{operation}/events", running.upload);
    let first = curl_events(&url, Some(&token), None, 2);
    assert_eq!(
        first.len(),
        1,
        "one state while nothing changes: {first:#?}"
    );
    let receiving: Value = serde_json::from_str(first[0]["data"].as_str().unwrap()).unwrap();
    assert_eq!(
        receiving,
        json!({"stage": "receiving", "bytes": 100_000, "totalBytes": 300_000})
    );
    assert_eq!(
        patch(100_000, &body[100_000..]).await.unwrap().status(),
        204
    );
    let rest = curl_events(&url, Some(&token), first[0]["id"].as_str(), 20);
    assert_eq!(rest.last().unwrap()["event"], "completed", "{rest:#?}");
    assert_stages_move_forward(&[first.clone(), rest.clone()].concat());
    assert!(
        rest.iter().all(|e| e["id"] != first[0]["id"]),
        "nothing repeated: {rest:#?}"
    );
    let record: Value =
        serde_json::from_str(rest.last().unwrap()["data"].as_str().unwrap()).unwrap();
    assert_eq!(record["cid"], cid_of(&body));

    // The account's stream: from a given event on, every later one, once.
    let account_url = format!("{}/api/events", running.upload);
    let before = curl_events(&account_url, Some(&token), Some("0"), 2);
    assert_eq!(
        before
            .iter()
            .map(|e| e["event"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["upload.completed", "upload.completed"],
        "{before:#?}"
    );
    let after_first = curl_events(&account_url, Some(&token), before[0]["id"].as_str(), 2);
    assert_eq!(after_first.len(), 1, "{after_first:#?}");
    assert_eq!(after_first[0]["id"], before[1]["id"]);
    let body: Value = serde_json::from_str(after_first[0]["data"].as_str().unwrap()).unwrap();
    assert_eq!(body["type"], "upload.completed");
    assert_eq!(body["data"]["cid"], cid_of(&content(300_000, 7)));
    let filtered = curl_events(
        &format!("{account_url}?types=pin.pinned"),
        Some(&token),
        Some("0"),
        2,
    );
    assert!(filtered.is_empty(), "{filtered:#?}");
    // The token in the URL, as EventSource sends it; a wrong one is refused as JSON.
    let by_url = curl_events(
        &format!("{account_url}?types=upload.completed&access_token={token}"),
        None,
        Some("0"),
        2,
    );
    assert_eq!(by_url.len(), 2, "{by_url:#?}");
    let refused = Client::new()
        .get(format!("{account_url}?access_token={token}x"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["error"], "invalid_token", "{refused}");

    // Usage: what the account keeps and uploaded this month.
    let (status, usage) = get(&format!("{}/api/usage", running.account), &token).await;
    assert_eq!(status, 200, "{usage}");
    assert_eq!(usage["uploads"], 2, "{usage}");
    assert_eq!(usage["pins"], 0, "{usage}");
    assert_eq!(usage["uploadedBytes"], tar_len + 300_000, "{usage}");
    assert!(usage["storedBytes"].as_u64().unwrap() >= 300_000, "{usage}");
    let bad = format!("{}/api/usage?period=2026-13", running.account);
    let (status, bad) = get(&bad, &token).await;
    assert_eq!(status, 400, "{bad}");
    assert!(
        bad["message"].as_str().unwrap().contains("2026-13"),
        "{bad}"
    );
}
