//! The read path: `GET/HEAD /ipfs/{cid}[/{path}]` and `/ipns/{name}[/{path}]` on the upload
//! host (`docs/contract.md` "Read path").
//!
//! - [`resolve`]: the CID and path of a request, followed through directories and HAMTs.
//! - [`car`]: trustless CAR responses (IPFS Trustless Gateway spec) with `dag-scope`,
//!   `entity-bytes`, `car-version`/`car-order`/`car-dups`; raw blocks are here too.
//! - `dag`: blocks of the other IPLD codecs (dag-cbor, dag-json, ...) as they are, or a page
//!   for a browser; paths through them follow their links.
//! - `inline`: identity CIDs of 65 to 128 bytes, which the CID type cannot hold.
//! - [`file`]: plain files for browsers and curl, with `Range`, a content type from the name
//!   or the bytes, `?filename=` and `?download=true`.
//! - [`ipns`]: `/ipns/{name}`: the name resolved, then served as `/ipfs/` is, or its record.
//! - [`cors`]: CORS for content: any page may read it, `Range` and all.
//! - `tar`: `?format=tar`, UnixFS as a tar stream.
//! - [`listing`]: directories: their `index.html`, or a listing (HTML, or JSON when asked).
//! - [`subdomain`]: content as its own origin, `{cid}.ipfs.{domain}`, where browsers are
//!   redirected; what the path gateway still serves them is sandboxed.
//!
//! Every block is read from the packs through the block index and verified against its CID,
//! and every node checked against the UnixFS rules, before it is used or sent. Each request
//! reads through one [`Reader`] whose budget (`ServerConfig::read_limits`: depth, blocks and
//! bytes, repeats counted) bounds its work. An error before the headers is a JSON error; an
//! error after them cuts the connection, so a client sees an incomplete body, never a
//! complete wrong one. Bodies stream from a blocking thread; nothing is held whole. Content
//! addressing is public: no token is needed.

mod car;
pub mod cors;
mod dag;
mod file;
mod inline;
pub mod ipns;
mod listing;
mod resolve;
pub mod subdomain;
mod tar;

// The request's parsers, for the fuzz targets (`fuzz/bodies/server.rs`).
#[doc(hidden)]
pub use car::{car_duplicates, entity_range};
#[doc(hidden)]
pub use file::byte_range;
#[doc(hidden)]
pub use resolve::parse as parse_path;

use std::io;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use cairn_unixfs::ipld::{self, IpldError};
use cairn_unixfs::node::NodeError;
use cairn_unixfs::read::{Node, ReadError, Reader};
use cairn_unixfs::Cid;
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::state::AppState;
use cairn_store::blocks::StoredBlockReader;

const IMMUTABLE: &str = "public, max-age=29030400, immutable";

/// What content read from the path gateway may do: run its scripts, in an origin of its own
/// that no other content shares (an opaque one), so it reads no one's storage or cookies.
const SANDBOX: &str = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads";

/// One request's view of the stored blocks, within its budget.
type StoredReader = Reader<StoredBlockReader>;

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
pub enum Format {
    Plain,
    Raw,
    Car,
    /// A UnixFS file, directory or symlink as a tar (`tar`).
    Tar,
    /// The block as it is, when it is in this codec (IPIP-0524: never converted).
    Codec(Codec),
}

/// A codec a block can be asked for in: its `format` name, media type and multicodec code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Codec {
    pub name: &'static str,
    pub media_type: &'static str,
    pub code: u64,
    /// The file name's extension and disposition a block in it is saved under (JSON can be
    /// shown, CBOR only saved: the path gateway spec, `Content-Disposition`).
    pub extension: &'static str,
    pub disposition: &'static str,
}

pub(super) const CODECS: [Codec; 4] = [
    Codec {
        name: "dag-json",
        media_type: "application/vnd.ipld.dag-json",
        code: ipld::DAG_JSON,
        extension: "json",
        disposition: "inline",
    },
    Codec {
        name: "dag-cbor",
        media_type: "application/vnd.ipld.dag-cbor",
        code: ipld::DAG_CBOR,
        extension: "cbor",
        disposition: "attachment",
    },
    Codec {
        name: "json",
        media_type: "application/json",
        code: ipld::JSON,
        extension: "json",
        disposition: "inline",
    },
    Codec {
        name: "cbor",
        media_type: "application/cbor",
        code: ipld::CBOR,
        extension: "cbor",
        disposition: "attachment",
    },
];

