//! `POST /api/upload` (with a key) and `POST /api/upload/link/{secret}` (through an upload
//! link): a multipart upload, streamed into a pack while it is hashed.
//!
//! The body is never buffered whole: chunks go through a bounded channel to a blocking thread
//! that runs the importer and writes new blocks into a pack file. The pack is made durable,
//! then the metadata is committed, then the response is sent (`docs/contract.md` "Small upload").

use std::collections::VecDeque;
use std::io::{self, Read};

use axum::extract::multipart::{Field, MultipartError, MultipartRejection};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Multipart, Path, Query, State};
use axum::http::{header, HeaderMap};
use axum::Json;
use bytes::{Bytes, BytesMut};
use cairn_store::model::{ArchiveMode, KeyValues, NewUpload, OperationKind, Packed, StoredDag};
use cairn_store::staging::Staging;
use cairn_store::StoreError;
use cairn_unixfs::Profile;
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::auth::{need, Caller, Uploader};
use crate::error::ApiError;
use crate::rate_limit::Endpoint;
use crate::state::AppState;
use cairn_service::detect::{
    ArchiveFormat, ContentKind, Detected, Detection, FirstLook, Refused, HEAD_BYTES,
};
use cairn_service::ingest::{self, Import, ImportError, Incoming};
use cairn_service::metrics::UploadKind;
use cairn_service::records::UploadResult;

/// Chunks per piece handed to the importing thread. Pieces of whole chunks let the importer
/// hash straight from them (no copy), several chunks at once across threads.
const PIECE_CHUNKS: usize = 4;

/// Largest `name` form field accepted.
const MAX_NAME_BYTES: usize = 1024;
/// Largest `keyvalues` form field accepted (16 pairs at their longest, as JSON, fit).
const MAX_KEYVALUES_BYTES: usize = 8 * 1024;

#[derive(Deserialize)]
pub struct UploadParams {
    archive_mode: Option<String>,
    name: Option<String>,
    cid_profile: Option<String>,
}

