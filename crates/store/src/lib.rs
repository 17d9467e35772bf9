//! Storage behind the service, as traits at the backend boundary plus their implementations:
//! SQLite or PostgreSQL for metadata, local files or S3 for content.
//!
//! - [`model`]: the records (accounts, uploads and operations, block locations).
//! - [`access`]: API keys (their scopes and limits) and upload links.
//! - [`events`]: what happened to uploads and pins, webhook endpoints and their deliveries.
//! - [`metadata`]: the metadata store's capabilities, one trait per concern ([`Accounts`],
//!   [`Access`], [`Uploads`], [`OperationQueue`], [`BlockIndex`], [`TusRecords`],
//!   [`EventLog`], [`Names`], [`GarbageCollection`], [`Providing`], [`Nodes`]), each consumer
//!   taking the one it needs; [`MetadataStore`] is all of them. [`sql::SqlStore`] implements
//!   them once for both databases ([`sqlite::SqliteStore`], [`postgres::PostgresStore`]).
//! - [`blobs`]: the `BlobStore` trait (named, write-once objects; the one place a write becomes
//!   durable) and its file implementation, with a conformance suite.
//! - [`packs`]: pack files (content, written once, durable before they are referenced).
//! - [`blocks`]: reading stored blocks (index, then packs), each verified against its CID:
//!   the one reader the gateway, the workers, the collector and the IPFS node share.
//! - [`staging`]: whole uploads waiting for a worker (archives to extract).
//! - [`tokens`]: API token generation and hashing.
//! - [`tus_bytes`]: append-only files of TUS uploads, whose durable length is the offset.
//! - `write_behind`: starting write-back while a file is still being written, so its final
//!   `fdatasync` has little left to do (TUS bytes and packs).
//! - [`suite`]: the conformance suite every `MetadataStore` backend must pass.
//!
//! Durability order for content: the pack's name (made durable with a batch of others before
//! it is written), its data `fdatasync`, and only then the metadata transaction that
//! references it (SQLite's write-ahead log synced before the commit is acknowledged). See
//! `ARCHITECTURE.md` ("Storage and durability").

pub mod access;
pub mod blobs;
pub mod blocks;
pub mod events;
pub mod metadata;
pub mod model;
pub mod names;
pub mod packs;
mod random;
pub mod s3;
pub mod sql;
pub mod staging;
/// The conformance suite every [`MetadataStore`] backend runs; only in tests (`suite` feature).
#[cfg(any(test, feature = "suite"))]
pub mod suite;
pub mod tokens;
pub mod tus_bytes;
mod write_behind;

pub use metadata::{
    Access, Accounts, BlockIndex, EventLog, GarbageCollection, Names, Nodes, OperationQueue,
    Providing, TusRecords, Uploads,
};
pub use random::random_name;
pub use sql::rows::now_ms;
pub use sql::{postgres, sqlite};

/// Why a storage call failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0} already exists")]
    Conflict(String),
    /// A change the request asked for breaks a limit: the message says which.
    #[error("{0}")]
    Invalid(String),
    /// The key or upload link that sent an upload has begun all it may.
    #[error("{}", match .0 {
        Spent::Key => "this key has begun the uploads its maxUses allows",
        Spent::Link => "this upload link has taken the uploads it allows",
    })]
    Spent(Spent),
    #[error("the stored-bytes quota would be exceeded ({needed} bytes needed, {remaining} left)")]
    QuotaExceeded { needed: u64, remaining: u64 },
    /// Blocks an upload found stored, and so did not write, were collected before it
    /// committed: nothing is recorded, and processing it again writes them.
    #[error("{0} blocks this upload found stored were collected before it finished; it must be processed again")]
    BlocksCollected(usize),
    /// The database was written by a newer Cairn: nothing is read or changed.
    #[error(
        "this database was written by a newer Cairn (schema step {found}; this Cairn knows \
         {known}): run that release or a later one, or restore a backup this one wrote"
    )]
    NewerSchema { found: usize, known: usize },
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("storage I/O: {0}")]
    Io(#[from] std::io::Error),
}

