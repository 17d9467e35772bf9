//! The examples in `examples/`, run as their READMEs say against a real `cairn serve`:
//!
//! - `node-backend` serving `browser-link-upload`'s page: in Chromium (Debian's, driven by npm
//!   `playwright-core` through the example's own `upload-in-chromium.mjs`), visitors holding no
//!   key upload a small file (one POST) and one over the account's upload limit (TUS) through
//!   links the backend makes. The page must show the progress, the CID `cairn cid` prints, and
//!   that the backend verified Cairn's signed `upload.completed` webhook for it; the backend must
//!   refuse with 401 a webhook whose body was changed after signing, a stale one, one signed
//!   with another secret and an unsigned one.
//! - `ci-publish`: `publish.sh` (the `cairn` command and jq) and `publish.mjs` (cairn-client)
//!   each publish a site, then a changed version of it: each CID must be the one `cairn cid`
//!   prints, and the name must resolve (`cairn name resolve`) to the second.
//!
//! The READMEs' steps are the tests' own: cairn-client installed (`npm ci`) and built (`npm run
//! build`) first, then each example installed from its lock, and the page's bundle built. They
//! run on copies in `<target>/tmp/examples/`, laid out as the repository is (so that each
//! example's `file:../../clients/js` resolves): nothing is written into the source tree. Node 22
//! comes from PyPI, Chromium and jq from Debian (`cairn_test_support::{node, debian}`); where
//! they cannot be had, the tests fail saying what to install.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use cairn_harness::server::{
    binary, cid_of_path, client, content, create_account, create_key, create_link, get_json, start,
    Running,
};
use cairn_test_support::{cannot_run, debian, node, on_path};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The test account's upload limit: the big file is over it, so the page must send it by TUS,
/// which it knows to do only from the limit the backend hands it.
const UPLOAD_LIMIT: &str = "1048576";
/// What cairn-client sends in each TUS request.
const TUS_CHUNK: u64 = 8 << 20;
/// Over one TUS chunk, so that the page's progress bar has a step between nothing and all.
const BIG: usize = 9 << 20;
const NOTE: &[u8] = b"uploaded by a visitor holding no key\n";
/// Longer than starting Node and reading a config should ever take.
const BACKEND_START: Duration = Duration::from_secs(30);

#[tokio::test]
async fn visitors_upload_through_links_from_the_node_backend_which_verifies_cairns_webhooks() {
    let Some(chromium) = debian::chromium() else {
        return; // Skipping was asked for by hand (CAIRN_ALLOW_SKIP=1); otherwise it failed.
    };
    let examples = examples();
    let data = tempfile::tempdir().unwrap();
    // Cairn POSTs webhooks to public addresses only, unless told otherwise; the backend is on
    // loopback.
    let running = start(data.path(), &["--webhook-allow-private", "true"]);
    let token = create_account(data.path(), "examples", &["--upload-limit", UPLOAD_LIMIT]);
    // What the README has the backend hold: a key that can make links, and nothing else.
    let request = json!({"scopes": ["upload"], "name": "node-backend"});
    let (key, _) = create_key(&running, &token, request).await;
    // The webhook is made before the backend starts (which needs its secret), so its URL must
    // name the port the backend will listen on.
    let port = free_port();
    let secret = register_webhook(
        &running,
        &token,
        &format!("http://127.0.0.1:{port}/webhooks/cairn"),
    )
    .await;
    let backend = Backend::start(examples, &running, &key, &secret, port);

    let files = tempfile::tempdir().unwrap();
    let note = files.path().join("note.txt");
    let big = files.path().join("big.bin");
    std::fs::write(&note, NOTE).unwrap();
    std::fs::write(&big, content(BIG, 7)).unwrap();
    let page_url = format!("{}/", backend.url);
    let page = upload_in_chromium(examples, chromium, &page_url, &[&note, &big]).await;
    assert_ne!(
        page["pageOrigin"], running.upload,
        "the page must be on another origin than Cairn"
    );
    let shown = page["uploads"].as_array().unwrap();
    assert_eq!(shown.len(), 2, "{page}");
    for (upload, path) in shown.iter().zip([&note, &big]) {
        assert_stored_and_shown(&running, upload, path).await;
        assert_eq!(
            upload["webhook"]["state"], "verified",
            "the backend heard of it: {upload}"
        );
        assert_heard_by_the_backend(&running, &token, &backend, &cid_of_path(path)).await;
    }

    webhooks_not_signed_with_the_secret_are_refused(&backend, &secret).await;

    // The page alone, given a link made elsewhere in its fragment (which it prefers to asking
    // its backend), as browser-link-upload's README runs it.
    let link = create_link(&running, &key, json!({"archiveMode": "preserve"})).await;
    let link_url = link["url"].as_str().unwrap();
    let page_url = format!(
        "{}/#link={link_url}&uploadLimit={UPLOAD_LIMIT}",
        backend.url
    );
    let page = upload_in_chromium(examples, chromium, &page_url, &[&big]).await;
    let upload = &page["uploads"][0];
    assert_stored_and_shown(&running, upload, &big).await;
    assert_eq!(
        upload["webhook"]["state"], "unknown",
        "no backend made that link: {upload}"
    );
    let through_it = format!(
        "{}/api/uploads?link={}",
        running.upload,
        link["id"].as_str().unwrap()
    );
    assert_eq!(
        get_json(&through_it, &token).await["uploads"][0]["cid"],
        cid_of_path(&big)
    );
}

