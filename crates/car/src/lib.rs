//! CAR v1 (<https://ipld.io/specs/transport/car/carv1/>): the archive format IPFS moves DAGs in.
//!
//! - [`CarWriter`]: writes the header, then blocks as they come; it is a [`BlockSink`], so an
//!   importer can stream into it.
//! - [`CarReader`]: reads a CAR from any `Read`, with limits on the header and block sizes
//!   (CARs come from strangers), and verifies every block against its CID before returning it.
//! - [`import_complete`]: imports a CAR as one complete, well-formed DAG: a single root,
//!   every block verified, every link present in the CAR or already stored, every UnixFS node
//!   keeping the UnixFS rules (`cairn_unixfs::node`) and every block of another codec
//!   well formed in its own (`cairn_unixfs::ipld`), so what is stored is what a reader will
//!   serve.
//! - [`export_dfs`]: writes a DAG from a [`BlockSource`] in depth-first pre-order, each block
//!   once, which is the order the trustless gateway and `ipfs-car unpack` stream best.
//!
//! The header is DAG-CBOR `{"roots": [CID...], "version": 1}`. It is encoded and parsed by hand:
//! that one fixed shape does not justify a general CBOR dependency. The writing half,
//! [`cbor`], also writes the IPNI announce (`cairn-p2p`).

use std::collections::{HashMap, HashSet};
use std::fmt::Display;
use std::io::{self, Read, Write};

use cairn_unixfs::block::{verify_block, BlockError, RAW};
use cairn_unixfs::node::{ChildRule, Node, NodeError, NodeKind};
use cairn_unixfs::read::{ReadError, ReadLimits, Reader, Repeats};
use cairn_unixfs::{BlockBytes, BlockSink, BlockSource, Cid};
use cbor::{CID_TAG, MAJOR_ARRAY, MAJOR_BYTES, MAJOR_MAP, MAJOR_TAG, MAJOR_TEXT, MAJOR_UINT};

pub mod cbor;
/// The bodies of the fuzz targets that feed this crate untrusted bytes (`fuzz/`), shared with
/// the stable replay of their corpus (`tests/fuzz_corpus.rs`); only with the `fuzz` feature.
#[cfg(feature = "fuzz")]
pub mod fuzz;
/// Hostile DAGs, as an attacker would upload them, for tests; only with the `hostile` feature.
#[cfg(feature = "hostile")]
pub mod hostile;

/// Limits for reading untrusted CARs.
#[derive(Clone, Copy, Debug)]
pub struct CarLimits {
    pub max_header_bytes: u64,
    /// Largest block accepted. IPFS peers refuse blocks over 2 MiB, so larger ones could never
    /// be fetched by anyone.
    pub max_block_bytes: u64,
}

impl Default for CarLimits {
    fn default() -> Self {
        Self {
            max_header_bytes: 64 * 1024,
            max_block_bytes: 2 * 1024 * 1024,
        }
    }
}