/// The response's format: `?format=` first, then `Accept` (IPIP-0523: a browser always sends
/// an `Accept`, so the URL's choice must win). `Accept: application/json` on a directory is
/// its JSON listing (`cairn ls`), so only `?format=json` asks for a JSON block.
pub fn negotiate(params: &GatewayParams, headers: &HeaderMap) -> Result<Format, ApiError> {
    match params.format.as_deref() {
        Some("raw") => return Ok(Format::Raw),
        Some("car") => return Ok(Format::Car),
        Some("tar") => return Ok(Format::Tar),
        Some(name) => {
            return CODECS
                .into_iter()
                .find(|codec| codec.name == name)
                .map(Format::Codec)
                .ok_or_else(|| {
                    ApiError::BadRequest(format!(
                    "format must be raw, car, tar, dag-json, dag-cbor, json or cbor, not {name:?}"
                ))
                })
        }
        None => {}
    }
    let accept = accept(headers);
    let asked_codec = CODECS
        .into_iter()
        .filter(|codec| codec.name != "json")
        .find(|codec| accept.contains(codec.media_type));
    Ok(if accept.contains("application/vnd.ipld.car") {
        Format::Car
    } else if accept.contains("application/vnd.ipld.raw") {
        Format::Raw
    } else if accept.contains("application/x-tar") {
        Format::Tar
    } else if let Some(codec) = asked_codec {
        Format::Codec(codec)
    } else {
        Format::Plain
    })
}

fn accept(headers: &HeaderMap) -> &str {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// What the response kinds need to know of the request.
struct Request {
    root: Cid,
    /// The path's names, decoded.
    path: Vec<String>,
    query: GatewayParams,
    headers: HeaderMap,
    /// The URI the client asked for (on a content origin, without `/ipfs/{cid}`).
    uri: Uri,
    /// The content path as asked, `/ipfs/{cid}/...` or `/ipns/{name}/...`, percent-encoded.
    content_path: String,
    /// On a content origin, the gateway's own host and port (`localhost:8080`), where the
    /// path gateway answers.
    gateway_host: Option<String>,
    head_only: bool,
}

/// `GET /ipfs/{cid}` and `GET /ipfs/{cid}/{*path}` (HEAD too).
pub async fn get(
    State(state): State<AppState>,
    Path(params): Path<Vec<(String, String)>>,
    asked: Asked,
) -> Result<Response, ApiError> {
    serve(&state, asked, &params, None).await
}

#[derive(Deserialize)]
pub struct UriRouter {
    uri: Option<String>,
}

/// `GET /ipfs/?uri=ipfs://{cid}/{path}` (and `ipns://`): the URI router browsers' protocol
/// handlers call (`registerProtocolHandler`), answered with a redirect to the content path
/// (the subdomain spec's MUST, "URI router").
pub async fn uri_router(
    query: Result<Query<UriRouter>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(UriRouter { uri }) = query.map_err(ApiError::from)?;
    let uri = uri.ok_or_else(|| {
        ApiError::BadRequest("name the content: /ipfs/{cid}, or /ipfs/?uri=ipfs://{cid}".into())
    })?;
    let (scheme, rest) = uri
        .split_once("://")
        .filter(|(scheme, rest)| matches!(*scheme, "ipfs" | "ipns") && !rest.is_empty())
        .ok_or_else(|| {
            ApiError::BadRequest(format!("uri: {uri:?} is not an ipfs:// or ipns:// address"))
        })?;
    let location = HeaderValue::from_str(&format!("/{scheme}/{rest}"))
        .map_err(|_| ApiError::BadRequest(format!("uri: {uri:?} is not a URI")))?;
    Ok((
        StatusCode::MOVED_PERMANENTLY,
        [(header::LOCATION, location)],
    )
        .into_response())
}

/// What follows `/{namespace}/{root}` in `path`, from its slash, as sent (still
/// percent-encoded); `None` when nothing does.
fn after_root<'a>(path: &'a str, namespace: &str) -> Option<&'a str> {
    let below = path.strip_prefix(&format!("/{namespace}/"))?;
    below.find('/').map(|slash| &below[slash..])
}

/// A gateway request as it came, before its content path is resolved.
pub struct Asked {
    method: Method,
    uri: Uri,
    query: GatewayParams,
    content_origin: Option<Extension<subdomain::ContentOrigin>>,
    headers: HeaderMap,
}

