//! Operation workers: claim queued operations (archives staged by POST, completed TUS
//! uploads, pins by CID, which `pin.rs` fetches) and finish them.
//!
//! Each worker claims from the durable queue in the metadata store with a lease, extracts on a
//! blocking thread into a new pack, reports monotone progress (which renews the lease), and
//! completes or fails the operation. A worker stops at safe points: between operations, or by
//! abandoning an extraction mid-way (its temporary pack is deleted). An abandoned or crashed
//! claim is taken again once its lease runs out, from the staged bytes, and reaches the same CID.

use std::io::{self, Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_archive::Limits;
use cairn_store::model::{ErrorCode, Operation, OperationError, OperationKind, StoredAs};
use cairn_store::StoreError;
use cairn_unixfs::Profile;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::detect::{ArchiveFormat, ContentKind, Detected, Detection, Refused, HEAD_BYTES};
use crate::ingest::{self, Import, ImportError};
use crate::outcome::Outcome;
use crate::Service;

/// How often a worker reports progress (and so renews its lease) while extracting; well
/// under any sensible lease.
const REPORT_EVERY: Duration = Duration::from_millis(500);
/// How long an idle worker waits before looking at the queue again without being woken.
const IDLE_POLL: Duration = Duration::from_secs(2);

/// Start `count` workers; they finish when `stop` becomes true.
pub fn spawn(service: Service, count: usize, stop: watch::Receiver<bool>) -> Vec<JoinHandle<()>> {
    let node = cairn_store::random_name();
    (0..count)
        .map(|i| {
            let worker = format!("{}-{i}", &node[..8]);
            tokio::spawn(run(service.clone(), worker, stop.clone()))
        })
        .collect()
}

async fn run(service: Service, worker: String, mut stop: watch::Receiver<bool>) {
    while !*stop.borrow() {
        match service
            .store
            .claim_next(&worker, service.config.worker_lease)
            .await
        {
            Ok(Some(op)) => process(&service, &worker, op, &stop).await,
            Ok(None) => {
                tokio::select! {
                    _ = service.queue.notified() => {}
                    _ = tokio::time::sleep(IDLE_POLL) => {}
                    // A dropped sender means stop too (and must not make this loop spin).
                    changed = stop.changed() => if changed.is_err() { break },
                }
            }
            Err(e) => {
                tracing::error!(%worker, error = %e, "claiming an operation failed");
                tokio::time::sleep(IDLE_POLL).await;
            }
        }
    }
}

async fn process(service: &Service, worker: &str, op: Operation, stop: &watch::Receiver<bool>) {
    let started = Instant::now();
    tracing::info!(operation = op.id, upload = %op.upload_id, %worker, "processing");
    let remaining_quota = match service.store.account_by_id(op.account_id).await {
        Ok(account) => account.and_then(|a| a.remaining_quota()),
        Err(e) => {
            tracing::error!(operation = op.id, error = %e, "reading the account failed");
            return;
        }
    };
    let mut limits = service.config.archive_limits.clone();
    let quota_binds = remaining_quota.is_some_and(|r| r < limits.max_total_bytes);
    if let Some(remaining) = remaining_quota {
        limits.max_total_bytes = limits.max_total_bytes.min(remaining);
    }
    // The profile the upload was accepted with, whatever this node's default is. One this
    // node does not know (a newer Cairn's) fails the upload rather than give it another CID.
    let profile: Result<Profile, _> = op.profile.parse();
    let abandon = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (abandon, mut stop) = (abandon.clone(), stop.clone());
        tokio::spawn(async move {
            let _ = stop.wait_for(|s| *s).await;
            abandon.store(true, Ordering::Relaxed);
        })
    };
    let outcome = match (op.kind, profile) {
        (OperationKind::Pin, _) => {
            crate::pin::fetch(service, worker, &op, remaining_quota, &abandon).await
        }
        (_, Err(unknown)) => Outcome::Refused(OperationError::new(
            ErrorCode::Internal,
            format!("{unknown}: this node cannot give the upload the CID it asked for"),
        )),
        (_, Ok(profile)) => {
            let (service, worker, op, abandon) = (
                service.clone(),
                worker.to_owned(),
                op.clone(),
                abandon.clone(),
            );
            let job = move || {
                process_bytes(
                    &service,
                    &worker,
                    &op,
                    &profile,
                    &limits,
                    quota_binds,
                    &abandon,
                )
            };
            tokio::task::spawn_blocking(job)
                .await
                .unwrap_or_else(|e| Outcome::Failed(io::Error::other(e)))
        }
    };
    watcher.abort();

    let finished = match outcome {
        Outcome::Done(dag, packed, content) => {
            match service
                .store
                .complete_operation(op.id, worker, packed, &dag, content.as_ref())
                .await
            {
                Err(e @ StoreError::BlocksCollected(_)) => {
                    tracing::info!(operation = op.id, error = %e, "queued again");
                    if let Err(e) = service.store.release_operation(op.id, worker).await {
                        tracing::warn!(operation = op.id, error = %e, "releasing the claim failed; it runs out instead");
                    }
                    service.queue.notify_one();
                    return;
                }
                Err(StoreError::QuotaExceeded { needed, remaining }) => {
                    let message = format!(
                        "the extracted archive needs {needed} bytes; the account has {remaining} left"
                    );
                    service
                        .store
                        .fail_operation(
                            op.id,
                            worker,
                            OperationError::new(ErrorCode::QuotaExceeded, message),
                        )
                        .await
                }
                other => other,
            }
        }
        Outcome::Refused(failure) => service.store.fail_operation(op.id, worker, failure).await,
        Outcome::Invalid(message) => {
            service
                .store
                .fail_operation(
                    op.id,
                    worker,
                    OperationError::new(ErrorCode::InvalidArchive, message),
                )
                .await
        }
        Outcome::OverQuota(message) => {
            service
                .store
                .fail_operation(
                    op.id,
                    worker,
                    OperationError::new(ErrorCode::QuotaExceeded, message),
                )
                .await
        }
        // A full disk is not the upload's fault: the claim runs out and a later one retries,
        // once space is freed.
        Outcome::Failed(e) if cairn_store::is_storage_full(&e) => {
            tracing::warn!(operation = op.id, error = %e, "storage is full; will retry");
            return;
        }
        // Nor is a store that is down or restarting: the same, once it is back.
        Outcome::Failed(e) if cairn_store::is_unavailable(&e) => {
            tracing::warn!(operation = op.id, error = %e, "a store is unavailable; will retry");
            return;
        }
        Outcome::Failed(e) => {
            tracing::error!(operation = op.id, error = %e, "processing failed");
            let message = "the server failed to process the upload".to_owned();
            service
                .store
                .fail_operation(
                    op.id,
                    worker,
                    OperationError::new(ErrorCode::Internal, message),
                )
                .await
        }
        Outcome::Abandoned => {
            tracing::info!(operation = op.id, "left for a later claim");
            return;
        }
    };
    match finished {
        Ok(done) => {
            tracing::info!(
                operation = op.id,
                status = %done.status,
                cid = done.cid.as_deref().unwrap_or(""),
                seconds = started.elapsed().as_secs_f64(),
                "operation finished"
            );
            service
                .metrics
                .operation_finished(done.status.as_str(), started.elapsed());
            // The upload's bytes are released once processing is done (`docs/contract.md`).
            service.release_upload_bytes(op.kind, &op.upload_id).await;
        }
        // Lost the claim meanwhile: whoever holds it now finishes the operation.
        Err(e) => tracing::warn!(operation = op.id, error = %e, "could not record the result"),
    }
}

