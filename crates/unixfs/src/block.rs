//! Blocks, links and where finished blocks go.
//!
//! The importer never keeps blocks: each one is handed to a [`BlockSink`] the moment it is final,
//! which is what keeps import memory independent of the file size.

use std::collections::HashMap;
use std::io;

use cid::Cid;
use multihash::Multihash;
use sha2::{Digest, Sha256, Sha512};

use crate::profile::CidVersion;

/// Multicodec code of dag-pb blocks (UnixFS nodes).
pub const DAG_PB: u64 = 0x70;
/// Multicodec code of raw blocks (raw leaves).
pub const RAW: u64 = 0x55;
/// Multihash code of sha2-256, the only hash the profiles use.
pub const SHA2_256: u64 = 0x12;
/// Multihash code of the identity "hash" (inline data), accepted when verifying.
pub const IDENTITY: u64 = 0x00;
/// Multihash codes of the other hashes blocks are verified with (the CARs of other tools).
pub const SHA2_512: u64 = 0x13;
pub const BLAKE3: u64 = 0x1e;

/// A link to a finished sub-DAG, as a parent node records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Link {
    pub cid: Cid,
    /// Cumulative size: the bytes of every block under (and including) the target.
    pub tsize: u64,
}

/// The CID of `data` as a block of codec `codec`, hashed with sha2-256.
///
/// CIDv0 can only name dag-pb blocks; the profiles never ask for a raw CIDv0.
pub fn block_cid(version: CidVersion, codec: u64, data: &[u8]) -> Cid {
    cid_from_digest(version, codec, &Sha256::digest(data))
}

/// Build the CID from a sha2-256 digest computed elsewhere (e.g. on another thread).
pub fn cid_from_digest(version: CidVersion, codec: u64, digest: &[u8]) -> Cid {
    // A 32-byte digest always fits the 64-byte multihash buffer.
    let hash = Multihash::<64>::wrap(SHA2_256, digest).expect("sha2-256 digest fits a multihash");
    match (version, codec) {
        (CidVersion::V0, DAG_PB) => Cid::new_v0(hash).expect("sha2-256 dag-pb is a valid CIDv0"),
        _ => Cid::new_v1(codec, hash),
    }
}

/// Why a block does not match the CID it was presented under.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockError {
    #[error("block {cid} does not hash to its CID")]
    HashMismatch { cid: Cid },
    #[error(
        "block {cid} uses multihash code {code:#x}; the hashes verified here are sha2-256, \
         sha2-512, blake3 (32 bytes) and identity"
    )]
    UnsupportedHash { cid: Cid, code: u64 },
}

/// Check that `data` is the block `cid` names.
pub fn verify_block(cid: &Cid, data: &[u8]) -> Result<(), BlockError> {
    let hash = cid.hash();
    let ok = match hash.code() {
        SHA2_256 => hash.digest() == Sha256::digest(data).as_slice(),
        SHA2_512 => hash.digest() == Sha512::digest(data).as_slice(),
        // blake3 digests may have any length; the 32 bytes everyone uses are the ones checked.
        BLAKE3 if hash.digest().len() == 32 => hash.digest() == blake3::hash(data).as_bytes(),
        IDENTITY => hash.digest() == data,
        code => return Err(BlockError::UnsupportedHash { cid: *cid, code }),
    };
    if ok {
        Ok(())
    } else {
        Err(BlockError::HashMismatch { cid: *cid })
    }
}

/// A block's bytes, in up to three pieces.
///
/// A dag-pb leaf is a few header bytes, the chunk, and a trailer. Handing it over in pieces
/// means the chunk is never copied just to be hashed or written (a copy costs ~15% of the
/// import speed at SHA-NI hashing rates).
#[derive(Clone, Copy, Debug)]
pub struct BlockBytes<'a> {
    parts: [&'a [u8]; 3],
}

impl<'a> BlockBytes<'a> {
    pub fn new(whole: &'a [u8]) -> Self {
        Self {
            parts: [whole, &[], &[]],
        }
    }

    pub fn from_parts(head: &'a [u8], body: &'a [u8], tail: &'a [u8]) -> Self {
        Self {
            parts: [head, body, tail],
        }
    }

