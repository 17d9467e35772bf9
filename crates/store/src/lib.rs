//! Storage behind the service, as traits at the backend boundary plus their implementations:
//! SQLite or PostgreSQL for metadata, local files or S3 for content.
//!
//! - [`model`]: the records (accounts, uploads and operations, block locations).
//! - [`access`]: API keys (their scopes and limits) and upload links.
//! - [`events`]: what happened to uploads and pins, webhook endpoints and their deliveries.
//! - [`MetadataStore`]: the metadata trait; [`sql::SqlStore`] implements it once for both
//!   databases ([`sqlite::SqliteStore`], [`postgres::PostgresStore`]).
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

pub use random::random_name;
pub use sql::rows::now_ms;
pub use sql::{postgres, sqlite};

use async_trait::async_trait;

use access::{ApiKey, NewKey, NewLink, UploadLink};
use events::{
    Attempt, ClaimedDelivery, Delivery, DeliveryStatus, Event, EventType, NewDeliveries, Usage,
    Webhook,
};
use model::{
    Account, BlockLocation, Collected, Collection, IndexedBlock, IpniChain, IpniPublication,
    KeptFilter, LeaseAttempt, LogPlace, NewPin, NewTusUpload, NewUpload, NodeRecord, Operation,
    OperationError, OperationFilter, OperationRef, OperationStatus, ProvideProgress, StoredDag,
    TusState, TusUpload,
};
use model::{Content, Packed};
use names::{ForeignRecord, KeptName};
use std::collections::BTreeMap;

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

/// Metadata: accounts and tokens, uploads and their operations, and the block index.
#[async_trait]
pub trait MetadataStore: Send + Sync {
    async fn create_account(
        &self,
        name: &str,
        limits: AccountLimits,
    ) -> Result<Account, StoreError>;
    async fn account_by_name(&self, name: &str) -> Result<Option<Account>, StoreError>;
    async fn list_accounts(&self) -> Result<Vec<Account>, StoreError>;
    async fn set_account_limits(
        &self,
        name: &str,
        upload_limit: Option<u64>,
        quota: Option<Option<u64>>,
    ) -> Result<Account, StoreError>;

    /// Record a key by its secret's hash and prefix; the secret itself is never stored.
    async fn create_key(
        &self,
        key: &NewKey,
        hash: &[u8; 32],
        prefix: &str,
    ) -> Result<ApiKey, StoreError>;
    /// Revoke by key id or by (unambiguous) prefix, whatever its account (for the admin).
    async fn revoke_token(&self, prefix_or_id: &str) -> Result<ApiKey, StoreError>;
    /// A live (not revoked) key by its secret's hash, and its account. Expiry is the
    /// caller's to judge: an expired key is told apart from an unknown one.
    async fn key_for_token(&self, hash: &[u8; 32])
        -> Result<Option<(Account, ApiKey)>, StoreError>;
    /// The account's live keys, oldest first.
    async fn list_keys(&self, account_id: i64) -> Result<Vec<ApiKey>, StoreError>;
    /// Revoke one of the account's keys; `None` when it has no such live key.
    async fn revoke_key(&self, account_id: i64, id: i64) -> Result<Option<ApiKey>, StoreError>;
    /// Record that the key was accepted (see [`access::KEY_USE_RESOLUTION_MS`]).
    async fn key_seen(&self, id: i64, now_ms: i64) -> Result<(), StoreError>;

    async fn create_link(&self, link: &NewLink) -> Result<UploadLink, StoreError>;
    /// A link by its secret's hash, or by id: `None` once it, or the key that made it, is
    /// revoked. Expiry and uses are the caller's to judge.
    async fn link_for_secret(&self, hash: &[u8; 32]) -> Result<Option<UploadLink>, StoreError>;
    async fn link(&self, id: &str) -> Result<Option<UploadLink>, StoreError>;
    /// The account's links not revoked, newest first.
    async fn list_links(&self, account_id: i64) -> Result<Vec<UploadLink>, StoreError>;
    async fn revoke_link(
        &self,
        account_id: i64,
        id: &str,
    ) -> Result<Option<UploadLink>, StoreError>;

