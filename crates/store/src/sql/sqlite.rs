//! The embedded metadata store: SQLite in WAL mode.
//!
//! Every commit is durable before the store returns, which is what lets a response be sent
//! right after it: the writer's connection commits with `synchronous=NORMAL` and then waits
//! for a sync of the log shared with the commits around it (`group_commit.rs`); the reading
//! connections keep `synchronous=FULL`.
//! Migrations are tracked with `PRAGMA user_version` (the number of steps applied); each step
//! runs in its own transaction.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteArguments, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use sqlx::{ConnectOptions, Sqlite};

use super::dialect::Dialect;
use super::group_commit::GroupSync;
use super::rows::ModelRow;
use super::schema;
use super::upload_batch::UploadBatches;
use super::write_queue::Line;
use super::writer::{Sole, Writer};
use super::{Backend, SqlStore};
use crate::{CollectorLock, StoreError};

/// The embedded store.
pub type SqliteStore = SqlStore<Sqlite>;

/// The log's length, in pages, at which a commit also checkpoints it into the database (on
/// the writer, holding everyone else up). A small upload's commit writes about 20 pages of
/// the same few indexes, so SQLite's default of 1,000 checkpointed 20 times a second under
/// load, copying the same hot pages each time; at 10,000 (a 40 MiB log) the 200-client load
/// took 8% more POSTs a second (BENCHMARKS.md, "Load"). Passive checkpoints every half second
/// from a reading connection instead, with none on the writer, were slower, and the log was
/// never rewound: 1.6 GB after a minute.
const WRITER_CHECKPOINT_PAGES: u32 = 10_000;

impl Backend for Sqlite {
    type Args<'q> = SqliteArguments<'q>;
    const DIALECT: Dialect = Dialect::Sqlite;

    /// A lock on the file `DATABASE.gc-lock`: every process using the database is on this
    /// machine, and the system releases the lock when its holder exits, however it does.
    async fn lock_collector(pool: &SqlitePool) -> Result<Option<CollectorLock>, StoreError> {
        let database = pool.connect_options().get_filename().to_owned();
        let path = format!("{}.gc-lock", database.display());
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(CollectorLock::new(file))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e.into()),
        }
    }
}

impl SqliteStore {
    /// Open (creating if needed) the database at `path` and bring its schema up to date.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        // Readers. A ping before each use would be a round trip to the connection's thread, and
        // a local file's connection cannot have gone away (the ping sqlx sends when one is
        // given back still finds one whose thread died).
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .test_before_acquire(false)
            .connect_with(options.clone())
            .await?;
        // One connection (`writer.rs`), whose commits are made durable in groups, off the
        // writer (`group_commit.rs`).
        let writer = options
            .synchronous(SqliteSynchronous::Normal)
            .pragma("wal_autocheckpoint", WRITER_CHECKPOINT_PAGES.to_string())
            // Each upload of a batch is a savepoint (`upload_batch.rs`), whose journal of the
            // pages it changed went to a temporary file: two `pwrite`s a page, about 60 an
            // upload (`strace`). Held in memory instead, and dropped at its release.
            .pragma("temp_store", "memory")
            .connect()
            .await?;
        let writer = Writer::Sole(Arc::new(Sole::new(writer, Arc::new(GroupSync::new(path)))));
        let store = Self {
            pool,
            upload_batches: Some(Arc::new(UploadBatches::new(writer.clone()))),
            writer,
        };
        store.migrate().await?;
        Ok(store)
    }

    /// Each step not yet applied in its own transaction, which also sets the version.
    async fn migrate(&self) -> Result<(), StoreError> {
        let current = Sqlite::query("PRAGMA user_version")
            .fetch_one(&mut self.conn().await?)
            .await?
            .int("user_version");
        let steps = schema::steps(Dialect::Sqlite);
        if current as usize > steps.len() {
            return Err(StoreError::NewerSchema {
                found: current as usize,
                known: steps.len(),
            });
        }
        for (index, step) in steps.iter().enumerate().skip(current as usize) {
            let mut tx = self.write(Line::Requests).await?;
            sqlx::raw_sql(step).execute(&mut *tx).await?;
            sqlx::raw_sql(&format!("PRAGMA user_version = {}", index + 1))
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
        }
        Ok(())
    }
}
