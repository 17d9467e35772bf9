//! TUS 1.0.0 resumable uploads at `/api/upload/tus` (`docs/contract.md` "Large upload"), with the
//! creation, creation-with-upload, creation-defer-length, termination, checksum, expiration
//! and concatenation extensions.
//!
//! The protocol layer knows nothing about storage beyond three pieces: upload records in the
//! metadata store, their bytes in [`TusBytes`] (whose durable length is the offset), and the
//! [`lock::Locks`] that keep one writer per upload. When the last byte is stored the upload's
//! operation becomes claimable and a worker processes it exactly as a POST.

pub mod headers;
mod lifecycle;
pub mod lock;
mod receive;

use std::time::{Duration, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use cairn_store::model::{
    Account, ArchiveMode, NewTusUpload, NewUpload, OperationKind, TusConcat, TusState, TusUpload,
};
use cairn_store::random_name;
use cairn_store::{now_ms, tus_bytes, StoreError};
use cairn_unixfs::Profile;
use futures_util::StreamExt;

use crate::auth::{need, Caller, UploadAccess, Uploader};
use crate::error::ApiError;
use crate::origin::RequestOrigin;
use crate::rate_limit::Endpoint;
use crate::routes::upload::with_link_keyvalues;
use crate::state::AppState;
use cairn_service::tus::{complete, offset_of, settle, settle_at};
use cairn_store::model::KeyValues;
use headers::{Checksum, OFFSET_OCTET_STREAM};
use lifecycle::check_live;
use receive::receive;

const BASE_PATH: &str = "/api/upload/tus";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(BASE_PATH, post(create).options(options))
        .route(
            "/api/upload/link/{secret}/tus",
            post(create_through_link).options(options),
        )
        .route(
            "/api/upload/tus/{id}",
            post(method_override)
                .get(upload_status)
                .head(head_upload)
                .patch(patch)
                .delete(delete)
                .options(options),
        )
        // Upload sizes are the protocol's business (Tus-Max-Size, Upload-Length).
        .layer(DefaultBodyLimit::disable())
        .layer(middleware::from_fn(tus_resumable))
}

/// T1: every response carries `Tus-Resumable`; a request other than OPTIONS with another
/// version (or none) gets `412` with `Tus-Version` and is not processed. A GET is not TUS (it
/// reads an upload's state, from a page that speaks no TUS).
async fn tus_resumable(request: Request, next: Next) -> Response {
    let version = request
        .headers()
        .get("tus-resumable")
        .map(|v| v.to_str().unwrap_or("?").to_owned());
    let mut response = match version.as_deref() {
        _ if matches!(*request.method(), Method::OPTIONS | Method::GET) => next.run(request).await,
        Some(headers::TUS_VERSION) => next.run(request).await,
        other => ApiError::PreconditionFailed(format!(
            "Tus-Resumable {:?} is not supported; this server speaks TUS 1.0.0",
            other.unwrap_or("(missing)")
        ))
        .into_response(),
    };
    response.headers_mut().insert(
        "tus-resumable",
        HeaderValue::from_static(headers::TUS_VERSION),
    );
    response
}

/// T5: what this server supports.
async fn options(State(state): State<AppState>) -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert(
        "tus-version",
        HeaderValue::from_static(headers::TUS_VERSION),
    );
    headers.insert(
        "tus-extension",
        HeaderValue::from_static(headers::EXTENSIONS),
    );
    headers.insert(
        "tus-checksum-algorithm",
        HeaderValue::from_static(headers::CHECKSUM_ALGORITHMS),
    );
    headers.insert("tus-max-size", HeaderValue::from(state.config.tus_max_size));
    response
}

fn http_date(ms: i64) -> HeaderValue {
    let time = UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64);
    // An HTTP date is plain ASCII.
    HeaderValue::from_str(&httpdate::fmt_http_date(time)).unwrap_or(HeaderValue::from_static(""))
}

/// The upload's absolute URL, on the host the request was sent to.
fn location(state: &AppState, headers: &HeaderMap, id: &str) -> Result<HeaderValue, ApiError> {
    let origin = RequestOrigin::of(&state.config, headers)?;
    HeaderValue::from_str(&format!(
        "{}://{}{BASE_PATH}/{id}",
        origin.scheme, origin.host
    ))
    .map_err(|_| ApiError::BadRequest("the Host header is not a host name".into()))
}