    /// Rename an upload, and change its key-values (a `None` value removes a key), in one
    /// transaction; `None` when the account keeps no such upload (a pin is changed through
    /// the Pinning Service API, which replaces it).
    /// [`StoreError::Invalid`] when the result would break the key-values' limits.
    async fn change_upload(
        &self,
        account_id: i64,
        upload_id: &str,
        name: Option<String>,
        keyvalues: BTreeMap<String, Option<String>>,
    ) -> Result<Option<Operation>, StoreError>;

    /// Whether a block (by multihash bytes) is already stored.
    async fn has_block(&self, multihash: &[u8]) -> Result<bool, StoreError>;
    async fn block_location(&self, multihash: &[u8]) -> Result<Option<BlockLocation>, StoreError>;
    /// The locations of many blocks at once (those not stored are left out).
    async fn block_locations(
        &self,
        multihashes: &[Vec<u8>],
    ) -> Result<Vec<(Vec<u8>, BlockLocation)>, StoreError>;
    /// Upload ids of operations not yet terminal: the staged files still needed.
    async fn unfinished_upload_ids(&self) -> Result<Vec<String>, StoreError>;
    /// Every pack the block index references (for the startup sweep).
    async fn pack_names(&self) -> Result<Vec<String>, StoreError>;

    /// Record an upload whose content is already stored: the pack (if any new blocks), its
    /// block index entries, the upload and its completed operation, and the root the account
    /// keeps, in one transaction. Fails with `QuotaExceeded` and changes nothing when a root
    /// the account does not keep yet does not fit its quota.
    /// Fails with `BlocksCollected`, changing nothing, when a block it reused is gone.
    async fn commit_completed_upload(
        &self,
        upload: NewUpload,
        packed: Packed,
        dag: &StoredDag,
    ) -> Result<Operation, StoreError>;

    /// Record an upload whose processing fails or is still to come.
    async fn record_upload(
        &self,
        upload: NewUpload,
        failure: Option<OperationError>,
    ) -> Result<Operation, StoreError>;

    async fn account_by_id(&self, id: i64) -> Result<Option<Account>, StoreError>;

    /// The queue: atomically take the oldest pending operation, or one whose worker's lease ran
    /// out (a crashed or stopped node), and mark it `processing` under `worker` for `lease`.
    async fn claim_next(
        &self,
        worker: &str,
        lease: std::time::Duration,
    ) -> Result<Option<Operation>, StoreError>;
    /// Record progress (never lower than before) and extend the lease; `false` when the claim
    /// was lost and the worker must stop.
    async fn report_progress(
        &self,
        id: i64,
        worker: &str,
        percent: f64,
        message: &str,
        lease: std::time::Duration,
    ) -> Result<bool, StoreError>;
    /// Finish a claimed operation: index its pack and keep its root, as
    /// `commit_completed_upload` does, and mark it completed, in one transaction.
    /// `content` is what the worker found the upload to be (`None` for a pin).
    async fn complete_operation(
        &self,
        id: i64,
        worker: &str,
        packed: Packed,
        dag: &StoredDag,
        content: Option<&Content>,
    ) -> Result<Operation, StoreError>;
    /// Give a claimed operation back to the queue, to be processed again from the start.
    async fn release_operation(&self, id: i64, worker: &str) -> Result<(), StoreError>;
    async fn fail_operation(
        &self,
        id: i64,
        worker: &str,
        failure: OperationError,
    ) -> Result<Operation, StoreError>;

