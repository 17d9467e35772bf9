//! An upload's life after creation: looked up (and lazily expired), settled when its bytes are
//! complete but its record is not, completed (its operation queued), expired, and the
//! background sweep of expired uploads.

use cairn_store::model::{Account, TusConcat, TusState, TusUpload};
use cairn_store::now_ms;

use crate::error::ApiError;
use crate::state::AppState;

/// The upload, if it is the caller's and still alive: unknown is `404`, terminated or expired
/// is `410` (an expiry that the sweep has not reached yet is applied here). An upload whose
/// bytes are complete is not settled here unless it expired: HEAD and DELETE settle it, and a
/// PATCH at its length completes it as every last PATCH does. The record is read beside the
/// caller's credentials (see `UploadAccess`).
pub(super) async fn check_live(
    state: &AppState,
    account: &Account,
    id: &str,
    record: Option<TusUpload>,
) -> Result<TusUpload, ApiError> {
    // Another account's upload is as unknown as one that never was.
    let upload = record
        .filter(|upload| upload.account_id == account.id)
        .ok_or_else(|| ApiError::NotFound(format!("upload {id} not found")))?;
    match upload.state {
        TusState::Terminated => Err(ApiError::Gone(format!("upload {id} was terminated"))),
        TusState::Expired => Err(ApiError::Gone(format!("upload {id} expired"))),
        TusState::Receiving if upload.expires_at_ms < now_ms() => {
            // Complete bytes are never expired: they are processed instead.
            let upload = settle(state, upload).await?;
            if upload.state == TusState::Complete {
                return Ok(upload);
            }
            expire(state, &upload).await?;
            Err(ApiError::Gone(format!("upload {id} expired")))
        }
        _ => Ok(upload),
    }
}

/// Complete an upload whose bytes already reach its length but whose record says otherwise:
/// the last byte was made durable, then the process died (or the record update failed) before
/// the upload was marked complete. The client saw the offset reach the length and will send
/// nothing more, so nothing else would ever queue it.
pub(super) async fn settle(state: &AppState, upload: TusUpload) -> Result<TusUpload, ApiError> {
    if upload.state == TusState::Receiving && upload.length.is_some() {
        let offset = offset_of(state, &upload).await?;
        return settle_at(state, upload, offset).await;
    }
    Ok(upload)
}

/// `settle`, the offset already read.
pub(super) async fn settle_at(
    state: &AppState,
    mut upload: TusUpload,
    offset: u64,
) -> Result<TusUpload, ApiError> {
    if upload.state == TusState::Receiving && upload.length == Some(offset) {
        complete(state, &upload, offset).await?;
        upload.state = TusState::Complete;
    }
    Ok(upload)
}

/// End an incomplete upload that outlived its expiry, and reclaim its bytes.
pub async fn expire(state: &AppState, upload: &TusUpload) -> Result<(), ApiError> {
    state
        .service
        .store
        .end_tus_upload(&upload.id, TusState::Expired)
        .await?;
    let (bytes, id) = (state.service.tus_bytes.clone(), upload.id.clone());
    tokio::task::spawn_blocking(move || bytes.remove(&id))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::storage)
}

/// The durable offset: the length of the bytes (a complete upload may have released them).
pub(super) async fn offset_of(state: &AppState, upload: &TusUpload) -> Result<u64, ApiError> {
    if upload.state == TusState::Complete {
        return Ok(upload.length.unwrap_or(0));
    }
    let (bytes, id) = (state.service.tus_bytes.clone(), upload.id.clone());
    tokio::task::spawn_blocking(move || bytes.offset(&id))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::storage)
}

/// All bytes are stored: the operation becomes claimable.
pub(super) async fn complete(
    state: &AppState,
    upload: &TusUpload,
    size: u64,
) -> Result<(), ApiError> {
    if upload.concat == TusConcat::Partial {
        // A partial upload is only ever processed as part of a final one.
        state
            .service
            .store
            .complete_tus_upload(&upload.id, size)
            .await?;
        return Ok(());
    }
    state
        .service
        .store
        .complete_tus_upload(&upload.id, size)
        .await?;
    state.service.queue.notify_one();
    tracing::info!(upload = %upload.id, size, "TUS upload complete; queued");
    Ok(())
}

/// Reclaim the bytes of every incomplete upload past its expiry (T11's background sweep).
pub async fn sweep_expired(state: &AppState) -> Result<usize, ApiError> {
    let mut swept = 0;
    for upload in state.service.store.expired_tus_uploads(now_ms()).await? {
        // Complete bytes are never expired: they are processed instead.
        let upload = settle(state, upload).await?;
        if upload.state == TusState::Receiving {
            expire(state, &upload).await?;
            swept += 1;
        }
    }
    Ok(swept)
}