pub async fn upload(
    State(state): State<AppState>,
    caller: Caller<need::Upload>,
    params: Result<Query<UploadParams>, QueryRejection>,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Json<UploadResult>, ApiError> {
    receive_upload(state, caller.into(), params, headers, multipart).await
}

/// The same, sent through an upload link: no other credential.
pub async fn upload_through_link(
    State(state): State<AppState>,
    Path(secret): Path<String>,
    params: Result<Query<UploadParams>, QueryRejection>,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Json<UploadResult>, ApiError> {
    let uploader = Uploader::through_link(&state, &secret).await?;
    receive_upload(state, uploader, params, headers, multipart).await
}

async fn receive_upload(
    state: AppState,
    uploader: Uploader,
    params: Result<Query<UploadParams>, QueryRejection>,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Json<UploadResult>, ApiError> {
    let account = uploader.account();
    state.limiter.check(account.id, Endpoint::Upload).await?;
    uploader.check_uses()?;
    let started = std::time::Instant::now();
    let Query(params) = params.map_err(ApiError::from)?;
    let mode = match params.archive_mode.as_deref() {
        Some(mode) => mode.parse().map_err(ApiError::BadRequest)?,
        None => (uploader.link())
            .and_then(|link| link.archive_mode)
            .unwrap_or_default(),
    };
    // Asking for extraction outright promises an archive; the default only applies to archives.
    let extract_asked = params.archive_mode.is_some() && mode == ArchiveMode::Extract;
    let profile = match &params.cid_profile {
        Some(name) => name
            .parse::<Profile>()
            .map_err(|e| ApiError::BadRequest(e.to_string()))?,
        None => state.service.config.default_profile.clone(),
    };
    let limit = PostLimit::of(&uploader);
    reject_oversized_body(&headers, limit, state.config.multipart_overhead)?;
    let mut multipart = multipart.map_err(ApiError::from)?;

    let intent = Intent {
        upload_id: cairn_store::random_name(),
        profile,
        mode,
        extract_asked,
    };
    if let Some(name) = &params.name {
        check_name(name)?;
    }
    // The form's `name` part is read (and held to the same limits) even when the query names
    // the upload, whose name wins.
    let mut form = Form {
        name: None,
        keyvalues: None,
    };
    let mut received: Option<Received> = None;
    while let Some(field) = multipart.next_field().await.map_err(bad_multipart)? {
        if let Some(file) = file_part(field, &mut form, received.is_some()).await? {
            received = Some(receive_file(&state, &uploader, limit, &intent, file).await?);
        }
    }
    let received = received
        .ok_or_else(|| ApiError::BadRequest("the multipart field `file` is missing".into()))?;
    let keyvalues = with_link_keyvalues(&uploader, form.keyvalues.unwrap_or_default())?;
    let name = (uploader.link())
        .and_then(|link| link.name.clone())
        .or(params.name)
        .or(form.name);
    let found = &received.detected;
    let kind = match found.kind {
        ContentKind::Car => UploadKind::Car,
        _ if received.begins_like_archive => UploadKind::PreservedArchive,
        _ => UploadKind::File,
    };
    let upload = NewUpload {
        upload_id: intent.upload_id,
        account_id: account.id,
        kind: match found.kind {
            ContentKind::Car => OperationKind::CarImport,
            _ => OperationKind::Upload,
        },
        name: name
            .or_else(|| received.file_name.clone())
            .unwrap_or_else(|| "file".to_owned()),
        size: received.size,
        mime_type: found.media_type.clone(),
        archive_mode: (matches!(found.kind, ContentKind::Archive(_))
            || received.begins_like_archive)
            .then_some(intent.mode),
        profile: intent.profile.name.to_owned(),
        keyvalues,
        key_id: uploader.key_id(),
        link_id: uploader.link_id(),
        content: Some(found.content()),
        file_name: received.file_name,
    };
    let operation = match received.stored {
        Stored::Content { dag, packed } => {
            let operation = state
                .service
                .store
                .commit_completed_upload(upload, packed, &dag)
                .await?;
            let cid = dag.cid;
            state
                .service
                .metrics
                .upload_stored(kind, operation.size, started.elapsed());
            tracing::info!(upload = %operation.upload_id, %cid, size = operation.size, "upload stored");
            operation
        }
        // The archive's bytes are durable in staging; a worker takes it from the queue.
        Stored::Staged => {
            let upload_id = upload.upload_id.clone();
            let recorded = state.service.store.record_upload(upload, None).await;
            if let Err(StoreError::Spent(_)) = recorded {
                let kind = OperationKind::Upload;
                state.service.release_upload_bytes(kind, &upload_id).await;
            }
            let operation = recorded?;
            state.service.queue.notify_one();
            tracing::info!(upload = %operation.upload_id, operation = operation.id, size = operation.size, "archive queued");
            operation
        }
    };
    Ok(Json(UploadResult::from(operation)))
}

/// The most a POST's file may hold: the account's limit for POST, or less where the key or
/// link sets less.
#[derive(Clone, Copy)]
pub struct PostLimit {
    bytes: u64,
    /// Whose limit it is: the account's can be passed with TUS, a key's or link's cannot.
    set_by: Option<&'static str>,
    /// Where TUS takes what POST cannot: a link's own endpoint, or the keys' one.
    tus_endpoint: &'static str,
}

const TUS_ENDPOINT: &str = "/api/upload/tus";
const LINK_TUS_ENDPOINT: &str = "this link's own TUS endpoint (its URL followed by /tus)";

impl PostLimit {
    pub fn of(uploader: &Uploader) -> Self {
        let account = uploader.account().upload_limit;
        let tus_endpoint = match uploader.link() {
            Some(_) => LINK_TUS_ENDPOINT,
            None => TUS_ENDPOINT,
        };
        match uploader.max_bytes() {
            Some(max) if max < account => Self {
                bytes: max,
                set_by: Some(uploader.kind()),
                tus_endpoint,
            },
            _ => Self {
                tus_endpoint,
                ..Self::account(account)
            },
        }
    }

    pub fn account(bytes: u64) -> Self {
        Self {
            bytes,
            set_by: None,
            tus_endpoint: TUS_ENDPOINT,
        }
    }

    fn too_large(self) -> ApiError {
        let limit = self.bytes;
        ApiError::PayloadTooLarge(match self.set_by {
            None => format!(
                "the upload exceeds this account's limit of {limit} bytes for POST; \
                 send it with TUS resumable upload at {}",
                self.tus_endpoint
            ),
            Some(whose) => format!("the upload is larger than this {whose} allows ({limit} bytes)"),
        })
    }
}

/// Refuse from `Content-Length` before reading a byte when the body cannot fit.
fn reject_oversized_body(
    headers: &HeaderMap,
    limit: PostLimit,
    overhead: u64,
) -> Result<(), ApiError> {
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match length {
        Some(length) if length > limit.bytes.saturating_add(overhead) => Err(limit.too_large()),
        _ => Ok(()),
    }
}

/// The key-values a request asked for, with its link's over them: the link's creator
/// decides what its uploads are tagged with.
pub fn with_link_keyvalues(uploader: &Uploader, asked: KeyValues) -> Result<KeyValues, ApiError> {
    let Some(link) = uploader.link() else {
        return Ok(asked);
    };
    let changes = (link.keyvalues.iter())
        .map(|(k, v)| (k.to_owned(), Some(v.to_owned())))
        .collect();
    asked
        .merged(changes)
        .map_err(|e| ApiError::BadRequest(format!("keyvalues: {e}")))
}

fn bad_multipart(e: MultipartError) -> ApiError {
    ApiError::BadRequest(format!("malformed multipart body: {}", e.body_text()))
}

/// The form's fields other than the file.
#[derive(Default)]
pub struct Form {
    pub name: Option<String>,
    pub keyvalues: Option<KeyValues>,
}

/// A part of the form: the first `file` part is given back to be received; the `name` part is
/// read (a name in the query wins over it), and the `keyvalues` part (a JSON object of
/// strings), each at most once (a form that names its upload twice is refused: which would it
/// mean?); any other part is ignored (`docs/contract.md`; multer skips its bytes).
pub async fn file_part<'m>(
    field: Field<'m>,
    form: &mut Form,
    file_received: bool,
) -> Result<Option<Field<'m>>, ApiError> {
    let twice = |part: &str| {
        ApiError::BadRequest(format!(
            "the form has more than one `{part}` part; an upload has one {part}"
        ))
    };
    match field.name() {
        Some("file") if !file_received => return Ok(Some(field)),
        Some("name") if form.name.is_some() => return Err(twice("name")),
        Some("name") => form.name = Some(read_text(field, "name", MAX_NAME_BYTES).await?),
        Some("keyvalues") if form.keyvalues.is_some() => return Err(twice("keyvalues")),
        Some("keyvalues") => {
            let text = read_text(field, "keyvalues", MAX_KEYVALUES_BYTES).await?;
            let keyvalues = KeyValues::from_json(&text)
                .map_err(|e| ApiError::BadRequest(format!("the keyvalues field: {e}")))?;
            form.keyvalues = Some(keyvalues);
        }
        _ => {}
    }
    Ok(None)
}

async fn read_text(mut field: Field<'_>, what: &str, max: usize) -> Result<String, ApiError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = field.chunk().await.map_err(bad_multipart)? {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > max {
            return Err(ApiError::BadRequest(format!(
                "the {what} field is longer than {max} bytes"
            )));
        }
    }
    String::from_utf8(bytes)
        .map_err(|_| ApiError::BadRequest(format!("the {what} field is not UTF-8")))
}

