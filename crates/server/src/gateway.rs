//! The read path: `GET/HEAD /ipfs/{cid}[/{path}]` on the upload host (CONTRACT "Read path").
//!
//! - Trustless responses (IPFS Trustless Gateway spec): `?format=raw|car` or
//!   `Accept: application/vnd.ipld.raw|application/vnd.ipld.car`, with `dag-scope`
//!   (all, entity, block), `entity-bytes`, and `car-version`/`car-order`/`car-dups` (or the
//!   `Accept` parameters) for CARs: version 1, DFS order, duplicates only when asked.
//! - Plain responses for browsers and curl: files with `Range`, a content type from the name or
//!   the bytes, `?filename=` and `?download=true`; directories serve their `index.html`, or a
//!   listing (HTML, or JSON when asked).
//!
//! Every block is read from the packs through the block index and verified against its CID
//! before it is used or sent. Bodies stream from a blocking thread; nothing is held whole.
//! Content addressing is public: no token is needed.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::ops::Range;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use cairn_car::header as car_header;
use cairn_store::model::BlockLocation;
use cairn_store::packs::Packs;
use cairn_store::MetadataStore;
use cairn_unixfs::block::verify_block;
use cairn_unixfs::read::{self, Node, ReadError, Resolved};
use cairn_unixfs::{BlockSource, Cid};
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::state::AppState;

const RAW_TYPE: &str = "application/vnd.ipld.raw";
const IMMUTABLE: &str = "public, max-age=29030400, immutable";

/// Blocks from the packs, each verified against its CID before it is handed out.
pub struct StoredBlocks {
    store: Arc<dyn MetadataStore>,
    packs: Packs,
    runtime: tokio::runtime::Handle,
    /// Locations looked up ahead by `prefetch`, by multihash.
    located: HashMap<Vec<u8>, BlockLocation>,
    /// The blocks `prefetch` announced, in the order they will be asked for.
    upcoming: VecDeque<Vec<u8>>,
    /// Blocks read ahead of being asked for, by multihash.
    read_ahead: HashMap<Vec<u8>, Vec<u8>>,
}

impl StoredBlocks {
    pub fn new(state: &AppState) -> Self {
        Self {
            store: state.store.clone(),
            packs: state.packs.clone(),
            runtime: tokio::runtime::Handle::current(),
            located: HashMap::new(),
            upcoming: VecDeque::new(),
            read_ahead: HashMap::new(),
        }
    }

    /// Read `multihash` and the announced blocks after it in the same pack, as many as the
    /// pack store finds worth reading together (on S3, one request instead of one per block),
    /// keeping the others for later; `None` if it was not announced.
    fn read_with_followers(&mut self, multihash: &[u8]) -> io::Result<Option<Vec<u8>>> {
        let batch_bytes = self.packs.batch_bytes();
        let Some(position) = self.upcoming.iter().position(|m| m == multihash) else {
            return Ok(None);
        };
        // Blocks announced before this one were not asked for (a range skipped them).
        self.upcoming.drain(..position);
        let Some(first) = self.located.get(multihash) else {
            return Ok(None);
        };
        let mut batch: Vec<Vec<u8>> = Vec::new();
        let mut bytes = 0;
        while let Some(next) = self.upcoming.front() {
            let Some(location) = self.located.get(next) else {
                break;
            };
            if location.pack != first.pack || (bytes > 0 && bytes + location.length > batch_bytes) {
                break;
            }
            bytes += location.length;
            batch.push(self.upcoming.pop_front().expect("front exists"));
        }
        let locations: Vec<&BlockLocation> = batch.iter().map(|m| &self.located[m]).collect();
        let mut blocks = self.packs.read_many(&first.pack, &locations)?.into_iter();
        let wanted = blocks.next();
        for (multihash, block) in batch.iter().skip(1).zip(blocks) {
            self.read_ahead.insert(multihash.clone(), block);
        }
        for multihash in &batch {
            self.located.remove(multihash);
        }
        Ok(wanted)
    }
}

