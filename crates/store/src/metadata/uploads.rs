//! Uploads and pins as an account keeps them: recorded, committed with their content, changed, listed and deleted.

use crate::model::Packed;
use crate::model::{
    KeptFilter, NewPin, NewUpload, Operation, OperationError, OperationFilter, OperationRef,
    OperationStatus, StoredDag,
};
use crate::StoreError;
use async_trait::async_trait;
use std::collections::BTreeMap;

/// Uploads and pins as an account keeps them: recorded, committed with their content, changed, listed and deleted.
#[async_trait]
pub trait Uploads: Send + Sync {
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

    /// Upload ids of operations not yet terminal: the staged files still needed.
    async fn unfinished_upload_ids(&self) -> Result<Vec<String>, StoreError>;

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

    /// The accounts that keep `cid` as a root.
    async fn accounts_keeping(&self, cid: &str) -> Result<Vec<i64>, StoreError>;
}
