//! Fuzz body for `cairn-archive`: what one fuzz input does. Shared by the
//! fuzz target (`fuzz/fuzz_targets/archive_extract.rs`) and the stable replay test
//! (`crates/archive/tests/fuzz_corpus.rs`), so a regression input replays the very same code.
//! It returns what it extracted or why not; a panic (or a broken assertion) is the bug.

use std::io::{self, Cursor};

use crate::extract::SourceStats;
use crate::{ArchiveError, ArchiveFormat, Extractor, Limits};
use cairn_unixfs::block::RAW;
use cairn_unixfs::profile::{DirSizeEstimate, LeafKind};
use cairn_unixfs::read::{ReadLimits, Reader, Repeats};
use cairn_unixfs::{BlockBytes, BlockSink, Cid, CidVersion, MemoryBlocks, Profile};

/// Small enough that no input holds more than a few MiB or takes more than milliseconds,
/// large enough that every limit is reachable from a few KiB of archive.
pub const LIMITS: Limits = Limits {
    max_total_bytes: 256 << 10,
    max_entries: 64,
    max_depth: 8,
    max_name_bytes: 64,
    max_path_bytes: 256,
    max_ratio: 100,
    ratio_after_bytes: 64 << 10,
};

/// Raw leaves (so every raw block is content the extractor let through), small chunks and a
/// low HAMT threshold (so a few dozen entries make a sharded directory).
pub const PROFILE: Profile = Profile {
    name: "fuzz-archive",
    cid_version: CidVersion::V1,
    leaves: LeafKind::Raw,
    chunk_size: 4096,
    max_links: 16,
    hamt_threshold: 1000,
    dir_size_estimate: DirSizeEstimate::BlockBytes,
    hamt_fanout: 16,
};

const READ_LIMITS: ReadLimits = ReadLimits {
    max_depth: 64,
    max_blocks: 4096,
    max_bytes: 4 << 20,
};

/// Keeps the blocks, and counts the content bytes that reached them as raw leaves.
#[derive(Default)]
struct CountingSink {
    blocks: MemoryBlocks,
    content_bytes: u64,
}

impl BlockSink for CountingSink {
    fn put_block(&mut self, cid: &Cid, block: BlockBytes<'_>) -> io::Result<()> {
        if cid.codec() == RAW {
            self.content_bytes += block.len() as u64;
        }
        self.blocks.put_block(cid, block)
    }
}

/// `archive_extract`: the input is an upload; its format is told by [`ArchiveFormat::detect`]
/// as the server does (nothing else is ever extracted), then it is extracted under [`LIMITS`].
/// Whatever the input: the content let through stays under the total cap and the expansion
/// ratio (A6); a streamed format (tar, compressed or not) reads no more than the input; the
/// archive's fault is never reported as our own I/O failure (a memory source and sink cannot
/// fail), and what is extracted reads back as a well-formed UnixFS directory.
pub fn archive_extract(input: &[u8]) -> Result<Cid, ArchiveError> {
    let format = ArchiveFormat::detect(input)
        .ok_or_else(|| ArchiveError::Archive("not an archive".into()))?;
    let mut sink = CountingSink::default();
    let source = SourceStats::default();
    let mut reported = 0u64;
    let mut progress = |consumed: u64| -> io::Result<()> {
        assert!(
            consumed >= reported,
            "progress went back: {consumed} < {reported}"
        );
        reported = consumed;
        Ok(())
    };
    let extractor = Extractor::new(&PROFILE, &LIMITS, &mut sink, source.clone(), &mut progress);
    let result = crate::extract(format, Cursor::new(input), extractor);
    let consumed = source.consumed();
    assert!(consumed >= reported, "more reported than read");
    if !matches!(format, ArchiveFormat::Zip | ArchiveFormat::SevenZ) {
        assert!(
            consumed <= input.len() as u64,
            "{format:?}: {consumed} bytes read of a {}-byte input",
            input.len()
        );
    }
    let produced = sink.content_bytes;
    assert!(
        produced <= LIMITS.max_total_bytes,
        "{produced} content bytes let through, over the cap"
    );
    assert!(
        produced <= LIMITS.ratio_after_bytes
            || produced <= consumed.max(1).saturating_mul(LIMITS.max_ratio),
        "{produced} content bytes from {consumed} archive bytes, over the ratio"
    );
    let root = match result {
        Ok(root) => root.cid,
        Err(e) => {
            assert!(
                e.is_invalid_archive(),
                "the archive's fault taken for ours: {e}"
            );
            return Err(e);
        }
    };
    let walked =
        Reader::new(&mut sink.blocks, READ_LIMITS).walk(&root, Repeats::Skip, &mut |_, _| Ok(()));
    // Within the limits, the DAG is far smaller than the read budget: any error is a bug.
    if let Err(e) = walked {
        panic!("extracted {root}, but reading it back fails: {e}");
    }
    Ok(root)
}
