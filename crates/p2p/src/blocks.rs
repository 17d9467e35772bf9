//! What the node serves and where fetched blocks come from: a [`Blockstore`], asynchronous,
//! whose blocks are verified against their CIDs. Cairn's stored blocks are one
//! (`cairn_service::node_blocks`, where this crate and the store meet); [`MemoryBlockstore`]
//! holds blocks in memory.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use cairn_unixfs::Cid;

#[async_trait]
pub trait Blockstore: Send + Sync + 'static {
    /// The block, verified against its CID; `None` when it is not held.
    async fn get(&self, cid: &Cid) -> io::Result<Option<Vec<u8>>>;
    /// Whether the block is held (cheaper than reading it).
    async fn has(&self, cid: &Cid) -> io::Result<bool>;
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