/// What the request asked for, parsed at the edge.
struct Intent {
    upload_id: String,
    profile: Profile,
    mode: ArchiveMode,
    /// `archive_mode=extract` was sent explicitly: the file must be an archive.
    extract_asked: bool,
}

/// A file part, stored.
struct Received {
    stored: Stored,
    size: u64,
    file_name: Option<String>,
    detected: Detected,
    /// Its bytes begin like an archive (kept whole, by `archive_mode=preserve` or as a file).
    begins_like_archive: bool,
}

/// Where a received part went.
enum Stored {
    /// Imported: its root and the pack of its new blocks.
    Content { dag: StoredDag, packed: Packed },
    /// An archive to extract, kept whole in staging for a worker.
    Staged,
}

/// What the streaming side tells the importing thread.
enum Piece {
    Bytes(Bytes),
    /// The part ended normally. Without it (the request was dropped), nothing is kept.
    End,
}

impl From<Refused> for ApiError {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::InvalidArchive(message) => ApiError::InvalidArchive(message),
            Refused::NotAnArchive(message) => ApiError::BadRequest(message),
        }
    }
}

/// An upload's name, as any request may set it.
pub fn check_name(name: &str) -> Result<(), ApiError> {
    if name.len() > MAX_NAME_BYTES {
        return Err(ApiError::BadRequest(format!(
            "the name is longer than {MAX_NAME_BYTES} bytes"
        )));
    }
    Ok(())
}

