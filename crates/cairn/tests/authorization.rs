//! The authorization matrix (issue 19): every route of both hosts, called with no token, with
//! malformed tokens, with a well-formed token no one holds, with a revoked token, and (where the
//! path names an account's resource: an upload, an operation, a TUS upload, a pin) with another
//! account's valid token. Each answer is checked against CONTRACT "Authentication" and
//! "Errors": the status, `WWW-Authenticate`, and the JSON error body (the Pinning Service
//! API's own shape under `/pins`, see `shared/spec/pinning-service.md`). The public routes
//! (the gateway, delegated routing, `/healthz`, `/metrics`, the web page) must answer without
//! a token.
//!
//! [`ROUTES`] is the list, written out by hand. [`registered_routes`] reads the routers'
//! sources and the test fails when the two differ, so a route added to the server without a
//! line here is a failure, not a gap. Every mismatch is collected, then reported together.

mod server;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use reqwest::{Method, RequestBuilder, Response};
use serde_json::{json, Value};
use server::{admin, create_account, finished_operation, post_upload, start, Running};

/// CONTRACT "Authentication": the challenge of a request without credentials...
const CHALLENGE_MISSING: &str = "Bearer realm=\"cairn\"";
/// ... and of one whose credentials are not accepted.
const CHALLENGE_INVALID: &str = "Bearer error=\"invalid_token\"";

/// A peer id in valid syntax (a public IPFS bootstrap node's, not this service's).
const SOME_PEER: &str = "QmNnooDu7bfjPFoTZYxMNLWUQJyrVwtbZg5gBMjTezGAJN";
/// What the TUS upload is declared to hold, and what it holds so far: it stays incomplete, so
/// that a PATCH or a DELETE that got through would visibly change it.
const TUS_LENGTH: usize = 10;
const TUS_SENT: usize = 5;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Host {
    /// `{base_url}`: `app::upload_app`.
    Upload,
    /// `{account_url}`: `app::account_app`.
    Account,
}

const HOSTS: [Host; 2] = [Host::Upload, Host::Account];

/// The first account's resources a path can name.
#[derive(Clone, Copy, Debug)]
enum Resource {
    /// A `POST /api/upload`'s upload id.
    PostUpload,
    /// Its operation id (an integer).
    PostOperation,
    /// An incomplete TUS upload's id (also an operation and an upload).
    TusUpload,
    /// A pin's `requestid`.
    Pin,
}

