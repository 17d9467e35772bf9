//! Reading blocks back as a graph: which blocks a block links to.
//!
//! Walks (CAR export in DFS order, completeness checks of imported CARs, the gateway) need
//! only this: the codecs UnixFS produces are dag-pb, whose links are explicit, and raw, which
//! has none.

use cid::Cid;

use crate::block::{DAG_PB, RAW};
use crate::pb::{self, DecodeError};

/// Why a block's links cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DagError {
    #[error("block {cid} uses codec {codec:#x}; only dag-pb (0x70) and raw (0x55) are supported")]
    UnsupportedCodec { cid: Cid, codec: u64 },
    #[error("block {cid}: {source}")]
    Decode { cid: Cid, source: DecodeError },
}

/// The CIDs `block` (named `cid`) links to, in link order.
pub fn links(cid: &Cid, block: &[u8]) -> Result<Vec<Cid>, DagError> {
    match cid.codec() {
        RAW => Ok(Vec::new()),
        DAG_PB => {
            let node =
                pb::decode_node(block).map_err(|source| DagError::Decode { cid: *cid, source })?;
            Ok(node.links.into_iter().map(|link| link.cid).collect())
        }
        codec => Err(DagError::UnsupportedCodec { cid: *cid, codec }),
    }
}
