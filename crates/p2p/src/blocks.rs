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
    /// The blocks of `cids`, in order, while the bytes taken are under `max_bytes` (the first
    /// is always taken): one entry per CID taken, `None` where it is not held. A store that
    /// can look many up at once does (one Bitswap answer asks for hundreds).
    async fn get_many(&self, cids: &[Cid], max_bytes: u64) -> io::Result<Vec<Option<Vec<u8>>>> {
        let mut taken = Vec::new();
        let mut bytes = 0;
        for cid in cids {
            if !taken.is_empty() && bytes >= max_bytes {
                break;
            }
            let block = self.get(cid).await?;
            bytes += block.as_ref().map_or(0, |b| b.len() as u64);
            taken.push(block);
        }
        Ok(taken)
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