    /// Create a TUS upload and, unless it is a partial upload, its operation (pending, and not
    /// claimable until the last byte is stored).
    async fn create_tus_upload(&self, new: NewTusUpload) -> Result<TusUpload, StoreError>;
    /// A TUS upload, whatever its state and whoever's it is: the caller checks the account
    /// (so that it can read the upload while it looks the caller's token up).
    async fn tus_upload(&self, id: &str) -> Result<Option<TusUpload>, StoreError>;
    /// Set a deferred length; `Conflict` if a length is already set.
    async fn set_tus_length(&self, id: &str, length: u64) -> Result<(), StoreError>;
    /// Every byte is stored: mark the upload complete and make its operation claimable.
    /// Idempotent; returns the operation id.
    async fn complete_tus_upload(&self, id: &str, size: u64) -> Result<Option<i64>, StoreError>;
    /// End an incomplete upload (terminated or expired); its operation fails with `gone`.
    async fn end_tus_upload(&self, id: &str, state: TusState) -> Result<(), StoreError>;
    /// Incomplete uploads whose expiry has passed.
    async fn expired_tus_uploads(&self, now_ms: i64) -> Result<Vec<TusUpload>, StoreError>;

    /// Take the lease on upload `id` for `holder` until `until_ms`, unless another holder's
    /// lease is still running at `now_ms`. Taking it clears any request to stop.
    async fn take_upload_lease(
        &self,
        id: &str,
        holder: &str,
        now_ms: i64,
        until_ms: i64,
    ) -> Result<LeaseAttempt, StoreError>;
    /// Extend `holder`'s lease to `until_ms`: `Some(asked_to_stop)` while it holds the lease,
    /// `None` once it has lost it.
    async fn renew_upload_lease(
        &self,
        id: &str,
        holder: &str,
        until_ms: i64,
    ) -> Result<Option<bool>, StoreError>;
    /// Ask whoever holds the lease on `id` to let go.
    async fn ask_upload_holder_to_stop(&self, id: &str) -> Result<(), StoreError>;
    /// Give the lease back, if `holder` still has it.
    async fn release_upload_lease(&self, id: &str, holder: &str) -> Result<(), StoreError>;

    /// Take one request from the token bucket of (`account_id`, `endpoint`), which holds at
    /// most `quota` tokens and refills at `per_ms` tokens a millisecond, as of `now_ms`: the
    /// bucket nodes share. Returns whether a token was granted and the tokens left.
    async fn take_rate_token(
        &self,
        account_id: i64,
        endpoint: &str,
        quota: u32,
        per_ms: f64,
        now_ms: i64,
    ) -> Result<(bool, f64), StoreError>;

    /// An operation of `account_id` (another account's is `None`, like a missing one).
    async fn operation(
        &self,
        account_id: i64,
        id: &OperationRef,
    ) -> Result<Option<Operation>, StoreError>;
    /// The operations of `ids` that exist, in no order, in one read: what a page of events
    /// or webhook deliveries is about. Any account's: for the node's own use, never with an
    /// id a caller chose.
    async fn operations_by_id(&self, ids: &[i64]) -> Result<Vec<Operation>, StoreError>;
    /// How many operations are in each status, over all accounts.
    async fn operation_counts(&self) -> Result<Vec<(OperationStatus, u64)>, StoreError>;

    /// The account's operations, newest first.
    async fn list_operations(
        &self,
        account_id: i64,
        filter: &OperationFilter,
    ) -> Result<Vec<Operation>, StoreError>;