/// Parsed `Upload-Concat`.
pub fn concat(value: Option<&str>) -> Result<TusConcat, ApiError> {
    match value {
        None => Ok(TusConcat::None),
        Some("partial") => Ok(TusConcat::Partial),
        Some(v) => match v.strip_prefix("final;") {
            Some(urls) => {
                let ids: Vec<String> = urls
                    .split(' ')
                    .filter(|u| !u.is_empty())
                    .map(|u| u.rsplit('/').next().unwrap_or_default().to_owned())
                    .collect();
                if ids.is_empty() || ids.iter().any(String::is_empty) {
                    return Err(ApiError::BadRequest(
                        "Upload-Concat: final; needs the URLs of the partial uploads".into(),
                    ));
                }
                Ok(TusConcat::Final(ids))
            }
            None => Err(ApiError::BadRequest(format!(
                "Upload-Concat must be \"partial\" or \"final;<urls>\", not {v:?}"
            ))),
        },
    }
}

/// What the metadata asks for, validated.
struct Intent {
    name: String,
    /// The file's own name (`filename` or `name`), which detection reads.
    file_name: Option<String>,
    mime_type: String,
    archive_mode: ArchiveMode,
    profile: Profile,
    keyvalues: KeyValues,
}

fn intent(
    state: &AppState,
    uploader: &Uploader,
    pairs: &[(String, Vec<u8>)],
) -> Result<Intent, ApiError> {
    let get = |keys: &[&str]| {
        pairs
            .iter()
            .find(|(k, _)| keys.contains(&k.as_str()))
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    };
    let archive_mode = match get(&["archive_mode"]) {
        Some(mode) => mode.parse().map_err(ApiError::BadRequest)?,
        None => (uploader.link())
            .and_then(|link| link.archive_mode)
            .unwrap_or_default(),
    };
    // `keyvalues`: the JSON object, as every metadata value, in base64.
    let asked = match get(&["keyvalues"]) {
        Some(json) => KeyValues::from_json(&json)
            .map_err(|e| ApiError::BadRequest(format!("the keyvalues metadata: {e}")))?,
        None => KeyValues::default(),
    };
    let profile = match get(&["cid_profile"]) {
        Some(name) => name
            .parse()
            .map_err(|e: cairn_unixfs::profile::UnknownProfile| {
                ApiError::BadRequest(e.to_string())
            })?,
        None => state.service.config.default_profile.clone(),
    };
    let file_name = get(&["filename", "name"]);
    Ok(Intent {
        keyvalues: with_link_keyvalues(uploader, asked)?,
        name: (uploader.link())
            .and_then(|link| link.name.clone())
            .or_else(|| file_name.clone())
            .unwrap_or_else(|| "upload".to_owned()),
        file_name,
        mime_type: get(&["filetype", "mimeType"])
            .unwrap_or_else(|| "application/octet-stream".to_owned()),
        archive_mode,
        profile,
    })
}

/// POST: create an upload (T7, T8, T10, T14).
async fn create(
    State(state): State<AppState>,
    caller: Caller<need::Upload>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    begin(state, caller.into(), headers, body).await
}

/// POST at an upload link's TUS endpoint: the same, with no other credential. Its PATCHes
/// need none either (see [`Access`]).
async fn create_through_link(
    State(state): State<AppState>,
    Path(secret): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let uploader = Uploader::through_link(&state, &secret).await?;
    if headers.contains_key("upload-concat") {
        return Err(ApiError::BadRequest(
            "an upload link takes whole uploads, not concatenated parts".into(),
        ));
    }
    begin(state, uploader, headers, body).await
}

