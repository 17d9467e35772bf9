//! IPNS names kept for accounts, and the records of others' names.

use crate::names::{ForeignRecord, KeptName};
use crate::StoreError;
use async_trait::async_trait;

/// IPNS names kept for accounts, and the records of others' names.
#[async_trait]
pub trait Names: Send + Sync {
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
}
