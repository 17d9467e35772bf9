//! Plain files for browsers and curl: the bytes with `Range` support, a content type from the
//! name or the first bytes, `?filename=` and `?download=true`.

use std::ops::Range;

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use cairn_unixfs::Cid;

use super::{blocking, content_disposition, etag, streamed, Request, StoredReader};
use crate::error::ApiError;

/// The file `cid` of `size` bytes, named `name` when the request or a listing says.
pub(super) async fn file(
    reader: StoredReader,
    cid: Cid,
    size: u64,
    name: Option<String>,
    request: &Request,
) -> Result<Response, ApiError> {
    let range = byte_range(&request.headers, size)?;
    let body_range = range.clone().unwrap_or(0..size);
    let max_bytes = reader.limits().max_bytes;
    if body_range.end - body_range.start > max_bytes {
        return Err(ApiError::DagTooLarge(format!(
            "the response would be {} bytes; this gateway sends at most {max_bytes} for one \
             request (ask for a Range)",
            body_range.end - body_range.start
        )));
    }
    // The first bytes, to sniff a type when the name does not say.
    let (reader, head) = blocking(reader, move |reader| {
        let mut head = Vec::new();
        reader.read_range(&cid, 0..size.min(512), &mut |_, _| Ok(()), &mut |b| {
            head.extend_from_slice(&b);
            Ok(())
        })?;
        Ok(head)
    })
    .await?;
    let mut response = if request.head_only {
        StatusCode::OK.into_response()
    } else {
        let wanted = body_range.clone();
        streamed(reader, move |reader, tx| {
            reader.read_range(&cid, wanted, &mut |_, _| Ok(()), &mut |bytes| {
                tx.send(bytes)
            })
        })
        .await?
        .into_response()
    };
    if let Some(range) = &range {
        *response.status_mut() = StatusCode::PARTIAL_CONTENT;
        let content_range = format!("bytes {}-{}/{size}", range.start, range.end - 1);
        if let Ok(value) = HeaderValue::from_str(&content_range) {
            response.headers_mut().insert(header::CONTENT_RANGE, value);
        }
    }
    let out = response.headers_mut();
    out.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    out.insert(
        header::CONTENT_LENGTH,
        HeaderValue::from(body_range.end - body_range.start),
    );
    let whole = head.len() as u64 == size;
    if let Ok(value) = HeaderValue::from_str(&content_type(name.as_deref(), &head, whole)) {
        out.insert(header::CONTENT_TYPE, value);
    }
    out.insert(header::ETAG, etag(cid.to_string()));
    let query = &request.query;
    let download = query.download.as_deref() == Some("true");
    if download || query.filename.is_some() {
        let disposition = if download { "attachment" } else { "inline" };
        let filename = name.unwrap_or_else(|| cid.to_string());
        out.insert(
            header::CONTENT_DISPOSITION,
            content_disposition(disposition, &filename),
        );
    }
    Ok(response)
}

/// A single `bytes=` range, resolved against `size`; `None` when absent or not satisfiable
/// as one range (then the whole body is sent, as RFC 9110 allows).
pub fn byte_range(headers: &HeaderMap, size: u64) -> Result<Option<Range<u64>>, ApiError> {
    let Some(spec) = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("bytes="))
    else {
        return Ok(None);
    };
    // Several ranges: the first is answered (what the gateway conformance suite accepts, and
    // what a client reading `Content-Range` sees as it is), never a multipart body.
    let first = spec.split(',').next().unwrap_or_default();
    let Some((from, to)) = first.trim().split_once('-') else {
        return Ok(None);
    };
    let range = match (from.parse::<u64>(), to.parse::<u64>()) {
        (Ok(start), Ok(end)) if start <= end => start..end.saturating_add(1).min(size),
        (Ok(start), Err(_)) if to.is_empty() => start..size,
        (Err(_), Ok(last)) if from.is_empty() => size.saturating_sub(last)..size,
        _ => return Ok(None),
    };
    if range.start >= size {
        return Err(ApiError::RangeNotSatisfiable(size));
    }
    Ok(Some(range))
}

/// The type by the name, else by the first bytes (`whole`: they are all the file's).
fn content_type(name: Option<&str>, head: &[u8], whole: bool) -> String {
    if let Some(guess) = name.and_then(|n| mime_guess::from_path(n).first_raw()) {
        return guess.to_owned();
    }
    if let Some(kind) = infer::get(head) {
        return kind.mime_type().to_owned();
    }
    if is_json(head, whole) {
        return "application/json".to_owned();
    }
    if !head.is_empty() && std::str::from_utf8(head).is_ok() {
        return "text/plain; charset=utf-8".to_owned();
    }
    "application/octet-stream".to_owned()
}

/// An object or array in JSON: all of it, or (`whole` false) as much of one as `head` holds.
fn is_json(head: &[u8], whole: bool) -> bool {
    let starts = head.iter().find(|b| !b.is_ascii_whitespace());
    if !matches!(starts, Some(b'{' | b'[')) {
        return false;
    }
    match serde_json::from_slice::<serde::de::IgnoredAny>(head) {
        Ok(_) => true,
        Err(e) => !whole && e.is_eof(),
    }
}
