//! `POST /api/upload`: a multipart upload, streamed into a pack while it is hashed.
//!
//! The body is never buffered whole: chunks go through a bounded channel to a blocking thread
//! that runs the importer and writes new blocks into a pack file. The pack is made durable,
//! then the metadata is committed, then the response is sent (CONTRACT "Small upload").

use std::io;
use std::sync::Arc;

use axum::extract::multipart::{Field, MultipartError, MultipartRejection};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Multipart, Query, State};
use axum::http::{header, HeaderMap};
use axum::Json;
use bytes::Bytes;
use cairn_store::model::{Account, NewUpload, OperationKind};
use cairn_store::packs::{self, SealedPack};
use cairn_store::MetadataStore;
use cairn_unixfs::{FileImporter, ImportedFile, Profile};
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::auth::Caller;
use crate::detect::{self, ContentKind, HEAD_BYTES};
use crate::error::ApiError;
use crate::routes::operations::UploadResult;
use crate::state::AppState;

/// Largest `name` form field accepted.
const MAX_NAME_BYTES: usize = 1024;

#[derive(Deserialize)]
pub struct UploadParams {
    archive_mode: Option<String>,
    name: Option<String>,
    cid_profile: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ArchiveMode {
    Extract,
    Preserve,
}

impl ArchiveMode {
    /// `convert` is what existing clients send for extract (CONTRACT compatibility note).
    fn parse(value: Option<&str>) -> Result<Self, ApiError> {
        match value {
            None | Some("extract") | Some("convert") => Ok(Self::Extract),
            Some("preserve") => Ok(Self::Preserve),
            Some(other) => Err(ApiError::BadRequest(format!(
                "archive_mode must be extract or preserve, not {other:?}"
            ))),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Extract => "extract",
            Self::Preserve => "preserve",
        }
    }
}

pub async fn upload(
    State(state): State<AppState>,
    Caller(account): Caller,
    params: Result<Query<UploadParams>, QueryRejection>,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Json<UploadResult>, ApiError> {
    let Query(params) = params.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let mode = ArchiveMode::parse(params.archive_mode.as_deref())?;
    let profile = match &params.cid_profile {
        Some(name) => name
            .parse::<Profile>()
            .map_err(|e| ApiError::BadRequest(e.to_string()))?,
        None => state.config.default_profile.clone(),
    };
    reject_oversized_body(&headers, &account, state.config.multipart_overhead)?;
    let mut multipart = multipart.map_err(|e| ApiError::BadRequest(e.body_text()))?;

    let mut name = params.name;
    let mut received: Option<Received> = None;
    while let Some(field) = multipart.next_field().await.map_err(bad_multipart)? {
        match field.name() {
            Some("file") if received.is_none() => {
                received = Some(receive_file(&state, &account, &profile, mode, field).await?);
            }
            Some("name") if name.is_none() => name = Some(read_name(field).await?),
            // Any other part is ignored (CONTRACT); multer skips its bytes.
            _ => {}
        }
    }
    let received = received
        .ok_or_else(|| ApiError::BadRequest("the multipart field `file` is missing".into()))?;
    let upload = NewUpload {
        upload_id: packs::random_name(),
        account_id: account.id,
        kind: OperationKind::Upload,
        name: name
            .or(received.file_name)
            .unwrap_or_else(|| "file".to_owned()),
        size: received.file.size,
        mime_type: received.mime_type,
        archive_mode: received.archive.then(|| mode.as_str().to_owned()),
        profile: profile.name.to_owned(),
    };
    let cid = received.file.cid.to_string();
    let operation = state
        .store
        .commit_completed_upload(upload, received.pack, &cid)
        .await?;
    tracing::info!(upload = %operation.upload_id, %cid, size = operation.size, "upload stored");
    Ok(Json(UploadResult::from(operation)))
}

/// Refuse from `Content-Length` before reading a byte when the body cannot fit.
fn reject_oversized_body(
    headers: &HeaderMap,
    account: &Account,
    overhead: u64,
) -> Result<(), ApiError> {
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match length {
        Some(length) if length > account.upload_limit.saturating_add(overhead) => {
            Err(too_large(account.upload_limit))
        }
        _ => Ok(()),
    }
}

fn too_large(limit: u64) -> ApiError {
    ApiError::PayloadTooLarge(format!(
        "the upload exceeds this account's limit of {limit} bytes for POST; \
         send it with TUS resumable upload at /api/upload/tus"
    ))
}

fn bad_multipart(e: MultipartError) -> ApiError {
    ApiError::BadRequest(format!("malformed multipart body: {}", e.body_text()))
}

async fn read_name(mut field: Field<'_>) -> Result<String, ApiError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = field.chunk().await.map_err(bad_multipart)? {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > MAX_NAME_BYTES {
            return Err(ApiError::BadRequest(format!(
                "the name field is longer than {MAX_NAME_BYTES} bytes"
            )));
        }
    }
    String::from_utf8(bytes).map_err(|_| ApiError::BadRequest("the name field is not UTF-8".into()))
}

