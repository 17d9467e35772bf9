//! Streaming file importer: fixed-size chunker, leaf encoding, balanced layout.
//!
//! Bytes are pushed in any slicing. Each chunk becomes a leaf block as soon as it is full, and
//! each internal node is written as soon as the next leaf proves it complete, so memory is one
//! chunk (one batch of chunks when hashing in parallel) plus `max_links` links per tree level,
//! never proportional to the file.
//!
//! The tree shape is boxo's `importer/balanced`: all leaves at the same depth; when the root is
//! full and more data arrives, the tree grows a level above it. A file of at most one chunk is
//! its single leaf. Building it bottom-up with lazily sealed levels gives exactly that shape
//! without knowing the file size in advance.

use std::io;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};

use cid::Cid;

use crate::block::{cid_from_digest, BlockBytes, BlockSink, DAG_PB, RAW};
use crate::pb::{self, DataType, UnixFsData};
use crate::profile::{LeafKind, Profile};

/// The root of an imported file: what a directory links to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImportedFile {
    pub cid: Cid,
    /// Cumulative block bytes of the whole file DAG (the `Tsize` a parent records).
    pub tsize: u64,
    /// Content bytes.
    pub size: u64,
}

/// A finished child of an internal file node.
#[derive(Clone, Copy, Debug)]
struct Child {
    cid: Cid,
    tsize: u64,
    size: u64,
}

/// Imports one file from pushed bytes, writing blocks to `sink` as they become final.
pub struct FileImporter<S: BlockSink> {
    profile: Profile,
    sink: S,
    threads: usize,
    /// Chunks hashed together; 1 unless hashing in parallel.
    batch_chunks: usize,
    /// Bytes received but not yet turned into leaves (less than one batch).
    pending: Vec<u8>,
    /// `levels[0]` holds leaves of the current lowest internal node, `levels[1]` the internal
    /// nodes of the one above, and so on. A full level is sealed only when another child
    /// arrives for it, because only then is it known not to be the root.
    levels: Vec<Vec<Child>>,
    bytes: u64,
    leaves: u64,
}

impl<S: BlockSink> FileImporter<S> {
    /// A single-threaded importer.
    pub fn new(profile: &Profile, sink: S) -> Self {
        Self::with_threads(profile, sink, NonZeroUsize::MIN)
    }

    /// An importer that hashes leaves on `threads` threads; the tree is still built in order,
    /// so the CID is the same for any thread count.
    pub fn with_threads(profile: &Profile, sink: S, threads: NonZeroUsize) -> Self {
        let threads = threads.get();
        // Enough chunks per batch that thread start-up (tens of microseconds) is noise next
        // to hashing (about a millisecond per MiB).
        let batch_chunks = if threads == 1 { 1 } else { threads * 8 };
        Self {
            profile: profile.clone(),
            sink,
            threads,
            batch_chunks,
            // Allocated on first use: a caller pushing whole batches never needs it.
            pending: Vec::new(),
            levels: Vec::new(),
            bytes: 0,
            leaves: 0,
        }
    }

    /// Content bytes pushed so far (for progress reporting).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The push length that hashes straight from the caller's buffer on every thread: pushes
    /// of whole multiples of it are never copied (nor are any whole chunks of a larger push).
    pub fn batch_len(&self) -> usize {
        self.batch_chunks * self.profile.chunk_size
    }

    /// Append file content.
    pub fn push(&mut self, mut data: &[u8]) -> io::Result<()> {
        self.bytes += data.len() as u64;
        let chunk = self.profile.chunk_size;
        let batch = self.batch_chunks * chunk;
        while !data.is_empty() {
            if self.pending.is_empty() && data.len() >= chunk {
                // Whole chunks straight from the caller's buffer: no copy, and all of them in
                // one go, so the threads meet once per push rather than once per batch.
                let take = data.len() / chunk * chunk;
                let (whole, rest) = data.split_at(take);
                self.add_leaves(whole)?;
                data = rest;
                continue;
            }
            let take = (batch - self.pending.len()).min(data.len());
            let needed = self.pending.len() + take;
            if needed > self.pending.capacity() {
                // Double, but never past one batch: a small file costs only its own size.
                let target = (self.pending.capacity() * 2).max(needed).min(batch);
                self.pending.reserve_exact(target - self.pending.len());
            }
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.pending.len() == batch {
                self.flush_pending()?;
            }
        }
        Ok(())
    }