/// Runs on a blocking thread: import the bytes of `op` into a new pack, as what detection finds
/// them to be (`detect`): an archive is extracted, a CAR is imported as-is and verified,
/// anything else becomes a UnixFS file. Exactly what a POST does, for TUS uploads and for
/// archives staged by a POST (which a POST has already found to be one).
fn process_bytes(
    service: &Service,
    worker: &str,
    op: &Operation,
    profile: &Profile,
    limits: &Limits,
    quota_binds: bool,
    abandon: &AtomicBool,
) -> Outcome {
    let runtime = tokio::runtime::Handle::current();
    let opened = match op.kind {
        OperationKind::TusUpload => service.tus_bytes.open_read(&op.upload_id),
        _ => service.staging.open_upload(&op.upload_id),
    };
    let mut file = match opened {
        Ok(file) => file,
        Err(e) => return Outcome::Failed(e),
    };
    let total = match file
        .seek(SeekFrom::End(0))
        .and_then(|len| file.rewind().map(|()| len))
    {
        Ok(len) => len.max(1),
        Err(e) => return Outcome::Failed(e),
    };
    let mut input = ingest::staged(file);
    let head = match io::BufRead::fill_buf(&mut input) {
        Ok(head) => head[..head.len().min(HEAD_BYTES)].to_vec(),
        Err(e) => return Outcome::Failed(e),
    };
    let detected = match what_it_is(op, &head, &mut input).and_then(|found| {
        input.rewind()?;
        Ok(found)
    }) {
        Ok(Ok(detected)) => detected,
        Ok(Err(Refused::InvalidArchive(message) | Refused::NotAnArchive(message))) => {
            return Outcome::Invalid(message)
        }
        Err(e) => return Outcome::Failed(e),
    };
    if let Some(refusal) = link_refuses(service, &runtime, op, &detected.media_type) {
        return Outcome::Refused(refusal);
    }
    // The stage a stream shows (`progress` events), the message's first word.
    let stage = match detected.kind {
        ContentKind::Archive(_) => "extracting",
        _ => "importing",
    };
    let lost = AtomicBool::new(false);
    let report = |stage: &str, consumed: u64| -> io::Result<()> {
        let percent = consumed as f64 * 100.0 / total.max(1) as f64;
        let message = format!("{stage}: {consumed} of {total} bytes read");
        let held = runtime
            .block_on(service.store.report_progress(
                op.id,
                worker,
                percent,
                &message,
                service.config.worker_lease,
            ))
            .map_err(io::Error::other)?;
        if !held {
            lost.store(true, Ordering::Relaxed);
            return Err(io::Error::other("claim lost"));
        }
        Ok(())
    };
    // Work done within REPORT_EVERY is never reported (most of it is small: a write saved).
    let started = Instant::now();
    let mut last_report = started;
    let mut progress = |consumed: u64| -> io::Result<()> {
        if abandon.load(Ordering::Relaxed) {
            return Err(io::Error::other("worker stopping"));
        }
        if last_report.elapsed() >= REPORT_EVERY {
            last_report = Instant::now();
            report(stage, consumed)?;
        }
        Ok(())
    };
    let how = Import {
        profile,
        limits,
        store: service.store.clone(),
        packs: &service.packs,
    };
    let imported = ingest::import(detected.kind, &mut input, how, &mut progress);
    if abandon.load(Ordering::Relaxed) || lost.load(Ordering::Relaxed) {
        return Outcome::Abandoned;
    }
    // Everything read: what is left is sealing the pack and committing it, which a long
    // piece of work says (a stream shows it as `storing`).
    if imported.is_ok() && started.elapsed() >= REPORT_EVERY && report("storing", total).is_err() {
        return Outcome::Abandoned;
    }
    match imported {
        Ok(imported) => match imported.seal() {
            Ok((dag, sealed)) => Outcome::Done(dag, sealed, Some(detected.content())),
            Err(e) => Outcome::Failed(e),
        },
        Err(ImportError::TooLarge { entry, limit }) if quota_binds => Outcome::OverQuota(format!(
            "extracting the archive (at entry {entry:?}) would exceed the account's stored-bytes \
             quota: {limit} bytes are left"
        )),
        Err(e @ (ImportError::Invalid(_) | ImportError::TooLarge { .. })) => {
            Outcome::Invalid(e.to_string())
        }
        Err(ImportError::Io(e)) => Outcome::Failed(e),
    }
}

