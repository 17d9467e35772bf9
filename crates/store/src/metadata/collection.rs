//! Garbage collection: the collector's lock, the index as it sees it, and applying what it found.

use crate::model::{Collected, Collection, IndexedBlock};
use crate::{model, CollectorLock, StoreError};
use async_trait::async_trait;

/// Garbage collection: the collector's lock, the index as it sees it, and applying what it found.
#[async_trait]
pub trait GarbageCollection: Send + Sync {
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
}
