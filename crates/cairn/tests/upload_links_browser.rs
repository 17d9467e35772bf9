//! Upload links from a real browser: an app on another origin, holding no key, uploads through
//! a link with tus-js-client, Uppy and a multipart `fetch`, in Debian's Chromium driven by npm
//! `playwright-core` (`tests/links_page/links.mjs`, which serves `page.html` and the bundled
//! clients from a port of its own, so every request is cross-origin). Each upload must get the
//! CID `cairn cid` computes and land in the link's account with the link's name, key-values and
//! id; a used-up or refused link must be refused in a way the page can read.
//!
//! Chromium is installed with apt when missing (as root); where it cannot be, the tests fail
//! saying so (`cannot_run`), as `web_page.rs`'s do.

use cairn_harness::server;

use cairn_test_support::{debian, node};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{json, Value};
use server::{cid_of_path, content, create_account, finished_operation, get_json, start, Running};

/// Over 8 MiB: more than one of the page's 4 MiB TUS chunks, and more than a POST may carry.
const BIG: usize = 9 << 20;

/// What `note.txt` holds: small enough for any upload.
const NOTE: &[u8] = b"sent through a link\n";

/// playwright-core, esbuild, the upload clients and the page, installed once per test binary.
fn scripts() -> &'static node::Installed {
    static INSTALLED: OnceLock<node::Installed> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/links_page");
        let files = ["links.mjs", "page.html", "page.js"];
        node::npm_ci(&node::NODE_22, "links-page", &sources, &files, &[])
    })
}

