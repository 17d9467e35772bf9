//! The durable queue of operations workers claim with a lease, and finish.

use crate::model::{Content, Packed};
use crate::model::{Operation, OperationError, StoredDag};
use crate::StoreError;
use async_trait::async_trait;

/// The durable queue of operations workers claim with a lease, and finish.
#[async_trait]
pub trait OperationQueue: Send + Sync {
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
}