/// What the upload's bytes are. A POST found an archive to stage already, and recorded its
/// format; a TUS upload is looked at now, as a POST would be (with the file name it was sent
/// with, and no `archive_mode` sent outright: TUS always records one).
fn what_it_is(
    op: &Operation,
    head: &[u8],
    upload: &mut (impl Read + Seek),
) -> io::Result<Result<Detected, Refused>> {
    let mode = op.archive_mode.unwrap_or_default();
    let detection = Detection::new(op.file_name.as_deref(), mode, false);
    let staged = (op.stored_as == Some(StoredAs::Archive))
        .then(|| {
            op.archive_format
                .as_deref()
                .and_then(ArchiveFormat::from_archive_name)
        })
        .flatten();
    match staged {
        Some(format) => Ok(Ok(detection.detected(ContentKind::Archive(format), head))),
        None => detection.detect(head, upload),
    }
}

/// Why the link an upload came through does not take it, if it does not: its `mimeTypes` are
/// held against the type its bytes bear out, not the one its uploader declared.
fn link_refuses(
    service: &Service,
    runtime: &tokio::runtime::Handle,
    op: &Operation,
    media_type: &str,
) -> Option<OperationError> {
    let link_id = op.link_id.as_deref()?;
    // A link gone since the upload began no longer limits it: its uploads stand.
    let link = runtime
        .block_on(service.store.link(link_id))
        .ok()
        .flatten()?;
    (!link.accepts_type(media_type)).then(|| {
        let takes = link.mime_types.join(", ");
        OperationError::new(
            ErrorCode::UnsupportedMediaType,
            format!("this link takes {takes} uploads, and the bytes are {media_type}"),
        )
    })
}