impl<S: Send + Sync> FromRequestParts<S> for Asked {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Query(query) = Query::<GatewayParams>::from_request_parts(parts, state)
            .await
            .map_err(ApiError::from)?;
        Ok(Self {
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            query,
            content_origin: parts.extensions.get().cloned().map(Extension),
            headers: parts.headers.clone(),
        })
    }
}

/// Serve `params` (`cid` and `path`). `name`: the request came as `/ipns/{name}/...`, whose
/// record may be cached for `ttl`: the content changes when the name is pointed elsewhere.
async fn serve(
    state: &AppState,
    asked: Asked,
    params: &[(String, String)],
    name: Option<(&str, std::time::Duration)>,
) -> Result<Response, ApiError> {
    let Asked {
        method,
        uri,
        query,
        content_origin,
        headers,
    } = asked;
    let max_depth = state.service.config.read_limits.max_depth;
    let cid = params
        .iter()
        .find(|(k, _)| k == "cid")
        .map(|(_, v)| v.as_str());
    if let Some(inline) = cid.and_then(inline::Inline::parse) {
        let path = resolve::path_names(params, max_depth)?;
        return inline.respond(negotiate(&query, &headers)?, &path, &headers, &uri);
    }
    let (root, path) = resolve::parse(params, max_depth)?;
    let format = negotiate(&query, &headers)?;
    let on_path_gateway = content_origin.is_none();
    if let Some(domain) = &state.config.gateway_domain {
        if on_path_gateway
            && format == Format::Plain
            && subdomain::redirects(&state.config, domain, &headers)
        {
            let origin = match name {
                Some((name, _)) => subdomain::Origin::Name(name),
                None => subdomain::Origin::Content(&root),
            };
            return subdomain::redirect(&state.config, domain, &headers, origin, &uri);
        }
    }
    // The content path as asked, before it is resolved (path gateway spec, `X-Ipfs-Path`);
    // on a content origin too, the route's URI is `/ipfs/{cid}/...`.
    let content_path = header_text(uri.path());
    let gateway_host = match (&content_origin, &state.config.gateway_domain) {
        (Some(_), Some(domain)) => crate::origin::RequestOrigin::of(&state.config, &headers)
            .ok()
            .map(|origin| format!("{domain}{}", origin.port_suffix())),
        _ => None,
    };
    let uri = content_origin.map_or(uri, |Extension(origin)| origin.uri);
    // A non-recursive gateway holds everything it can serve: what it lacks it cannot fetch,
    // so "only if cached" fails at once (path gateway spec, `412 Precondition Failed`).
    if only_if_cached(&headers) && root.hash().code() != cairn_unixfs::block::IDENTITY {
        let held = (state.service.store.has_block(&root.hash().to_bytes()).await)
            .map_err(ApiError::from)?;
        if !held {
            return Err(ApiError::PreconditionFailed(format!(
                "{root} is not held here, and only-if-cached was asked"
            )));
        }
    }
    let request = Request {
        root,
        path,
        query,
        headers,
        uri,
        content_path: content_path.clone(),
        gateway_host,
        head_only: method == Method::HEAD,
    };
    let blocks = StoredBlockReader::new(state.service.store.clone(), state.service.packs.clone());
    let reader = Reader::new(blocks, state.service.config.read_limits);
    let (reader, resolved, roots) = resolve::resolve(reader, &request).await?;
    let mut response = match format {
        // A block of another codec is served as it is, whatever the format.
        _ if !resolved.node.is_unixfs() => dag::respond(reader, resolved, format, &request).await?,
        // A UnixFS file holding JSON is served as JSON (path gateway spec, `application/json`).
        Format::Codec(codec) if codec.name == "json" => {
            let Node::File { size, .. } = resolved.node else {
                return Err(ApiError::NotAcceptable(format!(
                    "{} is not a file: only a file holding JSON is served as JSON",
                    resolved.cid
                )));
            };
            let response = file::file(reader, resolved.cid, size, None, &request).await?;
            if response.headers().get(header::CONTENT_TYPE)
                != Some(&HeaderValue::from_static("application/json"))
            {
                return Err(ApiError::NotAcceptable(format!(
                    "{} does not hold JSON: ask for format=raw or car",
                    resolved.cid
                )));
            }
            response
        }
        Format::Codec(codec) => car::block_in(reader, resolved.cid, codec, &request).await?,
        Format::Raw => car::raw(reader, &resolved, &request).await?,
        Format::Car => car::car(reader, resolved, &request).await?,
        Format::Tar => tar::tar(reader, resolved, &request).await?,
        Format::Plain => match &resolved.node {
            Node::File { size, .. } => {
                let name =
                    (request.query.filename.clone()).or_else(|| request.path.last().cloned());
                file::file(reader, resolved.cid, *size, name, &request).await?
            }
            Node::Symlink { target } => {
                let mut response = target.clone().into_response();
                response
                    .headers_mut()
                    .insert(header::ETAG, etag(resolved.cid.to_string()));
                response
            }
            Node::Directory { .. } | Node::HamtShard { .. } => {
                listing::directory(reader, resolved, &request).await?
            }
            Node::Ipld { .. } => unreachable!("answered above"),
        },
    };
    let out = response.headers_mut();
    if format == Format::Plain && on_path_gateway && state.config.path_gateway_sandbox {
        out.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(SANDBOX),
        );
    }
    // Every response under `/ipfs/` is immutable, but a listing this gateway generates (it
    // sets its own: its HTML changes with the gateway); under `/ipns/`, good for the record's
    // TTL (path gateway spec).
    match name {
        Some((_, ttl)) => {
            let cache = format!("public, max-age={}", ttl.as_secs());
            out.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_str(&cache).map_err(ApiError::internal)?,
            );
        }
        None => {
            (out.entry(header::CACHE_CONTROL)).or_insert(HeaderValue::from_static(IMMUTABLE));
        }
    }
    out.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    if let Ok(value) = HeaderValue::from_str(&content_path) {
        out.insert("x-ipfs-path", value);
    }
    // The CID each name of the path leads to, root first (path gateway spec, `X-Ipfs-Roots`).
    let roots: Vec<String> = roots.iter().map(Cid::to_string).collect();
    if let Ok(value) = HeaderValue::from_str(&roots.join(",")) {
        out.insert("x-ipfs-roots", value);
    }
    // What goes out is credited to the accounts keeping the root (their usage).
    let (parts, body) = response.into_parts();
    let metered = Metered {
        body,
        bytes: 0,
        root: request.root.to_string(),
        served: state.service.served.clone(),
    };
    let response = Response::from_parts(parts, Body::new(metered));
    // Conditional requests: the content behind an ETag never changes.
    let etag = response.headers().get(header::ETAG).cloned();
    if let Some(etag) = etag.filter(|etag| none_match(&request.headers, etag)) {
        let mut not_modified = StatusCode::NOT_MODIFIED.into_response();
        let out = not_modified.headers_mut();
        out.insert(header::ETAG, etag);
        if let Some(cache) = response.headers().get(header::CACHE_CONTROL) {
            out.insert(header::CACHE_CONTROL, cache.clone());
        }
        return Ok(not_modified);
    }
    Ok(response)
}

