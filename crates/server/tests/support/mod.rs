//! A test server: both hosts on port 0 over a temporary embedded store, with workers running,
//! and the helpers the HTTP tests share.
#![allow(dead_code)] // each test binary uses a different part

use cairn_store::{Access, Accounts};
use std::sync::Arc;
use std::time::Duration;

use cairn_server::rate_limit::{Policy, RateLimits};
use cairn_server::{account_app, upload_app, AppState, ServerConfig};
use cairn_service::{Service, ServiceConfig};
use cairn_store::access::NewKey;
use cairn_store::sqlite::SqliteStore;
use cairn_store::{tokens, AccountLimits};
use reqwest::multipart::{Form, Part};
use reqwest::StatusCode;
use serde_json::Value;

pub struct TestServer {
    pub upload: String,
    pub account: String,
    pub token: String,
    pub store: Arc<SqliteStore>,
    pub state: AppState,
    pub client: reqwest::Client,
    /// Workers run while the server does.
    _stop_workers: tokio::sync::watch::Sender<bool>,
    _dir: tempfile::TempDir,
}

/// Serve as `cairn serve` does (header timeout included), until the test ends.
async fn serve(app: axum::Router, header_timeout: Duration) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(cairn_server::listen::serve(
        listener,
        app,
        header_timeout,
        None,
        std::future::pending(),
    ));
    format!("http://{addr}")
}

impl TestServer {
    /// A server allowing 5 upload-limit requests a minute (so rate limiting is testable).
    pub async fn start() -> Self {
        Self::start_with(ServerConfig {
            rate_limits: RateLimits {
                account: Policy {
                    quota: 5,
                    window: Duration::from_secs(60),
                },
                ..RateLimits::default()
            },
            ..ServerConfig::default()
        })
        .await
    }

    pub async fn start_with(config: ServerConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (service, store) = Service::embedded(dir.path(), ServiceConfig::default())
            .await
            .unwrap();
        let state = AppState::new(service.clone(), config);
        let (stop_workers, stopped) = tokio::sync::watch::channel(false);
        cairn_service::worker::spawn(service, 2, stopped);
        let mut server = Self {
            upload: serve(upload_app(state.clone()), state.config.header_timeout).await,
            account: serve(account_app(state.clone()), state.config.header_timeout).await,
            token: String::new(),
            store,
            state,
            client: reqwest::Client::new(),
            _stop_workers: stop_workers,
            _dir: dir,
        };
        server.token = server.new_account("alice", 2000).await;
        server
    }

    /// Where this server keeps its data (packs/, staging/, tus/, cairn.db).
    pub fn data_dir(&self) -> &std::path::Path {
        self._dir.path()
    }

    /// A new account with the given upload limit; returns its token.
    pub async fn new_account(&self, name: &str, upload_limit: u64) -> String {
        let limits = AccountLimits {
            upload_limit,
            quota: None,
        };
        let account = self.store.create_account(name, limits).await.unwrap();
        let token = tokens::generate();
        self.store
            .create_key(&NewKey::all(account.id), &token.hash, &token.prefix)
            .await
            .unwrap();
        token.secret
    }

    pub async fn post_file(&self, token: &str, query: &str, file: Part) -> (StatusCode, Value) {
        let form = Form::new().part("file", file);
        let response = self
            .client
            .post(format!("{}/api/upload{query}", self.upload))
            .bearer_auth(token)
            .multipart(form)
            .send()
            .await
            .unwrap();
        let status = response.status();
        (status, response.json().await.unwrap())
    }

    pub async fn get(
        &self,
        url: String,
        token: Option<&str>,
    ) -> (StatusCode, reqwest::header::HeaderMap, Value) {
        let mut request = self.client.get(url);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        let (status, headers) = (response.status(), response.headers().clone());
        (status, headers, response.json().await.unwrap())
    }
}

/// GET `path` on the upload host with `headers`, no token.
pub async fn get(server: &TestServer, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = server.client.get(format!("{}{path}", server.upload));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

pub fn assert_error(body: &Value, code: &str) {
    assert_eq!(body["error"], code, "{body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
}

pub fn tar_gz(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    for (path, body) in entries {
        let mut header = tar::Header::new_ustar();
        header.set_size(body.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        // Raw name bytes: set_path would refuse the hostile ones these tests need.
        header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
        header.set_cksum();
        builder.append(&header, *body).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// The CID of `bytes` as one file, in the default profile.
pub fn file_cid(bytes: &[u8]) -> String {
    let profile = cairn_unixfs::Profile::default();
    let mut importer = cairn_unixfs::FileImporter::new(&profile, cairn_unixfs::DiscardBlocks);
    importer.push(bytes).unwrap();
    importer.finish().unwrap().cid.to_string()
}

/// An operation's record as it stands.
pub async fn operation(server: &TestServer, operation_id: i64) -> Value {
    let url = format!("{}/api/operations/{operation_id}", server.upload);
    server.get(url, Some(&server.token)).await.2
}

/// Poll an operation until it is terminal (bounded: 10 s).
pub async fn wait_for(server: &TestServer, operation_id: i64) -> Value {
    for _ in 0..200 {
        let (_, _, op) = server
            .get(
                format!("{}/api/operations/{operation_id}", server.upload),
                Some(&server.token),
            )
            .await;
        if op["status"] == "completed" || op["status"] == "failed" {
            return op;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("operation {operation_id} did not finish");
}
