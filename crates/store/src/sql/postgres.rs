//! The shared metadata store: PostgreSQL, for several stateless nodes.
//!
//! The same `MetadataStore` as SQLite (the shared suite proves it). What PostgreSQL adds, as
//! its [`Dialect`] says: queue claims take the row with `FOR UPDATE SKIP LOCKED`, so
//! nodes never wait on or double-claim one another's operations; quota checks lock the account
//! row, so two nodes committing at once cannot both spend the same remaining bytes; and
//! migrations run under an advisory lock, so nodes starting together apply each step once.

use std::time::Duration;

use sqlx::postgres::{PgArguments, PgPool, PgPoolOptions};
use sqlx::Postgres;

use super::dialect::Dialect;
use super::rows::ModelRow;
use super::schema;
use super::writer::Writer;
use super::{Backend, SqlStore};
use crate::{CollectorLock, StoreError};

/// The shared store.
pub type PostgresStore = SqlStore<Postgres>;

/// Any constant both nodes agree on: the advisory lock that serialises migrations.
const MIGRATION_LOCK: i64 = 0x6361_6972_6e00;

/// PostgreSQL support came when SQLite had three steps: its first release created them as its
/// version 1, and numbered each later step from there. Version `v` is step `v + 2`.
const STEPS_IN_VERSION_1: usize = 3;

/// The advisory lock one garbage collector at a time holds.
const COLLECTOR_LOCK: i64 = 0x6361_6972_6e01;

impl Backend for Postgres {
    type Args<'q> = PgArguments;
    const DIALECT: Dialect = Dialect::Postgres;

    /// A session lock on a connection taken out of the pool: when the lock is dropped, or its
    /// process dies, the connection closes and the server releases the lock.
    async fn lock_collector(pool: &PgPool) -> Result<Option<CollectorLock>, StoreError> {
        let mut conn = pool.acquire().await?;
        let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(COLLECTOR_LOCK)
            .fetch_one(&mut *conn)
            .await?;
        Ok(locked.then(|| CollectorLock::new(conn.detach())))
    }
}

impl PostgresStore {
    /// Connect to `url` (`postgres://...`) and bring the schema up to date.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        // The pool retries a failing connection until its timeout, then says only that it timed
        // out; one connection first says why at once (refused, no such database, password).
        use sqlx::Connection;
        sqlx::PgConnection::connect(url).await?.close().await?;
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(Duration::from_secs(10))
            .connect(url)
            .await?;
        migrate(&pool).await?;
        Ok(Self {
            writer: Writer::Pool(pool.clone()),
            upload_batches: None,
            pool,
        })
    }
}

/// Every step not yet applied, in one transaction under the advisory lock.
async fn migrate(pool: &PgPool) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut *tx)
        .await?;
    sqlx::raw_sql("CREATE TABLE IF NOT EXISTS cairn_schema (version BIGINT NOT NULL)")
        .execute(&mut *tx)
        .await?;
    let version = Postgres::query("SELECT max(version) AS version FROM cairn_schema")
        .fetch_one(&mut tx)
        .await?
        .maybe_int("version")
        .unwrap_or(0) as usize;
    let done = match version {
        0 => 0,
        v => v + STEPS_IN_VERSION_1 - 1,
    };
    let steps = schema::steps(Dialect::Postgres);
    if done > steps.len() {
        return Err(StoreError::NewerSchema {
            found: done,
            known: steps.len(),
        });
    }
    for (index, step) in steps.iter().enumerate().skip(done) {
        sqlx::raw_sql(step).execute(&mut *tx).await?;
        let steps = index + 1;
        if steps >= STEPS_IN_VERSION_1 {
            sqlx::query("INSERT INTO cairn_schema (version) VALUES ($1)")
                .bind((steps + 1 - STEPS_IN_VERSION_1) as i64)
                .execute(&mut *tx)
                .await?;
        }
    }
    tx.commit().await?;
    Ok(())
}