    /// Record a pin by CID (an operation of kind `pin`, its request id the upload id): queued
    /// for a worker to fetch, or, when the DAG is stored already (`stored`), completed and
    /// kept at once, as `commit_completed_upload` keeps a root.
    async fn create_pin(
        &self,
        pin: NewPin,
        stored: Option<&StoredDag>,
    ) -> Result<Operation, StoreError>;
    /// The size of the DAG under `cid` if an upload or pin not deleted keeps it as its root:
    /// then every block of it is stored.
    async fn kept_dag_size(&self, cid: &str) -> Result<Option<u64>, StoreError>;
    /// Delete the pin (or upload) `request_id` and record `pin` in its place (as
    /// `create_pin` does), in one transaction; `None`, changing nothing, when the account
    /// keeps no such thing.
    async fn replace_pin(
        &self,
        account_id: i64,
        request_id: &str,
        pin: NewPin,
        stored: Option<&StoredDag>,
    ) -> Result<Option<Operation>, StoreError>;
    /// Delete an upload or pin (by its upload id or request id): no longer listed, its root's
    /// bytes given back to the quota, unfinished work on it stopped, in one transaction.
    /// Idempotent; `None` when the account has no such upload (another account's included).
    async fn delete_kept(
        &self,
        account_id: i64,
        upload_id: &str,
    ) -> Result<Option<Operation>, StoreError>;
    /// What the account keeps (uploads and pins not deleted), newest first.
    async fn list_kept(
        &self,
        account_id: i64,
        filter: &KeptFilter,
    ) -> Result<Vec<Operation>, StoreError>;
    /// [`Self::list_kept`], and how many things the filter matches over all pages, both read
    /// from one snapshot (the Pinning Service API's `count` and `results` agree even while
    /// uploads complete).
    async fn list_kept_counted(
        &self,
        account_id: i64,
        filter: &KeptFilter,
    ) -> Result<(Vec<Operation>, u64), StoreError>;

    // Events, webhooks and usage (`events`).

