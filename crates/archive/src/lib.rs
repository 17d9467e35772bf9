//! Archive extraction into UnixFS directories, under `docs/archive-safety.md`.
//!
//! Archives come from strangers. Entries stream from the decoder straight into the importer and
//! the [`DirectoryBuilder`]: nothing is written to the host filesystem under a name the archive
//! chose, and the host filesystem is never read. Every rule of the checklist is enforced in one
//! place, [`Extractor`], whichever format the entries come from.
//!
//! - [`path`]: name normalisation (A1, A8) and symlink targets (A2).
//! - [`extract`]: the [`Extractor`] (A3–A7, A11) and byte accounting for bombs (A6).
//! - [`tar`]: tar, and tar inside gzip, bzip2, xz or zstd: pax headers, GNU long names,
//!   sparse files (A5), v7 tars; A10 through header checksums and the decoders' checks.
//! - [`sevenz`]: 7z entries (A9 encrypted archives and entries, A10 CRCs).
//! - [`zip`]: zip entries (A1 `\\`, A6 overlaps, A8 CP437, A9 encryption, A10 CRCs).
//! - [`recognise`]: whether bytes that begin like an archive are one (a compressed stream that
//!   holds a tar, a zip that is not a document), before anything is extracted.
//! - [`extract()`]: the one entry point, by format.
//!
//! This crate knows nothing of tokio, HTTP or SQL.

pub mod extract;
/// The bodies of the fuzz targets that feed this crate untrusted bytes (`fuzz/`), shared with
/// the stable replay of their corpus (`tests/fuzz_corpus.rs`); only with the `fuzz` feature.
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod path;
pub mod recognise;
pub mod sevenz;
pub mod tar;
pub mod zip;

use std::io::{self, Read, Seek};

pub use cairn_unixfs::{DirectoryBuilder, Link};
pub use extract::Extractor;

/// Limits on what an archive may expand to. The total is the smaller of the configured cap and
/// the account's remaining quota; the caller sets it.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Content bytes actually produced, over all entries (sparse entries count expanded).
    pub max_total_bytes: u64,
    /// Files, directories and links.
    pub max_entries: u64,
    /// Path components.
    pub max_depth: usize,
    /// Bytes of one path component.
    pub max_name_bytes: usize,
    /// Bytes of a whole path.
    pub max_path_bytes: usize,
    /// Content bytes produced per archive byte read, checked once `ratio_after_bytes` are out.
    pub max_ratio: u64,
    pub ratio_after_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_total_bytes: 16 << 30,
            max_entries: 100_000,
            max_depth: 64,
            max_name_bytes: 255,
            max_path_bytes: 4096,
            max_ratio: 1000,
            ratio_after_bytes: 64 << 20,
        }
    }
}

/// Why an archive was refused. `Entry` and `Archive` are the archive's fault (`invalid_archive`
/// for the client); `Io` is a failure of our own storage.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("entry {entry:?}: {reason}")]
    Entry { entry: String, reason: String },
    #[error("{0}")]
    Archive(String),
    /// The content produced passed `Limits::max_total_bytes` (A6): the caller knows whether
    /// that was its configured cap or the account's remaining quota.
    #[error("entry {entry:?}: the archive expands to more than {limit} bytes")]
    TooLarge { entry: String, limit: u64 },
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl ArchiveError {
    pub fn entry(entry: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Entry {
            entry: entry.into(),
            reason: reason.into(),
        }
    }

    /// True when the archive itself is at fault (as opposed to our storage).
    pub fn is_invalid_archive(&self) -> bool {
        !matches!(self, Self::Io(_))
    }
}

/// Container and compression formats, recognised by their magic bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchiveFormat {
    Zip,
    Tar,
    Gzip,
    Bzip2,
    Xz,
    Zstd,
    SevenZ,
}

impl ArchiveFormat {
    /// The format a stream begins like, from its first bytes (512 cover a tar header): only a
    /// hint, which [`recognise::recognise`] confirms. A tar is known by a first header whose
    /// checksum holds (v7 tars have no `ustar` magic).
    pub fn detect(head: &[u8]) -> Option<Self> {
        use ArchiveFormat::*;
        match head {
            [b'P', b'K', 3, 4, ..] | [b'P', b'K', 5, 6, ..] => Some(Zip),
            [0x1f, 0x8b, ..] => Some(Gzip),
            [b'B', b'Z', b'h', ..] => Some(Bzip2),
            [0xfd, b'7', b'z', b'X', b'Z', 0, ..] => Some(Xz),
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Some(Zstd),
            [b'7', b'z', 0xbc, 0xaf, 0x27, 0x1c, ..] => Some(SevenZ),
            _ => head
                .get(..512)
                .and_then(|block| block.try_into().ok())
                .filter(tar::checksum_ok)
                .map(|_| Tar),
        }
    }

    /// The format's name: for the compressed ones, the compression's.
    pub fn name(self) -> &'static str {
        match self {
            Self::Zip => "zip",
            Self::Tar => "tar",
            Self::Gzip => "gzip",
            Self::Bzip2 => "bzip2",
            Self::Xz => "xz",
            Self::Zstd => "zstd",
            Self::SevenZ => "7z",
        }
    }

    /// The archive's name, as records and file extensions give it (`tar.gz`).
    pub fn archive_name(self) -> &'static str {
        match self {
            Self::Gzip => "tar.gz",
            Self::Bzip2 => "tar.bz2",
            Self::Xz => "tar.xz",
            Self::Zstd => "tar.zst",
            other => other.name(),
        }
    }

    /// The archive of that name (see [`Self::archive_name`]).
    pub fn from_archive_name(name: &str) -> Option<Self> {
        use ArchiveFormat::*;
        [Zip, Tar, Gzip, Bzip2, Xz, Zstd, SevenZ]
            .into_iter()
            .find(|format| format.archive_name() == name)
    }

    /// `input` decompressed, for the formats that are a compression (a tar inside); `input`
    /// itself for a plain tar. Multi-member gzip and bzip2 streams and multi-stream xz are
    /// read whole, as their tools write them.
    pub(crate) fn decoder<'a>(self, input: impl Read + 'a) -> io::Result<Box<dyn Read + 'a>> {
        Ok(match self {
            Self::Tar => Box::new(input),
            Self::Gzip => Box::new(flate2::read::MultiGzDecoder::new(input)),
            Self::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(input)),
            Self::Xz => Box::new(liblzma::read::XzDecoder::new_multi_decoder(input)),
            Self::Zstd => Box::new(
                ruzstd::decoding::StreamingDecoder::new(input)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?,
            ),
            Self::Zip | Self::SevenZ => {
                return Err(io::Error::other(format!(
                    "{} is not a compression",
                    self.name()
                )))
            }
        })
    }
}

/// Extract an archive of `format` from `input` through `extractor`.
pub fn extract(
    format: ArchiveFormat,
    input: impl Read + Seek,
    extractor: Extractor<'_>,
) -> Result<Link, ArchiveError> {
    match format {
        ArchiveFormat::Zip => zip::extract(input, extractor),
        ArchiveFormat::SevenZ => sevenz::extract(input, extractor),
        tar_family => tar::extract(tar_family, input, extractor),
    }
}
