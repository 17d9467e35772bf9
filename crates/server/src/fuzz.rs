//! Fuzz bodies for `cairn-server`'s request parsers: what one fuzz input does. Shared
//! by the fuzz targets (`fuzz/fuzz_targets/{tus_headers,gateway_path,pin_query,
//! multipart}.rs`) and the stable replay test (`crates/server/tests/fuzz_corpus.rs`), so a
//! regression input replays the very same code. Each body returns what it parsed or why not;
//! a panic (or a broken assertion) is the bug. Inputs are fields separated by `\n`, each the
//! value of one header, parameter or query, as a client could send it.

use std::str::FromStr;

use crate::error::ApiError;
use crate::gateway::subdomain::{self, ContentOrigin};
use crate::gateway::{self, Format, GatewayParams};
use crate::routes::pins::{self, ListParams};
use crate::routes::upload::{self, FilePart};
use crate::routes::{parse_rfc3339, query, rfc3339, MAX_PAGE};
use crate::tus::{self, headers::Checksum};
use crate::ServerConfig;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Multipart, Query, Request};
use axum::http::uri::Authority;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Uri};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use cairn_service::detect::{self, Detection, FirstLook, Refused, HEAD_BYTES};
use cairn_store::model::ArchiveMode;
use cairn_store::model::KeyValues;
use cairn_store::model::TusConcat;
use cairn_unixfs::Cid;
use futures_util::FutureExt;
use sha2::Digest;

/// The first `n` fields of `input` split at `\n`, then the rest (empty when missing).
fn fields<const N: usize>(input: &[u8]) -> ([&[u8]; N], &[u8]) {
    let mut out = [&[][..]; N];
    let mut rest = input;
    for field in &mut out {
        let end = rest.iter().position(|b| *b == b'\n').unwrap_or(rest.len());
        *field = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or_default();
    }
    (out, rest)
}

/// `headers` with `name: value`, when `value` can be a header value at all (an empty field is
/// no header).
fn with_header(headers: &mut HeaderMap, name: &'static str, value: &[u8]) {
    if value.is_empty() {
        return;
    }
    if let Ok(value) = HeaderValue::from_bytes(value) {
        headers.insert(HeaderName::from_static(name), value);
    }
}

fn bad_request(e: &ApiError) -> bool {
    matches!(e, ApiError::BadRequest(_))
}