    /// Write the remaining leaves and internal nodes and return the file's root.
    pub fn finish(mut self) -> io::Result<ImportedFile> {
        self.flush_pending()?;
        if self.leaves == 0 {
            self.add_leaves(&[])?;
        }
        if let [only_level] = self.levels.as_slice() {
            if let [leaf] = only_level.as_slice() {
                return Ok(ImportedFile {
                    cid: leaf.cid,
                    tsize: leaf.tsize,
                    size: leaf.size,
                });
            }
        }
        let mut level = 0;
        loop {
            let node = self.seal(level)?;
            if level + 1 == self.levels.len() {
                return Ok(ImportedFile {
                    cid: node.cid,
                    tsize: node.tsize,
                    size: node.size,
                });
            }
            // The level above may be full: adding may grow the tree one more level.
            self.add_child(level + 1, node)?;
            level += 1;
        }
    }

    fn flush_pending(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let result = self.add_leaves(&pending);
        self.pending = pending;
        self.pending.clear();
        result
    }

    /// Turn `data` into leaves: whole chunks, and a shorter last one only at the end of file.
    /// An empty `data` makes the single empty leaf of an empty file.
    fn add_leaves(&mut self, data: &[u8]) -> io::Result<()> {
        let chunks: Vec<&[u8]> = if data.is_empty() {
            vec![&[]]
        } else {
            data.chunks(self.profile.chunk_size).collect()
        };
        let leaves = hash_leaves(self.profile.leaves, &chunks, self.threads);
        let (version, codec) = (
            self.profile.cid_version,
            match self.profile.leaves {
                LeafKind::Raw => RAW,
                LeafKind::DagPb => DAG_PB,
            },
        );
        let blocks: Vec<(Cid, BlockBytes)> = leaves
            .iter()
            .zip(&chunks)
            .map(|(leaf, chunk)| {
                let cid = cid_from_digest(version, codec, &leaf.digest);
                (cid, leaf.frame.around(chunk))
            })
            .collect();
        // The batch's leaves go to the sink together, ahead of the nodes they complete.
        self.sink.put_blocks(&blocks)?;
        for ((cid, block), chunk) in blocks.into_iter().zip(&chunks) {
            self.leaves += 1;
            let child = Child {
                cid,
                tsize: block.len() as u64,
                size: chunk.len() as u64,
            };
            self.add_child(0, child)?;
        }
        Ok(())
    }

    fn add_child(&mut self, mut level: usize, mut child: Child) -> io::Result<()> {
        loop {
            if self.levels.len() == level {
                self.levels.push(Vec::with_capacity(self.profile.max_links));
            }
            if self.levels[level].len() < self.profile.max_links {
                self.levels[level].push(child);
                return Ok(());
            }
            let sealed = self.seal(level)?;
            self.levels[level].push(child);
            child = sealed;
            level += 1;
        }
    }

    /// Write the internal node made of `levels[level]` and empty that level.
    fn seal(&mut self, level: usize) -> io::Result<Child> {
        let children = std::mem::take(&mut self.levels[level]);
        let size = children.iter().map(|c| c.size).sum();
        let mut data = UnixFsData::new(DataType::File);
        data.filesize = Some(size);
        data.blocksizes = children.iter().map(|c| c.size).collect();
        let links = children
            .iter()
            .map(|c| pb::link(c.cid, "", c.tsize))
            .collect();
        let block = pb::encode_node(links, data.encode());
        let block = BlockBytes::new(&block);
        let cid = cid_from_digest(self.profile.cid_version, DAG_PB, &block.sha256());
        self.sink.put_block(&cid, block)?;
        // Reuse the allocation for the level's next node.
        let mut children = children;
        let tsize = block.len() as u64 + children.iter().map(|c| c.tsize).sum::<u64>();
        children.clear();
        self.levels[level] = children;
        Ok(Child { cid, tsize, size })
    }
}

/// A leaf block and its digest, computed possibly on another thread.
struct Leaf {
    /// Header and trailer around the chunk for dag-pb leaves; empty for raw leaves.
    frame: LeafFrame,
    digest: [u8; 32],
}

impl Leaf {
    fn new(kind: LeafKind, chunk: &[u8]) -> Self {
        let frame = match kind {
            LeafKind::Raw => LeafFrame::default(),
            LeafKind::DagPb => LeafFrame::dag_pb(chunk.len() as u64),
        };
        let digest = frame.around(chunk).sha256();
        Self { frame, digest }
    }
}

/// The bytes before and after the chunk in a dag-pb leaf:
/// `PBNode{Data: UnixFS Data{Type=File, Data=chunk, filesize=len}}`, with no Data field when
/// the chunk is empty. Equal to `pb::encode_node` of that message (tested below). Held inline:
/// a leaf costs no allocation.
#[derive(Default)]
struct LeafFrame {
    head: InlineBytes<24>,
    tail: InlineBytes<11>,
}

