//! Content in: an upload's bytes made into stored blocks, the one way every path does it (a
//! POST as it streams, a POST's staged bytes, a worker from staged or TUS bytes). [`import`]
//! is that one function: a file hashed on every core, a CAR verified whole, an archive
//! extracted, each into a pack of its own that skips the blocks storage holds already (asked
//! about many blocks a question). Runs on blocking threads.

use std::io::{self, Read, Seek};
use std::num::NonZeroUsize;
use std::sync::{Arc, OnceLock};

use cairn_archive::extract::SourceStats;
use cairn_archive::{ArchiveError, Extractor, Limits};
use cairn_car::{CarError, CarLimits, CarReader};
use cairn_store::blocks::StoredBlockReader;
use cairn_store::model::{Packed, StoredDag};
use cairn_store::packs::{PackWriter, Packs};
use cairn_store::BlockIndex;
use cairn_unixfs::{Cid, FileImporter, Profile};

use crate::detect::ContentKind;

/// Bytes on their way into an import.
pub trait Incoming: Read {
    /// Hands the bytes to `take` a run at a time, to their end: as they arrived where the
    /// source received them in runs (a POST's pieces reach the hasher without another copy),
    /// else read into a buffer of `buffer` bytes.
    fn each_run(
        &mut self,
        buffer: usize,
        take: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut buf = vec![0u8; buffer];
        loop {
            match self.read(&mut buf)? {
                0 => return Ok(()),
                n => take(&buf[..n])?,
            }
        }
    }

    /// The bytes as a file an archive reader may seek in (a zip's directory is at its end);
    /// `None` for a stream, which is staged before an archive in it is extracted.
    fn seekable(&mut self) -> Option<&mut dyn ReadSeek> {
        None
    }
}

/// What an archive is extracted from.
pub trait ReadSeek: Read + Seek {}

impl<R: Read + Seek> ReadSeek for R {}

/// Staged bytes (a file of staging or of TUS) as an import reads them: buffered for what reads
/// a little at a time (the head detection looks at, an archive's headers); a file's runs are
/// read past the buffer, straight into the import's own.
pub fn staged<R: Read + Seek>(file: R) -> io::BufReader<R> {
    io::BufReader::with_capacity(STAGED_BUFFER, file)
}

/// Buffered reads of staged bytes. 64 KiB would do for detection and archives and saves a MiB
/// an import, but made a 1 GiB TUS upload's import four times slower (3.4 s against 0.85 s
/// from the last `204` to the CID, the TUS bench), for a cause not yet found.
const STAGED_BUFFER: usize = 1 << 20;

impl<R: Read + Seek> Incoming for io::BufReader<R> {
    fn seekable(&mut self) -> Option<&mut dyn ReadSeek> {
        Some(self)
    }
}

/// Where an import's blocks go and how they are made.
pub struct Import<'a> {
    /// The profile a file or an archive's files are imported with (a CAR keeps its own).
    pub profile: &'a Profile,
    /// What an archive may expand to.
    pub limits: &'a Limits,
    /// Asked which blocks are stored already.
    pub store: Arc<dyn BlockIndex>,
    pub packs: &'a Packs,
}

/// Why content could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The bytes are at fault (a corrupt or incomplete CAR, an archive that breaks a rule):
    /// the uploader's error, said as they would read it.
    #[error("{0}")]
    Invalid(String),
    /// An archive expands past `Limits::max_total_bytes`: the caller knows whether that was
    /// its configured cap or the account's remaining quota.
    #[error("entry {entry:?}: the archive expands to more than {limit} bytes")]
    TooLarge { entry: String, limit: u64 },
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Imported content, its pack not yet sealed (a long import says it is storing first).
pub struct Imported {
    pub root: Cid,
    pub pack: PackWriter,
}

impl Imported {
    /// The pack made durable, and the DAG it completes.
    pub fn seal(self) -> io::Result<(StoredDag, Packed)> {
        let dag = StoredDag {
            cid: self.root.to_string(),
            size: self.pack.dag_bytes(),
        };
        Ok((dag, self.pack.seal()?))
    }
}