    /// The account's events after `after`, of `types` (every type when empty), oldest first.
    async fn events_after(
        &self,
        account_id: i64,
        after: i64,
        types: &[EventType],
        limit: u32,
    ) -> Result<Vec<Event>, StoreError>;
    /// Every account's events after `after`, oldest first: what a node hands its streams.
    async fn all_events_after(&self, after: i64, limit: u32) -> Result<Vec<Event>, StoreError>;
    /// The newest event's id (0 when there is none).
    async fn last_event_id(&self) -> Result<i64, StoreError>;
    /// One operation's events, oldest first.
    async fn operation_events(&self, operation_id: i64) -> Result<Vec<Event>, StoreError>;
    /// `Invalid` when the account has `MAX_WEBHOOKS` endpoints already.
    async fn create_webhook(&self, webhook: &Webhook) -> Result<Webhook, StoreError>;
    async fn list_webhooks(&self, account_id: i64) -> Result<Vec<Webhook>, StoreError>;
    /// Its pending deliveries fail; `None` when the account has no such endpoint.
    async fn delete_webhook(
        &self,
        account_id: i64,
        id: &str,
    ) -> Result<Option<Webhook>, StoreError>;
    /// The endpoint's deliveries with their attempts, newest first, those before the delivery
    /// `before` when given; `None` when the account has no such endpoint.
    async fn webhook_deliveries(
        &self,
        account_id: i64,
        webhook_id: &str,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Option<Vec<Delivery>>, StoreError>;
    /// Queue a delivery again now (for another 24 hours); `None` when there is no such
    /// delivery of a live endpoint of the account.
    async fn retry_delivery(
        &self,
        account_id: i64,
        webhook_id: &str,
        delivery_id: i64,
    ) -> Result<Option<Delivery>, StoreError>;
    /// Deliveries not attempted yet (events after the dispatch cursor, with the endpoints
    /// that hear of them), up to `limit`, for `worker` holding the dispatch lease for `lease`;
    /// none while another dispatcher holds it.
    async fn take_new_deliveries(
        &self,
        worker: &str,
        lease: std::time::Duration,
        limit: u32,
    ) -> Result<NewDeliveries, StoreError>;
    /// Record the first attempts of `new`'s deliveries and move the dispatch cursor past its
    /// events, as one write; the deliveries' ids come back in order. One whose attempt is
    /// still under way (`None`) is left claimed by `worker`, to record with
    /// [`Self::record_attempts`] when it ends. `None`, with nothing written, when `worker`
    /// lost the dispatch lease.
    async fn record_first_attempts(
        &self,
        worker: &str,
        lease: std::time::Duration,
        new: &NewDeliveries,
        attempts: &[(&ClaimedDelivery, Option<&Attempt>)],
    ) -> Result<Option<Vec<i64>>, StoreError>;
    /// Claim up to `limit` deliveries due again for `worker`, for `lease`.
    async fn claim_deliveries(
        &self,
        worker: &str,
        lease: std::time::Duration,
        limit: u32,
    ) -> Result<Vec<ClaimedDelivery>, StoreError>;
    /// Record attempts (one write for a batch: each is a share of what the single writer
    /// does); returns where each delivery now stands.
    async fn record_attempts(
        &self,
        worker: &str,
        attempts: &[(&ClaimedDelivery, &Attempt)],
    ) -> Result<Vec<DeliveryStatus>, StoreError>;
    /// Forget events and finished deliveries older than `before_ms` (pending ones stay).
    async fn forget_events(&self, before_ms: i64) -> Result<u64, StoreError>;
    /// The account's counts, and its uploaded bytes in [`start_ms`, `end_ms`) and served
    /// bytes in `month` (`YYYY-MM`).
    async fn usage(
        &self,
        account_id: i64,
        start_ms: i64,
        end_ms: i64,
        month: &str,
    ) -> Result<Usage, StoreError>;
    /// Add bytes served of each account's content in `month`.
    async fn add_served_bytes(&self, month: &str, served: &[(i64, u64)]) -> Result<(), StoreError>;
    /// The accounts that keep `cid` as a root.
    async fn accounts_keeping(&self, cid: &str) -> Result<Vec<i64>, StoreError>;

    /// Refused (`Invalid`) when the account keeps [`names::MAX_NAMES`] already, `Conflict`
    /// when it has a name with that label.
    async fn create_name(&self, name: &KeptName) -> Result<KeptName, StoreError>;
    /// The account's live names, oldest first.
    async fn list_names(&self, account_id: i64) -> Result<Vec<KeptName>, StoreError>;
    /// A live name, by its `k51...` form, whoever keeps it.
    async fn kept_name(&self, name: &str) -> Result<Option<KeptName>, StoreError>;
    async fn kept_name_by_label(
        &self,
        account_id: i64,
        label: &str,
    ) -> Result<Option<KeptName>, StoreError>;
    /// Store a name's new record (value, sequence, record, expiry) if its sequence is still
    /// `previous_sequence`: false when another request or node changed it first.
    async fn update_name(
        &self,
        name: &KeptName,
        previous_sequence: u64,
    ) -> Result<bool, StoreError>;
    async fn delete_name(
        &self,
        account_id: i64,
        name: &str,
    ) -> Result<Option<KeptName>, StoreError>;
    /// Live names whose record expires before `before_ms`, soonest first.
    async fn names_expiring(&self, before_ms: i64, limit: u32)
        -> Result<Vec<KeptName>, StoreError>;
    /// Keep a verified record of a name kept elsewhere if it supersedes the one kept (a higher
    /// sequence, or the same valid for longer): false if it does not. Refused (`Invalid`) for a
    /// new name once [`names::MAX_FOREIGN_RECORDS`] are kept.
    async fn put_foreign_record(&self, record: &ForeignRecord) -> Result<bool, StoreError>;
    async fn foreign_record(&self, name: &str) -> Result<Option<ForeignRecord>, StoreError>;
    /// Forget records of names kept elsewhere that expired before `before_ms`.
    async fn forget_foreign_records(&self, before_ms: i64) -> Result<u64, StoreError>;

    /// The garbage collector's lock, one collector at a time over every node and `cairn gc`:
    /// `None` while another holds it. An advisory lock that its holder's end releases, even a
    /// crash: PostgreSQL's on a session of its own, a file lock beside SQLite's database.
    async fn lock_collector(&self) -> Result<Option<CollectorLock>, StoreError>;
    /// The block index in multihash order after `after`, a page at a time.
    async fn indexed_blocks(
        &self,
        after: &[u8],
        limit: u32,
    ) -> Result<Vec<IndexedBlock>, StoreError>;
    /// Apply a collection in one transaction, unless a root kept since `since_ms` is not in
    /// `walked`. Commits that keep a root wait for it (and it for them), so a block removed
    /// here is either unreachable or its commit fails with `BlocksCollected`.
    async fn apply_collection(
        &self,
        collection: &Collection,
        since_ms: i64,
        walked: &std::collections::HashSet<String>,
    ) -> Result<Collected, StoreError>;
    /// Point blocks at fresh copies in `moved.pack` (a repair), each only while its entry
    /// still names its pack in `moved.sources`, recording the pack, in one transaction; how
    /// many moved. When none did (collected or moved meanwhile) nothing is recorded, and the
    /// caller deletes the pack's blob.
    async fn relocate_blocks(&self, moved: &model::Compaction) -> Result<u64, StoreError>;
    /// Packs a collection removed whose blobs may still exist.
    async fn dead_packs(&self) -> Result<Vec<String>, StoreError>;
    /// Their blobs are gone.
    async fn forget_dead_packs(&self, names: &[String]) -> Result<(), StoreError>;

    /// Record (or refresh) a running node's addresses; nodes do this every few seconds.
    async fn announce_node(&self, node: &NodeRecord) -> Result<(), StoreError>;
    /// The nodes seen alive since `seen_since_ms`, by peer id.
    async fn live_nodes(&self, seen_since_ms: i64) -> Result<Vec<NodeRecord>, StoreError>;
    /// A node that stops cleanly is no longer named at once.
    async fn forget_node(&self, peer_id: &str) -> Result<(), StoreError>;

    /// The provide log: root CIDs of completed uploads after `after`, in completion order.
    async fn completed_roots(
        &self,
        after: LogPlace,
        limit: u32,
    ) -> Result<Vec<(LogPlace, String)>, StoreError>;
    /// How many completed uploads the provide log holds after `after`.
    async fn count_completed_roots(&self, after: LogPlace) -> Result<u64, StoreError>;
    /// Every distinct root CID greater than `after`, in CID order: a reprovide sweep's pages.
    async fn distinct_roots(&self, after: &str, limit: u32) -> Result<Vec<String>, StoreError>;
    async fn provide_progress(&self, peer_id: &str) -> Result<Option<ProvideProgress>, StoreError>;
    async fn save_provide_progress(
        &self,
        peer_id: &str,
        progress: &ProvideProgress,
    ) -> Result<(), StoreError>;

    /// Deleted uploads and pins after `after` (their `deleted_at` and id), in deletion order,
    /// with their roots: the log removal advertisements follow.
    async fn deleted_roots(
        &self,
        after: LogPlace,
        limit: u32,
    ) -> Result<Vec<(LogPlace, String)>, StoreError>;
    /// Node `peer_id`'s IPNI chain; `None` before its first publication.
    async fn ipni_chain(&self, peer_id: &str) -> Result<Option<IpniChain>, StoreError>;
    /// A block (advertisement or entry chunk) of node `peer_id`'s chain.
    async fn ipni_block(&self, peer_id: &str, cid: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Of `roots`, those node `peer_id` has not advertised, in their order.
    async fn ipni_not_advertised(
        &self,
        peer_id: &str,
        roots: &[String],
    ) -> Result<Vec<String>, StoreError>;
    /// Of `roots`, those node `peer_id` advertised that no live upload or pin keeps any more.
    async fn ipni_withdrawn(
        &self,
        peer_id: &str,
        roots: &[String],
    ) -> Result<Vec<String>, StoreError>;
    /// Write a publication of node `peer_id`'s chain in one transaction: a crash leaves the
    /// head where it was or where the publication moves it, with every block it names.
    async fn publish_ipni(
        &self,
        peer_id: &str,
        publication: &IpniPublication,
    ) -> Result<(), StoreError>;
}