/// The file part, received as what it is (`detect`): a file or a CAR streams into a pack; what
/// begins like an archive is staged whole, then settled from the staged bytes: an archive stays
/// staged for a worker, anything else is imported from there. The key's or link's media types
/// are held against what the bytes are.
async fn receive_file(
    state: &AppState,
    uploader: &Uploader,
    limit: PostLimit,
    intent: &Intent,
    field: Field<'_>,
) -> Result<Received, ApiError> {
    let declared = field.content_type().map(str::to_owned);
    uploader.check_type(None, declared.as_deref())?;
    let file_name = field.file_name().map(str::to_owned);
    let detection = Detection::new(file_name.as_deref(), intent.mode, intent.extract_asked);
    let mut part = FilePart::new(field, limit, PIECE_CHUNKS * intent.profile.chunk_size);
    let head = part.head().await?;
    let look = detection.first_look(&head)?;
    if let FirstLook::Is(kind) = look {
        uploader.check_type(Some(&detection.detected(kind, &head).media_type), None)?;
    }

    // Four pieces in flight: network reads overlap hashing without buffering the body.
    let (tx, rx) = mpsc::channel::<Piece>(4);
    let import = tokio::task::spawn_blocking({
        let (store, packs) = (state.service.store.clone(), state.service.packs.clone());
        let staging = state.service.staging.clone();
        let (profile, upload_id) = (intent.profile.clone(), intent.upload_id.clone());
        let limits = state.service.config.archive_limits.clone();
        move || {
            let input = PieceReader::new(rx);
            match look {
                FirstLook::Is(kind) => {
                    let how = Import {
                        profile: &profile,
                        limits: &limits,
                        store,
                        packs: &packs,
                    };
                    store_part(kind, input, how)
                }
                FirstLook::MayBeArchive(_) => stage_part(input, &staging, &upload_id),
            }
        }
    });
    let send = |piece| {
        let tx = tx.clone();
        async move {
            tx.send(piece)
                .await
                .map_err(|_| ApiError::internal("the importer stopped early"))
        }
    };
    // If the importer stops early (a corrupt CAR), its own error is the one to report.
    let streamed = async {
        while let Some(piece) = part.next_piece().await? {
            send(Piece::Bytes(piece)).await?;
        }
        send(Piece::End).await
    }
    .await;
    drop(tx);
    if let Err(e @ (ApiError::BadRequest(_) | ApiError::PayloadTooLarge(_))) = streamed {
        return Err(e);
    }
    let stored = match import.await.map_err(ApiError::internal)? {
        Ok(stored) => stored,
        Err(failure) => return Err(failure.into()),
    };
    streamed?;
    let (stored, detected) = match look {
        FirstLook::Is(kind) => (stored, detection.detected(kind, &head)),
        FirstLook::MayBeArchive(format) => {
            settle_staged(state, uploader, intent, &detection, format, &head).await?
        }
    };
    Ok(Received {
        stored,
        size: part.received(),
        file_name,
        detected,
        begins_like_archive: ArchiveFormat::detect(&head).is_some(),
    })
}

