//! Uploads committed together on SQLite's one writer.
//!
//! A small upload's commit is a handful of statements, and each commit of its own also begins,
//! ends and appends the pages it changed (the same few index pages every time) to the log,
//! while every other writer waits: under 200 clients uploads queued for the writer, one
//! transaction each (issue 52, BENCHMARKS.md). So uploads that are ready to commit wait in one
//! list, and one task commits what is waiting in one transaction, each upload inside a
//! savepoint of its own: an upload whose commit fails (its quota, its key's uses, blocks
//! collected under it) is rolled back to its savepoint and fails alone. Each upload is answered
//! once the shared commit is on stable storage (`group_commit.rs`): nothing is acknowledged
//! before it is durable, as before.
//!
//! The committing task, not the requests, holds the transaction: a request that goes away
//! while its batch commits cannot roll back the others'.

use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::backend::Backend;
use super::commit;
use super::write_queue::Line;
use super::writer::{WriteTx, Writer};
use crate::model::{NewUpload, Operation, Packed, StoredDag};
use crate::StoreError;

/// The most uploads one transaction commits: it holds the writer for about a third of a
/// millisecond per upload, and the operations queue's steps wait behind it.
const MOST_PER_COMMIT: usize = 64;

/// Uploads waiting to be committed, and whether a task is committing them.
pub(super) struct UploadBatches<B: Backend> {
    writer: Writer<B>,
    waiting: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    uploads: Vec<Ready>,
    committing: bool,
}

/// An upload whose pack is sealed, waiting for its metadata to be committed.
struct Ready {
    upload: NewUpload,
    packed: Packed,
    dag: StoredDag,
    answer: oneshot::Sender<Result<Operation, StoreError>>,
}

impl<B: Backend> UploadBatches<B> {
    pub(super) fn new(writer: Writer<B>) -> Self {
        Self {
            writer,
            waiting: Mutex::default(),
        }
    }

    /// What [`Uploads::commit_completed_upload`](crate::metadata::Uploads) commits, in the next
    /// batch; returns once that batch is durable.
    pub(super) async fn commit(
        self: &Arc<Self>,
        upload: NewUpload,
        packed: Packed,
        dag: &StoredDag,
    ) -> Result<Operation, StoreError> {
        let (answer, answered) = oneshot::channel();
        let start = {
            let mut waiting = self.waiting.lock().expect("uploads waiting to commit");
            waiting.uploads.push(Ready {
                upload,
                packed,
                dag: dag.clone(),
                answer,
            });
            !std::mem::replace(&mut waiting.committing, true)
        };
        if start {
            tokio::spawn(self.clone().commit_while_waiting());
        }
        answered.await.unwrap_or_else(|_| {
            Err(StoreError::Io(std::io::Error::other(
                "the task committing uploads stopped before this one was committed",
            )))
        })
    }

    /// Commits batches until none is waiting.
    async fn commit_while_waiting(self: Arc<Self>) {
        // A panic below leaves nothing waiting forever: those waiting are answered (their
        // answers dropped) and the next upload starts a task again.
        let _reset = ResetOnUnwind(&self.waiting);
        loop {
            // The turn first: what arrives while waiting for it goes in this batch.
            let held = self.writer.hold(Line::Requests).await;
            let batch = {
                let mut waiting = self.waiting.lock().expect("uploads waiting to commit");
                if waiting.uploads.is_empty() {
                    waiting.committing = false;
                    return;
                }
                let take = waiting.uploads.len().min(MOST_PER_COMMIT);
                waiting.uploads.drain(..take).collect::<Vec<_>>()
            };
            let outcomes = match held {
                Ok(held) => commit_batch(held, &batch).await,
                Err(e) => Err(StoreError::from(e)),
            };
            match outcomes {
                Ok(outcomes) => {
                    for (ready, outcome) in batch.into_iter().zip(outcomes) {
                        let _ = ready.answer.send(outcome);
                    }
                }
                Err(e) => {
                    for ready in batch {
                        let _ = ready.answer.send(Err(each_one(&e)));
                    }
                }
            }
        }
    }
}

/// Each upload of `batch` in its savepoint, then one commit; each upload's own outcome, or
/// the error that failed them all.
async fn commit_batch<B: Backend>(
    held: super::writer::Held<B>,
    batch: &[Ready],
) -> Result<Vec<Result<Operation, StoreError>>, StoreError> {
    let mut tx = WriteTx::begin(held).await?;
    let mut outcomes = Vec::with_capacity(batch.len());
    for ready in batch {
        B::query("SAVEPOINT upload").execute(&mut tx).await?;
        let outcome =
            commit::commit_upload_in(&mut tx, &ready.upload, &ready.packed, &ready.dag).await;
        if outcome.is_err() {
            B::query("ROLLBACK TO upload").execute(&mut tx).await?;
        }
        B::query("RELEASE upload").execute(&mut tx).await?;
        outcomes.push(outcome);
    }
    tx.commit().await?;
    Ok(outcomes)
}

/// The error that failed a whole batch, for each of its uploads: what matters to a caller is
/// kept (a full disk, a store that is down), and the message.
fn each_one(e: &StoreError) -> StoreError {
    let message = format!("committing a batch of uploads: {e}");
    if e.is_storage_full() {
        StoreError::Io(std::io::Error::new(
            std::io::ErrorKind::StorageFull,
            message,
        ))
    } else if e.is_unavailable() {
        StoreError::Database(sqlx::Error::Io(std::io::Error::other(message)))
    } else {
        StoreError::Io(std::io::Error::other(message))
    }
}

/// Drops what is waiting and lets the next upload start a task, if the task panics.
struct ResetOnUnwind<'a>(&'a Mutex<Waiting>);

impl Drop for ResetOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut waiting = self.0.lock().unwrap_or_else(|e| e.into_inner());
            waiting.uploads.clear();
            waiting.committing = false;
        }
    }
}
