//! Fuzz bodies for `cairn-unixfs`: what one fuzz input does. Shared by the
//! fuzz targets (`fuzz/fuzz_targets/unixfs_*.rs`) and the stable replay test
//! (`crates/unixfs/tests/fuzz_corpus.rs`), so a regression input replays the very same code.
//! Each body returns what it decoded or why not; a panic (or a broken assertion) is the bug.

use crate::block::{block_cid, DAG_PB, RAW};
use crate::ipld;
use crate::node::{hamt_prefix_width, Node};
use crate::pb::{decode_node, UnixFsData};
use crate::profile::{DirSizeEstimate, LeafKind};
use crate::read::{ReadError, ReadLimits, Reader, Repeats};
use crate::{BlockBytes, BlockSink, BlockSource, Cid, CidVersion, MemoryBlocks, Profile};

/// Tight enough that one input is a few milliseconds at most, whatever its DAG repeats.
pub const READ_LIMITS: ReadLimits = ReadLimits {
    max_depth: 64,
    max_blocks: 512,
    max_bytes: 1 << 20,
};

/// `unixfs_node`: the first byte picks the CID (bit 2 set: another codec, dag-cbor, dag-json,
/// cbor or json by bits 3 and 4; else bit 0: raw, else dag-pb; bit 1: CIDv0 for dag-pb), the
/// rest is the block. Decodes it as protobuf, as UnixFS `Data`, and as a `Node`, then checks
/// every link's rule against the node itself (any kind against any rule); a block of another
/// codec is followed along a path too.
pub fn unixfs_node(input: &[u8]) -> Result<usize, String> {
    let (&selector, block) = input.split_first().ok_or("empty input")?;
    let (version, codec) = match selector & 7 {
        4..=7 => {
            let codecs = [ipld::DAG_CBOR, ipld::DAG_JSON, ipld::CBOR, ipld::JSON];
            (CidVersion::V1, codecs[usize::from(selector >> 3) & 3])
        }
        1 | 3 => (CidVersion::V1, RAW),
        2 => (CidVersion::V0, DAG_PB),
        _ => (CidVersion::V1, DAG_PB),
    };
    if selector & 4 != 0 {
        let cid = block_cid(version, codec, block);
        let _ = ipld::follow(&cid, block, &["a", "0", "b"]);
    }
    if let Ok(pb) = decode_node(block) {
        if let Some(data) = &pb.data {
            let _ = UnixFsData::decode(data);
        }
    }
    let cid = block_cid(version, codec, block);
    let node = Node::decode(&cid, block.to_vec()).map_err(|e| e.to_string())?;
    let kind = node.kind();
    let _ = node.is_directory();
    if let Node::HamtShard { fanout, .. } = &node {
        let _ = hamt_prefix_width(*fanout);
    }
    let links = node.links();
    for (link, rule) in &links {
        if let Some(rule) = rule {
            let _ = rule.check(link, kind);
        }
    }
    Ok(links.len())
}

/// The input of `unixfs_reader`, for seeds: `op` (see [`unixfs_reader`]), a byte range, the
/// path to resolve, and the blocks (the root first).
pub fn reader_input(op: u8, range: (u16, u16), path: &str, blocks: &[&[u8]]) -> Vec<u8> {
    let mut out = vec![op];
    out.extend_from_slice(&range.0.to_le_bytes());
    out.extend_from_slice(&range.1.to_le_bytes());
    for frame in std::iter::once(path.as_bytes()).chain(blocks.iter().copied()) {
        let len = u16::try_from(frame.len()).expect("seed frames are under 64 KiB");
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(frame);
    }
    out
}

/// Blocks from the input: each under its true CIDs (v1 raw, v1 and v0 dag-pb); when
/// `lenient`, a CID none of them has is answered by block `digest[0] % n` instead, so a link
/// the fuzzer wrote (it cannot forge sha2-256) still leads somewhere, cycles included: the
/// reader does not verify blocks (that is its source's job), and its budget must hold anyway.
struct FuzzBlocks {
    exact: MemoryBlocks,
    all: Vec<Vec<u8>>,
    lenient: bool,
}

impl BlockSource for FuzzBlocks {
    fn get_block(&mut self, cid: &Cid) -> std::io::Result<Option<Vec<u8>>> {
        if let Some(block) = self.exact.get(cid) {
            return Ok(Some(block.to_vec()));
        }
        if !self.lenient || self.all.is_empty() {
            return Ok(None);
        }
        let pick = cid.hash().digest().first().copied().unwrap_or(0) as usize;
        Ok(Some(self.all[pick % self.all.len()].clone()))
    }
}