#[derive(Clone, Copy, Debug)]
enum Access {
    /// A token is required; the path names nothing of an account's.
    Token,
    /// A token is required, and the path names one of the caller's resources: each kind listed
    /// is tried with another account's token, which must get `404`, never `403`.
    Owned(&'static [Resource]),
    /// No token needed: the status the route answers without one, or `None` for "the same as
    /// with a valid token" (for answers that depend on the node, which tests run without).
    Public(Option<u16>),
}

struct Route {
    method: &'static str,
    host: Host,
    /// The path template exactly as the router registers it.
    path: &'static str,
    access: Access,
}

const fn route(method: &'static str, host: Host, path: &'static str, access: Access) -> Route {
    Route {
        method,
        host,
        path,
        access,
    }
}

use Access::{Owned, Public, Token};
use Host::{Account, Upload};
use Resource::{Pin, PostOperation, PostUpload, TusUpload};

/// What an operation id may be: an operation's integer id, or the upload id of its upload
/// (CONTRACT "Operation record"); a pin is an operation too.
const OPERATION_IDS: &[Resource] = &[PostOperation, TusUpload, Pin];
/// What `/api/uploads/{id}` reads: uploads, not pins.
const UPLOAD_IDS: &[Resource] = &[PostUpload, TusUpload];
/// What a delete may remove: an upload or a pin is one record (`uploads::delete_kept`).
const KEPT_IDS: &[Resource] = &[PostUpload, TusUpload, Pin];
/// What `/pins/{requestid}` names: pins, and every upload with a root.
const PIN_IDS: &[Resource] = &[Pin, PostUpload];

/// Every route of both hosts. axum's `get` answers HEAD too, so every GET has its HEAD line:
/// a HEAD must not get around the token check either.
// One line per route, as a table reads (rustfmt would break some lines and not others).
#[rustfmt::skip]
const ROUTES: &[Route] = &[
    // `app::upload_app`.
    route("POST", Upload, "/api/upload", Token),
    // `app::operation_routes`, on both hosts.
    route("GET", Upload, "/api/operations", Token),
    route("HEAD", Upload, "/api/operations", Token),
    route("GET", Account, "/api/operations", Token),
    route("HEAD", Account, "/api/operations", Token),
    route("GET", Upload, "/api/operations/{id}", Owned(OPERATION_IDS)),
    route("HEAD", Upload, "/api/operations/{id}", Owned(OPERATION_IDS)),
    route("GET", Account, "/api/operations/{id}", Owned(OPERATION_IDS)),
    route("HEAD", Account, "/api/operations/{id}", Owned(OPERATION_IDS)),
    route("GET", Upload, "/api/uploads", Token),
    route("HEAD", Upload, "/api/uploads", Token),
    route("GET", Account, "/api/uploads", Token),
    route("HEAD", Account, "/api/uploads", Token),
    route("GET", Upload, "/api/uploads/{id}", Owned(UPLOAD_IDS)),
    route("HEAD", Upload, "/api/uploads/{id}", Owned(UPLOAD_IDS)),
    route("DELETE", Upload, "/api/uploads/{id}", Owned(KEPT_IDS)),
    route("GET", Account, "/api/uploads/{id}", Owned(UPLOAD_IDS)),
    route("HEAD", Account, "/api/uploads/{id}", Owned(UPLOAD_IDS)),
    route("DELETE", Account, "/api/uploads/{id}", Owned(KEPT_IDS)),
    route("GET", Upload, "/api/node", Token),
    route("HEAD", Upload, "/api/node", Token),
    route("GET", Account, "/api/node", Token),
    route("HEAD", Account, "/api/node", Token),
    // `tus::routes`. OPTIONS is the protocol's discovery request (TUS T5): it tells nothing of
    // anyone's uploads, and a client asks it before it has any upload to name.
    route("POST", Upload, "/api/upload/tus", Token),
    route("OPTIONS", Upload, "/api/upload/tus", Public(Some(204))),
    route("POST", Upload, "/api/upload/tus/{id}", Owned(&[TusUpload])),
    route("HEAD", Upload, "/api/upload/tus/{id}", Owned(&[TusUpload])),
    route("PATCH", Upload, "/api/upload/tus/{id}", Owned(&[TusUpload])),
    route("DELETE", Upload, "/api/upload/tus/{id}", Owned(&[TusUpload])),
    route("OPTIONS", Upload, "/api/upload/tus/{id}", Public(Some(204))),
    // `routes::pins::routes`.
    route("GET", Upload, "/pins", Token),
    route("HEAD", Upload, "/pins", Token),
    route("POST", Upload, "/pins", Token),
    route("GET", Upload, "/pins/{requestid}", Owned(PIN_IDS)),
    route("HEAD", Upload, "/pins/{requestid}", Owned(PIN_IDS)),
    route("POST", Upload, "/pins/{requestid}", Owned(PIN_IDS)),
    route("DELETE", Upload, "/pins/{requestid}", Owned(KEPT_IDS)),
    // The read path: public (CONTRACT "Read path").
    route("GET", Upload, "/ipfs/{cid}", Public(Some(200))),
    route("HEAD", Upload, "/ipfs/{cid}", Public(Some(200))),
    route("GET", Upload, "/ipfs/{cid}/", Public(Some(200))),
    route("HEAD", Upload, "/ipfs/{cid}/", Public(Some(200))),
    route("GET", Upload, "/ipfs/{cid}/{*path}", Public(Some(200))),
    route("HEAD", Upload, "/ipfs/{cid}/{*path}", Public(Some(200))),
    // Delegated routing: public like the gateway it points to. Without the IPFS node (tests run
    // without it) both answer `404`, with a token or without.
    route("GET", Upload, "/routing/v1/providers/{cid}", Public(None)),
    route("HEAD", Upload, "/routing/v1/providers/{cid}", Public(None)),
    route("GET", Upload, "/routing/v1/peers/{peer}", Public(None)),
    route("HEAD", Upload, "/routing/v1/peers/{peer}", Public(None)),
    // Not `/api` routes (CONTRACT "Authentication" asks a token of those).
    route("GET", Upload, "/healthz", Public(Some(200))),
    route("HEAD", Upload, "/healthz", Public(Some(200))),
    route("GET", Upload, "/metrics", Public(Some(200))),
    route("HEAD", Upload, "/metrics", Public(Some(200))),
    // `app::account_app`.
    route("GET", Account, "/api/upload-limit", Token),
    route("HEAD", Account, "/api/upload-limit", Token),
    // `web::routes`: the page and its files load before anyone signs in; `/api/web-config`
    // tells the page where the upload host is (`web.rs`: nothing the page's URL does not).
    route("GET", Account, "/", Public(Some(200))),
    route("HEAD", Account, "/", Public(Some(200))),
    route("GET", Account, "/{file}", Public(Some(200))),
    route("HEAD", Account, "/{file}", Public(Some(200))),
    route("GET", Account, "/api/web-config", Public(Some(200))),
    route("HEAD", Account, "/api/web-config", Public(Some(200))),
];

/// The credentials a request carries.
#[derive(Clone)]
enum Credentials {
    None,
    /// An `Authorization` value that is not a token's shape.
    Raw(&'static str, HeaderValue),
    Bearer(&'static str, String),
}

impl Credentials {
    fn label(&self) -> &'static str {
        match self {
            Self::None => "no token",
            Self::Raw(label, _) | Self::Bearer(label, _) => label,
        }
    }
}

/// What one request is expected to get.
enum Expect {
    /// CONTRACT's error: status, code and (for `401`) the challenge.
    Error(u16, &'static str, Option<&'static str>),
    /// The route's own answer, with this status: no authentication got in the way.
    Allowed(u16),
}

/// What the first account stored, and the tokens.
struct World {
    running: Running,
    client: reqwest::Client,
    owner: String,
    other: String,
    revoked: String,
    /// A token of the well-formed shape (`cairn_` and 64 hex digits) that no one holds.
    unknown: String,
    file_cid: String,
    dir_cid: String,
    post_upload: String,
    post_operation: String,
    tus_upload: String,
    pin: String,
    /// The server's data directory, removed after the server has stopped (fields drop in
    /// order).
    _data: tempfile::TempDir,
}

impl World {
    fn base(&self, host: Host) -> &str {
        match host {
            Host::Upload => &self.running.upload,
            Host::Account => &self.running.account,
        }
    }

    fn id(&self, resource: Resource) -> &str {
        match resource {
            Resource::PostUpload => &self.post_upload,
            Resource::PostOperation => &self.post_operation,
            Resource::TusUpload => &self.tus_upload,
            Resource::Pin => &self.pin,
        }
    }

