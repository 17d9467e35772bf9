//! Helpers shared by the archive-safety tests: extract in memory through the crate's one entry
//! point, and check refusals the way a user reads them (entry named, reason given); archives
//! written byte by byte (`raw.rs`) and a tar in each compression (`compress.rs`).
#![allow(dead_code)] // each test binary uses a different part

pub mod compress;
pub mod raw;

use std::io::Cursor;

use cairn_archive::extract::SourceStats;
use cairn_archive::{ArchiveError, ArchiveFormat, Extractor, Limits};
use cairn_unixfs::{FileImporter, Link, MemoryBlocks, Profile};

pub fn extract_with(bytes: &[u8], limits: &Limits) -> Result<Link, ArchiveError> {
    // A tar with no entries has no magic: it is all zeros.
    let format = ArchiveFormat::detect(bytes).unwrap_or(ArchiveFormat::Tar);
    let profile = Profile::default();
    let mut blocks = MemoryBlocks::default();
    let mut progress = |_| Ok(());
    let extractor = Extractor::new(
        &profile,
        limits,
        &mut blocks,
        SourceStats::default(),
        &mut progress,
    );
    cairn_archive::extract(format, Cursor::new(bytes), extractor)
}

pub fn extract(bytes: &[u8]) -> Result<Link, ArchiveError> {
    extract_with(bytes, &Limits::default())
}

/// The refusal must name the entry and say why.
pub fn refused(bytes: &[u8], entry: &str, reason: &str) {
    match extract(bytes) {
        Err(ArchiveError::Entry {
            entry: e,
            reason: r,
        }) => {
            assert_eq!(e, entry);
            assert!(r.contains(reason), "{entry}: {r}");
        }
        other => panic!("{entry}: expected a refusal, got {other:?}"),
    }
}

/// The file root a directory built directly would link to.
pub fn import(content: &[u8]) -> Link {
    let mut importer = FileImporter::new(&Profile::default(), MemoryBlocks::default());
    importer.push(content).unwrap();
    importer.finish().unwrap().into()
}
