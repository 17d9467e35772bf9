//! What the node serves and where fetched blocks come from: a [`Blockstore`], asynchronous,
//! whose blocks are verified against their CIDs. Cairn's store implements it
//! ([`StoredBlocks`], the same reader the gateway uses); [`MemoryBlockstore`] holds blocks in
//! memory.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
pub use cairn_store::blocks::StoredBlocks;
use cairn_unixfs::Cid;

#[async_trait]
pub trait Blockstore: Send + Sync + 'static {
    /// The block, verified against its CID; `None` when it is not held.
    async fn get(&self, cid: &Cid) -> io::Result<Option<Vec<u8>>>;
    /// Whether the block is held (cheaper than reading it).
    async fn has(&self, cid: &Cid) -> io::Result<bool>;
}

/// Cairn's stored blocks (`cairn_store::blocks`, the reader everything shares).
#[async_trait]
impl Blockstore for StoredBlocks {
    async fn get(&self, cid: &Cid) -> io::Result<Option<Vec<u8>>> {
        StoredBlocks::get(self, cid).await
    }

    async fn has(&self, cid: &Cid) -> io::Result<bool> {
        StoredBlocks::has(self, cid).await
    }
}

/// Blocks in memory: for tests, and for fetches that are not stored.
#[derive(Clone, Default)]
pub struct MemoryBlockstore {
    blocks: Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>>,
}

impl MemoryBlockstore {
    pub fn insert(&self, cid: &Cid, block: Vec<u8>) {
        if let Ok(mut blocks) = self.blocks.lock() {
            blocks.insert(cid.hash().to_bytes(), block);
        }
    }
}

#[async_trait]
impl Blockstore for MemoryBlockstore {
    async fn get(&self, cid: &Cid) -> io::Result<Option<Vec<u8>>> {
        let blocks = self
            .blocks
            .lock()
            .map_err(|_| io::Error::other("poisoned"))?;
        Ok(blocks.get(&cid.hash().to_bytes()).cloned())
    }

    async fn has(&self, cid: &Cid) -> io::Result<bool> {
        let blocks = self
            .blocks
            .lock()
            .map_err(|_| io::Error::other("poisoned"))?;
        Ok(blocks.contains_key(&cid.hash().to_bytes()))
    }
}