    /// `path` with its parameters filled in: `id` for an `{id}`/`{requestid}`, else a first
    /// resource of the kind the route names.
    fn concrete(&self, route: &Route, id: Option<&str>) -> String {
        let id = id.unwrap_or(match route.access {
            Access::Owned(kinds) => self.id(kinds[0]),
            // The one public route with an id: TUS's OPTIONS on an upload.
            _ => &self.tus_upload,
        });
        // A bare `/ipfs/{cid}` is the file; with a trailing slash or a path, the directory.
        let cid = if route.path.starts_with("/ipfs/{cid}/") {
            &self.dir_cid
        } else {
            &self.file_cid
        };
        let path = (route.path)
            .replace("{cid}", cid)
            .replace("{*path}", "hello.txt")
            .replace("{peer}", SOME_PEER)
            .replace("{file}", "app.js")
            .replace("{id}", id)
            .replace("{requestid}", id);
        assert!(
            !path.contains('{'),
            "{} {}: a parameter this test does not know how to fill in",
            route.method,
            route.path
        );
        path
    }

    /// The request a client of `route` would send (a real body, the protocol's headers), so
    /// that the only thing wrong with it is its credentials.
    fn request(&self, method: &str, host: Host, path_template: &str, path: &str) -> RequestBuilder {
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let url = format!("{}{path}", self.base(host));
        let request = self.client.request(method.clone(), url);
        let tus = path_template.starts_with("/api/upload/tus");
        let request = if tus {
            request.header("Tus-Resumable", "1.0.0")
        } else {
            request
        };
        match (method.as_str(), path_template) {
            ("POST", "/api/upload") => {
                let part =
                    reqwest::multipart::Part::bytes(b"probe".to_vec()).file_name("probe.txt");
                request.multipart(reqwest::multipart::Form::new().part("file", part))
            }
            ("POST", "/api/upload/tus") => request.header("Upload-Length", TUS_LENGTH.to_string()),
            // The upload's missing bytes, at the right offset.
            ("PATCH", "/api/upload/tus/{id}") => request
                .header("Upload-Offset", TUS_SENT.to_string())
                .header(CONTENT_TYPE, "application/offset+octet-stream")
                .body(vec![b'x'; TUS_LENGTH - TUS_SENT]),
            // The most harmful of the overrides (T6): termination.
            ("POST", "/api/upload/tus/{id}") => request.header("X-HTTP-Method-Override", "DELETE"),
            ("POST", "/pins" | "/pins/{requestid}") => {
                request.json(&json!({"cid": self.file_cid, "name": "probe"}))
            }
            _ => request,
        }
    }

