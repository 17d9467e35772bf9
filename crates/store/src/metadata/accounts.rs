//! Accounts, their limits and usage, and the per-account rate buckets.

use crate::events::Usage;
use crate::model::Account;
use crate::{AccountLimits, StoreError};
use async_trait::async_trait;

/// Accounts, their limits and usage, and the per-account rate buckets.
#[async_trait]
pub trait Accounts: Send + Sync {
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

    async fn account_by_id(&self, id: i64) -> Result<Option<Account>, StoreError>;

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
}