/// What the page showed of the upload of `path` (`upload`, as upload-in-chromium.mjs reports
/// it): done, with the CID `cairn cid` prints, a gateway link that serves the file, and a
/// progress bar that never went back and ended at the size (and, for a file sent in more than
/// one TUS chunk, stood in between).
async fn assert_stored_and_shown(running: &Running, upload: &Value, path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    let cid = cid_of_path(path);
    assert_eq!(upload["state"], "done", "{upload}");
    assert_eq!(
        upload["cid"], cid,
        "the page's CID against `cairn cid`: {upload}"
    );
    let gateway = format!("{}/ipfs/{cid}", running.upload);
    assert_eq!(upload["gatewayUrl"], gateway, "{upload}");
    let served = reqwest::get(&gateway).await.unwrap().bytes().await.unwrap();
    assert!(
        served == bytes,
        "{gateway} serves other bytes than {}",
        path.display()
    );

    let size = bytes.len() as u64;
    let progress: Vec<u64> = upload["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(
        progress.windows(2).all(|pair| pair[0] <= pair[1]),
        "progress went back: {upload}"
    );
    assert_eq!(
        progress.last(),
        Some(&size),
        "progress must end at the size: {upload}"
    );
    if size > TUS_CHUNK {
        assert!(
            progress.iter().any(|&v| v > 0 && v < size),
            "no progress between chunks: {upload}"
        );
    }
}

/// The upload of `cid` is the account's, through a link the backend made (with its key-values),
/// and the backend recorded, and logged, what Cairn's webhook said of it.
async fn assert_heard_by_the_backend(running: &Running, token: &str, backend: &Backend, cid: &str) {
    let listed = get_json(&format!("{}/api/uploads?cid={cid}", running.upload), token).await;
    let record = &listed["uploads"][0];
    assert_eq!(
        record["keyvalues"],
        json!({"app": "cairn-example-node-backend"}),
        "{record}"
    );
    let link = record["link"]
        .as_str()
        .unwrap_or_else(|| panic!("not through a link: {record}"));
    let heard = backend.get(&format!("/links/{link}/upload")).await;
    assert_eq!(heard["cid"], cid, "{heard}");
    assert_eq!(heard["uploadId"], record["id"], "{heard}");
    backend
        .wait_for_log(&format!("verified: upload.completed {cid}"))
        .await;
}

