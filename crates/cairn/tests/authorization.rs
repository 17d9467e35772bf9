//! The authorization matrix (issues 19 and 34): every route of both hosts, called with no
//! token, with malformed tokens, with a well-formed token no one holds, with a revoked key, an
//! expired key, and (where the path names an account's resource: an upload, an operation, a
//! TUS upload, a pin, a key, a link, a webhook, an IPNS name) with another account's valid
//! token; then every route with a key of each scope (README "Scopes"), and the routes an
//! upload link opens with links tampered with, used up, expired and revoked. Each answer is
//! checked against `docs/contract.md` "Authentication" and "Errors": the status,
//! `WWW-Authenticate`, and the JSON error body (the Pinning Service API's own shape under
//! `/pins`, see the spec, `tests/pinning/ipfs-pinning-service.yaml`). The public routes (the
//! gateway by CID and by IPNS name, delegated routing, `/healthz`, `/metrics`,
//! `/api/openapi.json`, the web page) must answer without a token.
//!
//! [`ROUTES`] is the list, written out by hand. [`registered_routes`] (`routes/mod.rs`)
//! reads the routers' sources and the test fails when the two differ, so a route added to the
//! server without a line here is a failure, not a gap. Every mismatch is collected, then
//! reported together.

use cairn_harness::server;

mod routes;

use std::collections::{BTreeMap, BTreeSet};

use reqwest::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use reqwest::{Method, RequestBuilder, Response};
use routes::registered_routes;
use serde_json::{json, Value};
use server::{
    admin, create_account, create_key, create_link, finished_operation, post_upload, start, Running,
};

/// `docs/contract.md` "Authentication": the challenge of a request without credentials...
const CHALLENGE_MISSING: &str = "Bearer realm=\"cairn\"";
/// ... and of one whose credentials are not accepted.
const CHALLENGE_INVALID: &str = "Bearer error=\"invalid_token\"";
/// ... and of an expired key's.
const CHALLENGE_EXPIRED: &str =
    "Bearer error=\"invalid_token\", error_description=\"the key has expired\"";

/// The scopes a key can have, each of which the matrix tries on every route.
const SCOPES: [&str; 7] = ["upload", "read", "delete", "pins", "keys", "names", "all"];
/// The scopes a route accepts (a key with `all` is accepted everywhere).
const UPLOAD: &[&str] = &["upload"];
const READ: &[&str] = &["read"];
const DELETE: &[&str] = &["delete"];
const PINS: &[&str] = &["pins"];
const KEYS: &[&str] = &["keys"];
const NAMES: &[&str] = &["names"];
/// IPNS names are read with either.
const NAMES_OR_READ: &[&str] = &["names", "read"];
/// The upload limit and the operations: an upload-only key reads those it began.
const UPLOAD_OR_READ: &[&str] = &["upload", "read"];
/// Upload links: an upload-only key lists and revokes those it made.
const UPLOAD_OR_KEYS: &[&str] = &["upload", "keys"];
/// What the node is: any key.
const ANY: &[&str] = &["upload", "read", "delete", "pins", "keys", "names"];

/// A peer id in valid syntax (a public IPFS bootstrap node's, not this service's).
const SOME_PEER: &str = "QmNnooDu7bfjPFoTZYxMNLWUQJyrVwtbZg5gBMjTezGAJN";
/// What the TUS upload is declared to hold, and what it holds so far: it stays incomplete, so
/// that a PATCH or a DELETE that got through would visibly change it.
const TUS_LENGTH: usize = 10;
const TUS_SENT: usize = 5;
/// An IPNS record's media type (IPFS HTTP Routing V1, the trustless gateway).
const IPNS_RECORD: &str = "application/vnd.ipfs.ipns-record";

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
    /// A key's id (not the owner's own).
    Key,
    /// An upload link's id.
    Link,
    /// A webhook endpoint's id.
    Webhook,
    /// An IPNS name's `k51...` form...
    Name,
    /// ... and its label, which the routes take as well.
    NameLabel,
}

