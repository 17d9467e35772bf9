//! The metadata store over SQL: one implementation of [`MetadataStore`](crate::MetadataStore)
//! for SQLite and PostgreSQL through sqlx, generic over the database.
//!
//! - `mod.rs`: [`SqlStore`]; `backend.rs`: the [`Backend`] trait (everything that differs
//!   between the two databases, named in one place), and `Statement`, a query either backend
//!   runs; `dialect.rs`: the SQL text that differs, and the parameter lists every statement
//!   writes.
//! - `queries/`: each capability trait of `crate::metadata` implemented once, a file per trait;
//!   `commit.rs`, `kept.rs`, `access.rs` (keys, links, key-values), `names.rs` (IPNS names) and
//!   `ipni_chain.rs` hold the larger parts of them.
//! - `writer.rs`: where writes go, and the connection a write holds (`write_queue.rs`: whose turn
//!   it is on SQLite; `group_commit.rs`: how SQLite's commits become durable in groups;
//!   `upload_batch.rs`: how SQLite commits many completed uploads in one transaction).
//! - `rows.rs`: rows into the model, the clock, unique violations.
//! - `schema.rs`: the numbered migrations, written once with the column types that differ.
//! - [`snapshot`]: a consistent copy of the embedded database while it is in use, and what
//!   the copy references (packs, staged and TUS bytes): what `cairn backup` copies.
//! - [`sqlite`] and [`postgres`]: each backend: opening and tuning the connections, how its
//!   migrations are tracked, and its dialect.
//!
//! Why generic rather than `sqlx::Any`: `Any` copies every row into its own value type, has no
//! arrays (PostgreSQL looks up a batch of blocks with one array parameter), cannot tune an
//! SQLite connection (WAL, `synchronous=FULL`) and hides the connection type that the SQLite
//! pool's release check needs. Generic code pays nothing for either backend.

pub mod backend;
mod commit;
pub mod dialect;
mod group_commit;
mod kept;
pub mod postgres;
mod queries;
pub mod rows;
mod schema;
pub mod snapshot;
pub mod sqlite;
mod upload_batch;
mod write_queue;
mod writer;

use std::sync::Arc;

use sqlx::pool::PoolConnection;
use sqlx::Pool;

pub use backend::{Backend, Statement};
use upload_batch::UploadBatches;
use write_queue::Line;
use writer::Writer;
pub use writer::{WriteConn, WriteTx};

/// The metadata store on either database: [`sqlite::SqliteStore`] or
/// [`postgres::PostgresStore`].
pub struct SqlStore<B: Backend> {
    pool: Pool<B>,
    /// Where writes go (`writer.rs`). SQLite: one connection of its own, taken in the order
    /// `write_queue.rs` gives. Through the shared pool, writers would wait on the database's one
    /// write lock in SQLite's busy handler, which polls with sleeps growing to 100 ms and lets
    /// newcomers overtake: under load a worker's claim waited over a second. PostgreSQL: the
    /// same pool, as it locks rows.
    writer: Writer<B>,
    /// SQLite: completed uploads committed many to a transaction (`upload_batch.rs`).
    /// PostgreSQL commits each in its own, side by side, and groups their log flushes itself.
    upload_batches: Option<Arc<UploadBatches<B>>>,
}

impl<B: Backend> SqlStore<B> {
    /// Close every connection; later calls fail as a store that is down would.
    pub async fn close(&self) {
        self.writer.close().await;
        self.pool.close().await;
    }

    /// A connection for reading.
    async fn conn(&self) -> Result<PoolConnection<B>, sqlx::Error> {
        self.pool.acquire().await
    }

    /// A transaction that only reads, all of it from one snapshot of the database.
    async fn read_snapshot(&self) -> Result<sqlx::Transaction<'static, B>, sqlx::Error> {
        self.pool.begin_with(B::DIALECT.begin_snapshot()).await
    }

    /// A connection for statements that write, each its own transaction, once it is `line`'s
    /// turn.
    async fn write_conn(&self, line: Line) -> Result<WriteConn<B>, sqlx::Error> {
        self.writer.conn(line).await
    }

    /// A transaction that writes, once it is `line`'s turn.
    async fn write(&self, line: Line) -> Result<WriteTx<B>, sqlx::Error> {
        self.writer.begin(line).await
    }
}