/// `POST /api/webhooks` on the account host for `upload.completed` events to `url`: the secret
/// they are signed with.
async fn register_webhook(running: &Running, token: &str, url: &str) -> String {
    let request = json!({"url": url, "events": ["upload.completed"]});
    let response = reqwest::Client::new()
        .post(format!("{}/api/webhooks", running.account))
        .bearer_auth(token)
        .json(&request)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let made: Value = response.json().await.unwrap();
    assert_eq!(status, 201, "{request}: {made}");
    made["secret"].as_str().unwrap().to_owned()
}

/// The backend, sent webhooks as Cairn signs them (with the secret), and as it does not: the
/// genuine one is taken; the same with its body changed, a stale one, one signed with another
/// secret and an unsigned one are refused with 401, and none is recorded.
async fn webhooks_not_signed_with_the_secret_are_refused(backend: &Backend, secret: &str) {
    let key = BASE64
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let genuine = completed_event("link-signed-with-the-secret");
    let headers = signed(&key, "msg_genuine", now, &genuine);
    assert_eq!(
        backend.post_webhook(&headers, &genuine).await,
        204,
        "a webhook the test signed as Cairn does"
    );
    assert_eq!(
        backend
            .get("/links/link-signed-with-the-secret/upload")
            .await["cid"],
        "bafy-signed-with-the-secret"
    );

    // The captured headers, replayed with another body.
    let tampered = completed_event("link-tampered");
    assert_eq!(
        backend.post_webhook(&headers, &tampered).await,
        401,
        "a body changed after signing"
    );
    let stale = completed_event("link-stale");
    let ten_minutes_ago = signed(&key, "msg_stale", now - 600, &stale);
    assert_eq!(
        backend.post_webhook(&ten_minutes_ago, &stale).await,
        401,
        "signed ten minutes ago"
    );
    let forged = completed_event("link-forged");
    let another_secret = signed(b"not the webhook's secret", "msg_forged", now, &forged);
    assert_eq!(
        backend.post_webhook(&another_secret, &forged).await,
        401,
        "signed with another secret"
    );
    let unsigned = completed_event("link-unsigned");
    assert_eq!(
        backend.post_webhook(&[], &unsigned).await,
        401,
        "not signed at all"
    );

    for link in [
        "link-tampered",
        "link-stale",
        "link-forged",
        "link-unsigned",
    ] {
        let heard = backend.get(&format!("/links/{link}/upload")).await;
        assert_eq!(
            heard["error"], "not_heard",
            "a refused webhook was recorded: {heard}"
        );
    }
    backend.wait_for_log("webhook refused (401)").await;
}

/// The body of an `upload.completed` event, as Cairn sends it, for an upload through `link`.
fn completed_event(link: &str) -> Vec<u8> {
    let suffix = link.strip_prefix("link-").unwrap();
    json!({
        "type": "upload.completed",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "data": {"id": format!("upload-{suffix}"), "cid": format!("bafy-{suffix}"), "link": link,
                 "name": "note.txt", "size": 1, "status": "completed", "keyvalues": {}},
    })
    .to_string()
    .into_bytes()
}

/// The headers Standard Webhooks signs `body` with: `webhook-signature` is `v1,` and the base64
/// of HMAC-SHA256 over `{id}.{timestamp}.{body}`.
fn signed(key: &[u8], id: &str, timestamp: u64, body: &[u8]) -> Vec<(&'static str, String)> {
    let content = [format!("{id}.{timestamp}.").as_bytes(), body].concat();
    vec![
        ("webhook-id", id.to_owned()),
        ("webhook-timestamp", timestamp.to_string()),
        (
            "webhook-signature",
            format!("v1,{}", BASE64.encode(hmac_sha256(key, &content))),
        ),
    ]
}