/// Whether `If-None-Match` names `etag` (or is `*`): a list, compared weakly, as RFC 9110
/// section 13.1.2 says (the path gateway spec: a match MUST be answered with `304`).
fn none_match(headers: &HeaderMap, etag: &HeaderValue) -> bool {
    let opaque = |tag: &str| tag.trim().trim_start_matches("W/").to_owned();
    let Ok(ours) = etag.to_str() else {
        return false;
    };
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|tag| tag.trim() == "*" || opaque(tag) == opaque(ours))
}

/// `Cache-Control: only-if-cached` on the request.
fn only_if_cached(headers: &HeaderMap) -> bool {
    (headers.get_all(header::CACHE_CONTROL).iter())
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|directive| directive.trim().eq_ignore_ascii_case("only-if-cached"))
}

/// `Content-Disposition` with `filename` as the spec asks (path gateway spec): non-ASCII
/// characters become `_` in `filename`, and the name is also given whole, percent-encoded, in
/// `filename*` (RFC 8187), so every browser can read it.
fn content_disposition(kind: &str, filename: &str) -> HeaderValue {
    let plain: String = filename
        .chars()
        .map(|c| match c {
            ' '..='~' if c != '"' && c != '\\' => c,
            _ => '_',
        })
        .collect();
    let mut value = format!("{kind}; filename=\"{plain}\"");
    if !filename.is_ascii() {
        let encoded: String = filename
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    char::from(b).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        value.push_str(&format!("; filename*=UTF-8''{encoded}"));
    }
    // Every character is visible ASCII by now.
    HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static("attachment"))
}