impl BlockSource for StoredBlocks {
    fn get_block(&mut self, cid: &Cid) -> io::Result<Option<Vec<u8>>> {
        let multihash = cid.hash().to_bytes();
        let block = match self.read_ahead.remove(&multihash) {
            Some(block) => block,
            None => match self.read_with_followers(&multihash)? {
                Some(block) => block,
                None => {
                    let location = match self.located.remove(&multihash) {
                        Some(location) => Some(location),
                        None => self
                            .runtime
                            .block_on(self.store.block_location(&multihash))
                            .map_err(io::Error::other)?,
                    };
                    let Some(location) = location else {
                        return Ok(None);
                    };
                    self.packs.read(&location)?
                }
            },
        };
        // Storage could have rotted since it was written: never serve a block that lies.
        verify_block(cid, &block).map_err(io::Error::other)?;
        Ok(Some(block))
    }

    /// One index query for a file node's children instead of one per block; their bytes are
    /// then read in runs (see `read_with_followers`).
    fn prefetch(&mut self, cids: &[Cid]) -> io::Result<()> {
        let wanted: Vec<Vec<u8>> = cids.iter().map(|c| c.hash().to_bytes()).collect();
        let found = self
            .runtime
            .block_on(self.store.block_locations(&wanted))
            .map_err(io::Error::other)?;
        self.located.extend(found);
        // Only where reading together pays (see `BlobStore::batch_bytes`).
        if self.packs.batch_bytes() > 0 {
            self.upcoming.extend(wanted);
        }
        Ok(())
    }
}

#[derive(Deserialize, Default)]
pub struct GatewayParams {
    format: Option<String>,
    #[serde(rename = "dag-scope")]
    dag_scope: Option<String>,
    #[serde(rename = "entity-bytes")]
    entity_bytes: Option<String>,
    #[serde(rename = "car-version")]
    car_version: Option<String>,
    #[serde(rename = "car-order")]
    car_order: Option<String>,
    #[serde(rename = "car-dups")]
    car_dups: Option<String>,
    filename: Option<String>,
    download: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Plain,
    Raw,
    Car,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    All,
    Entity,
    Block,
}

fn negotiate(params: &GatewayParams, headers: &HeaderMap) -> Result<Format, ApiError> {
    match params.format.as_deref() {
        Some("raw") => return Ok(Format::Raw),
        Some("car") => return Ok(Format::Car),
        Some(other) => {
            return Err(ApiError::BadRequest(format!(
                "format must be raw or car, not {other:?}"
            )))
        }
        None => {}
    }
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    Ok(if accept.contains("application/vnd.ipld.car") {
        Format::Car
    } else if accept.contains("application/vnd.ipld.raw") {
        Format::Raw
    } else {
        Format::Plain
    })
}

/// The CAR's `version`, `order` and `dups`, from the query (`car-version`, `car-order`,
/// `car-dups`) or else the `Accept` header's parameters. Blocks always go in DFS order, which
/// also satisfies `order=unk`; `dups=y` repeats a block wherever the walk meets it again.
fn car_duplicates(params: &GatewayParams, headers: &HeaderMap) -> Result<bool, ApiError> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
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

fn gateway_error(e: ReadError) -> ApiError {
    match e {
        ReadError::Missing(cid) => ApiError::NotFound(format!("no block {cid} is stored here")),
        ReadError::NotFound { path } => ApiError::NotFound(format!("{path:?} does not exist")),
        ReadError::NotADirectory { path } => {
            ApiError::NotFound(format!("{path:?} is not a directory"))
        }
        ReadError::UnsupportedCodec { .. } => ApiError::BadRequest(e.to_string()),
        other => ApiError::internal(other),
    }
}

