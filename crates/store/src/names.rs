//! IPNS names an account keeps, and the records of other names pushed to Cairn's router.
//! Signing records and sealing keys are `cairn-service`'s (`names`): this keeps what they made.

/// At most this many names per account.
pub const MAX_NAMES: usize = 100;
/// At most this many records of names kept elsewhere: a new name beyond it is refused.
pub const MAX_FOREIGN_RECORDS: usize = 100_000;

/// A name an account keeps: its key, and the latest record it signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptName {
    /// The name as a CID (`k51...`).
    pub name: String,
    pub account_id: i64,
    /// What the account calls it, unique within the account.
    pub label: Option<String>,
    /// The Ed25519 secret key, sealed with the names key: the database alone cannot sign.
    pub sealed_key: Vec<u8>,
    /// What the latest record points at (`/ipfs/{cid}`).
    pub value: String,
    pub sequence: u64,
    /// The latest record, as it travels.
    pub record: Vec<u8>,
    /// When that record stops being valid: it is republished well before.
    pub expires_at_ms: i64,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

/// A verified record of a name this Cairn does not keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignRecord {
    pub name: String,
    pub record: Vec<u8>,
    pub sequence: u64,
    pub expires_at_ms: i64,
}
