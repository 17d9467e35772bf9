//! The documentation, on both hosts: the guides (`docs/guides/*.md` at the repository's root,
//! rendered when the server builds, `build.rs`) at `/docs` (the index) and `/docs/{page}`,
//! the API reference at `/docs/api` (Redoc, `vendor/redoc/`, rendering `openapi.yaml`), and
//! that document itself at `/api/openapi.json`. Everything is in the binary: a page asks
//! nothing of any other machine, and its `Content-Security-Policy` forbids it to.

use axum::extract::Path;
use axum::http::HeaderValue;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;

use crate::error::ApiError;
use crate::state::AppState;
use crate::web::served;

/// A guide, rendered: its page under `/docs/` (`""` for the index), its title, its HTML.
struct Guide {
    page: &'static str,
    title: &'static str,
    html: &'static str,
}

/// Every guide, the index first, then in the order the index lists them.
const GUIDES: &[Guide] = include!(concat!(env!("OUT_DIR"), "/guides.rs"));

/// The page of the API reference, beside the guides.
const REFERENCE: &str = "api";

/// The files the pages load: (name under `/docs/assets/`, media type, bytes).
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "docs.css",
        "text/css; charset=utf-8",
        include_bytes!("../docs/docs.css"),
    ),
    (
        "api.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../docs/api.js"),
    ),
    (
        "redoc.standalone.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../vendor/redoc/redoc.standalone.js"),
    ),
];

/// The OpenAPI description of both hosts, `openapi.yaml` at the repository's root. It is
/// written in JSON (which is also YAML), so it is served as it is: no YAML parser in the
/// server, and the bytes served are the file `tests/openapi.rs` checks.
const OPENAPI: &str = include_str!("../../../openapi.yaml");

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/docs", get(|| async { guide("") }))
        .route("/docs/{page}", get(page))
        .route("/docs/assets/{asset}", get(asset))
        // Public like `/healthz`: the description of the API holds nothing of anyone's.
        .route("/api/openapi.json", get(openapi))
}

async fn page(Path(page): Path<String>) -> Result<Response, ApiError> {
    if page == REFERENCE {
        return Ok(reference());
    }
    guide(&page)
}

fn guide(page: &str) -> Result<Response, ApiError> {
    let guide = (GUIDES.iter())
        .find(|guide| guide.page == page)
        .ok_or_else(|| ApiError::NotFound(format!("no guide {page:?}; the guides are at /docs")))?;
    let body = format!(
        "<main>\n<h1>{}</h1>\n{}</main>\n",
        escape(guide.title),
        guide.html
    );
    Ok(html_page(guide.title, page, &body, GUIDE_POLICY))
}

/// Guides are HTML and styles: no script runs on them.
const GUIDE_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self' data:; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Redoc's scripts, the styles it sets inline, the search index it builds in a worker, and the
/// document it reads from this host.
const REFERENCE_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; \
     connect-src 'self'; worker-src blob:; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

fn reference() -> Response {
    let body =
        "<main id=\"reference\" class=\"reference\"><p>Loading the API reference...</p></main>\n\
         <script src=\"/docs/assets/redoc.standalone.js\"></script>\n\
         <script src=\"/docs/assets/api.js\"></script>\n";
    html_page("API reference", REFERENCE, body, REFERENCE_POLICY)
}

/// `body` in the pages' frame: a header naming every guide and the reference, `current`'s
/// marked for assistive technology.
fn html_page(title: &str, current: &str, body: &str, policy: &'static str) -> Response {
    let entries = (GUIDES.iter())
        .map(|guide| (guide.page, guide.title))
        .chain([(REFERENCE, "API reference")]);
    let mut nav = String::new();
    for (page, title) in entries {
        let href = if page.is_empty() {
            "/docs".to_owned()
        } else {
            format!("/docs/{page}")
        };
        let aria = if page == current {
            " aria-current=\"page\""
        } else {
            ""
        };
        nav.push_str(&format!(
            "<li><a href=\"{href}\"{aria}>{}</a></li>",
            escape(title)
        ));
    }
    let html = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{} · Cairn docs</title>\n<link rel=\"stylesheet\" href=\"/docs/assets/docs.css\">\n\
         <link rel=\"icon\" href=\"data:,\">\n</head>\n<body>\n<header class=\"site\">\
         <nav aria-label=\"Documentation\"><ul>{nav}</ul></nav></header>\n{body}</body>\n</html>\n",
        escape(title)
    );
    served(
        "text/html; charset=utf-8",
        html.into_bytes(),
        Some(HeaderValue::from_static(policy)),
        "no-cache",
    )
}

async fn asset(Path(name): Path<String>) -> Result<Response, ApiError> {
    let (_, media_type, bytes) = (ASSETS.iter())
        .find(|(asset, _, _)| *asset == name)
        .ok_or_else(|| ApiError::NotFound(format!("no file {name:?} in the docs' assets")))?;
    // The assets change with the binary only; an hour keeps Redoc's megabyte off most loads.
    Ok(served(
        media_type,
        Bytes::from_static(bytes),
        None,
        "public, max-age=3600",
    ))
}

async fn openapi() -> Response {
    served(
        "application/json",
        Bytes::from_static(OPENAPI.as_bytes()),
        None,
        "no-cache",
    )
}

/// Text as HTML: the titles come from Markdown, where `<` and `&` are text.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