/// Run blocking reads off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ReadError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(ApiError::internal)?
        .map_err(gateway_error)
}

/// A body fed by a blocking producer through a bounded channel.
fn streamed(
    produce: impl FnOnce(&mpsc::Sender<Bytes>) -> Result<(), ReadError> + Send + 'static,
) -> Body {
    let (tx, rx) = mpsc::channel::<Bytes>(8);
    tokio::task::spawn_blocking(move || {
        // A read error mid-body can only cut the response short; the client sees it truncated.
        if let Err(e) = produce(&tx) {
            tracing::warn!(error = %e, "gateway response cut short");
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|bytes| (Ok::<_, io::Error>(bytes), rx))
    });
    Body::from_stream(stream)
}

fn send(tx: &mpsc::Sender<Bytes>, bytes: Bytes) -> io::Result<()> {
    tx.blocking_send(bytes)
        .map_err(|_| io::Error::other("the client went away"))
}

/// `GET /ipfs/{cid}` and `GET /ipfs/{cid}/{*path}` (HEAD too).
pub async fn get(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    Path(params): Path<Vec<(String, String)>>,
    Query(query): Query<GatewayParams>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let cid_text = params
        .iter()
        .find(|(k, _)| k == "cid")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let root: Cid = cid_text
        .parse()
        .map_err(|e| ApiError::BadRequest(format!("{cid_text:?} is not a CID: {e}")))?;
    let path: Vec<String> = params
        .iter()
        .find(|(k, _)| k == "path")
        .map(|(_, p)| {
            p.split('/')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let format = negotiate(&query, &headers)?;
    let mut blocks = StoredBlocks::new(&state);
    let segments = path.clone();
    let resolved = blocking(move || {
        let names: Vec<&str> = segments.iter().map(String::as_str).collect();
        read::resolve(&root, &names, &mut blocks)
    })
    .await?;

    let head_only = method == Method::HEAD;
    let mut response = match format {
        Format::Raw => raw(&state, &resolved, head_only).await?,
        Format::Car => car(&state, root, resolved, &query, &headers, head_only)?,
        Format::Plain => plain(&state, &uri, resolved, &path, &query, &headers, head_only).await?,
    };
    let headers_out = response.headers_mut();
    headers_out.insert(header::CACHE_CONTROL, HeaderValue::from_static(IMMUTABLE));
    headers_out.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    if let Ok(value) = HeaderValue::from_str(&format!("/ipfs/{root}/{}", path.join("/"))) {
        headers_out.insert("x-ipfs-path", value);
    }
    // Conditional requests: the content behind an ETag never changes.
    let etag = response.headers().get(header::ETAG).cloned();
    if let (Some(etag), Some(asked)) = (etag, headers.get(header::IF_NONE_MATCH)) {
        if asked == etag || asked == "*" {
            let mut not_modified = StatusCode::NOT_MODIFIED.into_response();
            not_modified.headers_mut().insert(header::ETAG, etag);
            not_modified
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static(IMMUTABLE));
            return Ok(not_modified);
        }
    }
    Ok(response)
}

fn etag(value: String) -> HeaderValue {
    HeaderValue::from_str(&format!("\"{value}\"")).unwrap_or(HeaderValue::from_static("\"\""))
}

async fn raw(state: &AppState, resolved: &Resolved, head_only: bool) -> Result<Response, ApiError> {
    let cid = resolved.cid;
    let mut blocks = StoredBlocks::new(state);
    let block = blocking(move || blocks.get_block(&cid)?.ok_or(ReadError::Missing(cid))).await?;
    let mut response = if head_only {
        StatusCode::OK.into_response()
    } else {
        Body::from(block.clone()).into_response()
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(RAW_TYPE));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(block.len()));
    headers.insert(header::ETAG, etag(format!("{cid}.raw")));
    Ok(response)
}

