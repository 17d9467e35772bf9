//! The node's blockstore is the store's blocks: the one place the IPFS node (`cairn-p2p`) and
//! the store meet, so that neither depends on the other.

use std::io;

use async_trait::async_trait;
use cairn_p2p::Blockstore;
use cairn_store::blocks::StoredBlocks;
use cairn_unixfs::Cid;

/// Stored blocks, as the node serves them over Bitswap and pins read them: each verified
/// against its CID (`cairn_store::blocks`, the reader everything shares).
pub struct NodeBlocks(pub StoredBlocks);

#[async_trait]
impl Blockstore for NodeBlocks {
    async fn get(&self, cid: &Cid) -> io::Result<Option<Vec<u8>>> {
        self.0.get(cid).await
    }

    async fn has(&self, cid: &Cid) -> io::Result<bool> {
        self.0.has(cid).await
    }

    async fn get_many(&self, cids: &[Cid], max_bytes: u64) -> io::Result<Vec<Option<Vec<u8>>>> {
        self.0.get_many(cids, max_bytes).await
    }
}