/// A file part, stored.
struct Received {
    file: ImportedFile,
    pack: Option<SealedPack>,
    file_name: Option<String>,
    mime_type: String,
    archive: bool,
}

/// What the streaming side tells the importing thread.
enum Piece {
    Bytes(Bytes),
    /// The part ended normally. Without it (the request was dropped), nothing is kept.
    End,
}

async fn receive_file(
    state: &AppState,
    account: &Account,
    profile: &Profile,
    mode: ArchiveMode,
    mut field: Field<'_>,
) -> Result<Received, ApiError> {
    let file_name = field.file_name().map(str::to_owned);
    let limit = account.upload_limit;
    let mut received = 0u64;
    let mut next = |chunk: Option<Bytes>| -> Result<Option<Bytes>, ApiError> {
        if let Some(chunk) = &chunk {
            received += chunk.len() as u64;
            if received > limit {
                return Err(too_large(limit));
            }
        }
        Ok(chunk)
    };

    // Enough of the start to recognise the format.
    let mut head = Vec::new();
    let mut early = Vec::new();
    while head.len() < HEAD_BYTES {
        match next(field.chunk().await.map_err(bad_multipart)?)? {
            Some(chunk) => {
                head.extend_from_slice(&chunk[..chunk.len().min(HEAD_BYTES - head.len())]);
                early.push(chunk);
            }
            None => break,
        }
    }
    let kind = detect::detect(&head);
    match (kind, mode) {
        (ContentKind::Archive(format), ArchiveMode::Extract) => {
            return Err(ApiError::BadRequest(format!(
                "this server cannot extract archives yet ({format:?} detected); \
                 send archive_mode=preserve to store the archive as one file"
            )))
        }
        (ContentKind::Car, _) => {
            return Err(ApiError::BadRequest(
                "this server cannot import CAR files yet".into(),
            ))
        }
        _ => {}
    }

    let (tx, rx) = mpsc::channel::<Piece>(8);
    let import = tokio::task::spawn_blocking({
        let store = state.store.clone();
        let packs = state.packs.clone();
        let profile = profile.clone();
        move || import_file(rx, &profile, &packs, store)
    });
    let send = |piece| {
        let tx = tx.clone();
        async move {
            tx.send(piece)
                .await
                .map_err(|_| ApiError::internal("the importer stopped early"))
        }
    };
    for chunk in early {
        send(Piece::Bytes(chunk)).await?;
    }
    while let Some(chunk) = next(field.chunk().await.map_err(bad_multipart)?)? {
        send(Piece::Bytes(chunk)).await?;
    }
    send(Piece::End).await?;
    drop(tx);
    let (file, pack) = import
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    Ok(Received {
        file,
        pack,
        mime_type: detect::mime_type(&head, file_name.as_deref()),
        file_name,
        archive: matches!(kind, ContentKind::Archive(_)),
    })
}

/// Runs on a blocking thread: import pieces into a new pack until `End`.
fn import_file(
    mut rx: mpsc::Receiver<Piece>,
    profile: &Profile,
    packs: &packs::Packs,
    store: Arc<dyn MetadataStore>,
) -> io::Result<(ImportedFile, Option<SealedPack>)> {
    let runtime = tokio::runtime::Handle::current();
    let known = Box::new(move |multihash: &[u8]| {
        runtime
            .block_on(store.has_block(multihash))
            .map_err(io::Error::other)
    });
    let mut pack = packs.writer(known)?;
    let mut importer = FileImporter::new(profile, &mut pack);
    loop {
        match rx.blocking_recv() {
            Some(Piece::Bytes(bytes)) => importer.push(&bytes)?,
            Some(Piece::End) => break,
            // Dropping the pack writer deletes its temporary file.
            None => return Err(io::Error::other("upload abandoned")),
        }
    }
    let file = importer.finish()?;
    Ok((file, pack.seal()?))
}
