//! Trustless responses: one raw block (`application/vnd.ipld.raw`), or a CAR
//! (`application/vnd.ipld.car`) holding the blocks of the path, so a client can verify it,
//! then the target's blocks by `dag-scope`, depth-first.

use std::collections::HashSet;
use std::ops::Range;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use cairn_car::header as car_header;
use cairn_unixfs::ipld;
use cairn_unixfs::read::{Node, ReadError, Repeats, Resolved};
use cairn_unixfs::Cid;

use super::file::byte_range;
use super::{
    accept, blocking, content_disposition, etag, streamed, Codec, GatewayParams, Request, Sender,
    StoredReader,
};
use crate::error::ApiError;

pub(super) const RAW_TYPE: &str = "application/vnd.ipld.raw";

/// `?format=raw`: the target's block itself.
pub(super) async fn raw(
    reader: StoredReader,
    resolved: &Resolved,
    request: &Request,
) -> Result<Response, ApiError> {
    block(reader, resolved.cid, None, request).await
}

/// `?format=dag-json` and the like: the block as it is when its CID says it is in `codec`;
/// `406` otherwise, since a gateway converts between codecs no more (IPIP-0524). A dag-json
/// block may be asked for as plain JSON and a dag-cbor one as CBOR: the same bytes.
pub(super) async fn block_in(
    reader: StoredReader,
    cid: Cid,
    codec: Codec,
    request: &Request,
) -> Result<Response, ApiError> {
    let same_bytes = match codec.code {
        ipld::JSON => ipld::DAG_JSON,
        ipld::CBOR => ipld::DAG_CBOR,
        code => code,
    };
    if ![codec.code, same_bytes].contains(&cid.codec()) {
        return Err(ApiError::NotAcceptable(format!(
            "{cid} is a {} block, not {}; blocks are not converted between codecs: ask for \
             format=raw or car",
            codec_name(cid.codec()),
            codec.name
        )));
    }
    block(reader, cid, Some(codec), request).await
}

/// One block as it is stored: as `codec` (its media type, and the name it is saved under), or
/// as a raw block.
async fn block(
    reader: StoredReader,
    cid: Cid,
    codec: Option<Codec>,
    request: &Request,
) -> Result<Response, ApiError> {
    let (_, block) = blocking(reader, move |reader| reader.block(&cid)).await?;
    // A block's bytes, like a file's, may be asked for by range (path gateway spec, `Range`).
    let range = byte_range(&request.headers, block.len() as u64)?;
    let body = match &range {
        Some(range) => block.slice(range.start as usize..range.end as usize),
        None => block.clone(),
    };
    let len = body.len();
    let mut response = if request.head_only {
        StatusCode::OK.into_response()
    } else {
        Body::from(body).into_response()
    };
    if let Some(range) = &range {
        *response.status_mut() = StatusCode::PARTIAL_CONTENT;
        let content_range = format!("bytes {}-{}/{}", range.start, range.end - 1, block.len());
        if let Ok(value) = HeaderValue::from_str(&content_range) {
            response.headers_mut().insert(header::CONTENT_RANGE, value);
        }
    }
    let (media_type, format, extension, disposition) = match codec {
        Some(codec) => (
            codec.media_type,
            codec.name,
            codec.extension,
            codec.disposition,
        ),
        None => (RAW_TYPE, "raw", "bin", "attachment"),
    };
    let disposition = match request.query.download.as_deref() {
        Some("true") => "attachment",
        _ => disposition,
    };
    let name = (request.query.filename.clone()).unwrap_or_else(|| format!("{cid}.{extension}"));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    headers.insert(header::ETAG, etag(format!("{cid}.{format}")));
    headers.insert(
        header::CONTENT_DISPOSITION,
        content_disposition(disposition, &name),
    );
    Ok(response)
}

/// A codec's name, for a message.
pub(super) fn codec_name(code: u64) -> String {
    ipld::codec_name(code).map_or_else(|| format!("codec {code:#x}"), str::to_owned)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    All,
    Entity,
    Block,
}