/// HMAC-SHA256 (RFC 2104), from the SHA-256 the tests have already.
fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut padded_key = [0u8; BLOCK];
    if key.len() > BLOCK {
        padded_key[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        padded_key[..key.len()].copy_from_slice(key);
    }
    let xored = |pad: u8| padded_key.map(|byte| byte ^ pad);
    let inner = Sha256::new()
        .chain_update(xored(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(xored(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

#[tokio::test]
async fn publish_sh_publishes_each_version_of_a_site_and_moves_its_name() {
    if !jq_installed() {
        return; // Skipping was asked for by hand (CAIRN_ALLOW_SKIP=1); otherwise it failed.
    }
    publishes_two_versions(Publisher::Bash).await;
}

#[tokio::test]
async fn publish_mjs_publishes_each_version_of_a_site_and_moves_its_name() {
    publishes_two_versions(Publisher::Node).await;
}

/// One of ci-publish's two scripts.
#[derive(Clone, Copy, Debug)]
enum Publisher {
    /// `publish.sh`, with the `cairn` command.
    Bash,
    /// `publish.mjs`, with cairn-client.
    Node,
}

/// `publisher` run twice on a site, the second time changed: a new name, then the same name
/// moved. Each CID must be `cairn cid`'s, the name must resolve to the second, and both
/// gateway URLs must serve it.
async fn publishes_two_versions(publisher: Publisher) {
    let examples = examples();
    let data = tempfile::tempdir().unwrap();
    let running = start(data.path(), &[]);
    // What the README has CI hold: a key that can upload and move names.
    let (key, _) = create_key(
        &running,
        &running.token,
        json!({"scopes": ["upload", "names"], "name": "ci"}),
    )
    .await;
    let site = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = site.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("index.html", "<h1>Version 1</h1>\n");
    write("css/style.css", "h1 { color: teal }\n");
    // What `cairn cid` keeps and an upload must too: hidden files and empty directories.
    write(
        ".well-known/security.txt",
        "Contact: mailto:security@example.com\n",
    );
    std::fs::create_dir(site.path().join("images")).unwrap();

    let first = publish(examples, publisher, &running, &key, site.path()).await;
    assert_eq!(
        first.cid,
        cid_of_path(site.path()),
        "{publisher:?}: {}",
        first.printed
    );
    assert!(
        first.printed.contains("(sequence 0)"),
        "a new name: {}",
        first.printed
    );
    write("index.html", "<h1>Version 2</h1>\n");
    write("about.html", "<p>About</p>\n");
    let second = publish(examples, publisher, &running, &key, site.path()).await;
    assert_eq!(
        second.cid,
        cid_of_path(site.path()),
        "{publisher:?}: {}",
        second.printed
    );
    assert_ne!(second.cid, first.cid);
    assert_eq!(
        second.name, first.name,
        "the same name, moved: {}",
        second.printed
    );
    assert!(
        second.printed.contains("(sequence 1)"),
        "{}",
        second.printed
    );

    let home = tempfile::tempdir().unwrap();
    let resolved = client(
        &running,
        &key,
        home.path(),
        &["name", "resolve", &second.name],
    );
    assert_eq!(resolved.trim(), format!("/ipfs/{}", second.cid));
    let ipfs_url = format!("{}/ipfs/{}/", running.upload, second.cid);
    assert!(
        second.printed.contains(&format!("gateway: {ipfs_url}\n")),
        "{}",
        second.printed
    );
    for url in [&ipfs_url, &second.url] {
        let page = reqwest::get(url.as_str())
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(page, "<h1>Version 2</h1>\n", "{url}");
    }
}

/// What one run of a publishing script said: its GitHub Actions outputs, and all it printed.
struct Published {
    cid: String,
    name: String,
    url: String,
    printed: String,
}

/// Run `publisher` on `site` with the label `site`, as a CI job would.
async fn publish(
    examples: &Examples,
    publisher: Publisher,
    running: &Running,
    key: &str,
    site: &Path,
) -> Published {
    let scratch = tempfile::tempdir().unwrap();
    let outputs = scratch.path().join("github-output");
    let dir = examples.dir("ci-publish");
    let mut command = match publisher {
        Publisher::Bash => {
            let mut bash = Command::new("bash");
            bash.arg(dir.join("publish.sh"));
            bash
        }
        Publisher::Node => {
            let mut node = Command::new(&examples.node);
            node.arg(dir.join("publish.mjs"));
            node
        }
    };
    // The `cairn` command as CI has it: on PATH.
    let path = std::env::join_paths(
        std::iter::once(binary().parent().unwrap().to_owned()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();
    command
        .arg(site)
        .arg("site")
        .current_dir(&dir)
        .env("PATH", path)
        .env("CAIRN_URL", &running.upload)
        .env("CAIRN_ACCOUNT_URL", &running.account)
        .env("CAIRN_TOKEN", key)
        .env("GITHUB_OUTPUT", &outputs)
        // `cairn upload` keeps what it would resume under HOME's state directory.
        .env("HOME", scratch.path())
        .env("XDG_CONFIG_HOME", scratch.path().join("config"))
        .env("XDG_STATE_HOME", scratch.path().join("state"))
        .env("TMPDIR", scratch.path());
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{publisher:?} failed:\n{printed}");
    let written = std::fs::read_to_string(&outputs)
        .unwrap_or_else(|e| panic!("no GitHub outputs ({e}):\n{printed}"));
    let mut values: HashMap<&str, &str> = written
        .lines()
        .filter_map(|line| line.split_once('='))
        .collect();
    let mut take = |key: &str| {
        values
            .remove(key)
            .unwrap_or_else(|| panic!("no output {key}: {written}"))
            .to_owned()
    };
    Published {
        cid: take("cid"),
        name: take("name"),
        url: take("url"),
        printed,
    }
}

/// The examples, copied beside cairn-client and installed and built as their READMEs say, once
/// per test binary.
struct Examples {
    /// Node 22, which the examples need.
    node: PathBuf,
    /// Holds `clients/js` and `examples/`, as the repository does.
    root: PathBuf,
}

impl Examples {
    fn dir(&self, example: &str) -> PathBuf {
        self.root.join("examples").join(example)
    }
}

fn examples() -> &'static Examples {
    static PREPARED: OnceLock<Examples> = OnceLock::new();
    PREPARED.get_or_init(|| {
        let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        // cairn-client first: each example's `npm ci` links it, and the page's build bundles it.
        let library = install(&repository, "clients/js");
        npm_run_build(&library.dir);
        for example in ["browser-link-upload", "node-backend", "ci-publish"] {
            install(&repository, &format!("examples/{example}"));
        }
        let root = library.dir.parent().unwrap().parent().unwrap().to_owned();
        let examples = Examples {
            node: library.node,
            root,
        };
        npm_run_build(&examples.dir("browser-link-upload"));
        examples
    })
}

/// `npm ci` of the package at `relative` in the repository, into the same place under
/// `<target>/tmp/examples/`; then its files, copied afresh beside what npm installed.
fn install(repository: &Path, relative: &str) -> node::Installed {
    let sources = repository.join(relative);
    let installed = node::npm_ci(
        &node::NODE_22,
        &format!("examples/{relative}"),
        &sources,
        &[],
        &[],
    );
    refresh_copy(&sources, &installed.dir);
    installed
}

/// Make `to` hold `from`'s files: what is not in `from` any more (nor made by npm or a build)
/// does not linger there.
fn refresh_copy(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(to).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "node_modules" || name == ".installed-lock" {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            std::fs::remove_dir_all(entry.path()).unwrap();
        } else {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
    node::copy_sources(from, to);
}

fn npm_run_build(dir: &Path) {
    cairn_test_support::checked(
        node::npm(&node::NODE_22)
            .args(["run", "build"])
            .current_dir(dir),
        &format!("npm run build in {}", dir.display()),
    );
}

/// The node-backend example, running, and what it has printed.
struct Backend {
    child: Child,
    url: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Backend {
    /// `node server.mjs` with the settings its README names, listening on `port`.
    fn start(examples: &Examples, running: &Running, key: &str, secret: &str, port: u16) -> Self {
        let mut child = Command::new(&examples.node)
            .arg("server.mjs")
            .current_dir(examples.dir("node-backend"))
            .env("CAIRN_URL", &running.upload)
            .env("CAIRN_ACCOUNT_URL", &running.account)
            .env("CAIRN_TOKEN", key)
            .env("CAIRN_WEBHOOK_SECRET", secret)
            .env("PORT", port.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (listening, listening_url) = mpsc::channel();
        keep_lines(child.stdout.take().unwrap(), &log, Some(listening));
        keep_lines(child.stderr.take().unwrap(), &log, None);
        match listening_url.recv_timeout(BACKEND_START) {
            Ok(url) => Self { child, url, log },
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                std::thread::sleep(Duration::from_millis(100)); // the readers' last lines
                panic!(
                    "node-backend did not start listening:\n{}",
                    log.lock().unwrap().join("\n")
                );
            }
        }
    }

    /// `GET path` on the backend: its JSON answer, whatever the status.
    async fn get(&self, path: &str) -> Value {
        reqwest::get(format!("{}{path}", self.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// `POST /webhooks/cairn` with `headers` and `body`: the status the backend answered.
    async fn post_webhook(&self, headers: &[(&str, String)], body: &[u8]) -> u16 {
        let mut request = reqwest::Client::new()
            .post(format!("{}/webhooks/cairn", self.url))
            .header("content-type", "application/json")
            .body(body.to_vec());
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        request.send().await.unwrap().status().as_u16()
    }

    /// Wait until the backend has printed a line holding `text` (its output is read by threads,
    /// a moment behind what it answered).
    async fn wait_for_log(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let printed = || {
            self.log
                .lock()
                .unwrap()
                .iter()
                .any(|line| line.contains(text))
        };
        while !printed() {
            assert!(
                Instant::now() < deadline,
                "node-backend never printed {text:?}:\n{}",
                self.log.lock().unwrap().join("\n")
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Push each line `output` carries to `log`, from a thread of its own; the URL of the line
/// `listening on URL` also to `listening`.
fn keep_lines(
    output: impl Read + Send + 'static,
    log: &Arc<Mutex<Vec<String>>>,
    listening: Option<mpsc::Sender<String>>,
) {
    let log = Arc::clone(log);
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            if let (Some(url), Some(listening)) = (line.strip_prefix("listening on "), &listening) {
                let _ = listening.send(url.to_owned());
            }
            log.lock().unwrap().push(line);
        }
    });
}

/// Run `upload-in-chromium.mjs` on the page at `page_url` with `files`: what the page showed.
async fn upload_in_chromium(
    examples: &Examples,
    chromium: &Path,
    page_url: &str,
    files: &[&Path],
) -> Value {
    let mut command = Command::new(&examples.node);
    command
        .arg("upload-in-chromium.mjs")
        .arg(page_url)
        .args(files)
        .current_dir(examples.dir("browser-link-upload"))
        .env("CHROMIUM", chromium);
    let output = tokio::task::spawn_blocking(move || {
        // Chromium leaves files of its own in the temporary directory: one per run.
        let tmp = tempfile::tempdir().unwrap();
        command.env("TMPDIR", tmp.path()).output().unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "upload-in-chromium.mjs failed:\n{}{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = stdout
        .lines()
        .last()
        .expect("upload-in-chromium.mjs prints what the page showed");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

/// A port nothing listens on now. The webhook's URL must name the backend's port before the
/// backend starts (it needs the webhook's secret), so the port cannot be the backend's own pick.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// jq, which publish.sh reads `cairn`'s JSON with: installed from Debian when missing, where
/// the tests may; `false` only when skipping was asked for by hand.
fn jq_installed() -> bool {
    if on_path("jq").is_some() {
        return true;
    }
    match debian::install(&["jq"]) {
        Ok(()) => true,
        Err(why) => {
            cannot_run(&format!("publish.sh needs jq (Debian package jq): {why}"));
            false
        }
    }
}