    fn with(&self, request: RequestBuilder, credentials: &Credentials) -> RequestBuilder {
        match credentials {
            Credentials::None => request,
            Credentials::Raw(_, value) => request.header(AUTHORIZATION, value.clone()),
            Credentials::Bearer(_, token) => request.bearer_auth(token),
        }
    }
}

/// The checks made and the mismatches found.
#[derive(Default)]
struct Report {
    checks: usize,
    mismatches: Vec<String>,
}

impl Report {
    /// Check `response` to `what` against `expect`. `pins`: the error body has the Pinning
    /// Service API's shape; `head`: there is no body to check.
    async fn check(
        &mut self,
        what: &str,
        response: Response,
        expect: &Expect,
        pins: bool,
        head: bool,
        secret: Option<&str>,
    ) {
        self.checks += 1;
        let status = response.status().as_u16();
        let challenge = (response.headers().get(WWW_AUTHENTICATE))
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let content_type = (response.headers().get(CONTENT_TYPE))
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let body = response.bytes().await.unwrap_or_default();
        let text = String::from_utf8_lossy(&body);
        let mut wrong = Vec::new();
        match expect {
            Expect::Allowed(want) if status != *want => {
                wrong.push(format!("status {status}, expected {want}"));
            }
            Expect::Allowed(_) => {}
            Expect::Error(want, code, want_challenge) => {
                if status != *want {
                    wrong.push(format!("status {status}, expected {want}"));
                }
                if challenge.as_deref() != *want_challenge {
                    wrong.push(format!(
                        "WWW-Authenticate {challenge:?}, expected {want_challenge:?}"
                    ));
                }
                if !content_type
                    .as_deref()
                    .is_some_and(|t| t.starts_with("application/json"))
                {
                    wrong.push(format!("Content-Type {content_type:?}, expected JSON"));
                }
                if !head {
                    if let Err(e) = error_body(&body, code, pins) {
                        wrong.push(format!("body {text:?}: {e}"));
                    }
                }
            }
        }
        if let Some(secret) = secret.filter(|s| text.contains(*s)) {
            wrong.push(format!(
                "the body repeats the credentials sent ({secret:?})"
            ));
        }
        if !wrong.is_empty() {
            self.mismatches
                .push(format!("{what}: {}", wrong.join("; ")));
        }
    }
}

/// Whether `body` is the contract's error with `code`: exactly `{"error": code, "message":
/// text}` (CONTRACT "Errors"), or under `/pins` exactly `{"error": {"reason": CODE,
/// "details": text}}`.
fn error_body(body: &[u8], code: &str, pins: bool) -> Result<(), String> {
    let value: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let object = value.as_object().ok_or("not a JSON object")?;
    let (fields, error) = if pins {
        let error = (object.get("error").and_then(Value::as_object))
            .ok_or("no \"error\" object (the Pinning Service API's shape)")?;
        let keys: BTreeSet<&str> = object.keys().map(String::as_str).collect();
        if keys != BTreeSet::from(["error"]) {
            return Err(format!("fields {keys:?}, expected only \"error\""));
        }
        (error, ("reason", "details", code.to_uppercase()))
    } else {
        (object, ("error", "message", code.to_owned()))
    };
    let (code_field, text_field, want) = error;
    let keys: BTreeSet<&str> = fields.keys().map(String::as_str).collect();
    if keys != BTreeSet::from([code_field, text_field]) {
        return Err(format!(
            "fields {keys:?}, expected {code_field:?} and {text_field:?}"
        ));
    }
    if fields[code_field] != want.as_str() {
        return Err(format!(
            "{code_field} is {}, expected {want:?}",
            fields[code_field]
        ));
    }
    if fields[text_field]
        .as_str()
        .is_none_or(|t| t.trim().is_empty())
    {
        return Err(format!("{text_field} is not a human-readable text"));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_of_both_hosts_answers_bad_credentials_as_the_contract_says() {
    // The list first: a route the server has and the list lacks fails before any request.
    let registered = registered_routes();
    let listed: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|r| (r.method.to_owned(), r.path.to_owned()))
        .collect();
    let unlisted: Vec<_> = registered.difference(&listed).collect();
    let gone: Vec<_> = listed.difference(&registered).collect();
    assert!(
        unlisted.is_empty() && gone.is_empty(),
        "ROUTES is out of step with the routers' sources: registered but not listed {unlisted:?}; \
         listed but not registered {gone:?}"
    );

    let world = world().await;
    let mut report = Report::default();
    let malformed = [
        Credentials::Raw("malformed: not a token", bearer("Bearer not-a-token")),
        Credentials::Raw(
            "malformed: one hex digit short",
            bearer(&format!(
                "Bearer {}",
                &world.unknown[..world.unknown.len() - 1]
            )),
        ),
        Credentials::Raw("malformed: empty", bearer("Bearer ")),
        Credentials::Raw(
            "malformed: not text",
            HeaderValue::from_bytes(b"Bearer cairn_\xff\xfe").unwrap(),
        ),
    ];
    let mut rejected = vec![Credentials::None];
    rejected.extend(malformed);
    rejected.push(Credentials::Bearer("unknown token", world.unknown.clone()));
    rejected.push(Credentials::Bearer("revoked token", world.revoked.clone()));

    for route in ROUTES {
        let pins = route.path.starts_with("/pins");
        let head = route.method == "HEAD";
        let what =
            |path: &str, label: &str| format!("{} {:?} {path} ({label})", route.method, route.host);
        match route.access {
            Access::Public(status) => {
                let path = world.concrete(route, None);
                let expect = match status {
                    Some(status) => Expect::Allowed(status),
                    None => {
                        // The same answer as to a request with a valid token.
                        let request = world.request(route.method, route.host, route.path, &path);
                        let with_token = request.bearer_auth(&world.owner).send().await.unwrap();
                        Expect::Allowed(with_token.status().as_u16())
                    }
                };
                let response = world.request(route.method, route.host, route.path, &path);
                let response = response.send().await.unwrap();
                let label = what(&path, "no token, public");
                report
                    .check(&label, response, &expect, pins, head, None)
                    .await;
            }
            Access::Token | Access::Owned(_) => {
                // The real resource, and an id that names nothing: the answer must not tell
                // them apart (no existence oracle before authentication).
                let mut paths = vec![world.concrete(route, None)];
                if let Access::Owned(_) = route.access {
                    paths.push(world.concrete(route, Some("123456789")));
                }
                for path in &paths {
                    for credentials in &rejected {
                        let (expect, secret) = match credentials {
                            Credentials::None => (
                                Expect::Error(401, "unauthorized", Some(CHALLENGE_MISSING)),
                                None,
                            ),
                            Credentials::Raw(_, _) => (
                                Expect::Error(401, "invalid_token", Some(CHALLENGE_INVALID)),
                                None,
                            ),
                            Credentials::Bearer(_, token) => (
                                Expect::Error(401, "invalid_token", Some(CHALLENGE_INVALID)),
                                Some(token.as_str()),
                            ),
                        };
                        let request = world.request(route.method, route.host, route.path, path);
                        let response = world.with(request, credentials).send().await.unwrap();
                        let label = what(path, credentials.label());
                        report
                            .check(&label, response, &expect, pins, head, secret)
                            .await;
                    }
                }
                if let Access::Owned(kinds) = route.access {
                    for kind in kinds {
                        let path = world.concrete(route, Some(world.id(*kind)));
                        let request = world.request(route.method, route.host, route.path, &path);
                        let response = request.bearer_auth(&world.other).send().await.unwrap();
                        let label = what(&path, &format!("another account's token, {kind:?}"));
                        let expect = Expect::Error(404, "not_found", None);
                        report
                            .check(&label, response, &expect, pins, head, None)
                            .await;
                    }
                }
            }
        }
    }

    authentication_before_the_body(&world, &mut report).await;
    host_membership(&world, &registered, &mut report).await;
    subdomain_gateway(&world, &mut report).await;
    other_account_lists_are_empty(&world, &mut report).await;
    the_scheme_is_case_insensitive(&world, &mut report).await;
    first_account_still_has_everything(&world, &mut report).await;

    eprintln!(
        "authorization matrix: {} checks, {} mismatches",
        report.checks,
        report.mismatches.len()
    );
    assert!(
        report.mismatches.is_empty(),
        "{} of {} checks differ from the contract:\n{}",
        report.mismatches.len(),
        report.checks,
        report.mismatches.join("\n")
    );
}

fn bearer(value: &str) -> HeaderValue {
    HeaderValue::from_str(value).unwrap()
}

/// Start a server; make a second account and a revoked token; store, as the first account, a
/// file, an archive (for a directory to read through the gateway), an incomplete TUS upload
/// and a pin. Each is checked visible to its owner, on both hosts where it is served on both,
/// so that another account's `404` below is about the account and not the id.
async fn world() -> World {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().to_owned();
    let running = start(&data_dir, &[]);
    let owner = running.token.clone();
    let client = reqwest::Client::new();
    let other = create_account(&data_dir, "other", &[]);

    let created = admin(
        &["token", "create", "--account", "default", "--json"],
        &data_dir,
    );
    let created: Value = serde_json::from_slice(&created).unwrap();
    let revoked = created["token"].as_str().unwrap().to_owned();
    let limit = format!("{}/api/upload-limit", running.account);
    let before = client
        .get(&limit)
        .bearer_auth(&revoked)
        .send()
        .await
        .unwrap();
    assert_eq!(before.status(), 200, "the token works before it is revoked");
    admin(&["token", "revoke", &revoked], &data_dir);

    // A token of the right shape that the service never issued.
    let unknown = format!("cairn_{}", "0123456789abcdef".repeat(4));
    assert_ne!(unknown, owner);

    let (status, file) = post_upload(&running, &owner, "hello.txt", b"hello\n".to_vec()).await;
    assert_eq!(status, 200, "{file}");
    let file_cid = file["cid"].as_str().unwrap().to_owned();
    let post_upload_id = file["id"].as_str().unwrap().to_owned();
    let post_operation = file["operationId"].to_string();

    let archive = server::tar_of(&[("hello.txt", b"hello from a directory\n")]);
    let (status, site) = post_upload(&running, &owner, "site.tar", archive).await;
    assert_eq!(status, 200, "{site}");
    let op = finished_operation(&running, &owner, &site["operationId"].to_string()).await;
    assert_eq!(op["status"], "completed", "{op}");
    let dir_cid = op["cid"].as_str().unwrap().to_owned();

    let (tus_path, _) = server::tus_create(&client, &running.upload, &owner, TUS_LENGTH).await;
    let tus_upload = tus_path.rsplit('/').next().unwrap().to_owned();
    let location = format!("{}{tus_path}", running.upload);
    server::tus_patch(&client, &location, &owner, 0, vec![b'x'; TUS_SENT]).await;

    // A pin of a CID already stored: recorded at once.
    let pinned = client
        .post(format!("{}/pins", running.upload))
        .bearer_auth(&owner)
        .json(&json!({"cid": file_cid, "name": "kept"}))
        .send()
        .await
        .unwrap();
    assert_eq!(pinned.status(), 202);
    let pinned: Value = pinned.json().await.unwrap();
    let pin = pinned["requestid"].as_str().unwrap().to_owned();

    let world = World {
        running,
        client,
        owner,
        other,
        revoked,
        unknown,
        file_cid,
        dir_cid,
        post_upload: post_upload_id,
        post_operation,
        tus_upload,
        pin,
        _data: data,
    };
    // The owner reaches every resource through every GET or HEAD route that names it, and
    // gets a success from every route that names none: the answers below are about the
    // credentials, not about the request.
    for route in ROUTES {
        let (method, path) = (route.method, route.path);
        let ids: Vec<Option<&str>> = match route.access {
            Access::Public(_) => continue,
            // Creating more of the owner's resources harms nothing.
            Access::Token => vec![None],
            Access::Owned(_) if method != "GET" && method != "HEAD" => continue,
            Access::Owned(kinds) => kinds.iter().map(|k| Some(world.id(*k))).collect(),
        };
        for id in ids {
            let concrete = world.concrete(route, id);
            let request = world.request(method, route.host, path, &concrete);
            let response = request.bearer_auth(&world.owner).send().await.unwrap();
            let status = response.status();
            // No IPFS node in tests: `/api/node` says so with a `404`.
            let expected = if path == "/api/node" {
                status == 404
            } else {
                status.is_success()
            };
            assert!(
                expected,
                "{method} {:?} {concrete} with the owner's token: {status} {}",
                route.host,
                response.text().await.unwrap_or_default()
            );
        }
    }
    world
}

/// CONTRACT "Authentication": authentication happens before any request body is read. Each
/// route that takes a body gets a request declaring 1 GiB and sending none of it: the `401`
/// must come at once, where a server reading the body first would wait for it.
async fn authentication_before_the_body(world: &World, report: &mut Report) {
    let with_body = ROUTES
        .iter()
        .filter(|r| matches!(r.method, "POST" | "PATCH") && !matches!(r.access, Access::Public(_)));
    for route in with_body {
        let revoked = format!("Bearer {}", world.revoked);
        for (label, authorization, code) in [
            ("no token", None, "unauthorized"),
            ("revoked token", Some(revoked), "invalid_token"),
        ] {
            let address = url_of(world.base(route.host));
            let path = world.concrete(route, None);
            let content_type = match route.path {
                "/api/upload" => "multipart/form-data; boundary=cairn",
                path if path.starts_with("/pins") => "application/json",
                _ => "application/offset+octet-stream",
            };
            let mut head = format!(
                "{} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: {}\r\n\
                 Content-Type: {content_type}\r\nTus-Resumable: 1.0.0\r\n\
                 Upload-Length: {TUS_LENGTH}\r\nUpload-Offset: {TUS_SENT}\r\n",
                route.method,
                1u64 << 30,
            );
            if let Some(value) = authorization {
                head.push_str(&format!("Authorization: {value}\r\n"));
            }
            head.push_str("\r\n");
            let answer = tokio::task::spawn_blocking(move || status_without_body(address, &head))
                .await
                .unwrap();
            report.checks += 1;
            // The error's code, as the JSON body (either shape) writes it.
            let marker = if route.path.starts_with("/pins") {
                format!("\"reason\":\"{}\"", code.to_uppercase())
            } else {
                format!("\"error\":\"{code}\"")
            };
            let what = format!(
                "{} {:?} {path} ({label}, a 1 GiB body declared and not sent)",
                route.method, route.host
            );
            match answer {
                Ok((401, head)) if head.contains(&marker) => {}
                Ok((status, head)) => report
                    .mismatches
                    .push(format!("{what}: {status}, expected 401 {code}: {head:?}")),
                Err(e) => report.mismatches.push(format!(
                    "{what}: no answer without the body ({e}): the body is read before the \
                     token is checked"
                )),
            }
        }
    }
}

/// Send `head` (a request's head, no body) to `address`: the status of the answer, and what
/// was read of it, waiting at most 10 s.
fn status_without_body(
    address: std::net::SocketAddr,
    head: &str,
) -> std::io::Result<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address)?;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    stream.write_all(head.as_bytes())?;
    let mut answer = Vec::new();
    let mut buffer = [0; 4096];
    // The head, and the short JSON body that follows it.
    while !String::from_utf8_lossy(&answer).contains("}") {
        let n = stream.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buffer[..n]);
    }
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP answer: {answer:?}")))?;
    Ok((status, answer))
}

