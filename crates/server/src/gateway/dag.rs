//! Blocks of the other IPLD codecs (dag-cbor, dag-json, dag-jose, json, cbor), wherever a
//! path ends at one: served as they are stored, in their codec's media type, never converted
//! (IPIP-0524); to a browser that asks for HTML, a page naming the block and its links (the
//! path gateway spec's "generated HTML" for such blocks). What only UnixFS has, a tar, is
//! refused before any byte is sent.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use cairn_unixfs::ipld;
use cairn_unixfs::read::{Node, Resolved};
use cairn_unixfs::Cid;

use super::car::{self, codec_name};
use super::listing::{escape, LISTING_CACHE};
use super::{accept, etag, Format, Request, StoredReader, CODECS};
use crate::error::ApiError;

/// The most of a JSON block the page shows as text.
const MAX_SHOWN_BYTES: usize = 64 * 1024;

/// Answer `format` for a block of another codec than UnixFS's.
pub(super) async fn respond(
    reader: StoredReader,
    resolved: Resolved,
    format: Format,
    request: &Request,
) -> Result<Response, ApiError> {
    let Node::Ipld { codec, .. } = resolved.node else {
        unreachable!("only blocks of other codecs come here");
    };
    match format {
        Format::Raw => car::raw(reader, &resolved, request).await,
        Format::Car => car::car(reader, resolved, request).await,
        Format::Codec(asked) => car::block_in(reader, resolved.cid, asked, request).await,
        Format::Tar => Err(ApiError::NotAcceptable(format!(
            "{} is a {} block, not UnixFS: a tar holds UnixFS files and directories only; \
             ask for format=raw or car",
            resolved.cid,
            codec_name(codec)
        ))),
        Format::Plain if accept(&request.headers).contains("text/html") => {
            let (_, block) = super::blocking(reader, {
                let cid = resolved.cid;
                move |reader| reader.block(&cid)
            })
            .await?;
            Ok(page(request, &resolved.cid, &resolved.node, &block))
        }
        Format::Plain => {
            // Its own codec's media type; a dag-json block as plain JSON to a client that asks
            // for JSON (the same bytes). dag-jose has no media type of its own: a raw block.
            let wants_json = accept(&request.headers).contains("application/json");
            let shown_as = match codec {
                ipld::DAG_JSON if wants_json => ipld::JSON,
                codec => codec,
            };
            match CODECS.into_iter().find(|c| c.code == shown_as) {
                Some(as_codec) => car::block_in(reader, resolved.cid, as_codec, request).await,
                None => car::raw(reader, &resolved, request).await,
            }
        }
    }
}

/// The page a browser gets: the block's CID and codec, its links to follow, and its text when
/// it is JSON. Like a listing, the gateway's work: named and cached as one.
fn page(request: &Request, cid: &Cid, node: &Node, block: &[u8]) -> Response {
    let Node::Ipld { codec, links } = node else {
        unreachable!("only blocks of other codecs come here");
    };
    let gateway = (request.gateway_host.as_ref()).map_or(String::new(), |host| format!("//{host}"));
    let text = if [ipld::DAG_JSON, ipld::JSON].contains(codec) {
        let shown = &block[..block.len().min(MAX_SHOWN_BYTES)];
        format!("<pre>{}</pre>\n", escape(&String::from_utf8_lossy(shown)))
    } else {
        String::new()
    };
    let codec = codec_name(*codec);
    let mut rows = String::new();
    for link in links {
        rows.push_str(&format!(
            "<li><a class=\"ipfs-hash\" translate=\"no\" href=\"{gateway}/ipfs/{link}\">{link}</a></li>\n"
        ));
    }
    let html = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{cid} ({codec})</title>\
         </head>\n<body><h1>{codec} block <span translate=\"no\">{cid}</span></h1>\n\
         <p>{} bytes. Download it <a href=\"{gateway}/ipfs/{cid}?format=raw\">as a raw block</a> \
         or <a href=\"{gateway}/ipfs/{cid}?format=car\">as a CAR</a>.</p>\n\
         <h2>Links ({})</h2>\n<ul>\n{rows}</ul>\n{text}</body></html>\n",
        block.len(),
        links.len(),
    );
    let mut response = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response();
    let headers = response.headers_mut();
    let tag = format!("DagIndex-{}_CID-{cid}", env!("CARGO_PKG_VERSION"));
    headers.insert(header::ETAG, etag(tag));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(LISTING_CACHE),
    );
    response
}