/// Why a CAR cannot be read. Offsets are byte offsets in the CAR stream.
#[derive(Debug, thiserror::Error)]
pub enum CarError {
    #[error("CAR header is {len} bytes; the limit is {limit}")]
    HeaderTooLarge { len: u64, limit: u64 },
    #[error("invalid CAR header: {0}")]
    InvalidHeader(String),
    #[error("CAR version {0} is not supported (only CARv1)")]
    UnsupportedVersion(u64),
    #[error("block at offset {offset} is {len} bytes; the limit is {limit}")]
    BlockTooLarge { offset: u64, len: u64, limit: u64 },
    #[error("invalid CID at offset {offset}: {reason}")]
    InvalidCid { offset: u64, reason: String },
    #[error("CAR is truncated at offset {offset}")]
    Truncated { offset: u64 },
    #[error("at offset {offset}: {source}")]
    Block { offset: u64, source: BlockError },
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Why a CAR is not one complete DAG.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Car(#[from] CarError),
    #[error("the CAR header must name exactly one root, not {0}")]
    RootCount(usize),
    #[error("the root {0} is neither in the CAR nor already stored")]
    MissingRoot(Cid),
    #[error("the DAG is incomplete: block {missing}, linked from {parent}, is neither in the CAR nor already stored")]
    Incomplete { missing: String, parent: String },
    #[error("the CAR links to more than {0} distinct blocks")]
    TooManyLinks(usize),
    /// Boxed, as below: a CID and a message would make every `Result` here large.
    #[error(transparent)]
    Node(Box<NodeError>),
    #[error("block {block} is in the CAR as {held}, but {parent} links to it as {linked}")]
    CodecMismatch {
        block: String,
        parent: String,
        held: String,
        linked: String,
    },
    #[error("{source} (it is linked from {parent})")]
    Link {
        parent: String,
        source: Box<NodeError>,
    },
}

impl From<NodeError> for ImportError {
    fn from(e: NodeError) -> Self {
        Self::Node(Box::new(e))
    }
}

/// Most distinct link targets tracked while importing (bounds memory on hostile CARs).
pub const MAX_IMPORT_LINKS: usize = 1_000_000;

/// Blocks read ahead and handed to the sink together, at most this many or this many bytes
/// (past the block that reaches it): storage is asked about the batch once, and the bytes
/// held are bounded whatever the CAR's blocks.
const IMPORT_BATCH_BLOCKS: usize = 64;
const IMPORT_BATCH_BYTES: usize = 4 << 20;

/// Import every block of `reader` into `sink` and check that the header's single root names a
/// complete DAG whose every node keeps the UnixFS rules, and fits what its parent says of it
/// (a file's `blocksizes`, a HAMT's sub-shards). `stored` holds what storage already has: a
/// block missing from the CAR must be there. Returns the root. The sink may have received
/// blocks when an error is returned: the caller discards them (a pack writer never sealed).
pub fn import_complete<R: Read>(
    mut reader: CarReader<R>,
    sink: &mut dyn BlockSink,
    stored: &mut dyn BlockSource,
) -> Result<Cid, ImportError> {
    let root = match reader.roots() {
        [root] => *root,
        roots => return Err(ImportError::RootCount(roots.len())),
    };
    // What each block of the CAR is, by multihash (a CID's version does not change a block),
    // and the codec it was decoded as.
    let mut present: HashMap<Vec<u8>, (u64, NodeKind)> = HashMap::new();
    // Link target -> one block that links to it, for the error message.
    let mut linked: HashMap<Cid, Cid> = HashMap::new();
    // (child, parent, what the parent says the child is).
    let mut rules: Vec<(Cid, Cid, ChildRule)> = Vec::new();
    // Blocks reach the sink a batch at a time: one question to storage covers many.
    let mut batch: Vec<(Cid, Vec<u8>)> = Vec::new();
    let mut batch_bytes = 0;
    loop {
        let next = reader.next_block()?;
        let ended = next.is_none();
        if let Some((cid, block)) = next {
            batch_bytes += block.len();
            batch.push((cid, block));
        }
        let full = batch.len() == IMPORT_BATCH_BLOCKS || batch_bytes >= IMPORT_BATCH_BYTES;
        if !(full || ended) {
            continue;
        }
        let blocks: Vec<(Cid, BlockBytes)> = batch
            .iter()
            .map(|(cid, block)| (*cid, BlockBytes::new(block)))
            .collect();
        sink.put_blocks(&blocks).map_err(CarError::Io)?;
        for (cid, block) in batch.drain(..) {
            let node = Node::decode(&cid, block)?;
            for (link, rule) in node.links() {
                linked.entry(link).or_insert(cid);
                if let Some(rule) = rule {
                    rules.push((link, cid, rule));
                }
            }
            if linked.len() + rules.len() > MAX_IMPORT_LINKS {
                return Err(ImportError::TooManyLinks(MAX_IMPORT_LINKS));
            }
            present.insert(cid.hash().to_bytes(), (cid.codec(), node.kind()));
        }
        batch_bytes = 0;
        if ended {
            break;
        }
    }
    // The kind of a block the CAR holds, as `link` (from `parent`) reads it. Storage is keyed
    // by multihash, so a link under another codec would read the same bytes as something
    // else than what was checked here (raw bytes as a dag-pb node): no importer writes such a
    // DAG, and it is refused rather than stored unreadable.
    let held = |link: &Cid, parent: &dyn Display| -> Result<Option<NodeKind>, ImportError> {
        match present.get(&link.hash().to_bytes()) {
            Some(&(codec, _)) if codec != link.codec() => Err(ImportError::CodecMismatch {
                block: link.to_string(),
                parent: parent.to_string(),
                held: codec_name(codec),
                linked: codec_name(link.codec()),
            }),
            found => Ok(found.map(|&(_, kind)| kind)),
        }
    };
    // What the CAR leaves out must be stored; it is part of the DAG all the same (its size,
    // and the blocks the commit checks), found through the index.
    let mut walked = HashSet::new();
    if held(&root, &"the CAR header")?.is_none() {
        if !stored.has_block(&root).map_err(CarError::Io)? {
            return Err(ImportError::MissingRoot(root));
        }
        put_stored_dag(&root, &root, &present, stored, sink, &mut walked)?;
    }
    // A link the CAR does not hold and storage does not either is `Incomplete`.
    for (link, parent) in &linked {
        held(link, parent)?;
        put_stored_dag(link, parent, &present, stored, sink, &mut walked)?;
    }
    for (child, parent, rule) in rules {
        let kind = match held(&child, &parent)? {
            Some(kind) => kind,
            // Already stored, so it kept the rules itself; what it is still has to fit here.
            None => {
                let block = stored
                    .get_block(&child)
                    .map_err(CarError::Io)?
                    .ok_or_else(|| ImportError::Incomplete {
                        missing: child.to_string(),
                        parent: parent.to_string(),
                    })?;
                Node::decode(&child, block)?.kind()
            }
        };
        rule.check(&child, kind)
            .map_err(|source| ImportError::Link {
                parent: parent.to_string(),
                source: Box::new(source),
            })?;
    }
    Ok(root)
}

/// Hand `sink` every block of the stored DAG under `top` (linked from `parent`) that the CAR
/// does not hold, with its length. Raw leaves are sized from `stored` without being read;
/// other blocks are read for their links. At most [`MAX_IMPORT_LINKS`] blocks in all.
fn put_stored_dag(
    top: &Cid,
    parent: &Cid,
    present: &HashMap<Vec<u8>, (u64, NodeKind)>,
    stored: &mut dyn BlockSource,
    sink: &mut dyn BlockSink,
    walked: &mut HashSet<Vec<u8>>,
) -> Result<(), ImportError> {
    let mut stack = vec![(*top, *parent)];
    while let Some((cid, parent)) = stack.pop() {
        let multihash = cid.hash().to_bytes();
        // In the CAR, or counted already.
        if present.contains_key(&multihash) || !walked.insert(multihash) {
            continue;
        }
        if walked.len() > MAX_IMPORT_LINKS {
            return Err(ImportError::TooManyLinks(MAX_IMPORT_LINKS));
        }
        let missing = || ImportError::Incomplete {
            missing: cid.to_string(),
            parent: parent.to_string(),
        };
        if cid.codec() == RAW {
            let length = stored
                .block_size(&cid)
                .map_err(CarError::Io)?
                .ok_or_else(missing)?;
            sink.put_stored(&cid, length).map_err(CarError::Io)?;
            continue;
        }
        let block = stored
            .get_block(&cid)
            .map_err(CarError::Io)?
            .ok_or_else(missing)?;
        sink.put_stored(&cid, block.len() as u64)
            .map_err(CarError::Io)?;
        let node = Node::decode(&cid, block)?;
        stack.extend(node.links().into_iter().map(|(link, _)| (link, cid)));
    }
    Ok(())
}

fn codec_name(codec: u64) -> String {
    cairn_unixfs::ipld::codec_name(codec).map_or_else(|| format!("codec {codec:#x}"), str::to_owned)
}

/// The encoded CAR v1 header naming `roots`.
pub fn header(roots: &[Cid]) -> Vec<u8> {
    let mut cbor = Vec::new();
    cbor::head(&mut cbor, MAJOR_MAP, 2);
    // DAG-CBOR orders map keys by length first: "roots" before "version".
    cbor::head(&mut cbor, MAJOR_TEXT, 5);
    cbor.extend_from_slice(b"roots");
    cbor::head(&mut cbor, MAJOR_ARRAY, roots.len() as u64);
    for root in roots {
        cbor::cid(&mut cbor, root);
    }
    cbor::head(&mut cbor, MAJOR_TEXT, 7);
    cbor.extend_from_slice(b"version");
    cbor::head(&mut cbor, MAJOR_UINT, 1);
    let mut out = Vec::with_capacity(cbor.len() + 2);
    put_varint(&mut out, cbor.len() as u64);
    out.extend_from_slice(&cbor);
    out
}

/// Streams a CAR v1: header first, then each block as it is written.
pub struct CarWriter<W: Write> {
    out: W,
    bytes: u64,
}

impl<W: Write> CarWriter<W> {
    pub fn new(mut out: W, roots: &[Cid]) -> io::Result<Self> {
        let header = header(roots);
        out.write_all(&header)?;
        Ok(Self {
            out,
            bytes: header.len() as u64,
        })
    }

