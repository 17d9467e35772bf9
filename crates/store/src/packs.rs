//! Pack files: content written sequentially, one pack per processed upload.
//!
//! A pack is a CAR v1 (empty roots) holding the blocks an upload added that storage did not
//! already have. It is a blob: durable under its name (see [`crate::blobs`]) before the block
//! index that points into it is committed. A crash before the commit leaves an unreferenced
//! pack, which [`Packs::sweep`] deletes at startup; a crash after it loses nothing. A pack is
//! never modified once committed (on local disk its name exists, empty, before it is written).

use std::collections::HashSet;
use std::io::{self, BufWriter, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cairn_car::CarWriter;
use cairn_unixfs::block::DAG_PB;
use cairn_unixfs::pb::dag_pb_without_links;
use cairn_unixfs::{BlockBytes, BlockSink, Cid};

use crate::blobs::{BlobStore, BlobWriter, FileBlobs};
use crate::model::{BlockLocation, Packed, PackedBlock, SealedPack};

const PACK_SUFFIX: &str = ".car";

/// The pack files, in a blob store.
#[derive(Clone, Debug)]
pub struct Packs {
    blobs: Arc<dyn BlobStore>,
}

/// Of many blocks (by multihash), those already stored (so they are not written again).
pub type KnownBlocks = Box<dyn FnMut(&[Vec<u8>]) -> io::Result<HashSet<Vec<u8>>> + Send>;

/// Every block written, none asked about: for packs of blocks chosen already (a collection's
/// moves, a pin's fetched blocks, a repair).
pub fn nothing_known() -> KnownBlocks {
    Box::new(|_| Ok(HashSet::new()))
}

impl Packs {
    pub fn new(blobs: Arc<dyn BlobStore>) -> Self {
        Self { blobs }
    }

    /// Packs as files under `dir` (the embedded store).
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Self> {
        Ok(Self::new(Arc::new(FileBlobs::open(dir)?)))
    }

    /// Start a pack. `known` is asked about each distinct block once, many blocks a question
    /// where the importer hands them over together; known blocks are skipped.
    pub fn writer(&self, known: KnownBlocks) -> io::Result<PackWriter> {
        let (name, out) = self.blobs.create_unique(PACK_SUFFIX)?;
        let car = CarWriter::new(BufWriter::with_capacity(1 << 20, out), &[])?;
        Ok(PackWriter {
            name,
            car: Some(car),
            blocks: Vec::new(),
            seen: HashSet::new(),
            reused: Vec::new(),
            dag_bytes: 0,
            known,
        })
    }

    /// Read one block's bytes.
    pub fn read(&self, location: &BlockLocation) -> io::Result<Vec<u8>> {
        self.blobs
            .read_range(&location.pack, location.offset, location.length)
    }

    /// Read one block's bytes from `location`, or, when that pack is gone (a collection moved
    /// the block and deleted the pack after `location` was looked up), from where `relocate`
    /// finds it now. `None`: the block was collected.
    pub fn read_relocating(
        &self,
        location: &BlockLocation,
        relocate: impl FnOnce() -> io::Result<Option<BlockLocation>>,
    ) -> io::Result<Option<Vec<u8>>> {
        match self.read(location) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => match relocate()? {
                Some(moved) if moved != *location => self.read(&moved).map(Some),
                Some(_) => Err(e),
                None => Ok(None),
            },
            read => read.map(Some),
        }
    }

    /// Delete a pack no metadata references any more (a pack already gone is fine).
    pub fn delete(&self, name: &str) -> io::Result<()> {
        self.blobs.delete(name)
    }

    /// How many bytes of neighbouring blocks are worth reading together with `read_many`
    /// (0: read them one by one).
    pub fn batch_bytes(&self) -> u64 {
        self.blobs.batch_bytes()
    }

    /// Read blocks of one pack, in order (together, where the blob store can).
    pub fn read_many(&self, pack: &str, locations: &[&BlockLocation]) -> io::Result<Vec<Vec<u8>>> {
        let ranges: Vec<(u64, u64)> = locations.iter().map(|l| (l.offset, l.length)).collect();
        self.blobs.read_ranges(pack, &ranges)
    }

    /// Every stored pack's name (empty ones made ahead for writers included: see
    /// [`Packs::length`]).
    pub fn names(&self) -> io::Result<Vec<String>> {
        self.blobs.list(Duration::ZERO)
    }

    /// A stored pack's length in bytes (`NotFound` when it is not there).
    pub fn length(&self, name: &str) -> io::Result<u64> {
        self.blobs.open(name)?.seek(SeekFrom::End(0))
    }

    /// Delete leftovers of interrupted writes and packs that no metadata references, written
    /// at least `older_than` ago (see `BlobStore::remove_incomplete`).
    pub fn sweep(&self, referenced: &HashSet<String>, older_than: Duration) -> io::Result<u64> {
        let mut removed = self.blobs.remove_incomplete(older_than)?;
        for name in self.blobs.list(older_than)? {
            if !referenced.contains(&name) {
                self.blobs.delete(&name)?;
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// Writes one pack; dropped before [`PackWriter::seal`], it leaves nothing behind.
pub struct PackWriter {
    name: String,
    /// Taken by `seal`; a writer without it is finished.
    car: Option<CarWriter<BufWriter<Box<dyn BlobWriter>>>>,
    blocks: Vec<PackedBlock>,
    /// Every distinct block handed over, new or known.
    seen: HashSet<Vec<u8>>,
    /// The known ones.
    reused: Vec<Vec<u8>>,
    dag_bytes: u64,
    known: KnownBlocks,
}

impl BlockSink for PackWriter {
    fn put_block(&mut self, cid: &Cid, block: BlockBytes<'_>) -> io::Result<()> {
        self.put_blocks(&[(*cid, block)])
    }

    fn put_blocks(&mut self, blocks: &[(Cid, BlockBytes<'_>)]) -> io::Result<()> {
        let multihashes: Vec<Vec<u8>> = blocks
            .iter()
            .map(|(cid, _)| cid.hash().to_bytes())
            .collect();
        let mut asked: HashSet<&[u8]> = HashSet::with_capacity(multihashes.len());
        let unseen: Vec<Vec<u8>> = multihashes
            .iter()
            .filter(|multihash| !self.seen.contains(*multihash) && asked.insert(multihash))
            .cloned()
            .collect();
        if unseen.is_empty() {
            return Ok(());
        }
        let known = (self.known)(&unseen)?;
        for ((cid, block), multihash) in blocks.iter().zip(multihashes) {
            if self.seen.contains(&multihash) {
                continue;
            }
            if known.contains(&multihash) {
                self.reuse(multihash, block.len() as u64);
            } else {
                self.write(cid, *block, multihash)?;
            }
        }
        Ok(())
    }

    /// Counted in the DAG's size like any block, and checked by the commit.
    fn put_stored(&mut self, cid: &Cid, length: u64) -> io::Result<()> {
        let multihash = cid.hash().to_bytes();
        if !self.seen.contains(&multihash) {
            self.reuse(multihash, length);
        }
        Ok(())
    }
}

impl PackWriter {
    /// A block of the DAG, not seen before, that storage does not hold: appended.
    fn write(&mut self, cid: &Cid, block: BlockBytes<'_>, multihash: Vec<u8>) -> io::Result<()> {
        self.dag_bytes += block.len() as u64;
        let car = self
            .car
            .as_mut()
            .ok_or_else(|| io::Error::other("pack already sealed"))?;
        car.write_block(cid, block)?;
        let end = car.bytes_written();
        self.blocks.push(PackedBlock {
            multihash: multihash.clone(),
            offset: end - block.len() as u64,
            length: block.len() as u64,
            without_links: cid.codec() == DAG_PB && dag_pb_without_links(&block) == Some(true),
        });
        self.seen.insert(multihash);
        Ok(())
    }

    /// A block of the DAG, not seen before, that storage already holds.
    fn reuse(&mut self, multihash: Vec<u8>, length: u64) {
        self.dag_bytes += length;
        self.seen.insert(multihash.clone());
        self.reused.push(multihash);
    }

    /// Bytes of the distinct blocks handed over so far, stored already or not: the size of
    /// the DAG they make (what the quota counts).
    pub fn dag_bytes(&self) -> u64 {
        self.dag_bytes
    }

    /// Bytes of new blocks written so far.
    pub fn new_bytes(&self) -> u64 {
        self.blocks.iter().map(|b| b.length).sum()
    }

    /// Make the pack durable under its name (no pack when every block was already stored).
    pub fn seal(mut self) -> io::Result<Packed> {
        let reused = std::mem::take(&mut self.reused);
        let Some(car) = self.car.take() else {
            return Ok(Packed { pack: None, reused });
        };
        if self.blocks.is_empty() {
            // Dropping the uncommitted blob removes it.
            return Ok(Packed { pack: None, reused });
        }
        let size = car
            .into_inner()
            .into_inner()
            .map_err(|e| e.into_error())?
            .commit()?;
        let pack = SealedPack {
            name: std::mem::take(&mut self.name),
            size,
            blocks: std::mem::take(&mut self.blocks),
        };
        Ok(Packed {
            pack: Some(pack),
            reused,
        })
    }
}