/// Each registered route is served on the hosts [`ROUTES`] lists it for, and on no other: a
/// request without a token to a host it is not listed for must find no route (`404`, or `405`
/// where the path is served with other methods), so an API route merged into the wrong
/// router, or the web page appearing on the upload host, fails here.
async fn host_membership(
    world: &World,
    registered: &BTreeSet<(String, String)>,
    report: &mut Report,
) {
    let mut served: BTreeMap<(&str, &str), BTreeSet<Host>> = BTreeMap::new();
    for route in ROUTES {
        served
            .entry((route.method, route.path))
            .or_default()
            .insert(route.host);
    }
    for (method, path) in registered {
        let hosts = &served[&(method.as_str(), path.as_str())];
        let route = ROUTES
            .iter()
            .find(|r| r.method == method && r.path == path)
            .unwrap();
        let concrete = world.concrete(route, None);
        for host in HOSTS.into_iter().filter(|h| !hosts.contains(h)) {
            let request = world.request(method, host, path, &concrete);
            let response = request.send().await.unwrap();
            report.checks += 1;
            let status = response.status().as_u16();
            if status != 404 && status != 405 {
                report.mismatches.push(format!(
                    "{method} {host:?} {concrete} (no token): {status}: served on a host \
                     ROUTES does not list it for"
                ));
            }
        }
    }
}