/// `entity-bytes=from:to`: `to` inclusive or `*`; negative values count from the end.
fn entity_range(spec: &str, size: u64) -> Result<Range<u64>, ApiError> {
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
        (at(to)? + 1).min(size)
    };
    Ok(start..end.max(start))
}

fn car(
    state: &AppState,
    root: Cid,
    resolved: Resolved,
    query: &GatewayParams,
    headers: &HeaderMap,
    head_only: bool,
) -> Result<Response, ApiError> {
    let duplicates = car_duplicates(query, headers)?;
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
    let entity_bytes = query.entity_bytes.clone();
    let tag = format!(
        "{root}/{}.car.{scope:?}.{}.{}",
        resolved.path_blocks.len(),
        entity_bytes.as_deref().unwrap_or(""),
        if duplicates { "dups" } else { "nodups" }
    );
    let mut response = if head_only {
        StatusCode::OK.into_response()
    } else {
        let mut blocks = StoredBlocks::new(state);
        streamed(move |tx| {
            write_car(
                root,
                resolved,
                scope,
                entity_bytes,
                duplicates,
                &mut blocks,
                tx,
            )
        })
        .into_response()
    };
    let car_type = if duplicates {
        "application/vnd.ipld.car; version=1; order=dfs; dups=y"
    } else {
        "application/vnd.ipld.car; version=1; order=dfs; dups=n"
    };
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(car_type));
    response.headers_mut().insert(header::ETAG, etag(tag));
    Ok(response)
}

/// Most sections one `dups=y` CAR may hold: a DAG that reuses subtrees (legal, and cheap to
/// upload as a CAR) would otherwise expand without bound.
const MAX_CAR_SECTIONS_WITH_DUPS: usize = 4_000_000;

/// CAR sections going out: each block once, or (`dups=y`) every time the walk meets it.
struct CarOut<'a> {
    tx: &'a mpsc::Sender<Bytes>,
    sent: HashSet<Cid>,
    duplicates: bool,
    sections: usize,
    /// The target, already sent as the path's last block, is not a duplicate when its own
    /// walk starts with it.
    skip_once: Option<Cid>,
}

impl CarOut<'_> {
    /// Send `cid`'s block unless it should not go again; returns the block either way.
    fn put(&mut self, cid: &Cid, blocks: &mut StoredBlocks) -> Result<Vec<u8>, ReadError> {
        let block = blocks.get_block(cid)?.ok_or(ReadError::Missing(*cid))?;
        let first_time = self.sent.insert(*cid);
        let send_it = if self.skip_once == Some(*cid) {
            self.skip_once = None;
            false
        } else {
            first_time || self.duplicates
        };
        if send_it {
            self.sections += 1;
            if self.duplicates && self.sections > MAX_CAR_SECTIONS_WITH_DUPS {
                return Err(ReadError::Io(io::Error::other(format!(
                    "more than {MAX_CAR_SECTIONS_WITH_DUPS} blocks with dups=y"
                ))));
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
            section.extend_from_slice(&block);
            send(self.tx, Bytes::from(section))?;
        }
        Ok(block)
    }
}

