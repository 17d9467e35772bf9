//! Appending a request body to an upload: the bytes go to a blocking writer through a bounded
//! channel, with pre-emption by a newer request, an idle timeout, and the length and checksum
//! rules.

use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use cairn_store::model::TusUpload;
use futures_util::StreamExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinError;

use super::headers::Checksum;
use super::lock::Lock;
use crate::error::ApiError;
use crate::state::AppState;

/// How a body ended.
pub(super) struct Received {
    /// The durable offset afterwards.
    pub(super) offset: u64,
    beyond_length: bool,
    checksum_failed: bool,
    preempted: bool,
    /// The server is stopping.
    stopping: bool,
}

impl Received {
    /// The body's fault first: past the length, then a checksum that does not match.
    pub(super) fn into_result(self) -> Result<(), ApiError> {
        if self.beyond_length {
            return Err(ApiError::PayloadTooLarge(format!(
                "the body goes beyond Upload-Length; none of it was kept: the upload is still \
                 at offset {}",
                self.offset
            )));
        }
        if self.checksum_failed {
            return Err(ApiError::ChecksumMismatch(
                "the chunk does not match Upload-Checksum; it was discarded".into(),
            ));
        }
        if self.stopping {
            return Err(ApiError::Unavailable(
                "the server is stopping; the bytes received were kept: \
                 send HEAD for the offset and resume"
                    .into(),
            ));
        }
        if self.preempted {
            return Err(ApiError::Locked(
                "a newer request on this upload took over; the bytes received were kept".into(),
            ));
        }
        Ok(())
    }
}

/// Append a request body to the upload. Bytes are kept when the body ends, is cut off (F1),
/// goes idle (F4), is pre-empted (F3) or the server stops, unless it carried a checksum, which
/// makes the chunk all-or-nothing. A body that goes beyond `Upload-Length` keeps nothing: the
/// client is told it failed, so nothing of it may complete the upload. The offset returned is
/// durable: the `204` may follow.
///
/// `accept` sees the upload's offset before any byte is taken, and refuses the body with its
/// error: the writer reads the offset as it opens the upload's bytes, so a PATCH waits for
/// one hand-off to a blocking thread rather than two.
pub(super) async fn receive(
    state: &AppState,
    upload: &TusUpload,
    lock: &mut Lock,
    mut checksum: Option<Checksum>,
    body: Body,
    accept: impl FnOnce(u64) -> Result<(), ApiError>,
) -> Result<Received, ApiError> {
    enum Write {
        Bytes(Bytes),
        Finish {
            keep: bool,
        },
        /// The lease was lost: another node may be writing now, so write nothing more.
        Abandon,
    }
    // Two body chunks (hyper's, up to ~400 KiB each) may wait for the writer. With eight, the
    // writer was still ~3 MiB behind when a body ended, and the `204` waited 0.7-0.9 ms for
    // it while the client sent nothing: per 8 MiB PATCH, 0.2-0.3 ms with two (tus8 probes,
    // BENCHMARKS.md). The pipeline still overlaps reading the socket and writing the file.
    let (tx, mut rx) = mpsc::channel::<Write>(2);
    let (opened, start) = oneshot::channel();
    let writer = tokio::task::spawn_blocking({
        let (bytes, id, atomic) = (
            state.service.tus_bytes.clone(),
            upload.id.clone(),
            checksum.is_some(),
        );
        move || -> std::io::Result<Option<u64>> {
            let mut appender = bytes.appender(&id, atomic)?;
            let _ = opened.send(appender.start());
            loop {
                match rx.blocking_recv() {
                    Some(Write::Bytes(chunk)) => appender.append(&chunk)?,
                    Some(Write::Finish { keep: true }) => return appender.keep().map(Some),
                    Some(Write::Finish { keep: false }) => return appender.discard().map(Some),
                    Some(Write::Abandon) => return Ok(None),
                    // The request was dropped mid-body (the network reset the connection and the
                    // server dropped the handler): keep what arrived (F1), unless the chunk is
                    // checksummed, which makes it all-or-nothing.
                    None if atomic => return appender.discard().map(Some),
                    None => return appender.keep().map(Some),
                }
            }
        }
    });
    let taken_over = || {
        ApiError::Locked(
            "this node lost the upload's lease and another may have taken it over; \
             send HEAD for the offset"
                .into(),
        )
    };
    let written = |finished: Result<std::io::Result<Option<u64>>, JoinError>| {
        finished
            .map_err(ApiError::internal)?
            .map_err(|e| match e.kind() {
                // The bytes' store refused a write that another writer's commit had overtaken.
                std::io::ErrorKind::ResourceBusy => taken_over(),
                _ => ApiError::storage(e),
            })?
            .ok_or_else(taken_over)
    };
    let Ok(start) = start.await else {
        // The writer could not open the upload's bytes: its error says why.
        return Err(written(writer.await).err().unwrap_or_else(|| {
            ApiError::internal("the upload's writer ended before it opened the upload")
        }));
    };
    if let Err(refused) = accept(start) {
        let _ = tx.send(Write::Abandon).await;
        drop(tx);
        // Nothing was written; the writer lets go of the file before the lock is released.
        let _ = writer.await;
        return Err(refused);
    }
    let mut remaining = upload.length.map(|length| length.saturating_sub(start));
    let (mut beyond_length, mut cut, mut preempted) = (false, false, false);
    let mut stop = state.service.stop.subscribe();
    let mut stopping = false;
    let mut stream = body.into_data_stream();
    loop {
        // Once pre-empted or stopping, take only what has already arrived (it is the
        // client's, F1), then let go: a stalled PATCH has nothing ready and stops at once (F3).
        let next = if preempted || stopping {
            tokio::time::timeout(Duration::ZERO, stream.next()).await
        } else {
            tokio::select! {
                _ = lock.preempted() => {
                    preempted = true;
                    continue;
                }
                _ = stop.wait_for(|set| *set) => {
                    stopping = true;
                    continue;
                }
                next = tokio::time::timeout(state.config.idle_timeout, stream.next()) => next,
            }
        };
        let chunk = match next {
            Ok(Some(Ok(chunk))) => chunk,
            Ok(None) => break,
            Err(_) if preempted || stopping => break,
            // Cut connection or idle past the timeout: keep what arrived.
            Ok(Some(Err(_))) | Err(_) => {
                cut = true;
                break;
            }
        };
        if let Some(left) = remaining {
            if chunk.len() as u64 > left {
                beyond_length = true;
                break;
            }
            remaining = Some(left - chunk.len() as u64);
        }
        if let Some(sum) = checksum.as_mut() {
            sum.update(&chunk);
        }
        if tx.send(Write::Bytes(chunk)).await.is_err() {
            break;
        }
    }
    let checksum_failed = match checksum {
        Some(sum) => cut || preempted || stopping || beyond_length || !sum.matches(),
        None => false,
    };
    let finish = if lock.lost() {
        Write::Abandon
    } else {
        Write::Finish {
            keep: !checksum_failed && !beyond_length,
        }
    };
    let _ = tx.send(finish).await;
    drop(tx);
    let offset = written(writer.await)?;
    Ok(Received {
        offset,
        beyond_length,
        checksum_failed,
        preempted,
        stopping,
    })
}