/// `tus_headers`: fields `Upload-Metadata`, `Upload-Concat`, `Upload-Checksum`,
/// `Upload-Offset`, `Upload-Length`, then the PATCH body the checksum is of. Every refusal is
/// a `400`; a number is exactly its digits; parsed metadata, encoded again, parses to the same
/// pairs; a final concatenation names upload ids, which, sent again, name the same; a
/// checksum of the body's true digest matches it, and one of another digest does not.
pub fn tus_headers(input: &[u8]) -> Result<usize, ApiError> {
    let ([metadata, concat, checksum, offset, length], body) = fields::<5>(input);
    let mut headers = HeaderMap::new();
    with_header(&mut headers, "upload-metadata", metadata);
    with_header(&mut headers, "upload-concat", concat);
    with_header(&mut headers, "upload-checksum", checksum);
    with_header(&mut headers, "upload-offset", offset);
    with_header(&mut headers, "upload-length", length);
    let mut parsed = 0;

    for name in ["upload-offset", "upload-length"] {
        match tus::headers::number(&headers, name) {
            Ok(None) => assert!(!headers.contains_key(name)),
            Ok(Some(n)) => {
                let text = tus::headers::text(&headers, name).unwrap().unwrap();
                let digits = text.trim_start_matches('0');
                assert_eq!(n.to_string(), if digits.is_empty() { "0" } else { digits });
                parsed += 1;
            }
            Err(e) => assert!(bad_request(&e), "{e:?}"),
        }
    }

    match tus::headers::text(&headers, "upload-metadata")
        .and_then(|raw| tus::headers::metadata(raw.unwrap_or_default()))
    {
        Ok(pairs) => {
            for (i, (key, _)) in pairs.iter().enumerate() {
                assert!(!key.is_empty() && !key.contains([',', ' ']), "key {key:?}");
                assert!(pairs[..i].iter().all(|(k, _)| k != key), "{key:?} twice");
            }
            let encoded: Vec<String> = pairs
                .iter()
                .map(|(key, value)| match value.is_empty() {
                    true => key.clone(),
                    false => format!("{key} {}", BASE64.encode(value)),
                })
                .collect();
            let again = tus::headers::metadata(&encoded.join(",")).expect("re-encoded metadata");
            assert_eq!(again, pairs, "metadata does not round-trip");
            parsed += pairs.len();
        }
        Err(e) => assert!(bad_request(&e), "{e:?}"),
    }

    match tus::headers::text(&headers, "upload-concat").and_then(tus::concat) {
        Ok(TusConcat::Final(ids)) => {
            assert!(!ids.is_empty());
            for id in &ids {
                assert!(!id.is_empty() && !id.contains(['/', ' ']), "id {id:?}");
            }
            let again = tus::concat(Some(&format!("final;{}", ids.join(" "))));
            assert_eq!(again.unwrap(), TusConcat::Final(ids));
            parsed += 1;
        }
        Ok(_) => {}
        Err(e) => assert!(bad_request(&e), "{e:?}"),
    }

    match tus::headers::text(&headers, "upload-checksum") {
        Ok(Some(value)) => match Checksum::parse(value) {
            Ok(mut sum) => {
                let algorithm = sum.algorithm;
                let digest = match sum.algorithm {
                    "sha1" => sha1::Sha1::digest(body).to_vec(),
                    "sha256" => sha2::Sha256::digest(body).to_vec(),
                    "md5" => md5::Md5::digest(body).to_vec(),
                    other => panic!("unknown algorithm {other:?} accepted"),
                };
                // Fed in two parts, as two reads of the body would.
                let (a, b) = body.split_at(body.len() / 2);
                sum.update(a);
                sum.update(b);
                let _ = sum.matches();
                let mut right =
                    Checksum::parse(&format!("{algorithm} {}", BASE64.encode(&digest))).unwrap();
                right.update(body);
                assert!(right.matches(), "the body's true digest does not match");
                let mut other = digest;
                other[0] ^= 1;
                let mut wrong =
                    Checksum::parse(&format!("{algorithm} {}", BASE64.encode(&other))).unwrap();
                wrong.update(body);
                assert!(!wrong.matches(), "another digest matches");
                parsed += 1;
            }
            Err(e) => assert!(bad_request(&e), "{e:?}"),
        },
        Ok(None) => {}
        Err(e) => assert!(bad_request(&e), "{e:?}"),
    }
    Ok(parsed)
}

/// The deepest path the gateway body accepts.
const MAX_DEPTH: usize = 8;

