//! Directories for browsers and curl: the `index.html` of a website, or a listing of the
//! entries (HTML, or JSON for a client that asks for it).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use cairn_unixfs::read::{Node, NodeLink, Resolved};
use cairn_unixfs::Cid;

use super::{accept, blocking, etag, file, Request, StoredReader};
use crate::error::ApiError;

/// A directory (plain or HAMT): its `index.html` if it has one, else its listing.
pub(super) async fn directory(
    reader: StoredReader,
    resolved: Resolved,
    request: &Request,
) -> Result<Response, ApiError> {
    let uri = &request.uri;
    // Relative links in an index.html or a listing need the trailing slash.
    if !uri.path().ends_with('/') {
        let mut redirect = StatusCode::MOVED_PERMANENTLY.into_response();
        let location = match uri.query() {
            Some(q) => format!("{}/?{q}", uri.path()),
            None => format!("{}/", uri.path()),
        };
        if let Ok(value) = HeaderValue::from_str(&location) {
            redirect.headers_mut().insert(header::LOCATION, value);
        }
        return Ok(redirect);
    }
    let node = resolved.node;
    let (reader, entries) = blocking(reader, move |reader| reader.list(&node)).await?;
    // A client asking for JSON wants the listing, even of a website.
    let wants_json = accept(&request.headers).contains("application/json");
    let index = entries.iter().find(|e| e.name == "index.html");
    if let Some(index) = index.filter(|_| !wants_json) {
        let cid = index.cid;
        let (reader, (_, node)) = blocking(reader, move |reader| reader.node(&cid)).await?;
        if let Node::File { size, .. } = node {
            let name = Some("index.html".to_owned());
            let mut response = file::file(reader, cid, size, name, request).await?;
            // What was asked for is the directory: its CID names the response (path gateway
            // spec, `Etag`: based on the requested CID).
            (response.headers_mut()).insert(header::ETAG, etag(resolved.cid.to_string()));
            return Ok(response);
        }
    }
    Ok(listing(&resolved.cid, request, &entries, wants_json))
}

fn listing(cid: &Cid, request: &Request, entries: &[NodeLink], wants_json: bool) -> Response {
    let mut response = if wants_json {
        let list: Vec<_> = entries
            .iter()
            .map(|e| serde_json::json!({"name": e.name, "cid": e.cid.to_string(), "size": e.tsize}))
            .collect();
        axum::Json(serde_json::json!({"cid": cid.to_string(), "entries": list})).into_response()
    } else {
        let html = html(request, entries);
        ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
    };
    // A listing is this gateway's work, not the content's: its ETag names the gateway's
    // version (path gateway spec, `Etag`: "DirIndex-..."), and it is cached for a week, not
    // forever, so a new version's listing is seen.
    let tag = if wants_json {
        format!("{cid}.json")
    } else {
        format!("DirIndex-{}_CID-{cid}", env!("CARGO_PKG_VERSION"))
    };
    let headers = response.headers_mut();
    headers.insert(header::ETAG, etag(tag));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(LISTING_CACHE),
    );
    response
}

/// How long a generated listing may be kept: a week, and a month more while it is revalidated.
pub(super) const LISTING_CACHE: &str = "public, max-age=604800, stale-while-revalidate=2678400";

/// The HTML listing, with links that work where it is read: on the path gateway, under
/// `/ipfs/{cid}/...` (or `/ipns/{name}/...`); on a content origin, from its root, with the
/// breadcrumb and each entry's CID on the path gateway (`//{gateway host}/ipfs/...`). The
/// markup is Kubo's, which tools and the gateway conformance suite read: a breadcrumb of the
/// content path, a `..` row below the root, a row per entry with its CID.
fn html(request: &Request, entries: &[NodeLink]) -> String {
    // `/{namespace}/{root}/{segments...}` of the content path, decoded.
    let mut parts = request.content_path.trim_start_matches('/').split('/');
    let namespace = parts.next().unwrap_or("ipfs");
    let root = parts.next().map(decode).unwrap_or_default();
    let segments: Vec<String> = parts.filter(|p| !p.is_empty()).map(decode).collect();
    let gateway = (request.gateway_host.as_ref()).map_or(String::new(), |host| format!("//{host}"));
    let on_origin = request.gateway_host.is_some();
    let mut under = format!("{gateway}/{namespace}/{}", encode(&root));
    let mut crumbs = format!("/{namespace}/<a href=\"{under}\">{}</a>", escape(&root));
    for segment in &segments {
        under.push('/');
        under.push_str(&encode(segment));
        crumbs.push_str(&format!("/<a href=\"{under}\">{}</a>", escape(segment)));
    }
    // Where this listing is, as its reader's links resolve from it.
    let encoded: String = segments.iter().map(|s| format!("/{}", encode(s))).collect();
    let here = if on_origin {
        format!("{encoded}/")
    } else {
        format!("/{namespace}/{}{encoded}/", encode(&root))
    };
    let mut rows = String::new();
    if !segments.is_empty() {
        rows.push_str(&format!(
            "<tr><td><a href=\"{here}..\">..</a></td><td></td><td></td></tr>\n"
        ));
    }
    for e in entries {
        rows.push_str(&format!(
            "<tr><td><a href=\"{here}{}\">{}</a></td><td>{}</td><td><a class=\"ipfs-hash\" \
             translate=\"no\" href=\"{gateway}/ipfs/{}?filename={}\">{}</a></td></tr>\n",
            encode(&e.name),
            escape(&e.name),
            e.tsize,
            e.cid,
            encode(&encode(&e.name)),
            e.cid,
        ));
    }
    let title = format!("Index of {}", escape(&request.content_path));
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\n\
         <body><h1>Index of {crumbs}</h1>\n<table>\n<tr><th>name</th><th>size</th><th>CID</th>\
         </tr>\n{rows}</table></body></html>\n"
    )
}

pub(super) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A path segment percent-encoded: every byte but the unreserved ones (RFC 3986).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A percent-encoded path segment decoded (a malformed escape is kept as it is).
fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}