/// A content origin (`{cid}.ipfs.localhost`, the default gateway domain) is the gateway too: a
/// fallback service around the upload host's routes, not a `.route`, so it is checked here.
async fn subdomain_gateway(world: &World, report: &mut Report) {
    let base = url_of(&world.running.upload);
    let host = format!("{}.ipfs.localhost", world.file_cid);
    let client = reqwest::Client::builder()
        .resolve(&host, base)
        .build()
        .unwrap();
    let url = format!("http://{host}:{}/", base.port());
    let response = client.get(&url).send().await.unwrap();
    let label = format!("GET {url} (no token, public)");
    report
        .check(&label, response, &Expect::Allowed(200), false, false, None)
        .await;
}

fn url_of(base: &str) -> std::net::SocketAddr {
    base.trim_start_matches("http://").parse().unwrap()
}

/// The other account's lists hold nothing of the first account's (it stored nothing).
/// `bearer` and `BEARER` are Bearer: HTTP's authentication schemes are case-insensitive.
async fn the_scheme_is_case_insensitive(world: &World, report: &mut Report) {
    for scheme in ["bearer", "BEARER", "BeArEr"] {
        let url = format!("{}/api/uploads", world.base(Host::Account));
        let response = world
            .client
            .get(&url)
            .header(AUTHORIZATION, format!("{scheme} {}", world.owner))
            .send()
            .await
            .unwrap();
        report.checks += 1;
        if response.status() != 200 {
            report.mismatches.push(format!(
                "GET /api/uploads with `Authorization: {scheme} <token>`: {}, expected 200",
                response.status()
            ));
        }
    }
}

async fn other_account_lists_are_empty(world: &World, report: &mut Report) {
    let lists = [
        (Host::Upload, "/api/operations", "/operations"),
        (Host::Account, "/api/operations", "/operations"),
        (Host::Upload, "/api/uploads", "/uploads"),
        (Host::Account, "/api/uploads", "/uploads"),
        (Host::Upload, "/pins", "/results"),
    ];
    for (host, path, items) in lists {
        let url = format!("{}{path}", world.base(host));
        let response = (world.client.get(&url).bearer_auth(&world.other))
            .send()
            .await
            .unwrap();
        report.checks += 1;
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap_or_default();
        let empty = body.pointer(items).and_then(Value::as_array).map(Vec::len) == Some(0);
        if status != 200 || !empty {
            report.mismatches.push(format!(
                "GET {host:?} {path} (another account's token): {status} {body}, expected 200 \
                 and an empty list"
            ));
        }
    }
}

