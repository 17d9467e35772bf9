//! The embedded metadata store: SQLite in WAL mode.
//!
//! Every commit is durable before the store returns, which is what lets a response be sent
//! right after it: the writer's connection commits with `synchronous=NORMAL` and then waits
//! for a sync of the log shared with the commits around it (`durable.rs`); the reading
//! connections keep `synchronous=FULL`.
//! Migrations are tracked with `PRAGMA user_version` (the number of steps applied); each step
//! runs in its own transaction.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteArguments, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous, SqliteTransactionManager,
};
use sqlx::{Sqlite, TransactionManager};

use super::dialect::Dialect;
use super::durable::GroupSync;
use super::rows::ModelRow;
use super::schema;
use super::turns::Line;
use super::{Backend, SqlStore};
use crate::{CollectorLock, StoreError};

/// The embedded store.
pub type SqliteStore = SqlStore<Sqlite>;

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
        let pool = pool_options(8).connect_with(options.clone()).await?;
        // One connection: see `SqlStore::writer`. Its commits are made durable in groups,
        // off the writer (`durable.rs`).
        let writer = pool_options(1)
            .connect_with(options.synchronous(SqliteSynchronous::Normal))
            .await?;
        let store = Self {
            pool,
            writer,
            turns: Some(Default::default()),
            group_sync: Some(Arc::new(GroupSync::new(path))),
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

fn pool_options(max_connections: u32) -> SqlitePoolOptions {
    SqlitePoolOptions::new()
        .max_connections(max_connections)
        // A COMMIT that fails with SQLITE_FULL is rolled back by SQLite itself, so the
        // ROLLBACK sqlx sends next fails too and its connection still counts an open
        // transaction: every later BEGIN on it would fail ("non-zero transaction depth").
        // Such a connection is closed instead of going back to the pool, so the store
        // works again as soon as the disk has room.
        .after_release(|conn, _| {
            let depth =
                <SqliteTransactionManager as TransactionManager>::get_transaction_depth(conn);
            Box::pin(async move { Ok(depth == 0) })
        })
}