async fn begin(
    state: AppState,
    uploader: Uploader,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let account = uploader.account();
    state.limiter.check(account.id, Endpoint::Upload).await?;
    uploader.check_uses()?;
    let length = headers::upload_length(&headers)?;
    let deferred = headers::text(&headers, "upload-defer-length")?;
    let concat = concat(headers::text(&headers, "upload-concat")?)?;
    match (&concat, length, deferred) {
        (TusConcat::Final(_), None, None) => {}
        (TusConcat::Final(_), _, _) => {
            return Err(ApiError::BadRequest(
                "a final upload takes its length from its parts: send no Upload-Length".into(),
            ))
        }
        (_, Some(_), Some(_)) => {
            return Err(ApiError::BadRequest(
                "send Upload-Length or Upload-Defer-Length: 1, not both".into(),
            ))
        }
        (_, None, None) => {
            return Err(ApiError::BadRequest(
                "Upload-Length (or Upload-Defer-Length: 1) is required".into(),
            ))
        }
        (_, None, Some(value)) if value != "1" => {
            return Err(ApiError::BadRequest("Upload-Defer-Length must be 1".into()))
        }
        _ => {}
    }
    let max = state.config.tus_max_size;
    if length.is_some_and(|l| l > max) {
        return Err(too_large(max));
    }
    if let Some(length) = length {
        uploader.check_size(length)?;
    } else if deferred.is_some() && uploader.max_bytes().is_some() {
        // So that an upload over the limit is refused before its bytes are sent.
        return Err(ApiError::BadRequest(
            "this key or link limits the size of uploads: send Upload-Length".into(),
        ));
    }
    let with_body = headers::text(&headers, "content-type")? == Some(OFFSET_OCTET_STREAM);
    if with_body {
        fits(length, 0, headers::number(&headers, "content-length")?)?;
    }
    let raw_metadata = headers::text(&headers, "upload-metadata")?
        .unwrap_or_default()
        .to_owned();
    let intent = intent(&state, &uploader, &headers::metadata(&raw_metadata)?)?;
    // What the bytes are is checked when they are all in (the worker, `detect`).
    uploader.check_type(None, Some(&intent.mime_type))?;
    let id = random_name();
    let mut length = length;
    if let TusConcat::Final(parts) = &concat {
        let total = concatenate(&state, account, &id, parts).await?;
        uploader.check_size(total)?;
        length = Some(total);
    } else {
        let bytes = state.service.tus_bytes.clone();
        let new_id = id.clone();
        tokio::task::spawn_blocking(move || bytes.create(&new_id))
            .await
            .map_err(ApiError::internal)?
            .map_err(ApiError::storage)?;
    }
    let upload = (concat != TusConcat::Partial).then(|| NewUpload {
        upload_id: id.clone(),
        account_id: account.id,
        kind: OperationKind::TusUpload,
        name: intent.name.clone(),
        size: length.unwrap_or(0),
        mime_type: intent.mime_type.clone(),
        archive_mode: Some(intent.archive_mode),
        profile: intent.profile.name.to_owned(),
        keyvalues: intent.keyvalues.clone(),
        key_id: uploader.key_id(),
        link_id: uploader.link_id(),
        file_name: intent.file_name.clone(),
        content: None,
    });
    let created = state
        .service
        .store
        .create_tus_upload(NewTusUpload {
            id: id.clone(),
            account_id: account.id,
            length,
            metadata: raw_metadata,
            concat: concat.clone(),
            expires_at_ms: now_ms() + state.config.tus_expiry.as_millis() as i64,
            link_id: uploader.link_id(),
            upload,
        })
        .await;
    if let Err(StoreError::Spent(_)) = created {
        // Its uses went to others meanwhile: the bytes made for it are no one's.
        let kind = OperationKind::TusUpload;
        state.service.release_upload_bytes(kind, &id).await;
    }
    let tus = created?;

    let mut response = StatusCode::CREATED.into_response();
    response
        .headers_mut()
        .insert(header::LOCATION, location(&state, &headers, &id)?);
    if let Some(operation_id) = tus.operation_id {
        response
            .headers_mut()
            .insert("cairn-operation-id", HeaderValue::from(operation_id));
    }
    // creation-with-upload (T10): the body is the first chunk.
    let mut offset = 0;
    if with_body && !matches!(concat, TusConcat::Final(_)) {
        let mut lock = state.tus_locks.acquire(&id).await?;
        let checksum = headers::text(&headers, "upload-checksum")?
            .map(Checksum::parse)
            .transpose()?;
        // A new upload is at 0: no other request could have written to it yet.
        let received = receive(&state, &tus, &mut lock, checksum, body, |_| Ok(())).await?;
        offset = received.offset;
        received.into_result()?;
        response
            .headers_mut()
            .insert("upload-offset", HeaderValue::from(offset));
    }
    if length.is_some_and(|l| l == offset) || matches!(concat, TusConcat::Final(_)) {
        complete(&state.service, &tus, length.unwrap_or(0)).await?;
    } else {
        response
            .headers_mut()
            .insert("upload-expires", http_date(tus.expires_at_ms));
    }
    Ok(response)
}