/// A staged part that began like an archive: left staged for a worker if it is one (and the
/// key or link takes it), else imported from the staging as what it is, and unstaged.
async fn settle_staged(
    state: &AppState,
    uploader: &Uploader,
    intent: &Intent,
    detection: &Detection,
    format: ArchiveFormat,
    head: &[u8],
) -> Result<(Stored, Detected), ApiError> {
    let staging = state.service.staging.clone();
    let upload_id = intent.upload_id.clone();
    let unstage = || {
        let (staging, upload_id) = (staging.clone(), upload_id.clone());
        async move {
            let removed = tokio::task::spawn_blocking(move || staging.remove(&upload_id)).await;
            if let Err(e) = removed.map_err(io::Error::other).and_then(|r| r) {
                tracing::warn!(error = %e, "unstaging an upload failed; the sweep removes it");
            }
        }
    };
    let decided = {
        let (staging, upload_id, detection, head) = (
            staging.clone(),
            upload_id.clone(),
            detection.clone(),
            head.to_vec(),
        );
        tokio::task::spawn_blocking(move || {
            detection.decide(format, &head, staging.open_upload(&upload_id)?)
        })
        .await
        .map_err(ApiError::internal)?
    };
    let detected = match decided {
        Ok(Ok(detected)) => detected,
        Ok(Err(refused)) => {
            unstage().await;
            return Err(refused.into());
        }
        Err(e) => {
            unstage().await;
            return Err(ApiError::storage(e));
        }
    };
    if let Err(refused) = uploader.check_type(Some(&detected.media_type), None) {
        unstage().await;
        return Err(refused);
    }
    if let ContentKind::Archive(_) = detected.kind {
        return Ok((Stored::Staged, detected));
    }
    let kind = detected.kind;
    let imported = {
        let (store, packs) = (state.service.store.clone(), state.service.packs.clone());
        let (staging, upload_id, profile) =
            (staging.clone(), upload_id.clone(), intent.profile.clone());
        let limits = state.service.config.archive_limits.clone();
        tokio::task::spawn_blocking(move || {
            let mut staged = ingest::staged(staging.open_upload(&upload_id)?);
            let how = Import {
                profile: &profile,
                limits: &limits,
                store,
                packs: &packs,
            };
            store_content(kind, &mut staged, how)
        })
        .await
        .map_err(ApiError::internal)?
    };
    unstage().await;
    Ok((imported?, detected))
}

impl From<ImportError> for ApiError {
    fn from(failure: ImportError) -> Self {
        match failure {
            ImportError::Io(e) => ApiError::storage(e),
            invalid => ApiError::InvalidArchive(invalid.to_string()),
        }
    }
}

/// A `file` part as it arrives: every byte counted against the account's upload limit, the
/// head kept to recognise the format, then all of it in pieces of whole import chunks.
pub struct FilePart<'m> {
    field: Field<'m>,
    limit: PostLimit,
    received: u64,
    ended: bool,
    /// Chunks read for the head, not handed on yet.
    early: VecDeque<Bytes>,
    /// What is left of the chunk being cut into pieces.
    pending: Bytes,
    piece: BytesMut,
    piece_bytes: usize,
}

impl<'m> FilePart<'m> {
    /// A part of at most `limit` bytes, handed on in pieces of `piece_bytes`.
    pub fn new(field: Field<'m>, limit: PostLimit, piece_bytes: usize) -> Self {
        Self {
            field,
            limit,
            received: 0,
            ended: false,
            early: VecDeque::new(),
            pending: Bytes::new(),
            piece: BytesMut::new(),
            piece_bytes,
        }
    }

    /// The bytes of the part received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// The next chunk as it came from the network, counted against the limit.
    async fn chunk(&mut self) -> Result<Option<Bytes>, ApiError> {
        if self.ended {
            return Ok(None);
        }
        let Some(chunk) = self.field.chunk().await.map_err(bad_multipart)? else {
            self.ended = true;
            return Ok(None);
        };
        self.received += chunk.len() as u64;
        if self.received > self.limit.bytes {
            return Err(self.limit.too_large());
        }
        Ok(Some(chunk))
    }