impl LeafFrame {
    fn dag_pb(len: u64) -> Self {
        let mut frame = Self::default();
        frame.tail.push(&[0x18]);
        frame.tail.push_varint(len);
        let data_field = if len == 0 {
            0
        } else {
            1 + pb::varint_len(len) + len
        };
        let message_len = 2 + data_field + frame.tail.bytes().len() as u64;
        frame.head.push(&[0x0a]);
        frame.head.push_varint(message_len);
        frame.head.push(&[0x08, DataType::File as u8]);
        if len > 0 {
            frame.head.push(&[0x12]);
            frame.head.push_varint(len);
        }
        frame
    }

    fn around<'a>(&'a self, chunk: &'a [u8]) -> BlockBytes<'a> {
        BlockBytes::from_parts(self.head.bytes(), chunk, self.tail.bytes())
    }
}

/// Up to `N` bytes, without an allocation.
struct InlineBytes<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Default for InlineBytes<N> {
    fn default() -> Self {
        Self {
            bytes: [0; N],
            len: 0,
        }
    }
}

impl<const N: usize> InlineBytes<N> {
    fn push(&mut self, bytes: &[u8]) {
        self.bytes[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn push_varint(&mut self, value: u64) {
        let (bytes, len) = pb::varint(value);
        self.push(&bytes[..len]);
    }

    fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Hash the leaves of `chunks`, in order, on up to `threads` threads. Each thread takes the
/// next chunk when it finishes one, so a core slowed by other work takes fewer chunks instead of
/// holding the others up.
fn hash_leaves(kind: LeafKind, chunks: &[&[u8]], threads: usize) -> Vec<Leaf> {
    if threads <= 1 || chunks.len() < 2 {
        return chunks.iter().map(|c| Leaf::new(kind, c)).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(chunk) = chunks.get(i) else {
                return done;
            };
            done.push((i, Leaf::new(kind, chunk)));
        }
    };
    let mut slots: Vec<Option<Leaf>> = std::iter::repeat_with(|| None).take(chunks.len()).collect();
    std::thread::scope(|scope| {
        let others: Vec<_> = (1..threads.min(chunks.len()))
            .map(|_| scope.spawn(work))
            .collect();
        let mut place = |done: Vec<(usize, Leaf)>| {
            for (i, leaf) in done {
                slots[i] = Some(leaf);
            }
        };
        place(work());
        for handle in others {
            // Hashing cannot panic short of a bug; re-raise it on the caller's thread.
            place(
                handle
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e)),
            );
        }
    });
    slots
        .into_iter()
        .map(|leaf| leaf.expect("every chunk was taken by a thread"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::MemoryBlocks;

    #[test]
    fn dag_pb_leaf_frame_matches_the_generic_encoder() {
        for len in [0usize, 1, 127, 128, 300, 262_144] {
            let chunk = vec![7u8; len];
            let mut data = UnixFsData::new(DataType::File);
            data.data = (len > 0).then_some(&chunk[..]);
            data.filesize = Some(len as u64);
            let expected = pb::encode_node(vec![], data.encode());
            let frame = LeafFrame::dag_pb(len as u64);
            assert_eq!(frame.around(&chunk).to_vec(), expected, "len {len}");
        }
    }

    #[test]
    fn tiny_profile_builds_boxo_balanced_shape() {
        // max_links 2, chunk 1: 5 leaves make root(n(n(a,b), n(c,d)), n(n(e))) as boxo does.
        let profile = Profile {
            chunk_size: 1,
            max_links: 2,
            ..Profile::UNIXFS_V1_2025
        };
        let mut blocks = MemoryBlocks::default();
        let mut importer = FileImporter::new(&profile, &mut blocks);
        importer.push(b"abcde").unwrap();
        let root = importer.finish().unwrap();
        assert_eq!(root.size, 5);
        let depth_of = |mut cid: Cid| {
            let mut depth = 0;
            while cid.codec() == DAG_PB {
                let node = pb::decode_node(blocks.get(&cid).unwrap()).unwrap();
                assert!(node.links.len() <= 2);
                cid = node.links[0].cid;
                depth += 1;
            }
            depth
        };
        assert_eq!(depth_of(root.cid), 3);
        let top = pb::decode_node(blocks.get(&root.cid).unwrap()).unwrap();
        assert_eq!(top.links.len(), 2);
        // The last subtree is a chain down to the single leaf "e".
        let last = pb::decode_node(blocks.get(&top.links[1].cid).unwrap()).unwrap();
        assert_eq!(last.links.len(), 1);
    }
}