/// `?format=car`: the path's blocks, then the target's by scope. Blocks always go in DFS
/// order, which also satisfies `order=unk`; `dups=y` repeats a block wherever the walk meets
/// it again (each repeat charged to the request's budget).
pub(super) async fn car(
    reader: StoredReader,
    resolved: Resolved,
    request: &Request,
) -> Result<Response, ApiError> {
    let query = &request.query;
    let duplicates = car_duplicates(query, &request.headers)?;
    let scope = match query.dag_scope.as_deref() {
        None | Some("all") => Scope::All,
        Some("entity") => Scope::Entity,
        Some("block") => Scope::Block,
        Some(other) => {
            return Err(ApiError::BadRequest(format!(
                "dag-scope must be all, entity or block, not {other:?}"
            )))
        }
    };
    // A file entity's bytes, decided before the headers so a bad range is a JSON error.
    let entity_bytes = match (&resolved.node, &query.entity_bytes) {
        (Node::File { size, .. }, Some(spec)) => entity_range(spec, *size)?,
        (Node::File { size, .. }, None) => 0..*size,
        _ => 0..0,
    };
    let tag = format!(
        "{}/{}.car.{scope:?}.{}.{}",
        request.root,
        resolved.path_blocks.len(),
        query.entity_bytes.as_deref().unwrap_or(""),
        if duplicates { "dups" } else { "nodups" }
    );
    let mut response = if request.head_only {
        StatusCode::OK.into_response()
    } else {
        let root = request.root;
        streamed(reader, move |reader, tx| {
            write_car(reader, root, resolved, scope, entity_bytes, duplicates, tx)
        })
        .await?
        .into_response()
    };
    let car_type = if duplicates {
        "application/vnd.ipld.car; version=1; order=dfs; dups=y"
    } else {
        "application/vnd.ipld.car; version=1; order=dfs; dups=n"
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(car_type));
    headers.insert(header::ETAG, etag(tag));
    // Parts of a CAR are asked for with `entity-bytes`, never with `Range`.
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("none"));
    // Bytes to save, never to render (trustless gateway spec, `Content-Disposition`: MUST).
    let name = (query.filename.clone()).unwrap_or_else(|| format!("{}.car", request.root));
    headers.insert(
        header::CONTENT_DISPOSITION,
        content_disposition("attachment", &name),
    );
    Ok(response)
}

/// The CAR's `version`, `order` and `dups`, from the query (`car-version`, `car-order`,
/// `car-dups`) or else the `Accept` header's parameters; true when duplicates are wanted.
pub fn car_duplicates(params: &GatewayParams, headers: &HeaderMap) -> Result<bool, ApiError> {
    let accept = accept(headers);
    let from_accept = |key: &str| -> Option<String> {
        let car = accept
            .split(',')
            .find(|t| t.trim_start().starts_with("application/vnd.ipld.car"))?;
        car.split(';').skip(1).find_map(|p| {
            let (k, v) = p.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_owned())
        })
    };
    let version = params
        .car_version
        .clone()
        .or_else(|| from_accept("version"));
    if !matches!(version.as_deref(), None | Some("1")) {
        return Err(ApiError::BadRequest(format!(
            "only CAR version 1 is served, not {:?}",
            version.unwrap_or_default()
        )));
    }
    let order = params.car_order.clone().or_else(|| from_accept("order"));
    if !matches!(order.as_deref(), None | Some("dfs") | Some("unk")) {
        return Err(ApiError::BadRequest(format!(
            "CAR order must be dfs or unk, not {:?}",
            order.unwrap_or_default()
        )));
    }
    match params
        .car_dups
        .clone()
        .or_else(|| from_accept("dups"))
        .as_deref()
    {
        None | Some("n") => Ok(false),
        Some("y") => Ok(true),
        Some(other) => Err(ApiError::BadRequest(format!(
            "CAR dups must be y or n, not {other:?}"
        ))),
    }
}