    pub fn write_block(&mut self, cid: &Cid, block: BlockBytes<'_>) -> io::Result<()> {
        let cid_bytes = cid.to_bytes();
        let mut prefix = Vec::with_capacity(10 + cid_bytes.len());
        put_varint(&mut prefix, (cid_bytes.len() + block.len()) as u64);
        prefix.extend_from_slice(&cid_bytes);
        self.out.write_all(&prefix)?;
        block.write_to(&mut self.out)?;
        self.bytes += (prefix.len() + block.len()) as u64;
        Ok(())
    }

    /// Bytes written so far, header included.
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

impl<W: Write> BlockSink for CarWriter<W> {
    fn put_block(&mut self, cid: &Cid, block: BlockBytes<'_>) -> io::Result<()> {
        self.write_block(cid, block)
    }
}

/// Write the DAG under `root` from `source` as a CAR, in depth-first pre-order, each distinct
/// block once. Returns the number of blocks written. For DAGs the caller built: no budget.
pub fn export_dfs<W: Write>(
    root: &Cid,
    source: &mut dyn BlockSource,
    out: &mut CarWriter<W>,
) -> Result<u64, ReadError> {
    let mut written = 0;
    Reader::new(source, ReadLimits::UNLIMITED).walk(root, Repeats::Skip, &mut |cid, block| {
        written += 1;
        out.write_block(cid, BlockBytes::new(block))
    })?;
    Ok(written)
}

/// Reads and verifies a CAR v1 stream.
pub struct CarReader<R: Read> {
    input: R,
    roots: Vec<Cid>,
    limits: CarLimits,
    offset: u64,
}

impl<R: Read> CarReader<R> {
    /// Read the header; blocks follow through [`CarReader::next_block`].
    pub fn new(mut input: R, limits: CarLimits) -> Result<Self, CarError> {
        let len = read_varint(&mut input)?.ok_or(CarError::Truncated { offset: 0 })?;
        if len > limits.max_header_bytes {
            return Err(CarError::HeaderTooLarge {
                len,
                limit: limits.max_header_bytes,
            });
        }
        let mut cbor = vec![0; len as usize];
        read_exact_or_truncated(&mut input, &mut cbor, 0)?;
        let roots = parse_header(&cbor)?;
        Ok(Self {
            input,
            roots,
            limits,
            offset: varint_len(len) + len,
        })
    }

