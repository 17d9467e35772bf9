//! Fuzz bodies for `cairn-car`: what one fuzz input does. Shared by the
//! fuzz targets (`fuzz/fuzz_targets/car_*.rs`) and the stable replay test
//! (`crates/car/tests/fuzz_corpus.rs`), so a regression input replays the very same code.
//! Each body returns what it read or why not; a panic (or a broken assertion) is the bug.

use crate::{import_complete, CarError, CarLimits, CarReader, ImportError};
use cairn_unixfs::read::{ReadError, ReadLimits, Reader, Repeats};
use cairn_unixfs::{Cid, MemoryBlocks, NoBlocks};

/// Small enough that no input makes the reader allocate more than a few KiB.
pub const CAR_LIMITS: CarLimits = CarLimits {
    max_header_bytes: 1024,
    max_block_bytes: 8 * 1024,
};

/// `car_reader`: the input is a CAR; read its header and every block.
pub fn car_reader(input: &[u8]) -> Result<usize, CarError> {
    let mut reader = CarReader::new(input, CAR_LIMITS)?;
    let _ = reader.roots().len();
    let mut blocks = 0;
    while let Some((_, block)) = reader.next_block()? {
        assert!(block.len() as u64 <= CAR_LIMITS.max_block_bytes);
        assert!(reader.offset() <= input.len() as u64);
        blocks += 1;
    }
    // A clean end is the end of the input.
    assert_eq!(reader.offset(), input.len() as u64);
    Ok(blocks)
}

/// `car_import`: the input is a CAR, imported on its own (nothing stored). What the importer
/// accepts, a reader must then read without finding a broken UnixFS rule (running out of its
/// budget is fine: the DAG may repeat itself).
pub fn car_import(input: &[u8]) -> Result<Cid, ImportError> {
    let reader = CarReader::new(input, CAR_LIMITS)?;
    let mut blocks = MemoryBlocks::default();
    let root = import_complete(reader, &mut blocks, &mut NoBlocks)?;
    let limits = ReadLimits {
        max_depth: 64,
        max_blocks: 512,
        max_bytes: 1 << 20,
    };
    let walked = Reader::new(&mut blocks, limits).walk(&root, Repeats::Skip, &mut |_, _| Ok(()));
    match walked {
        Ok(()) | Err(ReadError::TooDeep { .. } | ReadError::OverBudget { .. }) => {}
        // The store is keyed by whole CID: a link to a block of the CAR under another codec
        // or version imports (same multihash) but is not found here.
        Err(ReadError::Missing(_)) => {}
        Err(e) => panic!("imported {root}, but reading it back fails: {e}"),
    }
    Ok(root)
}
