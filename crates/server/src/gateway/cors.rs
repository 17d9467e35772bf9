//! What every content response gets, path and content origins alike: CORS, and errors in
//! plain text for clients that do not ask for JSON.
//!
//! CORS: any page may read content, as every
//! IPFS gateway lets it (boxo's `ApplyCors`, which the gateway conformance suite checks), with
//! the headers a `fetch` with `Range` needs to read exposed. An `OPTIONS` there (a preflight
//! or not) is answered here; the API routes keep their own rules (`app.rs`).

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::state::ServerConfig;

const ALLOW_METHODS: &str = "GET, HEAD, OPTIONS";
const ALLOW_HEADERS: &str = "Content-Type, Range, User-Agent, X-Requested-With";
const EXPOSE_HEADERS: &str =
    "Content-Length, Content-Range, X-Chunked-Output, X-Ipfs-Path, X-Ipfs-Roots, X-Stream-Output";

/// Whether `request` reads content: `/ipfs/...` and `/ipns/...` on the upload host, or
/// anything on a content origin (`{cid}.ipfs.{domain}`, `{name}.ipns.{domain}`).
pub fn is_gateway_request(config: &ServerConfig, request: &Request) -> bool {
    let path = request.uri().path();
    let on_path = ["/ipfs", "/ipns"]
        .iter()
        .any(|ns| path == *ns || path.starts_with(&format!("{ns}/")));
    on_path || super::subdomain::is_content_origin(config, request.headers())
}

/// The answer to an `OPTIONS` on the gateway: what it allows, and nothing else.
pub fn options() -> Response {
    let mut response = StatusCode::OK.into_response();
    apply(response.headers_mut());
    response
}

/// The gateway's CORS headers on `headers`, in place of any others.
pub fn apply(headers: &mut HeaderMap) {
    for (name, value) in [
        (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
        (header::ACCESS_CONTROL_ALLOW_METHODS, ALLOW_METHODS),
        (header::ACCESS_CONTROL_ALLOW_HEADERS, ALLOW_HEADERS),
        (header::ACCESS_CONTROL_EXPOSE_HEADERS, EXPOSE_HEADERS),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
}

/// Marks an error answered in plain text on purpose, which `app.rs`'s JSON error layer leaves
/// as it is.
#[derive(Clone, Copy)]
pub struct PlainTextError;

/// A content error as other gateways answer it, `text/plain` (what curl prints and tools
/// match), unless the client accepts JSON: then the contract's `{"error", "message"}`.
pub async fn error_body(request_headers: &HeaderMap, response: Response) -> Response {
    let status = response.status();
    let accepts_json = super::accept(request_headers).contains("application/json");
    if !(status.is_client_error() || status.is_server_error()) || accepts_json {
        return response;
    }
    let mut response = crate::error::rewrite_error_body(response, |_, body| {
        let message = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|error| error["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
        (
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("{message}\n"),
        )
            .into_response()
    })
    .await;
    response.extensions_mut().insert(PlainTextError);
    response
}