/// The CAR: the blocks of the path (so the client can verify it), then the target's blocks by
/// scope, depth-first, each once.
fn write_car(
    root: Cid,
    resolved: Resolved,
    scope: Scope,
    entity_bytes: Option<String>,
    duplicates: bool,
    blocks: &mut StoredBlocks,
    tx: &mpsc::Sender<Bytes>,
) -> Result<(), ReadError> {
    send(tx, Bytes::from(car_header(&[root])))?;
    let mut out = CarOut {
        tx,
        sent: HashSet::new(),
        duplicates,
        sections: 0,
        skip_once: None,
    };
    for cid in &resolved.path_blocks {
        out.put(cid, blocks)?;
    }
    out.skip_once = Some(resolved.cid);
    let invalid = |e: String| ReadError::Io(io::Error::other(e));
    match (scope, &resolved.node) {
        (Scope::Block, _) => {}
        (_, Node::File { size, .. }) => {
            let range = match &entity_bytes {
                Some(spec) => entity_range(spec, *size).map_err(|e| invalid(e.to_string()))?,
                None => 0..*size,
            };
            let mut visited = Vec::new();
            read::read_range(&resolved.cid, range, blocks, &mut visited, &mut |_| Ok(()))?;
            for cid in &visited {
                out.put(cid, blocks)?;
            }
        }
        (Scope::Entity, Node::HamtShard { .. }) => {
            // The directory's own blocks: every shard, none of the entries.
            let mut stack = vec![resolved.cid];
            while let Some(cid) = stack.pop() {
                let block = out.put(&cid, blocks)?;
                if let Node::HamtShard { links, fanout } = Node::decode(&cid, block)? {
                    let width = format!("{:X}", fanout.saturating_sub(1)).len();
                    stack.extend(
                        links
                            .iter()
                            .rev()
                            .filter(|l| l.name.len() == width)
                            .map(|l| l.cid),
                    );
                }
            }
        }
        (Scope::Entity, _) => {
            out.put(&resolved.cid, blocks)?;
        }
        (Scope::All, _) => {
            // Depth-first from the target (already sent as the path's last block).
            let mut stack = vec![resolved.cid];
            let mut expanded = HashSet::new();
            while let Some(cid) = stack.pop() {
                if !expanded.insert(cid) && !duplicates {
                    continue;
                }
                let block = out.put(&cid, blocks)?;
                let links =
                    cairn_unixfs::dag::links(&cid, &block).map_err(|e| invalid(e.to_string()))?;
                // A node's children are visited next, in order: look them up, and read them,
                // together.
                if links.len() > 1 {
                    blocks.prefetch(&links)?;
                }
                stack.extend(links.into_iter().rev());
            }
        }
    }
    Ok(())
}

/// A single `bytes=` range, resolved against `size`; `None` when absent or not satisfiable
/// as one range (then the whole body is sent, as RFC 9110 allows).
fn byte_range(headers: &HeaderMap, size: u64) -> Result<Option<Range<u64>>, ApiError> {
    let Some(spec) = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("bytes="))
    else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None);
    }
    let Some((from, to)) = spec.trim().split_once('-') else {
        return Ok(None);
    };
    let range = match (from.parse::<u64>(), to.parse::<u64>()) {
        (Ok(start), Ok(end)) if start <= end => start..(end + 1).min(size),
        (Ok(start), Err(_)) if to.is_empty() => start..size,
        (Err(_), Ok(last)) if from.is_empty() => size.saturating_sub(last)..size,
        _ => return Ok(None),
    };
    if range.start >= size {
        return Err(ApiError::RangeNotSatisfiable(size));
    }
    Ok(Some(range))
}

fn content_type(name: Option<&str>, head: &[u8]) -> String {
    if let Some(guess) = name.and_then(|n| mime_guess::from_path(n).first_raw()) {
        return guess.to_owned();
    }
    if let Some(kind) = infer::get(head) {
        return kind.mime_type().to_owned();
    }
    if !head.is_empty() && std::str::from_utf8(head).is_ok() {
        return "text/plain; charset=utf-8".to_owned();
    }
    "application/octet-stream".to_owned()
}

