//! TUS uploads' records and the leases that keep one writer per upload.

use crate::model::{LeaseAttempt, NewTusUpload, TusState, TusUpload};
use crate::StoreError;
use async_trait::async_trait;

/// TUS uploads' records and the leases that keep one writer per upload.
#[async_trait]
pub trait TusRecords: Send + Sync {
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
}