#[derive(Clone, Copy, Debug)]
enum Access {
    /// A token with one of these scopes is required; the path names nothing of an account's.
    Token(&'static [&'static str]),
    /// The same, and the path names one of the caller's resources: each kind listed is tried
    /// with another account's token, which must get `404`, never `403`.
    Owned(&'static [Resource], &'static [&'static str]),
    /// An upload link in the path is the credential; any `Authorization` is not looked at.
    Link,
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
use Resource::{Key, Link, Name, NameLabel, Pin, PostOperation, PostUpload, TusUpload, Webhook};

/// What an operation id may be: an operation's integer id, or the upload id of its upload
/// (`docs/contract.md` "Operation record"); a pin is an operation too.
const OPERATION_IDS: &[Resource] = &[PostOperation, TusUpload, Pin];
/// What `/api/uploads/{id}` reads: uploads, not pins.
const UPLOAD_IDS: &[Resource] = &[PostUpload, TusUpload];
/// What a delete may remove: an upload or a pin is one record (`uploads::delete_kept`).
const KEPT_IDS: &[Resource] = &[PostUpload, TusUpload, Pin];
/// What `/pins/{requestid}` names: pins, and every upload with a root.
const PIN_IDS: &[Resource] = &[Pin, PostUpload];
/// What `/api/names/{name}` names: a name, by itself or by its label.
const NAME_IDS: &[Resource] = &[Name, NameLabel];

/// Every route of both hosts. axum's `get` answers HEAD too, so every GET has its HEAD line:
/// a HEAD must not get around the token check either.
// One line per route, as a table reads (rustfmt would break some lines and not others).
#[rustfmt::skip]
const ROUTES: &[Route] = &[
    // `app::upload_app`.
    route("POST", Upload, "/api/upload", Token(UPLOAD)),
    // `app::operation_routes`, on both hosts.
    route("GET", Upload, "/api/operations", Token(UPLOAD_OR_READ)),
    route("HEAD", Upload, "/api/operations", Token(UPLOAD_OR_READ)),
    route("GET", Account, "/api/operations", Token(UPLOAD_OR_READ)),
    route("HEAD", Account, "/api/operations", Token(UPLOAD_OR_READ)),
    route("GET", Upload, "/api/operations/{id}", Owned(OPERATION_IDS, UPLOAD_OR_READ)),
    route("HEAD", Upload, "/api/operations/{id}", Owned(OPERATION_IDS, UPLOAD_OR_READ)),
    route("GET", Account, "/api/operations/{id}", Owned(OPERATION_IDS, UPLOAD_OR_READ)),
    route("HEAD", Account, "/api/operations/{id}", Owned(OPERATION_IDS, UPLOAD_OR_READ)),
    // Live events (`routes::events`): an operation's, as its record is read; the account's,
    // with `read`.
    route("GET", Upload, "/api/operations/{id}/events", Owned(OPERATION_IDS, UPLOAD_OR_READ)),
    route("HEAD", Upload, "/api/operations/{id}/events", Owned(OPERATION_IDS, UPLOAD_OR_READ)),
    route("GET", Account, "/api/operations/{id}/events", Owned(OPERATION_IDS, UPLOAD_OR_READ)),
    route("HEAD", Account, "/api/operations/{id}/events", Owned(OPERATION_IDS, UPLOAD_OR_READ)),
    route("GET", Upload, "/api/events", Token(READ)),
    route("HEAD", Upload, "/api/events", Token(READ)),
    route("GET", Account, "/api/events", Token(READ)),
    route("HEAD", Account, "/api/events", Token(READ)),
    route("GET", Upload, "/api/uploads", Token(READ)),
    route("HEAD", Upload, "/api/uploads", Token(READ)),
    route("GET", Account, "/api/uploads", Token(READ)),
    route("HEAD", Account, "/api/uploads", Token(READ)),
    route("GET", Upload, "/api/uploads/{id}", Owned(UPLOAD_IDS, READ)),
    route("HEAD", Upload, "/api/uploads/{id}", Owned(UPLOAD_IDS, READ)),
    route("DELETE", Upload, "/api/uploads/{id}", Owned(KEPT_IDS, DELETE)),
    route("GET", Account, "/api/uploads/{id}", Owned(UPLOAD_IDS, READ)),
    route("HEAD", Account, "/api/uploads/{id}", Owned(UPLOAD_IDS, READ)),
    route("DELETE", Account, "/api/uploads/{id}", Owned(KEPT_IDS, DELETE)),
    route("PATCH", Upload, "/api/uploads/{id}", Owned(UPLOAD_IDS, UPLOAD)),
    route("PATCH", Account, "/api/uploads/{id}", Owned(UPLOAD_IDS, UPLOAD)),
    route("GET", Upload, "/api/upload-limit", Token(UPLOAD_OR_READ)),
    route("HEAD", Upload, "/api/upload-limit", Token(UPLOAD_OR_READ)),
    route("GET", Account, "/api/upload-limit", Token(UPLOAD_OR_READ)),
    route("HEAD", Account, "/api/upload-limit", Token(UPLOAD_OR_READ)),
    route("GET", Upload, "/api/node", Token(ANY)),
    route("HEAD", Upload, "/api/node", Token(ANY)),
    route("GET", Account, "/api/node", Token(ANY)),
    route("HEAD", Account, "/api/node", Token(ANY)),
    // `tus::routes`. OPTIONS is the protocol's discovery request (TUS T5): it tells nothing of
    // anyone's uploads, and a client asks it before it has any upload to name.
    route("POST", Upload, "/api/upload/tus", Token(UPLOAD)),
    route("OPTIONS", Upload, "/api/upload/tus", Public(Some(204))),
    route("POST", Upload, "/api/upload/tus/{id}", Owned(&[TusUpload], UPLOAD)),
    route("GET", Upload, "/api/upload/tus/{id}", Owned(&[TusUpload], UPLOAD)),
    route("HEAD", Upload, "/api/upload/tus/{id}", Owned(&[TusUpload], UPLOAD)),
    route("PATCH", Upload, "/api/upload/tus/{id}", Owned(&[TusUpload], UPLOAD)),
    route("DELETE", Upload, "/api/upload/tus/{id}", Owned(&[TusUpload], UPLOAD)),
    route("OPTIONS", Upload, "/api/upload/tus/{id}", Public(Some(204))),
    // Upload links: made with an upload key, listed and revoked with a keys key or by the
    // upload key that made them; their URLs take uploads with no other credential.
    route("POST", Upload, "/api/upload-links", Token(UPLOAD)),
    route("GET", Upload, "/api/upload-links", Token(UPLOAD_OR_KEYS)),
    route("HEAD", Upload, "/api/upload-links", Token(UPLOAD_OR_KEYS)),
    route("DELETE", Upload, "/api/upload-links/{id}", Owned(&[Link], UPLOAD_OR_KEYS)),
    // IPNS names (`routes::names`): made, pointed and deleted with `names`, read with `names`
    // or `read`.
    route("POST", Upload, "/api/names", Token(NAMES)),
    route("GET", Upload, "/api/names", Token(NAMES_OR_READ)),
    route("HEAD", Upload, "/api/names", Token(NAMES_OR_READ)),
    route("GET", Upload, "/api/names/{name}", Owned(NAME_IDS, NAMES_OR_READ)),
    route("HEAD", Upload, "/api/names/{name}", Owned(NAME_IDS, NAMES_OR_READ)),
    route("PUT", Upload, "/api/names/{name}", Owned(NAME_IDS, NAMES)),
    route("DELETE", Upload, "/api/names/{name}", Owned(NAME_IDS, NAMES)),
    route("POST", Upload, "/api/upload/link/{secret}", Access::Link),
    route("POST", Upload, "/api/upload/link/{secret}/tus", Access::Link),
    route("OPTIONS", Upload, "/api/upload/link/{secret}/tus", Public(Some(204))),
    // `routes::pins::routes`.
    route("GET", Upload, "/pins", Token(READ)),
    route("HEAD", Upload, "/pins", Token(READ)),
    route("POST", Upload, "/pins", Token(PINS)),
    route("GET", Upload, "/pins/{requestid}", Owned(PIN_IDS, READ)),
    route("HEAD", Upload, "/pins/{requestid}", Owned(PIN_IDS, READ)),
    route("POST", Upload, "/pins/{requestid}", Owned(PIN_IDS, PINS)),
    route("DELETE", Upload, "/pins/{requestid}", Owned(KEPT_IDS, DELETE)),
    // The read path: public (`docs/contract.md` "Read path").
    route("GET", Upload, "/ipfs/{cid}", Public(Some(200))),
    route("HEAD", Upload, "/ipfs/{cid}", Public(Some(200))),
    route("GET", Upload, "/ipfs/{cid}/", Public(Some(200))),
    route("HEAD", Upload, "/ipfs/{cid}/", Public(Some(200))),
    route("GET", Upload, "/ipfs/{cid}/{*path}", Public(Some(200))),
    route("HEAD", Upload, "/ipfs/{cid}/{*path}", Public(Some(200))),
    // ... by IPNS name: the owner's names, kept here, resolve without the IPFS node ...
    route("GET", Upload, "/ipns/{name}", Public(Some(200))),
    route("HEAD", Upload, "/ipns/{name}", Public(Some(200))),
    route("GET", Upload, "/ipns/{name}/", Public(Some(200))),
    route("HEAD", Upload, "/ipns/{name}/", Public(Some(200))),
    route("GET", Upload, "/ipns/{name}/{*path}", Public(Some(200))),
    route("HEAD", Upload, "/ipns/{name}/{*path}", Public(Some(200))),
    // ... and the URI router (`?uri=ipfs://...`), which redirects to the content path.
    route("GET", Upload, "/ipfs/", Public(Some(301))),
    route("HEAD", Upload, "/ipfs/", Public(Some(301))),
    route("GET", Upload, "/ipns/", Public(Some(301))),
    route("HEAD", Upload, "/ipns/", Public(Some(301))),
    // Delegated routing: public like the gateway it points to. Without the IPFS node (tests run
    // without it) both answer `404`, with a token or without.
    route("GET", Upload, "/routing/v1/providers/{cid}", Public(None)),
    route("HEAD", Upload, "/routing/v1/providers/{cid}", Public(None)),
    route("GET", Upload, "/routing/v1/peers/{peer}", Public(None)),
    route("HEAD", Upload, "/routing/v1/peers/{peer}", Public(None)),
    // IPNS records: a name kept here is answered without the node; a record of a name no
    // longer kept here is taken from anyone (its signature is the credential).
    route("GET", Upload, "/routing/v1/ipns/{name}", Public(Some(200))),
    route("HEAD", Upload, "/routing/v1/ipns/{name}", Public(Some(200))),
    route("PUT", Upload, "/routing/v1/ipns/{name}", Public(Some(200))),
    // The IPNI chain, public as the DHT's records are; `404` without the IPFS node too.
    route("GET", Upload, "/ipni/v1/ad/{name}", Public(None)),
    route("HEAD", Upload, "/ipni/v1/ad/{name}", Public(None)),
    // Not `/api` routes (`docs/contract.md` "Authentication" asks a token of those).
    route("GET", Upload, "/healthz", Public(Some(200))),
    route("HEAD", Upload, "/healthz", Public(Some(200))),
    route("GET", Upload, "/metrics", Public(Some(200))),
    route("HEAD", Upload, "/metrics", Public(Some(200))),
    // `docs::routes`, on both hosts: the guides, the API reference and its description
    // (`openapi.yaml`), nothing of anyone's, like `/healthz`.
    route("GET", Upload, "/api/openapi.json", Public(Some(200))),
    route("HEAD", Upload, "/api/openapi.json", Public(Some(200))),
    route("GET", Account, "/api/openapi.json", Public(Some(200))),
    route("HEAD", Account, "/api/openapi.json", Public(Some(200))),
    route("GET", Upload, "/docs", Public(Some(200))),
    route("HEAD", Upload, "/docs", Public(Some(200))),
    route("GET", Account, "/docs", Public(Some(200))),
    route("HEAD", Account, "/docs", Public(Some(200))),
    route("GET", Upload, "/docs/{page}", Public(Some(200))),
    route("HEAD", Upload, "/docs/{page}", Public(Some(200))),
    route("GET", Account, "/docs/{page}", Public(Some(200))),
    route("HEAD", Account, "/docs/{page}", Public(Some(200))),
    route("GET", Upload, "/docs/assets/{asset}", Public(Some(200))),
    route("HEAD", Upload, "/docs/assets/{asset}", Public(Some(200))),
    route("GET", Account, "/docs/assets/{asset}", Public(Some(200))),
    route("HEAD", Account, "/docs/assets/{asset}", Public(Some(200))),
    // `app::account_app`.
    route("POST", Account, "/api/keys", Token(KEYS)),
    route("GET", Account, "/api/keys", Token(KEYS)),
    route("HEAD", Account, "/api/keys", Token(KEYS)),
    route("DELETE", Account, "/api/keys/{id}", Owned(&[Key], KEYS)),
    // Webhooks send what the account's uploads become, to where its key says: `keys`.
    route("POST", Account, "/api/webhooks", Token(KEYS)),
    route("GET", Account, "/api/webhooks", Token(KEYS)),
    route("HEAD", Account, "/api/webhooks", Token(KEYS)),
    route("DELETE", Account, "/api/webhooks/{id}", Owned(&[Webhook], KEYS)),
    route("GET", Account, "/api/webhooks/{id}/deliveries", Owned(&[Webhook], KEYS)),
    route("HEAD", Account, "/api/webhooks/{id}/deliveries", Owned(&[Webhook], KEYS)),
    route("POST", Account, "/api/webhooks/{id}/deliveries/{delivery}/retry", Owned(&[Webhook], KEYS)),
    route("GET", Account, "/api/usage", Token(READ)),
    route("HEAD", Account, "/api/usage", Token(READ)),
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
    /// A key past its expiry.
    Expired(String),
}

impl Credentials {
    fn label(&self) -> &'static str {
        match self {
            Self::None => "no token",
            Self::Raw(label, _) | Self::Bearer(label, _) => label,
            Self::Expired(_) => "expired key",
        }
    }
}

/// What one request is expected to get.
enum Expect {
    /// `docs/contract.md`'s error: status, code and (for `401`) the challenge.
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
    expired: String,
    /// A key of each of [`SCOPES`], by scope.
    scoped: BTreeMap<&'static str, String>,
    /// A spare key of the owner's, and a link of the owner's.
    key_id: String,
    link_id: String,
    /// A webhook endpoint of the owner's.
    webhook_id: String,
    /// An IPNS name of the owner's (`k51...`) pointing at `file_cid`, and its label.
    name: String,
    name_label: String,
    /// Another, pointing at `dir_cid`.
    site_name: String,
    /// A name the owner made and deleted, and its record: no longer kept here, it is one that
    /// anybody may push to `PUT /routing/v1/ipns/{name}`.
    pushed_name: String,
    pushed_record: Vec<u8>,
    /// An upload link's secret with its last digit changed.
    tampered_link: String,
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
            Resource::Key => &self.key_id,
            Resource::Link => &self.link_id,
            Resource::Webhook => &self.webhook_id,
            Resource::Name => &self.name,
            Resource::NameLabel => &self.name_label,
        }
    }

    /// `path` with its parameters filled in: `id` for an `{id}`/`{requestid}`, else a first
    /// resource of the kind the route names.
    fn concrete(&self, route: &Route, id: Option<&str>) -> String {
        let id = id.unwrap_or(match route.access {
            Access::Owned(kinds, _) => self.id(kinds[0]),
            // The one public route with an id: TUS's OPTIONS on an upload.
            _ => &self.tus_upload,
        });
        // A bare `/ipfs/{cid}` is the file; with a trailing slash or a path, the directory.
        let cid = if route.path.starts_with("/ipfs/{cid}/") {
            &self.dir_cid
        } else {
            &self.file_cid
        };
        // A name the same way; a record to push is of a name not kept here; IPNI's is `head`.
        let name = match route.path {
            "/ipns/{name}" | "/routing/v1/ipns/{name}" if route.method != "PUT" => &self.name,
            "/routing/v1/ipns/{name}" => &self.pushed_name,
            path if path.starts_with("/ipns/{name}/") => &self.site_name,
            path if path.starts_with("/api/names/") => id,
            _ => "head",
        };
        // The URI routers' one parameter: an address to redirect to.
        let query = match route.path {
            "/ipfs/" => format!("?uri=ipfs://{}", self.file_cid),
            "/ipns/" => format!("?uri=ipns://{}", self.name),
            _ => String::new(),
        };
        let path = (route.path)
            .replace("{cid}", cid)
            .replace("{*path}", "hello.txt")
            .replace("{peer}", SOME_PEER)
            .replace("{name}", name)
            .replace("{file}", "app.js")
            .replace("{page}", "quick-start")
            .replace("{asset}", "docs.css")
            .replace("{id}", id)
            .replace("{requestid}", id)
            .replace("{delivery}", "1")
            .replace("{secret}", &self.tampered_link)
            + &query;
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
        let tus = path_template.starts_with("/api/upload/tus") || path_template.ends_with("/tus");
        let request = if tus {
            request.header("Tus-Resumable", "1.0.0")
        } else {
            request
        };
        match (method.as_str(), path_template) {
            ("POST", "/api/upload" | "/api/upload/link/{secret}") => {
                let part =
                    reqwest::multipart::Part::bytes(b"probe".to_vec()).file_name("probe.txt");
                request.multipart(reqwest::multipart::Form::new().part("file", part))
            }
            ("POST", "/api/upload/tus" | "/api/upload/link/{secret}/tus") => {
                request.header("Upload-Length", TUS_LENGTH.to_string())
            }
            // A key that a key with `keys` alone may give.
            ("POST", "/api/keys") => request.json(&json!({"name": "probe", "scopes": ["keys"]})),
            ("POST", "/api/upload-links") => request.json(&json!({})),
            // A public address (the server allows no other), which nothing is sent to.
            ("POST", "/api/webhooks") => {
                request.json(&json!({"url": "https://1.1.1.1/probe", "events": ["pin.removed"]}))
            }
            ("PATCH", "/api/uploads/{id}") => request.json(&json!({"keyvalues": {"probe": "1"}})),
            // A name with no label (a label is the account's once), or pointed, at the file.
            ("POST", "/api/names") | ("PUT", "/api/names/{name}") => {
                request.json(&json!({"cid": self.file_cid}))
            }
            // The routing API answers records only to whom asks for one.
            ("GET" | "HEAD", "/routing/v1/ipns/{name}") => request.header(ACCEPT, IPNS_RECORD),
            ("PUT", "/routing/v1/ipns/{name}") => request
                .header(CONTENT_TYPE, IPNS_RECORD)
                .body(self.pushed_record.clone()),
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
            Credentials::Bearer(_, token) | Credentials::Expired(token) => {
                request.bearer_auth(token)
            }
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
    /// Check that `response` to `what` has `status` and a body naming `code` (an error's code,
    /// or a field a success must have).
    async fn answer(&mut self, what: &str, response: Response, status: u16, code: &str) {
        self.checks += 1;
        let got = response.status().as_u16();
        let body = response.text().await.unwrap_or_default();
        if got != status || !body.contains(&format!("\"{code}\"")) {
            self.mismatches
                .push(format!("{what}: {got} {body}, expected {status} {code}"));
        }
    }

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
/// text}` (`docs/contract.md` "Errors"), or under `/pins` exactly `{"error": {"reason": CODE,
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
    rejected.push(Credentials::Expired(world.expired.clone()));

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
            Access::Link => {
                // Whatever credentials come with it, a link that is not one is refused.
                let path = world.concrete(route, None);
                for credentials in &rejected {
                    let request = world.request(route.method, route.host, route.path, &path);
                    let response = world.with(request, credentials).send().await.unwrap();
                    let label = what(&path, &format!("tampered link, {}", credentials.label()));
                    let expect = Expect::Error(401, "invalid_link", None);
                    let secret = Some(world.tampered_link.as_str());
                    report
                        .check(&label, response, &expect, pins, head, secret)
                        .await;
                }
            }
            Access::Token(_) | Access::Owned(..) => {
                // The real resource, and an id that names nothing: the answer must not tell
                // them apart (no existence oracle before authentication).
                let mut paths = vec![world.concrete(route, None)];
                if let Access::Owned(..) = route.access {
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
                            Credentials::Expired(token) => (
                                Expect::Error(401, "token_expired", Some(CHALLENGE_EXPIRED)),
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
                if let Access::Owned(kinds, _) = route.access {
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

    every_scope_reaches_what_it_should(&world, &mut report).await;
    links_refuse_what_they_should(&world, &mut report).await;
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
    // Each route's own answer: a redirect is not followed to another route's.
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
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

    // Keys: one that expires in a second (it has by the time the matrix runs), one of each
    // scope, a spare one to name in `DELETE /api/keys/{id}`; a link, and its URL tampered with.
    let expiring = json!({"name": "brief", "scopes": ["all"], "expiresIn": 1});
    let (expired, _) = create_key(&running, &owner, expiring).await;
    let mut scoped = BTreeMap::new();
    for scope in SCOPES {
        let (key, _) =
            create_key(&running, &owner, json!({"name": scope, "scopes": [scope]})).await;
        scoped.insert(scope, key);
    }
    let (_, spare) = create_key(&running, &owner, json!({"scopes": ["read"]})).await;
    let key_id = spare["id"].to_string();
    let link = create_link(&running, &owner, json!({})).await;
    let link_id = link["id"].as_str().unwrap().to_owned();
    let secret = link["url"].as_str().unwrap().rsplit('/').next().unwrap();
    let last = if secret.ends_with('0') { "1" } else { "0" };
    let tampered_link = format!("{}{last}", &secret[..secret.len() - 1]);
    let webhook: Value = client
        .post(format!("{}/api/webhooks", running.account))
        .bearer_auth(&owner)
        .json(&json!({"url": "https://1.1.1.1/hook", "events": ["pin.removed"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let webhook_id = webhook["id"].as_str().expect("a webhook").to_owned();
    // IPNS names: one at the file (with a label), one at the directory, and one deleted once
    // its record is read.
    let make_name = |cid: &str, label: Option<&str>| {
        let request = (client.post(format!("{}/api/names", running.upload)))
            .bearer_auth(&owner)
            .json(&json!({"cid": cid, "label": label}));
        async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 201);
            let made: Value = response.json().await.unwrap();
            made["name"].as_str().expect("a name").to_owned()
        }
    };
    let name_label = "site".to_owned();
    let name = make_name(&file_cid, Some(&name_label)).await;
    let site_name = make_name(&dir_cid, None).await;
    let pushed_name = make_name(&file_cid, None).await;
    let record = (client.get(format!("{}/routing/v1/ipns/{pushed_name}", running.upload)))
        .header(ACCEPT, IPNS_RECORD)
        .send()
        .await
        .unwrap();
    assert_eq!(record.status(), 200);
    assert_eq!(record.headers()[CONTENT_TYPE], IPNS_RECORD);
    let pushed_record = record.bytes().await.unwrap().to_vec();
    let deleted = (client.delete(format!("{}/api/names/{pushed_name}", running.upload)))
        .bearer_auth(&owner)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;

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
        expired,
        scoped,
        key_id,
        link_id,
        webhook_id,
        name,
        name_label,
        site_name,
        pushed_name,
        pushed_record,
        tampered_link,
        _data: data,
    };
    // The owner reaches every resource through every GET or HEAD route that names it, and
    // gets a success from every route that names none: the answers below are about the
    // credentials, not about the request.
    for route in ROUTES {
        let (method, path) = (route.method, route.path);
        let ids: Vec<Option<&str>> = match route.access {
            Access::Public(_) | Access::Link => continue,
            // Creating more of the owner's resources harms nothing.
            Access::Token(_) => vec![None],
            Access::Owned(..) if method != "GET" && method != "HEAD" => continue,
            Access::Owned(kinds, _) => kinds.iter().map(|k| Some(world.id(*k))).collect(),
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

/// Every route that needs a key, with a key of each scope: a scope the route accepts gets
/// through (to an id that names nothing where the route names one, so nothing changes), any
/// other is `403 forbidden`, naming the scope it lacks.
async fn every_scope_reaches_what_it_should(world: &World, report: &mut Report) {
    for route in ROUTES {
        let (accepted, path) = match route.access {
            Access::Token(scopes) => (scopes, world.concrete(route, None)),
            Access::Owned(_, scopes) => (scopes, world.concrete(route, Some("123456789"))),
            Access::Public(_) | Access::Link => continue,
        };
        let (pins, head) = (route.path.starts_with("/pins"), route.method == "HEAD");
        for scope in SCOPES {
            let key = &world.scoped[scope];
            let request = world.request(route.method, route.host, route.path, &path);
            let response = request.bearer_auth(key).send().await.unwrap();
            let label = format!(
                "{} {:?} {path} (a key of scope {scope})",
                route.method, route.host
            );
            if scope == "all" || accepted.contains(&scope) {
                report.checks += 1;
                let status = response.status().as_u16();
                if status == 401 || status == 403 {
                    let body = response.text().await.unwrap_or_default();
                    report.mismatches.push(format!(
                        "{label}: {status} {body}, but the route takes {accepted:?}"
                    ));
                }
                continue;
            }
            if head {
                let expect = Expect::Error(403, "forbidden", None);
                report
                    .check(&label, response, &expect, pins, head, Some(key))
                    .await;
                continue;
            }
            report.checks += 1;
            let status = response.status().as_u16();
            let body = response.text().await.unwrap_or_default();
            let names_scope = accepted.iter().any(|scope| body.contains(scope));
            let code = if pins {
                "\"FORBIDDEN\""
            } else {
                "\"forbidden\""
            };
            if status != 403 || !body.contains(code) || !names_scope {
                report.mismatches.push(format!(
                    "{label}: {status} {body}, expected 403 forbidden naming {accepted:?}"
                ));
            }
        }
    }
}

/// An upload link's URLs refuse a link used up (by POST and TUS alike), expired, revoked, or
/// made by a key since revoked; a refused try does not use a link up.
async fn links_refuse_what_they_should(world: &World, report: &mut Report) {
    let (running, owner, client) = (&world.running, &world.owner, &world.client);
    let post = |url: String| async move {
        let part = reqwest::multipart::Part::bytes(b"probe".to_vec()).file_name("probe.txt");
        let form = reqwest::multipart::Form::new().part("file", part);
        client.post(url).multipart(form).send().await.unwrap()
    };
    let url = |link: &Value| link["url"].as_str().unwrap().to_owned();

    let brief = create_link(running, owner, json!({"expiresIn": 1})).await;
    let once = create_link(running, owner, json!({"uploads": 1, "maxBytes": 100})).await;
    // Over its size: refused before the body, and the link is not used by it.
    let big = reqwest::multipart::Part::bytes(vec![0; 1000]).file_name("big.bin");
    let response = (client.post(url(&once)))
        .multipart(reqwest::multipart::Form::new().part("file", big))
        .send()
        .await
        .unwrap();
    report
        .answer(
            "a link's upload over its maxBytes",
            response,
            413,
            "payload_too_large",
        )
        .await;
    let first = post(url(&once)).await;
    report
        .answer("a link's one upload", first, 200, "cid")
        .await;
    let again = post(url(&once)).await;
    report
        .answer("a link used twice", again, 403, "link_used")
        .await;
    let tus = (client.post(once["tusEndpoint"].as_str().unwrap()))
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Length", "5")
        .send()
        .await
        .unwrap();
    report
        .answer("a used link's TUS endpoint", tus, 403, "link_used")
        .await;

    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let late = post(url(&brief)).await;
    report
        .answer("a link used after its expiry", late, 401, "link_expired")
        .await;

    let revoked = create_link(running, owner, json!({})).await;
    let gone = (client.delete(format!(
        "{}/api/upload-links/{}",
        running.upload,
        revoked["id"].as_str().unwrap()
    )))
    .bearer_auth(owner)
    .send()
    .await
    .unwrap();
    assert_eq!(gone.status(), 204);
    let response = post(url(&revoked)).await;
    report
        .answer("a revoked link", response, 401, "invalid_link")
        .await;

    let (maker, record) = create_key(running, owner, json!({"scopes": ["upload"]})).await;
    let orphan = create_link(running, &maker, json!({})).await;
    let gone = (client.delete(format!("{}/api/keys/{}", running.account, record["id"])))
        .bearer_auth(owner)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 204);
    let response = post(url(&orphan)).await;
    report
        .answer(
            "a link whose key was revoked",
            response,
            401,
            "invalid_link",
        )
        .await;
}

/// `docs/contract.md` "Authentication": authentication happens before any request body is read. Each
/// route that takes a body gets a request declaring 1 GiB and sending none of it: the `401`
/// must come at once, where a server reading the body first would wait for it.
async fn authentication_before_the_body(world: &World, report: &mut Report) {
    let with_body = ROUTES.iter().filter(|r| {
        matches!(r.method, "POST" | "PATCH" | "PUT") && !matches!(r.access, Access::Public(_))
    });
    for route in with_body {
        let revoked = format!("Bearer {}", world.revoked);
        let by_link = matches!(route.access, Access::Link);
        for (label, authorization, code) in [
            (
                "no token",
                None,
                if by_link {
                    "invalid_link"
                } else {
                    "unauthorized"
                },
            ),
            (
                "revoked token",
                Some(revoked),
                if by_link {
                    "invalid_link"
                } else {
                    "invalid_token"
                },
            ),
        ] {
            let address = url_of(world.base(route.host));
            let path = world.concrete(route, None);
            let content_type = match route.path {
                "/api/upload" | "/api/upload/link/{secret}" => {
                    "multipart/form-data; boundary=cairn"
                }
                "/api/keys" | "/api/upload-links" | "/api/uploads/{id}" | "/api/webhooks"
                | "/api/names" | "/api/names/{name}" => "application/json",
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

/// A content origin (`{cid}.ipfs.localhost`, the default gateway domain, and a name's,
/// `{name}.ipns.localhost`) is the gateway too: a fallback service around the upload host's
/// routes, not a `.route`, so it is checked here.
async fn subdomain_gateway(world: &World, report: &mut Report) {
    let base = url_of(&world.running.upload);
    for host in [
        format!("{}.ipfs.localhost", world.file_cid),
        format!("{}.ipns.localhost", world.name),
    ] {
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
        (Host::Upload, "/api/names", "/results"),
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
/// it had (no PATCH got through), the name still points where it did (no PUT), and the upload,
/// operation, TUS upload, pin and name are all there (no DELETE got through).
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
    // The name is there (no DELETE got through) and was never pointed (no PUT did).
    let name = (world.client.get(format!("{base}/api/names/{}", world.name)))
        .bearer_auth(&world.owner)
        .send()
        .await
        .unwrap();
    let status = name.status().as_u16();
    let name: Value = name.json().await.unwrap_or_default();
    report.checks += 1;
    if status != 200 || name["sequence"] != 0 || name["cid"] != world.file_cid.as_str() {
        report.mismatches.push(format!(
            "GET /api/names/{} (the owner, after the matrix): {status} {name}: a request with \
             bad credentials changed it",
            world.name
        ));
    }
}
