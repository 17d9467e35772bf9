//! The web page, on the account host (never on the upload host, where users' content is
//! served: an uploaded HTML file there must not share the page's origin and read its token).
//! `GET /` is `index.html`, and every other file of `crates/server/web/` is at `/{name}`,
//! built into the binary (`build.rs`), with a `Content-Security-Policy` that allows nothing
//! but the page's own files and calls to the upload host. `GET /api/web-config` tells the
//! page where the upload host and the subdomain gateway are.

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use bytes::Bytes;
use serde_json::json;

use crate::error::ApiError;
use crate::origin::RequestOrigin;
use crate::state::AppState;

/// Every file of `web/` and its bytes.
const FILES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/web_files.rs"));

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(index))
        .route("/{file}", get(file))
        .route("/api/web-config", get(config))
}

async fn index(state: State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    file(state, headers, Path("index.html".to_owned())).await
}

async fn file(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let not_found = || {
        crate::hosts::served_by_the_upload_host(&format!("/{name}"))
            .unwrap_or_else(|| ApiError::NotFound(format!("no file {name:?} on this page")))
    };
    let content_type = content_type(&name).ok_or_else(not_found)?;
    let bytes = match &state.config.web_dir {
        // A name of plain characters, so it cannot leave the directory.
        Some(dir) if plain_name(&name) => Bytes::from(
            tokio::fs::read(dir.join(&name))
                .await
                .map_err(|_| not_found())?,
        ),
        Some(_) => return Err(not_found()),
        None => {
            let (_, built_in) = FILES
                .iter()
                .find(|(file, _)| *file == name)
                .ok_or_else(not_found)?;
            Bytes::from_static(built_in)
        }
    };
    let upload = UploadHost::of(&state, &headers)?;
    // Scripts, styles and images from the page's own files only; requests to itself and the
    // upload host; no frames, forms or base URLs elsewhere.
    let policy = format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self' {}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        upload.url()
    );
    let policy = HeaderValue::from_str(&policy).map_err(ApiError::internal)?;
    Ok(served(content_type, bytes, Some(policy), "no-cache"))
}

/// A file built into the binary (or the page's, from `--web-dir`), answered with what keeps a
/// browser from reading it as anything else: its media type, not sniffed, no referrer sent
/// from it, and its `Content-Security-Policy` where it is a page (the docs' too, `docs.rs`).
pub(crate) fn served(
    media_type: &'static str,
    body: impl Into<Bytes>,
    policy: Option<HeaderValue>,
    cache: &'static str,
) -> Response {
    let mut response = (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(media_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            ),
        ],
        body.into(),
    )
        .into_response();
    if let Some(policy) = policy {
        (response.headers_mut()).insert(header::CONTENT_SECURITY_POLICY, policy);
    }
    response
}

/// `GET /api/web-config`: where the page sends uploads and links content. No token: the page
/// asks before anyone has signed in, and it tells nothing that the page's own URL does not.
async fn config(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let upload = UploadHost::of(&state, &headers)?;
    let subdomain = (state.config.gateway_domain.as_ref())
        .map(|domain| format!("{}://{{cid}}.ipfs.{domain}{}", upload.scheme, upload.port));
    Ok(Json(json!({
        "uploadUrl": upload.url(),
        "subdomainGateway": subdomain,
    }))
    .into_response())
}

/// The upload host as the page reaches it: the public URL when there is one, else the host
/// the page was loaded from, on the upload host's port.
struct UploadHost {
    scheme: String,
    host: String,
    /// `:PORT`, or empty for the scheme's default.
    port: String,
}

impl UploadHost {
    fn of(state: &AppState, headers: &HeaderMap) -> Result<Self, ApiError> {
        if let Some(url) = &state.config.public_url {
            return Ok(Self {
                scheme: url.scheme_str().unwrap_or("http").to_owned(),
                host: url.host().unwrap_or("localhost").to_owned(),
                port: url.port().map(|p| format!(":{p}")).unwrap_or_default(),
            });
        }
        let origin = RequestOrigin::of(&state.config, headers)?;
        Ok(Self {
            scheme: origin.scheme.to_owned(),
            host: origin.hostname(),
            port: format!(":{}", state.config.upload_port),
        })
    }

    fn url(&self) -> String {
        format!("{}://{}{}", self.scheme, self.host, self.port)
    }
}

fn content_type(name: &str) -> Option<&'static str> {
    Some(match name.rsplit_once('.')?.1 {
        "html" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "svg" => "image/svg+xml",
        _ => return None,
    })
}

fn plain_name(name: &str) -> bool {
    !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}