    pub fn len(&self) -> usize {
        self.parts.iter().map(|p| p.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The byte at `at` of the whole block, wherever its piece is.
    pub fn byte(&self, mut at: usize) -> Option<u8> {
        for part in &self.parts {
            if at < part.len() {
                return Some(part[at]);
            }
            at -= part.len();
        }
        None
    }

    pub fn parts(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.parts.iter().copied().filter(|p| !p.is_empty())
    }

    pub fn to_vec(&self) -> Vec<u8> {
        self.parts.concat()
    }

    pub fn sha256(&self) -> [u8; 32] {
        let mut hasher = Sha256::new();
        for part in self.parts() {
            hasher.update(part);
        }
        hasher.finalize().into()
    }

    pub fn write_to(&self, out: &mut impl io::Write) -> io::Result<()> {
        self.parts().try_for_each(|part| out.write_all(part))
    }
}

/// Receives every block the importer finalises, children before their parents.
///
/// A sink may see the same block twice (identical chunks or files); storing it once is its job.
pub trait BlockSink {
    fn put_block(&mut self, cid: &Cid, block: BlockBytes<'_>) -> io::Result<()>;

    /// Many blocks, in order: a sink that asks its storage whether it holds each block asks
    /// once for all of them (a file's leaves come hashed in batches). One by one by default.
    fn put_blocks(&mut self, blocks: &[(Cid, BlockBytes<'_>)]) -> io::Result<()> {
        blocks
            .iter()
            .try_for_each(|(cid, block)| self.put_block(cid, *block))
    }

    /// A block of the DAG, `length` bytes, that storage already holds and that is not sent
    /// again (a CAR that leaves stored blocks out). A sink that stores blocks counts it.
    fn put_stored(&mut self, _cid: &Cid, _length: u64) -> io::Result<()> {
        Ok(())
    }
}

impl<S: BlockSink + ?Sized> BlockSink for &mut S {
    fn put_block(&mut self, cid: &Cid, block: BlockBytes<'_>) -> io::Result<()> {
        (**self).put_block(cid, block)
    }

    fn put_blocks(&mut self, blocks: &[(Cid, BlockBytes<'_>)]) -> io::Result<()> {
        (**self).put_blocks(blocks)
    }

    fn put_stored(&mut self, cid: &Cid, length: u64) -> io::Result<()> {
        (**self).put_stored(cid, length)
    }
}

/// Where blocks can be read back by CID (a walk's view of a store).
pub trait BlockSource {
    /// The block, or `None` when the source does not hold it.
    fn get_block(&mut self, cid: &Cid) -> io::Result<Option<Vec<u8>>>;

    /// The block's length, or `None` when the source does not hold it; a source that can tell
    /// without reading it should.
    fn block_size(&mut self, cid: &Cid) -> io::Result<Option<u64>> {
        Ok(self.get_block(cid)?.map(|block| block.len() as u64))
    }

    /// Whether the source holds the block; a source that can tell without reading it should.
    fn has_block(&mut self, cid: &Cid) -> io::Result<bool> {
        Ok(self.get_block(cid)?.is_some())
    }

    /// A hint that these blocks are wanted next, so a source can look them up in one go.
    fn prefetch(&mut self, _cids: &[Cid]) -> io::Result<()> {
        Ok(())
    }

    /// Whether the source knows, without reading it, that the block links to nothing (a
    /// dag-pb leaf, as recorded when it was stored): a walk that needs only the blocks' names
    /// need not read it. `false` when it cannot tell.
    fn known_without_links(&mut self, _cid: &Cid) -> io::Result<bool> {
        Ok(false)
    }
}

impl<S: BlockSource + ?Sized> BlockSource for &mut S {
    fn get_block(&mut self, cid: &Cid) -> io::Result<Option<Vec<u8>>> {
        (**self).get_block(cid)
    }

    fn has_block(&mut self, cid: &Cid) -> io::Result<bool> {
        (**self).has_block(cid)
    }

    fn prefetch(&mut self, cids: &[Cid]) -> io::Result<()> {
        (**self).prefetch(cids)
    }

    fn known_without_links(&mut self, cid: &Cid) -> io::Result<bool> {
        (**self).known_without_links(cid)
    }
}

/// Drops every block: what `cairn cid` and `ipfs add --only-hash` need.
#[derive(Debug, Default, Clone, Copy)]
pub struct DiscardBlocks;

impl BlockSink for DiscardBlocks {
    fn put_block(&mut self, _: &Cid, _: BlockBytes<'_>) -> io::Result<()> {
        Ok(())
    }
}

/// Keeps every distinct block in memory, in the order first seen. For tests and small DAGs.
#[derive(Debug, Default, Clone)]
pub struct MemoryBlocks {
    blocks: HashMap<Cid, Vec<u8>>,
    order: Vec<Cid>,
}

impl MemoryBlocks {
    pub fn get(&self, cid: &Cid) -> Option<&[u8]> {
        self.blocks.get(cid).map(Vec::as_slice)
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Blocks in the order they were first put.
    pub fn iter(&self) -> impl Iterator<Item = (&Cid, &[u8])> {
        self.order
            .iter()
            .map(|cid| (cid, self.blocks[cid].as_slice()))
    }
}

impl BlockSink for MemoryBlocks {
    fn put_block(&mut self, cid: &Cid, block: BlockBytes<'_>) -> io::Result<()> {
        if !self.blocks.contains_key(cid) {
            self.blocks.insert(*cid, block.to_vec());
            self.order.push(*cid);
        }
        Ok(())
    }
}

impl BlockSource for MemoryBlocks {
    fn get_block(&mut self, cid: &Cid) -> io::Result<Option<Vec<u8>>> {
        Ok(self.blocks.get(cid).cloned())
    }

    fn has_block(&mut self, cid: &Cid) -> io::Result<bool> {
        Ok(self.blocks.contains_key(cid))
    }
}

/// Holds nothing: where nothing is stored yet (a CAR checked on its own).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoBlocks;

impl BlockSource for NoBlocks {
    fn get_block(&mut self, _: &Cid) -> io::Result<Option<Vec<u8>>> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_raw_block_has_the_well_known_cid() {
        let cid = block_cid(CidVersion::V1, RAW, b"");
        assert_eq!(
            cid.to_string(),
            "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"
        );
        verify_block(&cid, b"").unwrap();
        assert_eq!(
            verify_block(&cid, b"x"),
            Err(BlockError::HashMismatch { cid })
        );
    }
}