    pub fn roots(&self) -> &[Cid] {
        &self.roots
    }

    /// Bytes consumed so far (for progress reporting).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next block, verified against its CID; `None` at a clean end of stream.
    pub fn next_block(&mut self) -> Result<Option<(Cid, Vec<u8>)>, CarError> {
        let offset = self.offset;
        let Some(len) = read_varint(&mut self.input)? else {
            return Ok(None);
        };
        // Room for the CID in front of the block (a sha2-256 CIDv1 is 36 bytes).
        let limit = self.limits.max_block_bytes + 128;
        if len > limit {
            return Err(CarError::BlockTooLarge {
                offset,
                len,
                limit: self.limits.max_block_bytes,
            });
        }
        let mut section = vec![0; len as usize];
        read_exact_or_truncated(&mut self.input, &mut section, offset)?;
        let mut cursor = &section[..];
        let cid = Cid::read_bytes(&mut cursor).map_err(|e| CarError::InvalidCid {
            offset,
            reason: e.to_string(),
        })?;
        let block = cursor.to_vec();
        if block.len() as u64 > self.limits.max_block_bytes {
            return Err(CarError::BlockTooLarge {
                offset,
                len: block.len() as u64,
                limit: self.limits.max_block_bytes,
            });
        }
        verify_block(&cid, &block).map_err(|source| CarError::Block { offset, source })?;
        self.offset += varint_len(len) + len;
        Ok(Some((cid, block)))
    }
}

impl<R: Read> Iterator for CarReader<R> {
    type Item = Result<(Cid, Vec<u8>), CarError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_block().transpose()
    }
}

/// A cursor over the header's CBOR that understands exactly the shapes a CAR header uses.
struct Cbor<'a>(&'a [u8]);