/// `input` imported as `kind` into a new pack. `progress` hears the bytes read so far as the
/// import goes, and may stop it with an error. Dropped on any error, the pack leaves nothing.
pub fn import(
    kind: ContentKind,
    input: &mut dyn Incoming,
    how: Import<'_>,
    progress: &mut dyn FnMut(u64) -> io::Result<()>,
) -> Result<Imported, ImportError> {
    let mut pack = new_pack(how.store.clone(), how.packs)?;
    let root = match kind {
        ContentKind::File => import_file(input, how.profile, &mut pack, progress)?,
        ContentKind::Car => {
            let mut stored = StoredBlockReader::new(how.store, how.packs.clone());
            let counted = Counted {
                input,
                read: 0,
                progress,
            };
            let reader = CarReader::new(counted, CarLimits::default()).map_err(car_invalid)?;
            cairn_car::import_complete(reader, &mut pack, &mut stored).map_err(|e| match e {
                cairn_car::ImportError::Car(e) => car_invalid(e),
                other => ImportError::Invalid(format!("invalid CAR file: {other}")),
            })?
        }
        ContentKind::Archive(format) => {
            let input = input.seekable().ok_or_else(|| {
                io::Error::other("an archive is extracted from its staged bytes, not a stream")
            })?;
            let extractor = Extractor::new(
                how.profile,
                how.limits,
                &mut pack,
                SourceStats::default(),
                progress,
            );
            cairn_archive::extract(format, input, extractor)
                .map_err(|e| match e {
                    ArchiveError::TooLarge { entry, limit } => {
                        ImportError::TooLarge { entry, limit }
                    }
                    ArchiveError::Io(e) => ImportError::Io(e),
                    invalid => ImportError::Invalid(invalid.to_string()),
                })?
                .cid
        }
    };
    Ok(Imported { root, pack })
}

/// A file's bytes as one UnixFS file, hashed on every core (the CID does not depend on it).
fn import_file(
    input: &mut dyn Incoming,
    profile: &Profile,
    pack: &mut PackWriter,
    progress: &mut dyn FnMut(u64) -> io::Result<()>,
) -> io::Result<Cid> {
    let mut importer = FileImporter::with_threads(profile, pack, hashing_threads());
    let mut read = 0u64;
    // Two chunks a run: one for each hashing thread of two cores; more workers, not more
    // threads, use more cores. Each import running holds one run.
    input.each_run(2 * profile.chunk_size, &mut |run| {
        read += run.len() as u64;
        progress(read)?;
        importer.push(run)
    })?;
    Ok(importer.finish()?.cid)
}

/// A new pack for an import's blocks; blocks the store has already are not written again.
/// Called on a blocking thread of the runtime, which asks the store, a batch of blocks at a
/// time (a file's leaves are hashed and handed over in batches).
fn new_pack(store: Arc<dyn BlockIndex>, packs: &Packs) -> io::Result<PackWriter> {
    let runtime = tokio::runtime::Handle::current();
    packs.writer(Box::new(move |multihashes: &[Vec<u8>]| {
        runtime
            .block_on(store.stored_blocks(multihashes))
            .map_err(io::Error::other)
    }))
}

/// The threads a file's leaves are hashed on. Asked once: `available_parallelism` opens and
/// reads four cgroup files on Linux every time, and every upload asks.
fn hashing_threads() -> NonZeroUsize {
    static THREADS: OnceLock<NonZeroUsize> = OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN))
}

fn car_invalid(e: CarError) -> ImportError {
    match e {
        CarError::Io(io) => ImportError::Io(io),
        other => ImportError::Invalid(format!("invalid CAR file: {other}")),
    }
}

/// A stream that tells `progress` how much of it has been read.
struct Counted<'a> {
    input: &'a mut dyn Incoming,
    read: u64,
    progress: &'a mut dyn FnMut(u64) -> io::Result<()>,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.input.read(buf)?;
        self.read += n as u64;
        (self.progress)(self.read)?;
        Ok(n)
    }
}
