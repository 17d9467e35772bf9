//! What the node serves and where fetched blocks come from: a [`Blockstore`], asynchronous,
//! whose blocks are verified against their CIDs. [`StoredBlockstore`] is Cairn's store (the
//! block index and the packs, local or S3), the same the gateway reads.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use cairn_store::packs::Packs;
use cairn_store::MetadataStore;
use cairn_unixfs::block::verify_block;
use cairn_unixfs::Cid;

#[async_trait]
pub trait Blockstore: Send + Sync + 'static {
    /// The block, verified against its CID; `None` when it is not held.
    async fn get(&self, cid: &Cid) -> io::Result<Option<Vec<u8>>>;
    /// Whether the block is held (cheaper than reading it).
    async fn has(&self, cid: &Cid) -> io::Result<bool>;
}

/// Cairn's stored blocks: the block index, then the pack bytes (read on a blocking thread).
#[derive(Clone)]
pub struct StoredBlockstore {
    store: Arc<dyn MetadataStore>,
    packs: Packs,
}

impl StoredBlockstore {
    pub fn new(store: Arc<dyn MetadataStore>, packs: Packs) -> Self {
        Self { store, packs }
    }
}

#[async_trait]
impl Blockstore for StoredBlockstore {
    async fn get(&self, cid: &Cid) -> io::Result<Option<Vec<u8>>> {
        let location = self
            .store
            .block_location(&cid.hash().to_bytes())
            .await
            .map_err(io::Error::other)?;
        let Some(location) = location else {
            return Ok(None);
        };
        let (packs, store, cid) = (self.packs.clone(), self.store.clone(), *cid);
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            let relocate = || {
                runtime
                    .block_on(store.block_location(&cid.hash().to_bytes()))
                    .map_err(io::Error::other)
            };
            let Some(block) = packs.read_relocating(&location, relocate)? else {
                return Ok(None);
            };
            // Storage could have rotted since it was written: never serve a block that lies.
            verify_block(&cid, &block).map_err(io::Error::other)?;
            Ok(Some(block))
        })
        .await
        .map_err(io::Error::other)?
    }

    async fn has(&self, cid: &Cid) -> io::Result<bool> {
        self.store
            .has_block(&cid.hash().to_bytes())
            .await
            .map_err(io::Error::other)
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