impl<'a> Cbor<'a> {
    fn head(&mut self) -> Result<(u8, u64), CarError> {
        let (&first, rest) = self
            .0
            .split_first()
            .ok_or_else(|| invalid("header ends early"))?;
        self.0 = rest;
        let (major, info) = (first >> 5, first & 0x1f);
        let value = match info {
            0..=23 => u64::from(info),
            24..=27 => {
                let n = 1usize << (info - 24);
                let bytes = self.take(n)?;
                bytes.iter().fold(0u64, |v, b| (v << 8) | u64::from(*b))
            }
            _ => return Err(invalid("indefinite lengths are not DAG-CBOR")),
        };
        Ok((major, value))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], CarError> {
        if self.0.len() < n {
            return Err(invalid("header ends early"));
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }

    fn expect(&mut self, major: u8, what: &str) -> Result<u64, CarError> {
        match self.head()? {
            (m, value) if m == major => Ok(value),
            _ => Err(invalid(&format!("expected {what}"))),
        }
    }
}

fn invalid(reason: &str) -> CarError {
    CarError::InvalidHeader(reason.to_owned())
}

fn parse_header(bytes: &[u8]) -> Result<Vec<Cid>, CarError> {
    let mut cbor = Cbor(bytes);
    let entries = cbor.expect(MAJOR_MAP, "a map")?;
    let (mut roots, mut version) = (None, None);
    for _ in 0..entries {
        let key_len = cbor.expect(MAJOR_TEXT, "a text key")?;
        let key = cbor.take(key_len as usize)?;
        match key {
            b"version" => version = Some(cbor.expect(MAJOR_UINT, "an integer version")?),
            b"roots" => {
                let count = cbor.expect(MAJOR_ARRAY, "an array of roots")?;
                let mut list = Vec::new();
                for _ in 0..count {
                    if cbor.expect(MAJOR_TAG, "a CID (tag 42)")? != CID_TAG {
                        return Err(invalid("root is not a CID (tag 42)"));
                    }
                    let len = cbor.expect(MAJOR_BYTES, "CID bytes")?;
                    let bytes = cbor.take(len as usize)?;
                    let cid = match bytes.split_first() {
                        Some((0, cid)) => {
                            Cid::try_from(cid).map_err(|e| invalid(&format!("root CID: {e}")))?
                        }
                        _ => return Err(invalid("root CID lacks the 0x00 prefix")),
                    };
                    list.push(cid);
                }
                roots = Some(list);
            }
            other => {
                return Err(invalid(&format!(
                    "unexpected key {:?}",
                    String::from_utf8_lossy(other)
                )))
            }
        }
    }
    match version {
        Some(1) => {}
        Some(v) => return Err(CarError::UnsupportedVersion(v)),
        None => return Err(invalid("no version")),
    }
    if !cbor.0.is_empty() {
        return Err(invalid("trailing bytes after the header"));
    }
    roots.ok_or_else(|| invalid("no roots"))
}

fn put_varint(out: &mut Vec<u8>, value: u64) {
    let mut buf = unsigned_varint::encode::u64_buffer();
    out.extend_from_slice(unsigned_varint::encode::u64(value, &mut buf));
}

fn varint_len(value: u64) -> u64 {
    let mut buf = unsigned_varint::encode::u64_buffer();
    unsigned_varint::encode::u64(value, &mut buf).len() as u64
}

/// A varint, or `None` at a clean end of stream (no byte of it read).
fn read_varint(input: &mut impl Read) -> Result<Option<u64>, CarError> {
    let mut first = [0u8; 1];
    loop {
        match input.read(&mut first) {
            Ok(0) => return Ok(None),
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        }
    }
    let mut value = u64::from(first[0] & 0x7f);
    let mut byte = first[0];
    let mut shift = 7;
    while byte & 0x80 != 0 {
        if shift > 63 {
            return Err(invalid("varint overflows 64 bits"));
        }
        let mut next = [0u8; 1];
        read_exact_or_truncated(input, &mut next, 0)?;
        byte = next[0];
        value |= u64::from(byte & 0x7f) << shift;
        shift += 7;
    }
    Ok(Some(value))
}

fn read_exact_or_truncated(
    input: &mut impl Read,
    buf: &mut [u8],
    offset: u64,
) -> Result<(), CarError> {
    input.read_exact(buf).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => CarError::Truncated { offset },
        _ => CarError::Io(e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_unixfs::{FileImporter, MemoryBlocks, NoBlocks, Profile};

    fn sample() -> (Cid, MemoryBlocks) {
        let profile = Profile {
            chunk_size: 10,
            max_links: 3,
            ..Profile::UNIXFS_V1_2025
        };
        let mut blocks = MemoryBlocks::default();
        let mut importer = FileImporter::new(&profile, &mut blocks);
        importer.push(&[1u8; 95]).unwrap();
        (importer.finish().unwrap().cid, blocks)
    }

    fn car_of(root: &Cid, blocks: &mut MemoryBlocks) -> Vec<u8> {
        let mut writer = CarWriter::new(Vec::new(), &[*root]).unwrap();
        export_dfs(root, blocks, &mut writer).unwrap();
        writer.into_inner()
    }

    #[test]
    fn dfs_export_starts_at_the_root_and_writes_identical_leaves_once() {
        let (root, mut blocks) = sample();
        let car = car_of(&root, &mut blocks);
        let mut reader = CarReader::new(&car[..], CarLimits::default()).unwrap();
        assert_eq!(reader.roots(), [root]);
        let read: Vec<_> = reader.by_ref().map(Result::unwrap).collect();
        assert_eq!(read[0].0, root);
        // 9 identical full leaves, 1 short leaf, and the internal nodes, each once.
        assert_eq!(read.len(), blocks.len());
    }

    #[test]
    fn a_flipped_byte_in_a_block_is_caught() {
        let (root, mut blocks) = sample();
        let mut car = car_of(&root, &mut blocks);
        let last = car.len() - 1;
        car[last] ^= 1;
        let result: Result<Vec<_>, _> = CarReader::new(&car[..], CarLimits::default())
            .unwrap()
            .collect();
        assert!(matches!(
            result,
            Err(CarError::Block {
                source: BlockError::HashMismatch { .. },
                ..
            })
        ));
    }

    #[test]
    fn truncation_and_oversized_sections_are_reported() {
        let (root, mut blocks) = sample();
        let car = car_of(&root, &mut blocks);
        let cut: Result<Vec<_>, _> = CarReader::new(&car[..car.len() - 3], CarLimits::default())
            .unwrap()
            .collect();
        assert!(matches!(cut, Err(CarError::Truncated { .. })), "{cut:?}");

        let tiny = CarLimits {
            max_block_bytes: 4,
            ..CarLimits::default()
        };
        let big: Result<Vec<_>, _> = CarReader::new(&car[..], tiny).unwrap().collect();
        assert!(
            matches!(big, Err(CarError::BlockTooLarge { .. })),
            "{big:?}"
        );

        let small_header = CarLimits {
            max_header_bytes: 8,
            ..CarLimits::default()
        };
        assert!(matches!(
            CarReader::new(&car[..], small_header),
            Err(CarError::HeaderTooLarge { .. })
        ));
    }

    #[test]
    fn import_accepts_a_complete_dag_and_names_what_is_missing() {
        let (root, mut blocks) = sample();
        let car = car_of(&root, &mut blocks);
        let mut into = MemoryBlocks::default();
        let reader = CarReader::new(&car[..], CarLimits::default()).unwrap();
        let imported = import_complete(reader, &mut into, &mut NoBlocks).unwrap();
        assert_eq!(imported, root);
        assert_eq!(into.len(), blocks.len());

        // Drop the last block (a leaf): incomplete, unless storage already has it.
        let mut writer = CarWriter::new(Vec::new(), &[root]).unwrap();
        let all: Vec<_> = CarReader::new(&car[..], CarLimits::default())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for (cid, block) in &all[..all.len() - 1] {
            writer.write_block(cid, BlockBytes::new(block)).unwrap();
        }
        let partial = writer.into_inner();
        let missing = all.last().unwrap().0;
        let reader = CarReader::new(&partial[..], CarLimits::default()).unwrap();
        match import_complete(reader, &mut MemoryBlocks::default(), &mut NoBlocks) {
            Err(ImportError::Incomplete { missing: m, .. }) => assert_eq!(m, missing.to_string()),
            other => panic!("{other:?}"),
        }
        let reader = CarReader::new(&partial[..], CarLimits::default()).unwrap();
        let mut already = MemoryBlocks::default();
        let (_, last) = all.last().unwrap();
        already.put_block(&missing, BlockBytes::new(last)).unwrap();
        assert_eq!(
            import_complete(reader, &mut MemoryBlocks::default(), &mut already).unwrap(),
            root
        );

        let two_roots = CarWriter::new(Vec::new(), &[root, missing])
            .unwrap()
            .into_inner();
        let reader = CarReader::new(&two_roots[..], CarLimits::default()).unwrap();
        assert!(matches!(
            import_complete(reader, &mut MemoryBlocks::default(), &mut NoBlocks),
            Err(ImportError::RootCount(2))
        ));
    }

    /// A dag-cbor map `{"a": 42(link), ...}` of `links`.
    fn dag_cbor(links: &[Cid]) -> Vec<u8> {
        let mut out = Vec::new();
        cbor::head(&mut out, MAJOR_MAP, links.len() as u64);
        for (i, link) in links.iter().enumerate() {
            cbor::head(&mut out, MAJOR_TEXT, 1);
            out.push(b'a' + i as u8);
            cbor::cid(&mut out, link);
        }
        out
    }

    fn cid_with(codec: u64, hash: u64, block: &[u8]) -> Cid {
        use sha2::Digest;
        let digest = match hash {
            cairn_unixfs::block::SHA2_512 => sha2::Sha512::digest(block).to_vec(),
            cairn_unixfs::block::BLAKE3 => blake3::hash(block).as_bytes().to_vec(),
            _ => sha2::Sha256::digest(block).to_vec(),
        };
        Cid::new_v1(codec, multihash::Multihash::wrap(hash, &digest).unwrap())
    }

    #[test]
    fn a_dag_of_any_codec_and_hash_imports_whole_and_only_whole() {
        use cairn_unixfs::block::{BLAKE3, SHA2_256, SHA2_512};
        use cairn_unixfs::ipld::{DAG_CBOR, DAG_JSON, JSON};
        // dag-cbor (sha2-512) -> dag-json (blake3) -> json; dag-cbor -> a UnixFS file.
        let (file, mut file_blocks) = sample();
        let plain = br#"{"plain": "json"}"#.to_vec();
        let plain_cid = cid_with(JSON, SHA2_256, &plain);
        let json = format!(r#"{{"next":{{"/":"{plain_cid}"}}}}"#).into_bytes();
        let json_cid = cid_with(DAG_JSON, BLAKE3, &json);
        let root_block = dag_cbor(&[json_cid, file]);
        let root = cid_with(DAG_CBOR, SHA2_512, &root_block);
        let file_block_count = file_blocks.len();
        let mut car_of = |with_file: bool| {
            let mut writer = CarWriter::new(Vec::new(), &[root]).unwrap();
            for (cid, block) in [(root, &root_block), (json_cid, &json), (plain_cid, &plain)] {
                writer.write_block(&cid, BlockBytes::new(block)).unwrap();
            }
            if with_file {
                export_dfs(&file, &mut file_blocks, &mut writer).unwrap();
            }
            writer.into_inner()
        };
        let car = car_of(true);
        let mut into = MemoryBlocks::default();
        let reader = CarReader::new(&car[..], CarLimits::default()).unwrap();
        assert_eq!(
            import_complete(reader, &mut into, &mut NoBlocks).unwrap(),
            root
        );
        assert_eq!(into.len(), 3 + file_block_count);

        // Without the file's blocks, the dag-cbor block's link is missing.
        let car = car_of(false);
        let reader = CarReader::new(&car[..], CarLimits::default()).unwrap();
        match import_complete(reader, &mut MemoryBlocks::default(), &mut NoBlocks) {
            Err(ImportError::Incomplete { missing, parent }) => {
                assert_eq!((missing, parent), (file.to_string(), root.to_string()))
            }
            other => panic!("{other:?}"),
        }

        // A block that is not what its codec says is refused, even hashing right.
        let broken = b"{not json".to_vec();
        let broken_cid = cid_with(DAG_JSON, SHA2_256, &broken);
        let mut writer = CarWriter::new(Vec::new(), &[broken_cid]).unwrap();
        writer
            .write_block(&broken_cid, BlockBytes::new(&broken))
            .unwrap();
        let car = writer.into_inner();
        let reader = CarReader::new(&car[..], CarLimits::default()).unwrap();
        let err = import_complete(reader, &mut MemoryBlocks::default(), &mut NoBlocks);
        assert!(err.unwrap_err().to_string().contains("not valid dag-json"));
    }

    /// Records what it is handed: blocks sent, and stored blocks with their lengths.
    #[derive(Default)]
    struct Counting {
        sent: HashMap<Cid, u64>,
        stored: HashMap<Cid, u64>,
    }

    impl BlockSink for Counting {
        fn put_block(&mut self, cid: &Cid, block: BlockBytes<'_>) -> io::Result<()> {
            self.sent.insert(*cid, block.len() as u64);
            Ok(())
        }

        fn put_stored(&mut self, cid: &Cid, length: u64) -> io::Result<()> {
            self.stored.insert(*cid, length);
            Ok(())
        }
    }

    #[test]
    fn blocks_a_car_leaves_out_because_they_are_stored_count_as_part_of_the_dag() {
        let (root, mut blocks) = sample();
        let whole: u64 = blocks.iter().map(|(_, b)| b.len() as u64).sum();
        // Only the root travels; everything under it is stored.
        let mut writer = CarWriter::new(Vec::new(), &[root]).unwrap();
        let root_block = blocks.get_block(&root).unwrap().unwrap();
        writer
            .write_block(&root, BlockBytes::new(&root_block))
            .unwrap();
        let car = writer.into_inner();
        let mut sink = Counting::default();
        let reader = CarReader::new(&car[..], CarLimits::default()).unwrap();
        assert_eq!(
            import_complete(reader, &mut sink, &mut blocks).unwrap(),
            root
        );
        assert_eq!(sink.sent.len(), 1);
        assert_eq!(sink.sent.len() + sink.stored.len(), blocks.len());
        let counted: u64 = sink.sent.values().chain(sink.stored.values()).sum();
        assert_eq!(counted, whole, "every block once, at its length");

        // A stored DAG missing a block below the link is incomplete, and says where.
        let mut broken = MemoryBlocks::default();
        let leaf = blocks
            .iter()
            .find(|(cid, _)| cid.codec() == RAW)
            .map(|(cid, _)| *cid)
            .unwrap();
        for (cid, block) in blocks.iter().filter(|(cid, _)| **cid != leaf) {
            broken.put_block(cid, BlockBytes::new(block)).unwrap();
        }
        let reader = CarReader::new(&car[..], CarLimits::default()).unwrap();
        match import_complete(reader, &mut Counting::default(), &mut broken) {
            Err(ImportError::Incomplete { missing, .. }) => assert_eq!(missing, leaf.to_string()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn header_rejects_other_versions_and_garbage() {
        // {"version": 2}: the CARv2 pragma.
        let v2 = [
            0x0a, 0xa1, 0x67, b'v', b'e', b'r', b's', b'i', b'o', b'n', 0x02,
        ];
        assert!(matches!(
            CarReader::new(&v2[..], CarLimits::default()),
            Err(CarError::UnsupportedVersion(2))
        ));
        assert!(matches!(
            CarReader::new(&[0x03, 0xff, 0xff, 0xff][..], CarLimits::default()),
            Err(CarError::InvalidHeader(_))
        ));
        assert!(matches!(
            CarReader::new(&[][..], CarLimits::default()),
            Err(CarError::Truncated { .. })
        ));
    }
}