/// A server, an account's token, and the files the page chooses from: `big.bin` ([`BIG`]
/// bytes) and `note.txt`.
struct Setup {
    running: Running,
    token: String,
    files: tempfile::TempDir,
    _data: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let data = tempfile::tempdir().unwrap();
        let running = start(data.path(), &[]);
        let token = create_account(data.path(), "links", &[]);
        let files = tempfile::tempdir().unwrap();
        std::fs::write(files.path().join("big.bin"), content(BIG, 11)).unwrap();
        std::fs::write(files.path().join("note.txt"), NOTE).unwrap();
        Self {
            running,
            token,
            files,
            _data: data,
        }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.files.path().join(name)
    }

    /// `cairn cid` of one of the files.
    fn cid(&self, name: &str) -> String {
        cid_of_path(&self.file(name))
    }

    /// `POST /api/upload-links` with `body` and the account's token: the created link.
    async fn link(&self, body: Value) -> Value {
        let response = reqwest::Client::new()
            .post(format!("{}/api/upload-links", self.running.upload))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let link: Value = response.json().await.unwrap();
        assert_eq!(status, 201, "creating a link with {body}: {link}");
        assert!(link["id"].is_string(), "{link}");
        let secret_url = link["url"].as_str().unwrap();
        assert!(
            secret_url.starts_with(&format!("{}/api/upload/link/", self.running.upload)),
            "{link}"
        );
        assert_eq!(link["tusEndpoint"], format!("{secret_url}/tus"), "{link}");
        link
    }

    /// Run `scenario` of `links.mjs` with the `files` chosen in the page, given only `link`'s
    /// URLs: what the page answered.
    async fn in_browser(&self, scenario: &str, link: &Value, files: &[&str]) -> Value {
        let chromium = debian::chromium().expect("checked by the test first");
        let mut command = Command::new(&scripts().node);
        command
            .arg(scripts().dir.join("links.mjs"))
            .arg(scenario)
            .args(files.iter().map(|name| self.file(name)))
            .env("CHROMIUM", chromium)
            .env("CAIRN_LINK_URL", link["url"].as_str().unwrap())
            .env("CAIRN_LINK_TUS", link["tusEndpoint"].as_str().unwrap());
        let result = tokio::task::spawn_blocking(move || {
            // Chromium leaves files of its own in the temporary directory: one per run.
            let tmp = tempfile::tempdir().unwrap();
            command.env("TMPDIR", tmp.path()).output().unwrap()
        });
        let output = result.await.unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "links.mjs {scenario} failed:\n{}{stdout}",
            String::from_utf8_lossy(&output.stderr)
        );
        let line = stdout.lines().last().expect("the script prints its result");
        let result: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
        let page_origin = result["pageOrigin"].as_str().unwrap();
        assert_ne!(
            page_origin, self.running.upload,
            "the page must be cross-origin"
        );
        result
    }

    /// A TUS upload the page finished: waits for its operation, checks that its URL is the
    /// upload's, and returns the operation.
    async fn tus_finished(&self, answer: &Value) -> Value {
        assert_eq!(answer["ok"], true, "{answer}");
        // Read in the page from `cairn-operation-id`: it must be exposed to CORS.
        let id = answer["operationId"].as_str().expect("cairn-operation-id");
        let op = finished_operation(&self.running, &self.token, id).await;
        assert_eq!(op["status"], "completed", "{op}");
        let upload_id = op["uploadId"].as_str().unwrap();
        let tus_url = format!("{}/api/upload/tus/{upload_id}", self.running.upload);
        assert_eq!(answer["uploadUrl"], tus_url, "{answer}");
        op
    }

    /// Checks that the upload `id` is the account's, with `link`'s name, key-values and id,
    /// and that listing by its key-value finds it, and by another value does not.
    async fn assert_from_link(&self, id: &str, link: &Value, request: &Value) {
        let upload = &self.running.upload;
        let record = get_json(&format!("{upload}/api/uploads/{id}"), &self.token).await;
        assert_eq!(record["link"], link["id"], "{record}");
        assert_eq!(record["name"], request["name"], "{record}");
        assert_eq!(record["keyvalues"], request["keyvalues"], "{record}");
        let scenario = request["keyvalues"]["scenario"].as_str().unwrap();
        assert_eq!(self.listed(&format!("scenario:{scenario}")).await, [id]);
        assert!(self.listed("scenario:another").await.is_empty());
    }

    /// The ids `GET /api/uploads?kv={kv}` lists.
    async fn listed(&self, kv: &str) -> Vec<String> {
        let url = format!("{}/api/uploads?kv={kv}", self.running.upload);
        let page = get_json(&url, &self.token).await;
        let uploads = page["uploads"]
            .as_array()
            .unwrap_or_else(|| panic!("{page}"));
        uploads
            .iter()
            .map(|u| u["id"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// What the links are created with; `scenario` tells their uploads apart in the list.
fn link_request(scenario: &str) -> Value {
    json!({
        "name": format!("through a link ({scenario})"),
        "keyvalues": {"scenario": scenario, "campaign": "spring"},
    })
}

#[tokio::test]
async fn tus_js_client_uploads_9_mib_through_a_link() {
    if debian::chromium().is_none() {
        return;
    }
    let setup = Setup::new();
    let request = link_request("tus-js-client");
    let link = setup.link(request.clone()).await;
    let answer = setup.in_browser("tus", &link, &["big.bin"]).await;
    let op = setup.tus_finished(&answer).await;
    assert_eq!(op["cid"], setup.cid("big.bin"), "{op}");
    let id = op["uploadId"].as_str().unwrap();
    setup.assert_from_link(id, &link, &request).await;
}

#[tokio::test]
async fn uppy_uploads_9_mib_through_a_link() {
    if debian::chromium().is_none() {
        return;
    }
    let setup = Setup::new();
    let request = link_request("uppy");
    let link = setup.link(request.clone()).await;
    let answer = setup.in_browser("uppy", &link, &["big.bin"]).await;
    let op = setup.tus_finished(&answer).await;
    assert_eq!(op["cid"], setup.cid("big.bin"), "{op}");
    let id = op["uploadId"].as_str().unwrap();
    setup.assert_from_link(id, &link, &request).await;
}

#[tokio::test]
async fn a_multipart_fetch_uploads_through_a_link() {
    if debian::chromium().is_none() {
        return;
    }
    let setup = Setup::new();
    let request = link_request("fetch");
    let link = setup.link(request.clone()).await;
    let answer = setup.in_browser("form", &link, &["note.txt"]).await;
    assert_eq!(answer["ok"], true, "{answer}");
    let body = &answer["body"];
    assert_eq!(body["cid"], setup.cid("note.txt"), "{answer}");
    assert_eq!(body["size"], NOTE.len(), "{answer}");
    setup
        .assert_from_link(body["id"].as_str().unwrap(), &link, &request)
        .await;
}

#[tokio::test]
async fn a_link_for_one_upload_refuses_a_second() {
    if debian::chromium().is_none() {
        return;
    }
    let setup = Setup::new();
    let request = json!({"uploads": 1});
    let link = setup.link(request).await;
    let answer = setup.in_browser("tus-twice", &link, &["note.txt"]).await;
    let op = setup.tus_finished(&answer["first"]).await;
    assert_eq!(op["cid"], setup.cid("note.txt"), "{op}");
    let second = &answer["second"];
    assert_eq!(second["status"], 403, "tus-js-client's onError: {answer}");
    assert_eq!(second["body"]["error"], "link_used", "{answer}");
}

/// A refusal as the page saw it: `answer` failed with `status` and the error `code`, which
/// the page can read only if the refusal carries CORS headers.
fn assert_refused(answer: &Value, status: u16, code: &str) {
    assert_eq!(answer["ok"], false, "{answer}");
    assert_eq!(answer["status"], status, "{answer}");
    assert_eq!(answer["body"]["error"], code, "{answer}");
}

#[tokio::test]
async fn a_link_refuses_what_it_does_not_allow_and_the_page_can_tell_why() {
    if debian::chromium().is_none() {
        return;
    }
    let setup = Setup::new();
    let images = setup.link(json!({"mimeTypes": ["image/*"]})).await;
    let answer = setup.in_browser("form", &images, &["note.txt"]).await;
    assert_refused(&answer, 415, "unsupported_media_type");
    let small = setup.link(json!({"maxBytes": 1 << 20})).await;
    let answer = setup.in_browser("tus", &small, &["big.bin"]).await;
    assert_refused(&answer, 413, "payload_too_large");
    let expiring = setup.link(json!({"expiresIn": 1})).await;
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let answer = setup.in_browser("form", &expiring, &["note.txt"]).await;
    assert_refused(&answer, 401, "link_expired");
}
