//! Pack files: content written sequentially, one pack per processed upload.
//!
//! A pack is a CAR v1 (empty roots) holding the blocks an upload added that storage did not
//! already have. It is written under a temporary name, `fsync`ed, renamed to its final name and
//! the directory `fsync`ed, all before the block index that points into it is committed. A crash
//! before the commit leaves an unreferenced pack, which [`Packs::sweep`] deletes at startup; a
//! crash after it loses nothing. A pack is never modified once named.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use cairn_car::CarWriter;
use cairn_unixfs::{BlockBytes, BlockSink, Cid};

use crate::model::BlockLocation;

const TEMP_PREFIX: &str = "tmp-";
const PACK_SUFFIX: &str = ".car";

/// The directory of pack files.
#[derive(Clone, Debug)]
pub struct Packs {
    dir: PathBuf,
}

/// A block written to a pack: its multihash and where its bytes are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedBlock {
    pub multihash: Vec<u8>,
    pub offset: u64,
    pub length: u64,
}

/// A durable, named pack and what it holds.
#[derive(Clone, Debug)]
pub struct SealedPack {
    pub name: String,
    pub size: u64,
    pub blocks: Vec<PackedBlock>,
}

impl SealedPack {
    pub fn stored_bytes(&self) -> u64 {
        self.blocks.iter().map(|b| b.length).sum()
    }
}

/// Decides whether a block is already stored (so it is not written again).
pub type KnownBlock = Box<dyn FnMut(&[u8]) -> io::Result<bool> + Send>;

impl Packs {
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        fs::create_dir_all(&dir)?;
        Ok(Self { dir })
    }

    /// Start a pack. `known` is asked once per distinct block; known blocks are skipped.
    pub fn writer(&self, known: KnownBlock) -> io::Result<PackWriter> {
        let temp_path = self
            .dir
            .join(format!("{TEMP_PREFIX}{}{PACK_SUFFIX}", random_name()));
        let file = File::create_new(&temp_path)?;
        let car = CarWriter::new(BufWriter::with_capacity(1 << 20, file), &[])?;
        Ok(PackWriter {
            dir: self.dir.clone(),
            temp_path: Some(temp_path),
            car: Some(car),
            blocks: Vec::new(),
            seen: HashSet::new(),
            known,
        })
    }

    /// Read one block's bytes.
    pub fn read(&self, location: &BlockLocation) -> io::Result<Vec<u8>> {
        let file = File::open(self.path_of(&location.pack)?)?;
        let mut block = vec![0; location.length as usize];
        file.read_exact_at(&mut block, location.offset)?;
        Ok(block)
    }

    /// Delete leftovers of interrupted writes and packs that no metadata references.
    pub fn sweep(&self, referenced: &HashSet<String>) -> io::Result<u64> {
        let mut removed = 0;
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let orphan = name.starts_with(TEMP_PREFIX)
                || (name.ends_with(PACK_SUFFIX) && !referenced.contains(&name));
            if orphan {
                fs::remove_file(entry.path())?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    fn path_of(&self, name: &str) -> io::Result<PathBuf> {
        // Names come from our own metadata, but never let one climb out of the directory.
        if name.contains('/') || name.starts_with('.') {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "bad pack name"));
        }
        Ok(self.dir.join(name))
    }
}

/// Writes one pack; removes its temporary file if dropped before [`PackWriter::seal`].
pub struct PackWriter {
    dir: PathBuf,
    /// Both taken by `seal`; a writer without them is finished.
    temp_path: Option<PathBuf>,
    car: Option<CarWriter<BufWriter<File>>>,
    blocks: Vec<PackedBlock>,
    seen: HashSet<Vec<u8>>,
    known: KnownBlock,
}

impl BlockSink for PackWriter {
    fn put_block(&mut self, cid: &Cid, block: BlockBytes<'_>) -> io::Result<()> {
        let multihash = cid.hash().to_bytes();
        if self.seen.contains(&multihash) || (self.known)(&multihash)? {
            return Ok(());
        }
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
        });
        self.seen.insert(multihash);
        Ok(())
    }
}

impl PackWriter {
    /// Bytes of new blocks written so far.
    pub fn new_bytes(&self) -> u64 {
        self.blocks.iter().map(|b| b.length).sum()
    }

    /// Make the pack durable under its final name; `None` when every block was already stored.
    pub fn seal(mut self) -> io::Result<Option<SealedPack>> {
        let (Some(temp_path), Some(car)) = (self.temp_path.take(), self.car.take()) else {
            return Ok(None);
        };
        if self.blocks.is_empty() {
            drop(car);
            fs::remove_file(&temp_path)?;
            return Ok(None);
        }
        let size = car.bytes_written();
        let result = (|| {
            let mut out = car.into_inner();
            out.flush()?;
            out.get_ref().sync_all()?;
            let name = format!("{}{PACK_SUFFIX}", random_name());
            fs::rename(&temp_path, self.dir.join(&name))?;
            sync_dir(&self.dir)?;
            Ok(name)
        })();
        match result {
            Ok(name) => Ok(Some(SealedPack {
                name,
                size,
                blocks: std::mem::take(&mut self.blocks),
            })),
            Err(e) => {
                let _ = fs::remove_file(&temp_path);
                Err(e)
            }
        }
    }
}

impl Drop for PackWriter {
    fn drop(&mut self) {
        if let Some(path) = self.temp_path.take() {
            let _ = fs::remove_file(path);
        }
    }
}

/// Make a rename or a new file in `dir` durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// 128 random bits as hex: unique names without coordination between nodes.
pub fn random_name() -> String {
    let mut bytes = [0u8; 16];
    // The OS random source failing is not recoverable in any useful way.
    getrandom::fill(&mut bytes).expect("OS random source");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
