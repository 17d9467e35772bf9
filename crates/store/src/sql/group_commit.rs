//! Group commit for SQLite's one writer: many commits made durable by one `fdatasync`.
//!
//! With `synchronous=FULL`, each commit synced the write-ahead log while holding the writer,
//! about 0.65 ms of the 1.5 ms a small upload's commit held it: under load every writing
//! request waited its turn behind all of those syncs (the load test, BENCHMARKS.md). The
//! writer's connection now commits with `synchronous=NORMAL`, which appends to the log and
//! syncs only around checkpoints, and each writer then waits here, off the writer, until a
//! sync of the log that began after its commit has finished. Whoever finds no sync running
//! starts one for every commit made so far; those that committed while it ran are covered by
//! the next. Nothing is answered before its commit is on stable storage, as before.
//!
//! Why syncing the log from outside SQLite is enough: a commit is the log's frames written up
//! to a commit frame; recovery replays the log up to its last valid commit frame. SQLite
//! itself syncs the log before a checkpoint copies it into the database, syncs the database
//! after, and syncs the log's header when it starts reusing the file. A log that is gone was
//! checkpointed (and synced) before its last connection removed it.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub struct GroupSync {
    wal: PathBuf,
    /// Commits that have returned, numbered from 1.
    committed: AtomicU64,
    /// The commits the last finished sync covered (all numbered up to this).
    synced: AtomicU64,
    /// One sync at a time, waiters served in order; the log, open since the last sync.
    syncing: tokio::sync::Mutex<Option<File>>,
}

impl GroupSync {
    /// For the database at `database` (its log is `DATABASE-wal`).
    pub fn new(database: &Path) -> Self {
        let mut wal = database.as_os_str().to_owned();
        wal.push("-wal");
        Self {
            wal: wal.into(),
            committed: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            syncing: tokio::sync::Mutex::new(None),
        }
    }

    /// Returns once the commit that just returned to the caller is on stable storage.
    pub async fn committed(&self) -> io::Result<()> {
        let ticket = self.committed.fetch_add(1, Ordering::SeqCst) + 1;
        let mut open = self.syncing.lock().await;
        if self.synced.load(Ordering::SeqCst) >= ticket {
            return Ok(());
        }
        // Every commit that has returned by now is in the log this sync flushes.
        let covers = self.committed.load(Ordering::SeqCst);
        let (wal, file) = (self.wal.clone(), open.take());
        let (file, synced) = tokio::task::spawn_blocking(move || {
            let mut file = file;
            let synced = sync_log(&wal, &mut file);
            (file, synced)
        })
        .await?;
        *open = file;
        synced?;
        self.synced.store(covers, Ordering::SeqCst);
        Ok(())
    }
}

/// `fdatasync` the log at `wal`, through `open` while it is still that file.
fn sync_log(wal: &Path, open: &mut Option<File>) -> io::Result<()> {
    let current = match std::fs::metadata(wal) {
        Ok(current) => current,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            *open = None;
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let same = |file: &File| {
        file.metadata()
            .is_ok_and(|m| (m.dev(), m.ino()) == (current.dev(), current.ino()))
    };
    if !open.as_ref().is_some_and(same) {
        // A new log: its name must be durable too.
        let file = File::open(wal)?;
        if let Some(dir) = wal.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            File::open(dir)?.sync_all()?;
        }
        *open = Some(file);
    }
    open.as_ref().expect("opened above").sync_data()
}

/// Waits until what a statement committed is on stable storage, where its connection's
/// [`Conn::group_sync`](super::backend::Conn::group_sync) says that is not already so when it returns.
pub(super) async fn durable(sync: Option<Arc<GroupSync>>) -> Result<(), sqlx::Error> {
    match sync {
        Some(sync) => sync.committed().await.map_err(sqlx::Error::Io),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_commit_returns_once_a_sync_after_it_has_finished() {
        let dir = tempfile::tempdir().unwrap();
        let database = dir.path().join("cairn.db");
        std::fs::write(dir.path().join("cairn.db-wal"), b"frames").unwrap();
        let sync = Arc::new(GroupSync::new(&database));
        // One at a time, then many at once: none is left waiting for a sync no one starts.
        for _ in 0..3 {
            sync.committed().await.unwrap();
        }
        let waiters: Vec<_> = (0..200)
            .map(|_| {
                let sync = sync.clone();
                tokio::spawn(async move { sync.committed().await })
            })
            .collect();
        for waiter in waiters {
            tokio::time::timeout(Duration::from_secs(10), waiter)
                .await
                .expect("a waiter was left behind")
                .unwrap()
                .unwrap();
        }
        assert_eq!(
            sync.synced.load(Ordering::SeqCst),
            203,
            "every commit covered"
        );
        // A log checkpointed and removed has nothing left to sync.
        std::fs::remove_file(dir.path().join("cairn.db-wal")).unwrap();
        sync.committed().await.unwrap();
    }
}