/// `text` with every byte a header cannot carry percent-encoded: a request's path may carry
/// raw UTF-8 (curl sends it as typed, and hyper takes it).
fn header_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_graphic() {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A response body that counts the bytes it hands the connection, and credits them to the
/// root when it is dropped (sent whole, or cut short).
struct Metered {
    body: Body,
    bytes: u64,
    root: String,
    served: std::sync::Arc<cairn_service::served::ServedBytes>,
}

impl axum::body::HttpBody for Metered {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        let polled = std::pin::Pin::new(&mut self.body).poll_frame(cx);
        if let std::task::Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref() {
                self.bytes += data.len() as u64;
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Metered {
    fn drop(&mut self) {
        self.served.add(&self.root, self.bytes);
    }
}

fn etag(value: String) -> HeaderValue {
    HeaderValue::from_str(&format!("\"{value}\"")).unwrap_or(HeaderValue::from_static("\"\""))
}

fn read_error(e: ReadError) -> ApiError {
    match e {
        ReadError::Missing(cid) => ApiError::NotFound(format!("no block {cid} is stored here")),
        ReadError::NotFound { path } => ApiError::NotFound(format!("{path:?} does not exist")),
        ReadError::NotADirectory { path } => {
            ApiError::NotFound(format!("{path:?} is not a directory"))
        }
        e @ ReadError::InsideBlock { .. } => ApiError::NotImplemented(format!(
            "{e}: ask for the block the path's last link leads to"
        )),
        e @ ReadError::NotUnixFs { .. } => ApiError::NotAcceptable(e.to_string()),
        ReadError::Node(e) => match *e {
            NodeError::Ipld(IpldError::UnsupportedCodec { .. }) => {
                ApiError::BadRequest(e.to_string())
            }
            _ => ApiError::InvalidDag(e.to_string()),
        },
        e @ (ReadError::TooDeep { .. } | ReadError::OverBudget { .. }) => {
            ApiError::DagTooLarge(format!("{e}: this gateway's limit for one request"))
        }
        ReadError::Io(e) => ApiError::internal(e),
    }
}

/// Run a reader's work off the async threads; the reader comes back with the result, so one
/// budget covers every step of a request.
async fn blocking<T: Send + 'static>(
    mut reader: StoredReader,
    work: impl FnOnce(&mut StoredReader) -> Result<T, ReadError> + Send + 'static,
) -> Result<(StoredReader, T), ApiError> {
    tokio::task::spawn_blocking(move || {
        let result = work(&mut reader);
        result.map(|value| (reader, value))
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(read_error)
}

/// A body fed by a blocking producer through a bounded channel. A failure before the first
/// bytes is the response's own error (its status, and a message saying why); a failure
/// mid-body ends the stream with an error, which makes the server cut the connection: the
/// client sees the body incomplete (a short `Content-Length`, or a chunked body without its
/// last chunk).
async fn streamed(
    mut reader: StoredReader,
    produce: impl FnOnce(&mut StoredReader, &Sender) -> Result<(), ReadError> + Send + 'static,
) -> Result<Body, ApiError> {
    let (tx, mut rx) = mpsc::channel::<Result<Bytes, ReadError>>(8);
    tokio::task::spawn_blocking(move || {
        let sender = Sender(tx);
        if let Err(e) = produce(&mut reader, &sender) {
            let _ = sender.0.blocking_send(Err(e));
        }
    });
    let first = match rx.recv().await {
        None => return Ok(Body::empty()),
        Some(Err(e)) => return Err(read_error(e)),
        Some(Ok(bytes)) => bytes,
    };
    let rest = futures_util::stream::unfold(rx, |mut rx| async move {
        let item = rx.recv().await?.map_err(|e| {
            tracing::warn!(error = %e, "gateway response cut short");
            io::Error::other(e.to_string())
        });
        Some((item, rx))
    });
    let first = futures_util::stream::once(async move { Ok::<_, io::Error>(first) });
    Ok(Body::from_stream(futures_util::StreamExt::chain(
        first, rest,
    )))
}

/// Where a streamed body's bytes go.
struct Sender(mpsc::Sender<Result<Bytes, ReadError>>);

impl Sender {
    fn send(&self, bytes: Bytes) -> io::Result<()> {
        self.0
            .blocking_send(Ok(bytes))
            .map_err(|_| io::Error::other("the client went away"))
    }
}