/// `entity-bytes=from:to`: `to` inclusive or `*`; negative values count from the end.
pub fn entity_range(spec: &str, size: u64) -> Result<Range<u64>, ApiError> {
    let bad = || ApiError::BadRequest(format!("entity-bytes must be from:to, not {spec:?}"));
    let (from, to) = spec.split_once(':').ok_or_else(bad)?;
    let at = |v: &str| -> Result<u64, ApiError> {
        let n: i64 = v.parse().map_err(|_| bad())?;
        Ok(if n < 0 {
            size.saturating_sub(n.unsigned_abs())
        } else {
            (n as u64).min(size)
        })
    };
    let start = at(from)?;
    let end = if to == "*" {
        size
    } else {
        at(to)?.saturating_add(1).min(size)
    };
    Ok(start..end.max(start))
}

/// CAR sections going out: each block once, or (`dups=y`) every time the walk meets it.
struct CarOut<'a> {
    tx: &'a Sender,
    sent: HashSet<Cid>,
    duplicates: bool,
    /// The target, already sent as the path's last block, is not a duplicate when its own
    /// walk starts with it.
    skip_once: Option<Cid>,
}

impl CarOut<'_> {
    fn put(&mut self, cid: &Cid, block: &[u8]) -> std::io::Result<()> {
        // An identity CID's block is the CID itself: a CAR carries none (trustless gateway
        // spec, "MUST NOT include virtual blocks identified by identity CIDs").
        if cid.hash().code() == cairn_unixfs::block::IDENTITY {
            return Ok(());
        }
        let first_time = self.sent.insert(*cid);
        if self.skip_once == Some(*cid) {
            self.skip_once = None;
            return Ok(());
        }
        if !first_time && !self.duplicates {
            return Ok(());
        }
        let cid_bytes = cid.to_bytes();
        let mut section = Vec::with_capacity(10 + cid_bytes.len() + block.len());
        let mut len = (cid_bytes.len() + block.len()) as u64;
        while len >= 0x80 {
            section.push((len as u8) | 0x80);
            len >>= 7;
        }
        section.push(len as u8);
        section.extend_from_slice(&cid_bytes);
        section.extend_from_slice(block);
        self.tx.send(Bytes::from(section))
    }
}

/// The CAR: the blocks of the path (so the client can verify it), then the target's blocks by
/// scope, depth-first.
fn write_car(
    reader: &mut StoredReader,
    root: Cid,
    resolved: Resolved,
    scope: Scope,
    entity_bytes: Range<u64>,
    duplicates: bool,
    tx: &Sender,
) -> Result<(), ReadError> {
    tx.send(Bytes::from(car_header(&[root])))?;
    let mut out = CarOut {
        tx,
        sent: HashSet::new(),
        duplicates,
        skip_once: None,
    };
    for cid in &resolved.path_blocks {
        let block = reader.block(cid)?;
        out.put(cid, &block)?;
    }
    out.skip_once = Some(resolved.cid);
    let repeats = if duplicates {
        Repeats::Visit
    } else {
        Repeats::Skip
    };
    match (scope, &resolved.node) {
        (Scope::Block, _) => {}
        // A file's blocks in byte order, for the range asked (all of it by default).
        (_, Node::File { .. }) => {
            reader.read_range(
                &resolved.cid,
                entity_bytes,
                &mut |cid, block| out.put(cid, block),
                &mut |_| Ok(()),
            )?;
        }
        // The directory's own blocks: every shard, none of the entries.
        (Scope::Entity, node @ Node::HamtShard { .. }) => {
            reader.shard_tree(node, &mut |cid, block| out.put(cid, block), &mut |_| Ok(()))?
        }
        (Scope::Entity, _) => {}
        (Scope::All, _) => reader.walk(&resolved.cid, repeats, &mut |cid, block| {
            out.put(cid, block)
        })?,
    }
    Ok(())
}
