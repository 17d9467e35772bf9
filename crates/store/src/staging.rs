//! Staging: uploads waiting for a worker (archives to extract), kept whole as blobs.
//!
//! A staged upload is a blob named by its upload id, durable (see [`crate::blobs`]) before the
//! pending operation that points at it is committed, so a worker, after any crash, always finds
//! complete bytes. The worker deletes it when the operation reaches a terminal state.

use std::collections::HashSet;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::blobs::{BlobStore, BlobWriter, FileBlobs, ReadSeek};

#[derive(Clone, Debug)]
pub struct Staging {
    blobs: Arc<dyn BlobStore>,
}

impl Staging {
    pub fn new(blobs: Arc<dyn BlobStore>) -> Self {
        Self { blobs }
    }

    /// Staging as files under `dir` (the embedded store).
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Self> {
        Ok(Self::new(Arc::new(FileBlobs::open(dir)?)))
    }

    /// Start staging `upload_id`; nothing is visible under that id until `commit`.
    pub fn create(&self, upload_id: &str) -> io::Result<Box<dyn BlobWriter>> {
        self.blobs.create(upload_id)
    }

    pub fn open_upload(&self, upload_id: &str) -> io::Result<Box<dyn ReadSeek>> {
        self.blobs.open(upload_id)
    }

    /// Remove a staged upload; removing one that is already gone is not an error.
    pub fn remove(&self, upload_id: &str) -> io::Result<()> {
        self.blobs.delete(upload_id)
    }

    /// Delete interrupted writes, and staged uploads no unfinished operation needs (a crash
    /// between staging and recording the operation), written at least `older_than` ago.
    /// Returns how many went.
    pub fn sweep(&self, needed: &HashSet<String>, older_than: Duration) -> io::Result<u64> {
        let mut removed = self.blobs.remove_incomplete(older_than)?;
        for name in self.blobs.list(older_than)? {
            if !needed.contains(&name) {
                self.blobs.delete(&name)?;
                removed += 1;
            }
        }
        Ok(removed)
    }
}
