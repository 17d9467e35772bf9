//! What processing an operation came to: the worker records it, whoever did the work (the
//! import of uploaded bytes, or a pin's fetch) returns it.

use std::io;

use cairn_store::model::{Content, OperationError, Packed, StoredDag};

/// What processing an operation came to.
pub(crate) enum Outcome {
    /// Stored: its root, the pack of its new blocks, and what an upload was found to be.
    Done(StoredDag, Packed, Option<Content>),
    /// The operation fails with this error (a pin's content not found, for instance).
    Refused(OperationError),
    /// The archive is at fault: the operation fails with `invalid_archive`.
    Invalid(String),
    /// The archive expands past the account's remaining quota.
    OverQuota(String),
    /// The worker is stopping or lost its claim: leave the operation for a later claim.
    Abandoned,
    Failed(io::Error),
}