    /// Enough of the start to recognise the format: the first [`HEAD_BYTES`] (all of a shorter
    /// part). Read before the first piece; its chunks are handed on with the pieces.
    pub async fn head(&mut self) -> Result<Vec<u8>, ApiError> {
        let mut head = Vec::new();
        while head.len() < HEAD_BYTES {
            let Some(chunk) = self.chunk().await? else {
                break;
            };
            head.extend_from_slice(&chunk[..chunk.len().min(HEAD_BYTES - head.len())]);
            self.early.push_back(chunk);
        }
        Ok(head)
    }

    /// The next `piece_bytes` of the part (the rest, at its end), or `None` after its end. The
    /// body arrives in small network-sized chunks; gathering them into pieces of whole import
    /// chunks is the one copy it makes on its way to the hasher.
    pub async fn next_piece(&mut self) -> Result<Option<Bytes>, ApiError> {
        loop {
            if self.piece.len() == self.piece_bytes {
                return Ok(Some(std::mem::take(&mut self.piece).freeze()));
            }
            if self.pending.is_empty() {
                let chunk = match self.early.pop_front() {
                    Some(chunk) => Some(chunk),
                    None => self.chunk().await?,
                };
                match chunk {
                    Some(chunk) => self.pending = chunk,
                    None if self.piece.is_empty() => return Ok(None),
                    None => return Ok(Some(std::mem::take(&mut self.piece).freeze())),
                }
            }
            if self.piece.capacity() == 0 {
                self.piece.reserve(self.piece_bytes);
            }
            let take = (self.piece_bytes - self.piece.len()).min(self.pending.len());
            self.piece.extend_from_slice(&self.pending.split_to(take));
        }
    }
}

/// Runs on a blocking thread: import the part as `kind` into a new pack until `End`; a file's
/// pieces go to the hasher as they arrive.
fn store_part(
    kind: ContentKind,
    mut input: PieceReader,
    how: Import,
) -> Result<Stored, ImportError> {
    let stored = store_content(kind, &mut input, how)?;
    // A CAR may end before its last multipart byte; the part must still end cleanly.
    io::copy(&mut input, &mut io::sink())?;
    Ok(stored)
}

/// Runs on a blocking thread: import `input` as `kind` (a CAR or a file) into a new pack.
fn store_content(
    kind: ContentKind,
    input: &mut dyn Incoming,
    how: Import,
) -> Result<Stored, ImportError> {
    let (dag, packed) = ingest::import(kind, input, how, &mut |_| Ok(()))?.seal()?;
    Ok(Stored::Content { dag, packed })
}

/// Runs on a blocking thread: keep the whole part in staging, durable before it is queued.
fn stage_part(
    mut input: PieceReader,
    staging: &Staging,
    upload_id: &str,
) -> Result<Stored, ImportError> {
    let mut staged = staging.create(upload_id)?;
    io::copy(&mut input, &mut staged)?;
    staged.commit()?;
    Ok(Stored::Staged)
}

/// The multipart part as a `Read` on the blocking side.
struct PieceReader {
    rx: mpsc::Receiver<Piece>,
    current: Bytes,
    ended: bool,
}

impl PieceReader {
    fn new(rx: mpsc::Receiver<Piece>) -> Self {
        Self {
            rx,
            current: Bytes::new(),
            ended: false,
        }
    }
}

impl PieceReader {
    /// The rest of the current piece or the next one, without copying; `None` at the end.
    fn next_piece(&mut self) -> io::Result<Option<Bytes>> {
        while self.current.is_empty() {
            if self.ended {
                return Ok(None);
            }
            match self.rx.blocking_recv() {
                Some(Piece::Bytes(bytes)) => self.current = bytes,
                Some(Piece::End) => self.ended = true,
                None => return Err(io::Error::other("upload abandoned before its end")),
            }
        }
        Ok(Some(std::mem::take(&mut self.current)))
    }
}

impl Incoming for PieceReader {
    fn each_run(
        &mut self,
        _buffer: usize,
        take: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        while let Some(piece) = self.next_piece()? {
            take(&piece)?;
        }
        Ok(())
    }
}

impl Read for PieceReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(mut piece) = self.next_piece()? else {
            return Ok(0);
        };
        let n = buf.len().min(piece.len());
        buf[..n].copy_from_slice(&piece.split_to(n));
        self.current = piece;
        Ok(n)
    }
}
