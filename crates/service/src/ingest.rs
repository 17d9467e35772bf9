//! Turning an upload's bytes into stored blocks, as every way in does it (a POST as it streams,
//! a worker from staged or TUS bytes): a pack that skips blocks already stored, and the two
//! imports, a file hashed on every core and a CAR verified whole. Runs on blocking threads.

use cairn_store::BlockIndex;
use std::io::{self, Read};
use std::sync::Arc;

use cairn_car::{CarError, CarLimits, CarReader, ImportError};
use cairn_store::blocks::StoredBlockReader;
use cairn_store::packs::{PackWriter, Packs};
use cairn_unixfs::{Cid, FileImporter, Profile};

/// A new pack for an upload's blocks; a block the store has already is not written again.
/// Called on a blocking thread of the runtime, which asks the store.
pub fn new_pack(store: Arc<dyn BlockIndex>, packs: &Packs) -> io::Result<PackWriter> {
    let runtime = tokio::runtime::Handle::current();
    packs.writer(Box::new(move |multihash: &[u8]| {
        runtime
            .block_on(store.has_block(multihash))
            .map_err(io::Error::other)
    }))
}

/// A file's bytes as one UnixFS file, hashed on every core (the CID does not depend on it).
pub fn import_file(
    mut input: impl Read,
    profile: &Profile,
    pack: &mut PackWriter,
) -> io::Result<Cid> {
    let mut importer = FileImporter::with_threads(profile, pack, hashing_threads());
    let mut buf = vec![0u8; 4 * profile.chunk_size];
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            return Ok(importer.finish()?.cid);
        }
        importer.push(&buf[..n])?;
    }
}

/// The threads a file's leaves are hashed on. Asked once: `available_parallelism` opens and
/// reads four cgroup files on Linux every time, and every upload asks.
pub fn hashing_threads() -> std::num::NonZeroUsize {
    static THREADS: std::sync::OnceLock<std::num::NonZeroUsize> = std::sync::OnceLock::new();
    *THREADS
        .get_or_init(|| std::thread::available_parallelism().unwrap_or(std::num::NonZeroUsize::MIN))
}

/// Why a CAR could not be imported.
#[derive(Debug)]
pub enum CarFault {
    /// The CAR is at fault (corrupt, incomplete, not UnixFS-valid): the uploader's error.
    Invalid(String),
    Io(io::Error),
}

/// A CAR, imported as-is: every block verified, the DAG complete (`docs/contract.md`).
pub fn import_car(
    input: impl Read,
    pack: &mut PackWriter,
    stored: &mut StoredBlockReader,
) -> Result<Cid, CarFault> {
    let reader = CarReader::new(input, CarLimits::default()).map_err(|e| car_fault(e.into()))?;
    cairn_car::import_complete(reader, pack, stored).map_err(car_fault)
}

fn car_fault(e: ImportError) -> CarFault {
    match e {
        ImportError::Car(CarError::Io(io)) => CarFault::Io(io),
        other => CarFault::Invalid(format!("invalid CAR file: {other}")),
    }
}
