//! Walking a stored DAG by its links, the one way the collector (what is live) and `fsck` (is
//! every live DAG whole) see it.

use std::collections::HashSet;
use std::io;

use cairn_unixfs::block::{BlockError, IDENTITY, RAW};
use cairn_unixfs::node::Node;
use cairn_unixfs::{BlockSource, Cid};

/// What a walk found wrong with a block of a live DAG.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Damage {
    /// Not in the block index.
    Missing,
    /// In the index, but storage cannot find its bytes (its pack is gone).
    Lost(String),
    /// Stored, but its bytes do not hash to its CID, or it is not the UnixFS its parent says.
    Corrupt(String),
}

/// Walk the DAG under `root` depth-first, adding each block's multihash to `visited` and not
/// going below a block visited before (DAGs share blocks). Raw leaves have no links: they are
/// read only when `read_leaves` (fsck checks them; the collector needs only their names, so
/// its I/O grows with the DAG's interior, not its bytes). Blocks inlined in their CID
/// (identity hashes) are stored nowhere and skipped. Each damaged block goes to `damaged`,
/// which says whether the walk goes on; the damage that stopped it is returned.
pub fn walk(
    blocks: &mut dyn BlockSource,
    root: &Cid,
    visited: &mut HashSet<Vec<u8>>,
    read_leaves: bool,
    damaged: &mut dyn FnMut(&Cid, &Damage) -> bool,
) -> io::Result<Option<(Cid, Damage)>> {
    let mut stack = vec![*root];
    while let Some(cid) = stack.pop() {
        if cid.hash().code() == IDENTITY || !visited.insert(cid.hash().to_bytes()) {
            continue;
        }
        if cid.codec() == RAW && !read_leaves {
            continue;
        }
        let damage = match blocks.get_block(&cid) {
            Ok(Some(block)) => match Node::decode(&cid, block) {
                Ok(node) => {
                    stack.extend(node.links().into_iter().map(|(link, _)| link));
                    continue;
                }
                Err(e) => Damage::Corrupt(e.to_string()),
            },
            Ok(None) => Damage::Missing,
            // The source verifies every block against its CID (`StoredBlocks`).
            Err(e) if is_block_error(&e) => Damage::Corrupt(e.to_string()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Damage::Lost(e.to_string()),
            Err(e) => return Err(e),
        };
        if !damaged(&cid, &damage) {
            return Ok(Some((cid, damage)));
        }
    }
    Ok(None)
}

/// The block's bytes are wrong, as opposed to storage failing to read them.
fn is_block_error(e: &io::Error) -> bool {
    e.get_ref()
        .is_some_and(|inner| inner.downcast_ref::<BlockError>().is_some())
}