/// Splits off a frame: a u16 LE length and that many bytes (fewer if the input ends).
fn frame<'a>(input: &mut &'a [u8]) -> Option<&'a [u8]> {
    let (len, rest) = input.split_first_chunk::<2>()?;
    let len = usize::from(u16::from_le_bytes(*len)).min(rest.len());
    let (frame, rest) = rest.split_at(len);
    *input = rest;
    Some(frame)
}

/// `unixfs_reader`: byte 0 is the op (bits 0-1: resolve the path then list or read what it
/// leads to, list the root, read the byte range, walk; bit 2: walk with repeats; bit 3: the root
/// is raw; bit 4: lenient source), bytes 1-4 the range (start, length: u16 LE), then frames
/// (u16 LE length, bytes): the path ('/'-separated), then the blocks, the root first.
/// Everything runs under [`READ_LIMITS`]; the reader must end, and never hand out more bytes
/// than asked, nor visit more blocks than its budget.
pub fn unixfs_reader(input: &[u8]) -> Result<u64, ReadError> {
    let Some((head, mut rest)) = input.split_first_chunk::<5>() else {
        return Ok(0);
    };
    let op = head[0];
    let start = u64::from(u16::from_le_bytes([head[1], head[2]]));
    let len = u64::from(u16::from_le_bytes([head[3], head[4]]));
    let path_bytes = frame(&mut rest).unwrap_or_default();
    let path_text = String::from_utf8_lossy(path_bytes);
    let path: Vec<&str> = path_text.split('/').filter(|s| !s.is_empty()).collect();
    let mut source = FuzzBlocks {
        exact: MemoryBlocks::default(),
        all: Vec::new(),
        lenient: op & 0x10 != 0,
    };
    while let Some(block) = frame(&mut rest) {
        let cids = [
            block_cid(CidVersion::V1, RAW, block),
            block_cid(CidVersion::V1, DAG_PB, block),
            block_cid(CidVersion::V0, DAG_PB, block),
        ];
        for cid in &cids {
            source.exact.put_block(cid, BlockBytes::new(block))?;
        }
        source.all.push(block.to_vec());
    }
    let Some(root_block) = source.all.first().cloned() else {
        return Ok(0);
    };
    let codec = if op & 0x08 != 0 { RAW } else { DAG_PB };
    let root = block_cid(CidVersion::V1, codec, &root_block);
    let mut reader = Reader::new(source, READ_LIMITS);
    let mut delivered = 0u64;
    match op & 3 {
        0 => {
            let resolved = reader.resolve(&root, &path)?;
            if resolved.node.is_directory() {
                delivered = reader.list(&resolved.node)?.len() as u64;
            } else if let Node::File { .. } = resolved.node {
                delivered = read_range(&mut reader, &resolved.cid, start, len)?;
            }
        }
        1 => {
            let (_, node) = reader.node(&root)?;
            delivered = reader.list(&node)?.len() as u64;
        }
        2 => {
            delivered = read_range(&mut reader, &root, start, len)?;
            // What the root says it holds is what a complete read of the range gives.
            if let Ok(Node::File { size, .. }) = Node::decode(&root, root_block) {
                let expected = (start + len).min(size).saturating_sub(start);
                assert_eq!(delivered, expected, "read_range gave a wrong byte count");
            }
        }
        _ => {
            let repeats = if op & 4 != 0 {
                Repeats::Visit
            } else {
                Repeats::Skip
            };
            reader.walk(&root, repeats, &mut |_, _| {
                delivered += 1;
                Ok(())
            })?;
            assert!(delivered <= READ_LIMITS.max_blocks, "walk went over budget");
        }
    }
    Ok(delivered)
}

/// Read `start..start + len` of the file at `cid`, checking no more bytes come than asked.
fn read_range<S: BlockSource>(
    reader: &mut Reader<S>,
    cid: &Cid,
    start: u64,
    len: u64,
) -> Result<u64, ReadError> {
    let mut delivered = 0u64;
    let result = reader.read_range(cid, start..start + len, &mut |_, _| Ok(()), &mut |bytes| {
        delivered += bytes.len() as u64;
        Ok(())
    });
    assert!(
        delivered <= len,
        "read_range gave {delivered} bytes of {len} asked"
    );
    result.map(|()| delivered)
}

/// Small chunks, few links and a low HAMT threshold: every node shape in a few KiB.
pub fn tiny_profile(cid_version: CidVersion, leaves: LeafKind) -> Profile {
    Profile {
        name: "fuzz-seed",
        cid_version,
        leaves,
        chunk_size: 32,
        max_links: 4,
        hamt_threshold: 200,
        dir_size_estimate: DirSizeEstimate::BlockBytes,
        hamt_fanout: 16,
    }
}