/// Nothing above changed the first account's resources: the TUS upload still holds the bytes
/// it had (no PATCH got through), and the upload, operation, TUS upload and pin are all there
/// (no DELETE got through).
async fn first_account_still_has_everything(world: &World, report: &mut Report) {
    let base = &world.running.upload;
    let checks = [
        ("GET", format!("{base}/api/uploads/{}", world.post_upload)),
        (
            "GET",
            format!("{base}/api/operations/{}", world.post_operation),
        ),
        ("GET", format!("{base}/api/uploads/{}", world.tus_upload)),
        (
            "HEAD",
            format!("{base}/api/upload/tus/{}", world.tus_upload),
        ),
        ("GET", format!("{base}/pins/{}", world.pin)),
        ("GET", format!("{base}/pins/{}", world.post_upload)),
    ];
    for (method, url) in checks {
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let response = (world.client.request(method.clone(), &url))
            .bearer_auth(&world.owner)
            .header("Tus-Resumable", "1.0.0")
            .send()
            .await
            .unwrap();
        report.checks += 1;
        let status = response.status().as_u16();
        let offset = (response.headers().get("upload-offset"))
            .map(|v| v.to_str().unwrap_or_default().to_owned());
        let wrong_offset = url.contains("/tus/") && offset != Some(TUS_SENT.to_string());
        if status != 200 || wrong_offset {
            report.mismatches.push(format!(
                "{method} {url} (the owner, after the matrix): {status}, Upload-Offset \
                 {offset:?}: a request with bad credentials changed it"
            ));
        }
    }
    let listed = world
        .client
        .get(format!("{base}/api/uploads"))
        .bearer_auth(&world.owner)
        .send()
        .await
        .unwrap();
    let listed: Value = listed.json().await.unwrap();
    report.checks += 1;
    let ids: Vec<&str> = (listed["uploads"].as_array().into_iter().flatten())
        .filter_map(|u| u["id"].as_str())
        .collect();
    if !ids.contains(&world.post_upload.as_str()) {
        report.mismatches.push(format!(
            "the owner's upload list lost {}: {listed}",
            world.post_upload
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// The guard: the routes the sources register.
//
// axum's `Router` cannot list its routes, so the test reads them where they are written: every
// `.route(path, method_router)` in `crates/server/src` and `crates/cairn/src` (all files, so a
// router in a new file counts too), with each method of its method router. Comparing the set of
// (method, path) pairs, rather than counting `.route(` calls, also catches a method added to an
// existing route (`get(a).delete(b)`) and a path that changed. Any construct the reader does not
// understand (`.nest`, `.route_service`, `any(...)`, `on(...)`, a path that is neither a literal
// nor a `const` of the same file) fails the test, for the reader and the list to be extended
// together. Which host a route is on is not read from the sources: `host_membership` checks it
// against the running server.

/// (METHOD, path) of every route registered in the sources; a GET without an explicit HEAD
/// also answers HEAD (axum's `get`).
fn registered_routes() -> BTreeSet<(String, String)> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["server/src", "cairn/src"] {
        rust_files(&crates.join(dir), &mut files);
    }
    let mut routes = BTreeSet::new();
    for file in files {
        let source = std::fs::read_to_string(&file).unwrap();
        let code = Code::lex(&source);
        for construct in [".nest(", ".nest_service(", ".route_service("] {
            assert!(
                code.find_all(construct).is_empty(),
                "{}: {construct} registers routes this test cannot read; extend \
                 `registered_routes` and ROUTES",
                file.display()
            );
        }
        for at in code.find_all(".route(") {
            let open = at + ".route".len();
            let args = code.balanced(open);
            let (path, methods) = code.split_top_level_comma(args.clone());
            let path = code.path_literal(path, &file);
            let mut methods = code.method_calls(methods, &file, &path);
            if methods.contains("GET") {
                methods.insert("HEAD".to_owned());
            }
            for method in methods {
                routes.insert((method, path.clone()));
            }
        }
    }
    routes
}

/// Whether `chars[at]` begins a word (no identifier character before it).
fn starts_word(chars: &[char], at: usize) -> bool {
    at == 0 || !(chars[at - 1].is_alphanumeric() || chars[at - 1] == '_')
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// A source file's characters with comments blanked out, and which of them are inside string
/// or character literals: enough of Rust's lexer to find calls and read string arguments.
struct Code {
    chars: Vec<char>,
    quoted: Vec<bool>,
}

impl Code {
    fn lex(source: &str) -> Self {
        let chars: Vec<char> = source.chars().collect();
        let mut out = chars.clone();
        let mut quoted = vec![false; chars.len()];
        let mut i = 0;
        while i < chars.len() {
            let rest = &chars[i..];
            if rest.starts_with(&['/', '/']) {
                while i < chars.len() && chars[i] != '\n' {
                    out[i] = ' ';
                    i += 1;
                }
            } else if rest.starts_with(&['/', '*']) {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i..].starts_with(&['/', '*']) {
                        depth += 1;
                        out[i] = ' ';
                        out[i + 1] = ' ';
                        i += 2;
                    } else if chars[i..].starts_with(&['*', '/']) {
                        depth -= 1;
                        out[i] = ' ';
                        out[i + 1] = ' ';
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        out[i] = if chars[i] == '\n' { '\n' } else { ' ' };
                        i += 1;
                    }
                }
            } else if chars[i] == 'r'
                && matches!(rest.get(1), Some('"' | '#'))
                && starts_word(
                    &chars,
                    i.saturating_sub(usize::from(i > 0 && chars[i - 1] == 'b')),
                )
            {
                // A raw string: r"..." or r#"..."#, perhaps a byte string (br"...").
                let hashes = rest[1..].iter().take_while(|c| **c == '#').count();
                if rest.get(1 + hashes) != Some(&'"') {
                    i += 1;
                    continue;
                }
                let start = i;
                i += 2 + hashes;
                while i < chars.len() {
                    if chars[i] == '"' && chars[i + 1..].iter().take(hashes).all(|c| *c == '#') {
                        i += 1 + hashes;
                        break;
                    }
                    i += 1;
                }
                quoted[start..i.min(chars.len())].fill(true);
            } else if chars[i] == '"' {
                let start = i;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                quoted[start..i.min(chars.len())].fill(true);
            } else if chars[i] == '\'' {
                // A character literal ('x', '\n', '\'', '"'); otherwise a lifetime.
                let end = if rest.get(1) == Some(&'\\') {
                    rest.iter().skip(3).position(|c| *c == '\'').map(|p| p + 4)
                } else if rest.get(2) == Some(&'\'') {
                    Some(3)
                } else {
                    None
                };
                let end = end.unwrap_or(1);
                quoted[i..i + end].fill(true);
                i += end;
            } else {
                i += 1;
            }
        }
        Self { chars: out, quoted }
    }

    /// Where `needle` starts in the code (not in literals or comments).
    fn find_all(&self, needle: &str) -> Vec<usize> {
        let needle: Vec<char> = needle.chars().collect();
        (0..self.chars.len())
            .filter(|&i| self.chars[i..].starts_with(&needle) && !self.quoted[i])
            .collect()
    }

    /// The range inside the brackets that open at `open`.
    fn balanced(&self, open: usize) -> std::ops::Range<usize> {
        assert_eq!(self.chars[open], '(');
        let mut depth = 0;
        for i in open..self.chars.len() {
            if self.quoted[i] {
                continue;
            }
            match self.chars[i] {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return open + 1..i;
                    }
                }
                _ => {}
            }
        }
        panic!("unbalanced brackets");
    }

    /// The first argument and the rest.
    fn split_top_level_comma(
        &self,
        args: std::ops::Range<usize>,
    ) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        let mut depth = 0;
        for i in args.clone() {
            if self.quoted[i] {
                continue;
            }
            match self.chars[i] {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                ',' if depth == 0 => return (args.start..i, i + 1..args.end),
                _ => {}
            }
        }
        panic!("a .route( call without two arguments");
    }

    fn text(&self, range: std::ops::Range<usize>) -> String {
        self.chars[range]
            .iter()
            .collect::<String>()
            .trim()
            .to_owned()
    }

    /// A route's path: a string literal, or a `const NAME: &str = "...";` of the same file.
    fn path_literal(&self, range: std::ops::Range<usize>, file: &Path) -> String {
        let text = self.text(range);
        if let Some(literal) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
            return literal.to_owned();
        }
        let code: String = self.chars.iter().collect();
        let definition = format!("const {text}: &str = \"");
        let Some(at) = code.find(&definition) else {
            panic!(
                "{}: the route path {text:?} is neither a literal nor a const of this file",
                file.display()
            );
        };
        let value = &code[at + definition.len()..];
        value[..value.find('"').unwrap()].to_owned()
    }

    /// The HTTP methods of a method router expression such as `get(a).post(b).layer(c)`:
    /// the calls at its top level.
    fn method_calls(
        &self,
        range: std::ops::Range<usize>,
        file: &Path,
        path: &str,
    ) -> BTreeSet<String> {
        let mut methods = BTreeSet::new();
        let mut depth = 0;
        let mut i = range.start;
        while i < range.end {
            let c = self.chars[i];
            if self.quoted[i] {
                i += 1;
                continue;
            }
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                _ => {}
            }
            let starts_name = (c.is_alphabetic() || c == '_')
                && !(i > range.start
                    && (self.chars[i - 1].is_alphanumeric()
                        || self.chars[i - 1] == '_'
                        || self.chars[i - 1] == ':'));
            if depth != 0 || !starts_name {
                i += 1;
                continue;
            }
            // A name, perhaps a path (`axum::routing::get`): its last segment is the call.
            let start = i;
            while i < range.end
                && (self.chars[i].is_alphanumeric() || self.chars[i] == '_' || self.chars[i] == ':')
            {
                i += 1;
            }
            let name: String = self.chars[start..i].iter().collect();
            let name = name.rsplit("::").next().unwrap_or_default().to_owned();
            let called = self.chars[i..range.end].iter().find(|c| !c.is_whitespace()) == Some(&'(');
            if !called {
                continue;
            }
            let method = name.strip_suffix("_service").unwrap_or(&name);
            match method {
                "get" | "post" | "put" | "patch" | "delete" | "head" | "options" | "trace"
                | "connect" => {
                    methods.insert(method.to_uppercase());
                }
                "layer" | "route_layer" | "with_state" | "handle_error" => {}
                other => panic!(
                    "{}: route {path:?}: `{other}(` in its method router is not something this \
                     test can read; extend `registered_routes` and ROUTES",
                    file.display()
                ),
            }
        }
        assert!(
            !methods.is_empty(),
            "{}: route {path:?} without a method",
            file.display()
        );
        methods
    }
}
