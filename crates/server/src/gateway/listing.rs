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
    Ok(listing(&resolved.cid, uri.path(), &entries, wants_json))
}

fn listing(cid: &Cid, path: &str, entries: &[NodeLink], wants_json: bool) -> Response {
    let mut response = if wants_json {
        let list: Vec<_> = entries
            .iter()
            .map(|e| serde_json::json!({"name": e.name, "cid": e.cid.to_string(), "size": e.tsize}))
            .collect();
        axum::Json(serde_json::json!({"cid": cid.to_string(), "entries": list})).into_response()
    } else {
        let escape = |s: &str| {
            s.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;")
        };
        let encode = |s: &str| {
            s.bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                        (b as char).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect::<String>()
        };
        let rows: String = entries
            .iter()
            .map(|e| {
                format!(
                    "<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td><code>{}</code></td></tr>\n",
                    encode(&e.name),
                    escape(&e.name),
                    e.tsize,
                    e.cid
                )
            })
            .collect();
        let html = format!(
            "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\n\
             <body><h1>{title}</h1>\n<table>\n<tr><th>name</th><th>size</th><th>CID</th></tr>\n\
             {rows}</table></body></html>\n",
            title = format!("Index of {}", escape(path))
        );
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
const LISTING_CACHE: &str = "public, max-age=604800, stale-while-revalidate=2678400";