#[allow(clippy::too_many_arguments)]
async fn plain(
    state: &AppState,
    uri: &Uri,
    resolved: Resolved,
    path: &[String],
    query: &GatewayParams,
    headers: &HeaderMap,
    head_only: bool,
) -> Result<Response, ApiError> {
    match &resolved.node {
        Node::File { size, .. } => {
            let name = query.filename.clone().or_else(|| path.last().cloned());
            file(state, &resolved, *size, name, query, headers, head_only).await
        }
        Node::Symlink { target } => {
            let mut response = target.clone().into_response();
            response
                .headers_mut()
                .insert(header::ETAG, etag(resolved.cid.to_string()));
            Ok(response)
        }
        _ => {
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
            let mut blocks = StoredBlocks::new(state);
            let node = resolved.node.clone();
            let entries = blocking(move || read::list(&node, &mut blocks)).await?;
            // A client asking for JSON wants the listing, even of a website.
            let wants_json = headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("application/json"));
            let index = entries.iter().find(|e| e.name == "index.html");
            if let Some(index) = index.filter(|_| !wants_json) {
                let cid = index.cid;
                let mut blocks = StoredBlocks::new(state);
                let node = blocking(move || read::load(&cid, &mut blocks)).await?;
                if let Node::File { size, .. } = node {
                    let index = Resolved {
                        cid,
                        node,
                        path_blocks: vec![],
                    };
                    let name = Some("index.html".to_owned());
                    return file(state, &index, size, name, query, headers, head_only).await;
                }
            }
            listing(&resolved.cid, uri.path(), &entries, headers)
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn file(
    state: &AppState,
    resolved: &Resolved,
    size: u64,
    name: Option<String>,
    query: &GatewayParams,
    headers: &HeaderMap,
    head_only: bool,
) -> Result<Response, ApiError> {
    let cid = resolved.cid;
    // The first bytes, to sniff a type when the name does not say.
    let mut blocks = StoredBlocks::new(state);
    let head = blocking(move || {
        let mut head = Vec::new();
        read::read_range(
            &cid,
            0..size.min(512),
            &mut blocks,
            &mut Vec::new(),
            &mut |b| {
                head.extend_from_slice(&b);
                Ok(())
            },
        )?;
        Ok(head)
    })
    .await?;
    let range = byte_range(headers, size)?;
    let body_range = range.clone().unwrap_or(0..size);
    let mut response = if head_only {
        StatusCode::OK.into_response()
    } else {
        let mut blocks = StoredBlocks::new(state);
        let wanted = body_range.clone();
        streamed(move |tx| {
            read::read_range(&cid, wanted, &mut blocks, &mut Vec::new(), &mut |bytes| {
                send(tx, bytes)
            })
        })
        .into_response()
    };
    if let Some(range) = &range {
        *response.status_mut() = StatusCode::PARTIAL_CONTENT;
        let out = response.headers_mut();
        let content_range = format!("bytes {}-{}/{size}", range.start, range.end - 1);
        if let Ok(value) = HeaderValue::from_str(&content_range) {
            out.insert(header::CONTENT_RANGE, value);
        }
    }
    let out = response.headers_mut();
    out.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    out.insert(
        header::CONTENT_LENGTH,
        HeaderValue::from(body_range.end - body_range.start),
    );
    if let Ok(value) = HeaderValue::from_str(&content_type(name.as_deref(), &head)) {
        out.insert(header::CONTENT_TYPE, value);
    }
    out.insert(header::ETAG, etag(cid.to_string()));
    let download = query.download.as_deref() == Some("true");
    if download || query.filename.is_some() {
        let disposition = if download { "attachment" } else { "inline" };
        let filename: String = name
            .unwrap_or_else(|| cid.to_string())
            .chars()
            .filter(|c| !c.is_control() && *c != '"' && *c != '\\')
            .collect();
        let value = format!("{disposition}; filename=\"{filename}\"");
        if let Ok(value) = HeaderValue::from_str(&value) {
            out.insert(header::CONTENT_DISPOSITION, value);
        }
    }
    Ok(response)
}

fn listing(
    cid: &Cid,
    path: &str,
    entries: &[read::NodeLink],
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let wants_json = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"));
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
            title = escape(path)
        );
        ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
    };
    let tag = if wants_json {
        format!("{cid}.json")
    } else {
        format!("{cid}.html")
    };
    response.headers_mut().insert(header::ETAG, etag(tag));
    Ok(response)
}