/// `413` before a byte is read when `Content-Length` says the body goes past the length: none
/// of it would be kept.
fn fits(length: Option<u64>, offset: u64, sent: Option<u64>) -> Result<(), ApiError> {
    match (length, sent) {
        (Some(length), Some(sent)) if offset.saturating_add(sent) > length => {
            Err(ApiError::PayloadTooLarge(format!(
                "the body's {sent} bytes at offset {offset} go beyond Upload-Length ({length}); \
                 nothing was kept"
            )))
        }
        _ => Ok(()),
    }
}

fn too_large(max: u64) -> ApiError {
    ApiError::PayloadTooLarge(format!(
        "the upload is larger than Tus-Max-Size ({max} bytes)"
    ))
}

/// A final upload: its bytes are the complete partial uploads, in order (T14).
async fn concatenate(
    state: &AppState,
    account: &Account,
    id: &str,
    parts: &[String],
) -> Result<u64, ApiError> {
    let mut total = 0u64;
    for part in parts {
        // Another account's upload is as unknown as one that never was (`docs/contract.md`,
        // "Authentication"), and unknown is `404`, as tusd answers it.
        let upload = state
            .service
            .store
            .tus_upload(part)
            .await?
            .filter(|u| u.account_id == account.id)
            .ok_or_else(|| ApiError::NotFound(format!("upload {part} not found")))?;
        if upload.concat != TusConcat::Partial {
            return Err(ApiError::BadRequest(format!(
                "{part} is not a partial upload (Upload-Concat: partial)"
            )));
        }
        if upload.state != TusState::Complete {
            return Err(ApiError::BadRequest(format!(
                "the partial upload {part} is not complete"
            )));
        }
        total += upload.length.unwrap_or(0);
    }
    if total > state.config.tus_max_size {
        return Err(too_large(state.config.tus_max_size));
    }
    let (bytes, id, parts) = (
        state.service.tus_bytes.clone(),
        id.to_owned(),
        parts.to_vec(),
    );
    tokio::task::spawn_blocking(move || tus_bytes::concatenate(&*bytes, &id, &parts))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::storage)
}

/// HEAD (T2, T3, T9).
async fn head_upload(
    State(state): State<AppState>,
    access: UploadAccess,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (account, record) = access.account_and_upload(&state, &id).await?;
    head_found(&state, &account, &id, record).await
}

