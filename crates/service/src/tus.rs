//! A TUS upload's life after its bytes: its durable offset, settled when its bytes are complete
//! but its record is not, completed (its operation queued for a worker), expired, and the
//! background sweep of expired uploads. The protocol itself is the HTTP crate's; this is what
//! outlives its requests.

use cairn_store::model::{TusConcat, TusState, TusUpload};
use cairn_store::{now_ms, StoreError};

use crate::Service;

/// Run `work` on the upload's bytes on a blocking thread.
async fn on_bytes<T: Send + 'static>(
    service: &Service,
    work: impl FnOnce(&dyn cairn_store::tus_bytes::TusBytes) -> std::io::Result<T> + Send + 'static,
) -> Result<T, StoreError> {
    let bytes = service.tus_bytes.clone();
    Ok(tokio::task::spawn_blocking(move || work(&*bytes))
        .await
        .map_err(std::io::Error::other)??)
}

/// The durable offset: the length of the bytes (a complete upload may have released them).
pub async fn offset_of(service: &Service, upload: &TusUpload) -> Result<u64, StoreError> {
    if upload.state == TusState::Complete {
        return Ok(upload.length.unwrap_or(0));
    }
    let id = upload.id.clone();
    on_bytes(service, move |bytes| bytes.offset(&id)).await
}

/// Complete an upload whose bytes already reach its length but whose record says otherwise:
/// the last byte was made durable, then the process died (or the record update failed) before
/// the upload was marked complete. The client saw the offset reach the length and will send
/// nothing more, so nothing else would ever queue it.
pub async fn settle(service: &Service, upload: TusUpload) -> Result<TusUpload, StoreError> {
    if upload.state == TusState::Receiving && upload.length.is_some() {
        let offset = offset_of(service, &upload).await?;
        return settle_at(service, upload, offset).await;
    }
    Ok(upload)
}

/// [`settle`], the offset already read.
pub async fn settle_at(
    service: &Service,
    mut upload: TusUpload,
    offset: u64,
) -> Result<TusUpload, StoreError> {
    if upload.state == TusState::Receiving && upload.length == Some(offset) {
        complete(service, &upload, offset).await?;
        upload.state = TusState::Complete;
    }
    Ok(upload)
}

/// All bytes are stored: the operation becomes claimable (a partial upload of a
/// concatenation has none: it is only ever processed as part of a final one).
pub async fn complete(service: &Service, upload: &TusUpload, size: u64) -> Result<(), StoreError> {
    service.store.complete_tus_upload(&upload.id, size).await?;
    if upload.concat != TusConcat::Partial {
        service.queue.notify_one();
        tracing::info!(upload = %upload.id, size, "TUS upload complete; queued");
    }
    Ok(())
}

/// End an incomplete upload that outlived its expiry, and reclaim its bytes.
pub async fn expire(service: &Service, upload: &TusUpload) -> Result<(), StoreError> {
    (service.store)
        .end_tus_upload(&upload.id, TusState::Expired)
        .await?;
    let id = upload.id.clone();
    on_bytes(service, move |bytes| bytes.remove(&id)).await
}

/// Reclaim the bytes of every incomplete upload past its expiry (TUS T11's background sweep);
/// how many were.
pub async fn sweep_expired(service: &Service) -> Result<usize, StoreError> {
    let mut swept = 0;
    for upload in service.store.expired_tus_uploads(now_ms()).await? {
        // Complete bytes are never expired: they are processed instead.
        let upload = settle(service, upload).await?;
        if upload.state == TusState::Receiving {
            expire(service, &upload).await?;
            swept += 1;
        }
    }
    Ok(swept)
}

/// Sweep expired uploads once a minute until `stop`.
pub async fn keep_sweeping_expired(service: Service, stop: tokio::sync::watch::Receiver<bool>) {
    loop {
        match sweep_expired(&service).await {
            Ok(0) => {}
            Ok(swept) => tracing::info!(swept, "expired TUS uploads reclaimed"),
            Err(e) => tracing::warn!(error = %e, "sweeping expired TUS uploads failed"),
        }
        if crate::sleep_unless_stopped(&stop, std::time::Duration::from_secs(60)).await {
            return;
        }
    }
}
