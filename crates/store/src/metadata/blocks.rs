//! The block index: where each stored block is.

use crate::model::BlockLocation;
use crate::StoreError;
use async_trait::async_trait;
use std::collections::HashSet;

/// The block index: where each stored block is.
#[async_trait]
pub trait BlockIndex: Send + Sync {
    /// Whether a block (by multihash bytes) is already stored.
    async fn has_block(&self, multihash: &[u8]) -> Result<bool, StoreError>;

    /// Which of many blocks (by multihash bytes) are stored already: a batch, one question.
    async fn stored_blocks(&self, multihashes: &[Vec<u8>]) -> Result<HashSet<Vec<u8>>, StoreError>;

    async fn block_location(&self, multihash: &[u8]) -> Result<Option<BlockLocation>, StoreError>;

    /// The locations of many blocks at once (those not stored are left out).
    async fn block_locations(
        &self,
        multihashes: &[Vec<u8>],
    ) -> Result<Vec<(Vec<u8>, BlockLocation)>, StoreError>;

    /// Every pack the block index references (for the startup sweep).
    async fn pack_names(&self) -> Result<Vec<String>, StoreError>;
}