/// `gateway_path`: bytes 0-7 are a file's size (u64 LE), then fields: the route's `cid` and
/// `path` parameters (as the router decodes them), the request's URI (path and query), its
/// `Accept`, `Range` and `Host` headers, an `entity-bytes` value. Everything the gateway
/// parses before reading a block: the CID and path (never an empty name, never deeper than
/// allowed), the format and CAR parameters, entity and byte ranges (always inside the file,
/// a `Range` never empty), the CID's DNS label (one label that is the CID again), a content
/// origin's request rewritten to the path gateway's, and a browser's redirect to the content
/// origin, which, followed, is rewritten back to the same CID and path.
pub fn gateway_path(input: &[u8]) -> Result<Format, ApiError> {
    let Some((size, input)) = input.split_first_chunk::<8>() else {
        return Err(ApiError::BadRequest("short input".into()));
    };
    let size = u64::from_le_bytes(*size);
    let ([cid, path, uri, accept, range, host, entity], _) = fields::<7>(input);
    let mut headers = HeaderMap::new();
    with_header(&mut headers, "accept", accept);
    with_header(&mut headers, "range", range);
    with_header(&mut headers, "host", host);
    let _ = subdomain::redirects(&crate::ServerConfig::default(), "localhost", &headers);

    match std::str::from_utf8(entity).map(|spec| gateway::entity_range(spec, size)) {
        Ok(Ok(range)) => assert!(range.start <= range.end && range.end <= size, "{range:?}"),
        Ok(Err(e)) => assert!(bad_request(&e), "{e:?}"),
        Err(_) => {}
    }
    match gateway::byte_range(&headers, size) {
        Ok(Some(range)) => assert!(range.start < range.end && range.end <= size, "{range:?}"),
        Ok(None) => {}
        Err(ApiError::RangeNotSatisfiable(n)) => assert_eq!(n, size),
        Err(e) => panic!("a Range refused with {e:?}"),
    }

    let config = ServerConfig {
        gateway_domain: Some("localhost".into()),
        ..ServerConfig::default()
    };
    let uri = Uri::try_from(uri).ok();
    if let Some(uri) = &uri {
        content_origin(&config, &headers, uri);
    }

    let params = [
        ("cid".to_owned(), String::from_utf8_lossy(cid).into_owned()),
        (
            "path".to_owned(),
            String::from_utf8_lossy(path).into_owned(),
        ),
    ];
    let (root, names) = match gateway::parse_path(&params, MAX_DEPTH) {
        Ok(parsed) => parsed,
        Err(ApiError::DagTooLarge(_)) => {
            assert!(params[1].1.split('/').filter(|s| !s.is_empty()).count() > MAX_DEPTH);
            return Err(ApiError::DagTooLarge(String::new()));
        }
        Err(e) => {
            assert!(bad_request(&e), "{e:?}");
            return Err(e);
        }
    };
    assert!(names.len() <= MAX_DEPTH);
    for name in &names {
        assert!(!name.is_empty() && !name.contains('/'), "name {name:?}");
    }
    match subdomain::dns_label(&root) {
        Ok(label) => {
            assert!(label.len() <= 63, "{label}");
            assert!(label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
            let again: Cid = label.parse().expect("a DNS label is a CID");
            assert_eq!(again, Cid::new_v1(root.codec(), *root.hash()));
            // A browser on the path gateway is sent to the content origin.
            let asked: Option<Uri> = format!("/ipfs/{root}/{}", names.join("/")).parse().ok();
            if let Some(asked) = asked {
                redirect_round_trip(&config, &headers, &root, &asked);
            }
        }
        Err(e) => assert!(bad_request(&e), "{e:?}"),
    }

    let Some(uri) = uri else {
        return Err(ApiError::BadRequest("not a URI".into()));
    };
    let Query(query) = Query::<GatewayParams>::try_from_uri(&uri)
        .map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let format = gateway::negotiate(&query, &headers)?;
    match gateway::car_duplicates(&query, &headers) {
        Ok(_) => {}
        Err(e) => assert!(bad_request(&e), "{e:?}"),
    }
    Ok(format)
}

/// The host's suffix that makes a content origin, as `with_content_origins` builds it.
fn origin_domain(config: &ServerConfig) -> String {
    let domain = config.gateway_domain.as_deref().unwrap_or_default();
    domain.to_ascii_lowercase()
}

/// A request to `uri` with `headers`, rewritten as a content origin's would be: when it is
/// one, it becomes `/ipfs/{cid}` and the path and query as sent. Returns the CID and the rest.
fn content_origin(config: &ServerConfig, headers: &HeaderMap, uri: &Uri) -> Option<(Cid, String)> {
    let mut request = Request::new(Body::empty());
    *request.uri_mut() = uri.clone();
    *request.headers_mut() = headers.clone();
    match subdomain::to_gateway_request(config, &origin_domain(config), &mut request) {
        Ok(None) => {}
        // Answered at once: a name's origin in another codec, redirected.
        Ok(Some(answer)) => {
            assert!(answer.status().is_redirection(), "{answer:?}");
            return None;
        }
        Err(e) => {
            assert!(bad_request(&e), "{e:?}");
            return None;
        }
    }
    let Some(ContentOrigin { uri: original }) = request.extensions().get::<ContentOrigin>() else {
        assert_eq!(
            request.uri(),
            uri,
            "rewritten without being a content origin"
        );
        return None;
    };
    assert_eq!(original, uri);
    let rewritten = request.uri().path_and_query().expect("a rewritten path");
    let Some(rest) = rewritten.as_str().strip_prefix("/ipfs/") else {
        // A name's origin: its label parsed as a name, which the name's tests cover.
        assert!(
            rewritten.as_str().starts_with("/ipns/"),
            "rewritten to neither /ipfs/ nor /ipns/"
        );
        return None;
    };
    let at = rest.find(['/', '?']).unwrap_or(rest.len());
    let cid: Cid = rest[..at].parse().expect("rewritten to a CID");
    let sent = original.path_and_query().map_or("/", |p| p.as_str());
    if sent.starts_with('/') {
        assert_eq!(&rest[at..], sent, "the path and query sent are not kept");
    }
    Some((cid, rest[at..].to_owned()))
}

/// The redirect from the path gateway names the content origin of `root`; followed (its
/// `Location` as the next request's host and path), it is rewritten back to the same CID and
/// path. Checked when the request's `Host` is a well-formed authority (else there is no
/// telling what its port means).
fn redirect_round_trip(config: &ServerConfig, headers: &HeaderMap, root: &Cid, asked: &Uri) {
    let domain = config.gateway_domain.as_deref().unwrap_or_default();
    let response = match subdomain::redirect(
        config,
        domain,
        headers,
        subdomain::Origin::Content(root),
        asked,
    ) {
        Ok(response) => response,
        Err(e) => {
            assert!(bad_request(&e), "{e:?}");
            return;
        }
    };
    let host_is_authority = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_none_or(|h| Authority::from_str(h).is_ok());
    if !host_is_authority {
        return;
    }
    let location = response.headers()[header::LOCATION].to_str().unwrap();
    let location: Uri = location
        .parse()
        .unwrap_or_else(|e| panic!("Location {location:?} is not a URI: {e}"));
    let authority = location.authority().expect("an absolute Location");
    let mut followed = HeaderMap::new();
    followed.insert(header::HOST, authority.as_str().parse().unwrap());
    let path: Uri = location
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .parse()
        .unwrap();
    let (cid, rest) = content_origin(config, &followed, &path)
        .unwrap_or_else(|| panic!("{location} is not a content origin"));
    assert_eq!(cid, Cid::new_v1(root.codec(), *root.hash()));
    // What followed `/ipfs/{cid}`, query included.
    let asked = asked.path_and_query().unwrap().as_str();
    let asked_rest = &asked["/ipfs/".len()..];
    let asked_rest = &asked_rest[asked_rest.find(['/', '?']).unwrap_or(asked_rest.len())..];
    let asked_rest = match asked_rest.strip_prefix('?') {
        Some(_) => format!("/{asked_rest}"),
        None if asked_rest.is_empty() => "/".to_owned(),
        None => asked_rest.to_owned(),
    };
    // The router decodes the path: a byte sent raw or percent-encoded is the same name.
    assert_eq!(
        percent_decoded(&rest),
        percent_decoded(&asked_rest),
        "redirected to another path: {rest:?} for {asked_rest:?}"
    );
}

/// `text` with its `%XX` escapes decoded (the oracle for what the router sees).
fn percent_decoded(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

/// `pin_query`: fields: a `GET /pins` query string, a time, then a `POST /pins` body. The
/// list's filter stays within the spec's bounds (a page of 1 to 1000, at most 10 CIDs, each
/// as stored); a time read back from how the API writes it is the same time; a pin accepted
/// has a CID as stored, a name of at most 255 characters, at most 20 origins, and `meta`
/// key-values within their limits.
pub fn pin_query(input: &[u8]) -> Result<usize, ApiError> {
    let ([query_text, time], body) = fields::<2>(input);
    let mut parsed = 0;
    if let Ok(time) = std::str::from_utf8(time) {
        if let Some(ms) = parse_rfc3339(time) {
            check_time(ms);
            parsed += 1;
        }
    }
    let uri = Uri::try_from([b"/pins?", query_text].concat()).ok();
    if let Some(Ok(Query(params))) = uri.map(|uri| Query::<ListParams>::try_from_uri(&uri)) {
        match pins::list_filter(params) {
            Ok(filter) => {
                assert!((1..=MAX_PAGE).contains(&filter.limit), "{}", filter.limit);
                assert!(filter.cids.len() <= 10);
                for cid in &filter.cids {
                    assert_eq!(&query::cid(cid).unwrap(), cid, "a CID not as stored");
                }
                for ms in [filter.created_before_ms, filter.created_after_ms]
                    .into_iter()
                    .flatten()
                {
                    check_time(ms);
                }
                assert!(filter.with_cid);
                parsed += 1;
            }
            Err(e) => assert!(bad_request(&e), "{e:?}"),
        }
    }
    match pins::parse_pin(1, body) {
        Ok(pin) => {
            assert_eq!(
                query::cid(&pin.cid).unwrap(),
                pin.cid,
                "a CID not as stored"
            );
            assert!(pin.name.chars().count() <= 255);
            assert!(pin.origins.len() <= 20);
            assert!(pin.keyvalues.iter().count() <= KeyValues::MAX_PAIRS);
            parsed += 1;
        }
        Err(e) => assert!(bad_request(&e), "{e:?}"),
    }
    Ok(parsed)
}

/// A time the API read, written as the API writes times and read again, is the same time
/// (when it is one RFC 3339 can write: from the epoch to the end of year 9999).
fn check_time(ms: i64) {
    const YEAR_10000_MS: i64 = 253_402_300_800_000;
    if (0..YEAR_10000_MS).contains(&ms) {
        let written = rfc3339(ms);
        assert_eq!(parse_rfc3339(&written), Some(ms), "{written}");
    }
}

/// Bytes the multipart body gathers a piece of (not a power of two: pieces straddle chunks).
const PIECE_BYTES: usize = 100;

/// What `multipart` read of a form: the `name` part, and the `file` part's name, kind, media
/// type and bytes.
#[derive(Debug, PartialEq, Eq)]
pub struct Form {
    pub name: Option<String>,
    pub file: Option<FileRead>,
}

#[derive(Debug, PartialEq, Eq)]
pub struct FileRead {
    pub file_name: Option<String>,
    /// What the head and the name show, as a default-mode upload sees them.
    pub look: Result<FirstLook, Refused>,
    pub mime_type: String,
    pub content: Vec<u8>,
}

/// The input of `multipart`, for seeds: how the body is cut, the account's limit, the
/// boundary, the body.
pub fn multipart_input(chunk: u8, limit: u16, boundary: &str, body: &[u8]) -> Vec<u8> {
    let mut out = vec![chunk];
    out.extend_from_slice(&limit.to_le_bytes());
    out.extend_from_slice(boundary.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(body);
    out
}

/// `multipart`: byte 0 is the size of the network chunks the body arrives in (1 to 64 bytes),
/// bytes 1-2 the account's upload limit (u16 LE), then the boundary up to `\n`, then the body
/// of a `POST /api/upload`. Read as the handler reads it (axum's `Multipart`, our part
/// dispatch, the file part's head and pieces), once in those chunks and once whole: both
/// must read the same form (a streaming parser never depends on where its input is cut).
/// Every piece but the last is whole; the head is the content's start; the content is never
/// over the limit.
pub fn multipart(input: &[u8]) -> Result<Form, String> {
    let Some((&[chunk, a, b], rest)) = input.split_first_chunk::<3>() else {
        return Err("short input".into());
    };
    let limit = u64::from(u16::from_le_bytes([a, b]));
    let ([boundary], body) = fields::<1>(rest);
    let chunk = usize::from(chunk % 64) + 1;
    let cut = read_form(boundary, body, chunk, limit);
    let whole = read_form(boundary, body, body.len().max(1), limit);
    match (&cut, &whole) {
        (Ok(cut), Ok(whole)) => assert_eq!(cut, whole, "the form depends on its chunks"),
        (Err(_), Err(_)) => {}
        _ => panic!("cut in {chunk}-byte chunks: {cut:?}; whole: {whole:?}"),
    }
    cut
}

/// One read of the form, its body arriving in `chunk`-byte pieces. In-memory bodies are
/// always ready, so the handler's futures complete without an executor.
fn read_form(boundary: &[u8], body: &[u8], chunk: usize, limit: u64) -> Result<Form, String> {
    let mut content_type = b"multipart/form-data; boundary=".to_vec();
    content_type.extend_from_slice(boundary);
    let content_type = HeaderValue::from_bytes(&content_type).map_err(|e| e.to_string())?;
    let chunks: Vec<Result<Bytes, std::io::Error>> = body
        .chunks(chunk)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let mut request = Request::new(Body::from_stream(futures_util::stream::iter(chunks)));
    request
        .headers_mut()
        .insert(header::CONTENT_TYPE, content_type);
    let read = async {
        let mut multipart = Multipart::from_request(request, &())
            .await
            .map_err(|e| e.body_text())?;
        let mut form = Form {
            name: None,
            file: None,
        };
        // As `upload::upload` reads it.
        while let Some(field) = multipart.next_field().await.map_err(|e| e.body_text())? {
            let mut fields = upload::Form {
                name: form.name.take(),
                keyvalues: None,
            };
            let part = upload::file_part(field, &mut fields, form.file.is_some()).await;
            form.name = fields.name;
            if let Some(field) = part.map_err(|e| format!("{e:?}"))? {
                form.file = Some(
                    read_file(field, limit)
                        .await
                        .map_err(|e| format!("{e:?}"))?,
                );
            }
        }
        if let Some(name) = &form.name {
            assert!(name.len() <= 1024, "a name of {} bytes", name.len());
        }
        Ok(form)
    };
    read.now_or_never().expect("an in-memory body never waits")
}

/// The file part as `receive_file` reads it: the head, then the pieces.
async fn read_file(
    field: axum::extract::multipart::Field<'_>,
    limit: u64,
) -> Result<FileRead, ApiError> {
    let file_name = field.file_name().map(str::to_owned);
    let mut part = FilePart::new(field, upload::PostLimit::account(limit), PIECE_BYTES);
    let head = part.head().await?;
    assert!(head.len() <= HEAD_BYTES);
    let look = Detection::new(file_name.as_deref(), ArchiveMode::Extract, false).first_look(&head);
    let mime_type = detect::media_type(&head, file_name.as_deref());
    let mut content = Vec::new();
    let mut last = false;
    while let Some(piece) = part.next_piece().await? {
        assert!(!last, "a short piece before the end");
        assert!(!piece.is_empty() && piece.len() <= PIECE_BYTES);
        last = piece.len() < PIECE_BYTES;
        content.extend_from_slice(&piece);
    }
    assert_eq!(part.next_piece().await?, None, "a piece after the end");
    assert!(
        content.starts_with(&head),
        "the head is not the content's start"
    );
    assert!(head.len() == HEAD_BYTES || head.len() == content.len());
    assert_eq!(content.len() as u64, part.received());
    assert!(part.received() <= limit);
    Ok(FileRead {
        file_name,
        look,
        mime_type,
        content,
    })
}