/// Whose uses an upload found spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spent {
    Key,
    Link,
}

/// A store that cannot be reached right now: the bucket kept answering errors, resetting or
/// stalling through every retry. Carried inside an `io::Error`; worth retrying later.
#[derive(Debug, thiserror::Error)]
#[error("the content store is unavailable: {0}")]
pub struct Unavailable(pub String);

/// Whether `e` says a store is unreachable right now (the content store, or the metadata
/// store behind a call made from blocking code), rather than that something is wrong.
pub fn is_unavailable(e: &std::io::Error) -> bool {
    let Some(inner) = e.get_ref() else {
        return false;
    };
    inner.is::<Unavailable>()
        || inner
            .downcast_ref::<StoreError>()
            .is_some_and(StoreError::is_unavailable)
}

/// ENOSPC or EDQUOT, also when another error wraps it.
pub fn is_storage_full(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    let full =
        |e: &std::io::Error| matches!(e.kind(), ErrorKind::StorageFull | ErrorKind::QuotaExceeded);
    full(e)
        || e.get_ref()
            .and_then(|inner| inner.downcast_ref::<std::io::Error>())
            .is_some_and(full)
}

impl StoreError {
    /// The metadata store's disk (or the content store's) is full: nothing is wrong with the
    /// request, and it fails until space is freed.
    pub fn is_storage_full(&self) -> bool {
        match self {
            // SQLITE_FULL (13) and PostgreSQL's disk_full (53100).
            Self::Database(sqlx::Error::Database(db)) => {
                matches!(db.code().as_deref(), Some("13" | "53100"))
            }
            Self::Database(sqlx::Error::Io(e)) | Self::Io(e) => is_storage_full(e),
            _ => false,
        }
    }

    /// The database cannot be reached right now (down, restarting, recovering, or the pool
    /// gave up waiting for a connection), or rolled this transaction back to let another
    /// through (a deadlock's victim): worth retrying, not a fault of the request. A worker
    /// that meets it leaves the operation for a later claim instead of failing it.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Database(
                sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::WorkerCrashed
                | sqlx::Error::Io(_),
            ) => true,
            // SQLSTATE class 08 (connection exception), 57P01-57P03 (shut down by an
            // administrator, crashed, cannot connect now: still recovering), 40P01 and 40001
            // (a deadlock's or a serialization conflict's victim, rolled back whole).
            Self::Database(sqlx::Error::Database(db)) => db.code().is_some_and(|code| {
                code.starts_with("08")
                    || code.starts_with("57P0")
                    || code == "40P01"
                    || code == "40001"
            }),
            Self::Io(e) => is_unavailable(e),
            _ => false,
        }
    }
}

/// Held while a collector runs; dropping it releases the lock.
pub struct CollectorLock {
    _held: Box<dyn std::any::Any + Send>,
}

impl CollectorLock {
    pub(crate) fn new(held: impl std::any::Any + Send) -> Self {
        Self {
            _held: Box::new(held),
        }
    }
}

/// Limits set on an account.
#[derive(Clone, Copy, Debug)]
pub struct AccountLimits {
    pub upload_limit: u64,
    pub quota: Option<u64>,
}

impl Default for AccountLimits {
    fn default() -> Self {
        Self {
            upload_limit: model::DEFAULT_UPLOAD_LIMIT,
            quota: None,
        }
    }
}

/// Everything the service keeps as metadata, one trait per concern (see [`metadata`]); a
/// consumer takes the one it needs (`&dyn BlockIndex`, `Arc<dyn EventLog>`). Implemented by
/// [`sql::SqlStore`] for both databases.
pub trait MetadataStore:
    Accounts
    + Access
    + Uploads
    + OperationQueue
    + BlockIndex
    + TusRecords
    + EventLog
    + Names
    + GarbageCollection
    + Providing
    + Nodes
    + Send
    + Sync
{
}