async fn head_found(
    state: &AppState,
    account: &Account,
    id: &str,
    record: Option<TusUpload>,
) -> Result<Response, ApiError> {
    let upload = check_live(state, account, id, record).await?;
    // A stalled PATCH is asked to stop first, so the offset reported is settled.
    let _lock = state.tus_locks.acquire(id).await?;
    let offset = offset_of(&state.service, &upload).await?;
    let upload = settle_at(&state.service, upload, offset).await?;
    let mut response = StatusCode::OK.into_response();
    let headers = response.headers_mut();
    headers.insert("upload-offset", HeaderValue::from(offset));
    match upload.length {
        Some(length) => headers.insert("upload-length", HeaderValue::from(length)),
        None => headers.insert("upload-defer-length", HeaderValue::from_static("1")),
    };
    if !upload.metadata.is_empty() {
        // Echoed as received; it was parsed (so it is plain base64 and key text) on creation.
        if let Ok(value) = HeaderValue::from_str(&upload.metadata) {
            headers.insert("upload-metadata", value);
        }
    }
    match &upload.concat {
        TusConcat::Partial => {
            headers.insert("upload-concat", HeaderValue::from_static("partial"));
        }
        TusConcat::Final(parts) => {
            let urls: Vec<String> = parts.iter().map(|p| format!("{BASE_PATH}/{p}")).collect();
            if let Ok(value) = HeaderValue::from_str(&format!("final;{}", urls.join(" "))) {
                headers.insert("upload-concat", value);
            }
        }
        TusConcat::None => {}
    }
    if upload.state == TusState::Receiving {
        headers.insert("upload-expires", http_date(upload.expires_at_ms));
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // Whoever sent it learns what became of it, a page with no key too (`Upload-Cid`).
    if let Some(operation) = operation_of(state, account, &upload).await? {
        headers.insert("cairn-operation-id", HeaderValue::from(operation.id));
        headers.insert(
            "cairn-operation-status",
            HeaderValue::from_static(operation.status.as_str()),
        );
        if let Some(cid) = operation
            .cid
            .as_deref()
            .and_then(|c| HeaderValue::from_str(c).ok())
        {
            headers.insert("upload-cid", cid);
        }
    }
    Ok(response)
}

/// The operation of an upload that has one (a partial upload of a concatenation has none).
async fn operation_of(
    state: &AppState,
    account: &Account,
    upload: &TusUpload,
) -> Result<Option<cairn_store::model::Operation>, ApiError> {
    if upload.operation_id.is_none() {
        return Ok(None);
    }
    let by_upload = cairn_store::model::OperationRef::UploadId(upload.id.clone());
    Ok(state
        .service
        .store
        .operation(account.id, &by_upload)
        .await?)
}

/// What an upload's state is, as JSON: its offset and length, and its operation's status and
/// CID once known (`UploadState` in the OpenAPI document). The credentials of HEAD: a key, or,
/// for an upload made through a link, its URL alone.
async fn upload_status(
    State(state): State<AppState>,
    access: UploadAccess,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (account, record) = access.account_and_upload(&state, &id).await?;
    // Read beside a PATCH under way, not in its place: a page polling never pre-empts it.
    let upload = check_live(&state, &account, &id, record).await?;
    let offset = offset_of(&state.service, &upload).await?;
    let operation = operation_of(&state, &account, &upload).await?;
    let body = serde_json::json!({
        "id": upload.id,
        "offset": offset,
        "length": upload.length,
        "complete": upload.state == TusState::Complete,
        "operationId": operation.as_ref().map(|op| op.id),
        "status": operation.as_ref().map(|op| op.status.as_str()),
        "progressPercent": operation.as_ref().map(|op| op.progress_percent),
        "cid": operation.as_ref().and_then(|op| op.cid.clone()),
        "error": operation.as_ref().and_then(cairn_service::records::error_object),
    });
    let mut response = axum::Json(body).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// PATCH (T4, T9, T11, T12, F1, F3, F4).
async fn patch(
    State(state): State<AppState>,
    access: UploadAccess,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let (account, record) = access.account_and_upload(&state, &id).await?;
    if headers::text(&headers, "content-type")? != Some(OFFSET_OCTET_STREAM) {
        return Err(ApiError::UnsupportedMediaType(format!(
            "PATCH bodies must be sent as {OFFSET_OCTET_STREAM}"
        )));
    }
    let claimed = headers::number(&headers, "upload-offset")?
        .ok_or_else(|| ApiError::BadRequest("Upload-Offset is required".into()))?;
    let checksum = headers::text(&headers, "upload-checksum")?
        .map(Checksum::parse)
        .transpose()?;
    let mut upload = check_live(&state, &account, &id, record).await?;
    if matches!(upload.concat, TusConcat::Final(_)) {
        return Err(ApiError::Forbidden(
            "a final upload is made of its parts and takes no PATCH".into(),
        ));
    }
    if upload.state == TusState::Complete {
        return patch_complete(&state, &upload, claimed, body).await;
    }
    let mut lock = state.tus_locks.acquire(&id).await?;
    if let Some(length) = headers::number(&headers, "upload-length")? {
        match upload.length {
            None => {
                if length > state.config.tus_max_size {
                    return Err(too_large(state.config.tus_max_size));
                }
                state.service.store.set_tus_length(&id, length).await?;
                upload.length = Some(length);
            }
            Some(known) if known == length => {}
            Some(known) => {
                return Err(ApiError::Conflict(format!(
                    "the upload's length is {known} and cannot change"
                )))
            }
        }
    }
    let sent = headers::number(&headers, "content-length")?;
    let received = receive(&state, &upload, &mut lock, checksum, body, |offset| {
        if claimed != offset {
            return Err(ApiError::Conflict(format!(
                "Upload-Offset is {claimed} but the upload is at {offset}"
            )));
        }
        if upload.length.is_some_and(|l| l < offset) {
            return Err(ApiError::BadRequest(
                "Upload-Length is below the bytes already stored".into(),
            ));
        }
        fits(upload.length, offset, sent)
    })
    .await?;
    let new_offset = received.offset;
    if upload.length == Some(new_offset) {
        complete(&state.service, &upload, new_offset).await?;
    }
    received.into_result()?;
    let mut response = StatusCode::NO_CONTENT.into_response();
    response
        .headers_mut()
        .insert("upload-offset", HeaderValue::from(new_offset));
    if upload.length != Some(new_offset) {
        response
            .headers_mut()
            .insert("upload-expires", http_date(upload.expires_at_ms));
    }
    Ok(response)
}

/// A PATCH on a complete upload, answered from its record: its bytes may be processed and
/// gone already. A client that missed the last `204` learns the upload is complete, as it
/// would from HEAD.
async fn patch_complete(
    state: &AppState,
    upload: &TusUpload,
    claimed: u64,
    body: Body,
) -> Result<Response, ApiError> {
    let length = upload.length.unwrap_or(0);
    if claimed != length {
        return Err(ApiError::Conflict(format!(
            "Upload-Offset is {claimed} but the upload is complete at {length}"
        )));
    }
    let mut stream = body.into_data_stream();
    loop {
        match tokio::time::timeout(state.config.idle_timeout, stream.next()).await {
            Ok(None) => break,
            Ok(Some(Ok(chunk))) if chunk.is_empty() => {}
            Ok(Some(Ok(_))) => {
                return Err(ApiError::PayloadTooLarge(
                    "the upload is complete: the body goes beyond Upload-Length".into(),
                ))
            }
            Ok(Some(Err(_))) | Err(_) => {
                return Err(ApiError::BadRequest(
                    "the body was cut off or stalled".into(),
                ))
            }
        }
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    response
        .headers_mut()
        .insert("upload-offset", HeaderValue::from(length));
    Ok(response)
}

/// DELETE: "finish" on a complete upload, termination on an incomplete one (T13, `docs/contract.md`).
async fn delete(
    State(state): State<AppState>,
    access: UploadAccess,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (account, record) = access.account_and_upload(&state, &id).await?;
    delete_found(&state, &account, &id, record).await
}

async fn delete_found(
    state: &AppState,
    account: &Account,
    id: &str,
    record: Option<TusUpload>,
) -> Result<Response, ApiError> {
    let upload = settle(
        &state.service,
        check_live(state, account, id, record).await?,
    )
    .await?;
    if upload.state == TusState::Complete {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let _lock = state.tus_locks.acquire(id).await?;
    let remove = || {
        let (bytes, id) = (state.service.tus_bytes.clone(), id.to_owned());
        async move {
            tokio::task::spawn_blocking(move || bytes.remove(&id))
                .await
                .map_err(ApiError::internal)?
                .map_err(ApiError::storage)
        }
    };
    // The record first, so a crash never leaves a live upload without its bytes; but when
    // the disk is too full to record anything, the bytes its owner gave up are what frees it.
    match state
        .service
        .store
        .end_tus_upload(id, TusState::Terminated)
        .await
    {
        Err(e) => match ApiError::from(e) {
            ApiError::InsufficientStorage(_) => {
                remove().await?;
                state
                    .service
                    .store
                    .end_tus_upload(id, TusState::Terminated)
                    .await?;
            }
            other => return Err(other),
        },
        Ok(()) => remove().await?,
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// T6: `X-HTTP-Method-Override` on POST, for clients that can only send GET and POST.
async fn method_override(
    state: State<AppState>,
    access: UploadAccess,
    id: Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let method = headers::text(&headers, "x-http-method-override");
    if matches!(method, Ok(Some("PATCH"))) {
        return patch(state, access, id, headers, body).await;
    }
    // The caller first, as on every other route: a bad header from a stranger is a 401.
    let (account, record) = access.account_and_upload(&state, &id).await?;
    match method? {
        Some("DELETE") => delete_found(&state, &account, &id, record).await,
        Some("HEAD") => head_found(&state, &account, &id, record).await,
        // A request that lacks the header it needs is malformed (`400`); one that names a
        // method the upload does not take asks for what is not allowed (`405`).
        None => Err(ApiError::BadRequest(
            "POST on an upload needs X-HTTP-Method-Override: PATCH, DELETE or HEAD".into(),
        )),
        Some(other) => Err(ApiError::MethodNotAllowed(format!(
            "POST on an upload needs X-HTTP-Method-Override: PATCH, DELETE or HEAD (got {other:?})"
        ))),
    }
}
