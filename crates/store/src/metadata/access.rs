//! API keys and upload links: what may call, and with what limits.

use crate::access::{ApiKey, NewKey, NewLink, UploadLink};
use crate::model::Account;
use crate::StoreError;
use async_trait::async_trait;

/// API keys and upload links: what may call, and with what limits.
#[async_trait]
pub trait Access: Send + Sync {
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
}
