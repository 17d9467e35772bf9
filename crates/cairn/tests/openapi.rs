//! The OpenAPI description (issue 19): `openapi.yaml` at the repository's root describes every
//! route of both hosts and no other (read from the routers' sources, as `authorization.rs`
//! does), the upload host serves exactly that file at `GET /api/openapi.json` without a token,
//! and schemathesis (PyPI), generating requests from the served document against a real
//! `cairn serve`, finds no `500`, no status the document does not list, no response body that
//! breaks its schema, and no error body other than the contract's `{"error", "message"}`
//! (every error response is described as that object, so a plain-text or HTML error, or one
//! with other fields, fails `response_schema_conformance` or `content_type_conformance`).

use cairn_harness::server;

use cairn_test_support::pypi;
mod routes;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use server::{create_account, post_upload, start, terminate};

const SCHEMATHESIS: &str = "schemathesis==4.32.5";
/// Requests generated per operation and phase: enough to try each parameter's kinds of value,
/// few enough for the machine the suite shares.
const MAX_EXAMPLES: &str = "20";

/// The HTTP methods of an OpenAPI path item (its other keys are parameters, summaries, ...).
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

fn document() -> Value {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../openapi.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    // The file is written in JSON, which is also YAML, so that the server can serve it as it
    // is (`app.rs`); this is where a YAML-only construct would be caught.
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: not JSON (and so not servable): {e}", file.display()))
}

/// (METHOD, path) of every operation the document describes.
fn described(document: &Value) -> BTreeSet<(String, String)> {
    let paths = document["paths"].as_object().expect("paths");
    let mut routes = BTreeSet::new();
    for (path, item) in paths {
        for (key, _) in item.as_object().expect("a path item") {
            if METHODS.contains(&key.as_str()) {
                routes.insert((key.to_uppercase(), path.clone()));
            }
        }
    }
    routes
}

/// The routers' routes as OpenAPI writes them: axum's wildcard `{*path}` is a plain `{path}`
/// parameter, and the HEAD that axum's `get` answers by itself is not listed (the document
/// says so once); an explicit HEAD (TUS's) is.
fn registered() -> BTreeSet<(String, String)> {
    (routes::written_routes().into_iter())
        .map(|(method, path)| (method, path.replace("{*", "{")))
        .collect()
}

#[test]
fn the_document_describes_every_route_and_no_other() {
    let document = document();
    assert_eq!(document["openapi"].as_str().map(|v| &v[..2]), Some("3."));
    let described = described(&document);
    let registered = registered();
    let undescribed: Vec<_> = registered.difference(&described).collect();
    let unregistered: Vec<_> = described.difference(&registered).collect();
    assert!(
        undescribed.is_empty() && unregistered.is_empty(),
        "openapi.yaml is out of step with the routers: registered but not described \
         {undescribed:?}; described but not registered {unregistered:?}"
    );
    // Every operation says which host serves it, and has an id (schemathesis and code
    // generators name operations by it), unique in the document.
    let mut ids = BTreeSet::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let tags: Vec<&str> = (operation["tags"].as_array().into_iter().flatten())
                .filter_map(Value::as_str)
                .collect();
            assert!(
                tags.contains(&"upload-host") || tags.contains(&"account-host"),
                "{method} {path}: no upload-host or account-host tag"
            );
            let id = operation["operationId"].as_str();
            assert!(
                id.is_some_and(|id| ids.insert(id.to_owned())),
                "{method} {path}: operationId {id:?} missing or not unique"
            );
        }
    }
}

#[tokio::test]
async fn the_upload_host_serves_the_document_without_a_token() {
    let data = tempfile::tempdir().unwrap();
    let running = start(data.path(), &[]);
    let response = reqwest::get(format!("{}/api/openapi.json", running.upload))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()[reqwest::header::CONTENT_TYPE].clone();
    assert_eq!(content_type, "application/json");
    let served: Value = response.json().await.unwrap();
    assert_eq!(
        served,
        document(),
        "the served document is not openapi.yaml"
    );
    terminate(running);
}

/// schemathesis against each host, with the operations that host serves. Left out: the read
/// path and delegated routing (binary and NDJSON bodies, described loosely), the web page,
/// `/pins`, which answers in the Pinning Service API's own error shape and is checked by that
/// API's own conformance suite (`pinning_service.rs`), and TUS's PATCH, whose body type
/// (`application/offset+octet-stream`) schemathesis cannot generate without a Python hook
/// (`tus.rs` and `tus_clients.rs` test it).
#[tokio::test]
async fn schemathesis_finds_no_server_error_and_no_response_the_document_does_not_describe() {
    let data = tempfile::tempdir().unwrap();
    let running = start(data.path(), &[]);
    let token = create_account(data.path(), "schemathesis", &[]);
    // Something of the account's for the lists and the reads to find.
    let (status, _) = post_upload(&running, &token, "hello.txt", b"hello".to_vec()).await;
    assert_eq!(status, 200);
    let bin = pypi::venv_with("schemathesis-venv", SCHEMATHESIS);
    let schema = format!("{}/api/openapi.json", running.upload);
    let reports = data.path().join("schemathesis");
    let mut failures = Vec::new();
    for (host, base, tag) in [
        ("upload", &running.upload, "upload-host"),
        ("account", &running.account, "account-host"),
    ] {
        let output = Command::new(bin.join("schemathesis"))
            .arg("run")
            .arg(&schema)
            .args(["--url", base])
            .args(["--header", &format!("Authorization: Bearer {token}")])
            .args(["--include-tag", tag])
            .args(["--exclude-tag", "gateway"])
            .args(["--exclude-tag", "routing"])
            .args(["--exclude-tag", "web"])
            .args(["--exclude-tag", "pins"])
            // Streams stay open (`tests/events_and_webhooks.rs` follows them); a made endpoint's
            // host is resolved, and this machine resolves no name but its own.
            .args(["--exclude-tag", "events"])
            .args(["--exclude-operation-id", "createWebhook"])
            .args(["--exclude-operation-id", "tusPatch"])
            .args([
                "--checks",
                "not_a_server_error,status_code_conformance,content_type_conformance,\
                 response_schema_conformance",
            ])
            .args(["--max-examples", MAX_EXAMPLES])
            // The same requests on every run: a failure is reproducible, not a flake.
            .args(["--seed", "19"])
            .args(["--workers", "1"])
            .args(["--request-timeout", "30"])
            .arg("--report-dir")
            .arg(reports.join(host))
            .env("NO_COLOR", "1")
            // Its cache (`.schemathesis/`) goes with the data, not into the source tree.
            .current_dir(data.path())
            .output()
            .expect("run schemathesis");
        let stdout = String::from_utf8_lossy(&output.stdout);
        println!("schemathesis against the {host} host:\n{stdout}");
        if !output.status.success() {
            failures.push(format!(
                "the {host} host:\n{stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    terminate(running);
    assert!(failures.is_empty(), "schemathesis failed on {failures:#?}");
}
