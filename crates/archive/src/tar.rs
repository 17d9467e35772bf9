//! tar, and tar inside gzip, bzip2, xz or zstd.
//!
//! Corruption is caught by the tar header checksums and by each decoder's own checks (gzip
//! CRC32 and length, bzip2 block CRCs, xz check, zstd frame structure). The decoder is read to
//! its end after the last tar entry: that is when a gzip CRC or an xz check is verified, and a
//! cut stream is noticed (A10).

use std::io::{self, Read};

use cairn_unixfs::Link;
use tar::EntryType;

use crate::extract::Extractor;
use crate::path::{self, NameRules};
use crate::{ArchiveError, ArchiveFormat};

/// Extract a tar stream, compressed as `format` says, from `input`.
pub fn extract(
    format: ArchiveFormat,
    input: impl Read,
    mut extractor: Extractor<'_>,
) -> Result<Link, ArchiveError> {
    let source = extractor.source().clone();
    let counted = source.wrap(input);
    let decoded: Box<dyn Read + '_> = match format {
        ArchiveFormat::Tar => Box::new(counted),
        ArchiveFormat::Gzip => Box::new(flate2::read::MultiGzDecoder::new(counted)),
        ArchiveFormat::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(counted)),
        ArchiveFormat::Xz => Box::new(liblzma::read::XzDecoder::new_multi_decoder(counted)),
        ArchiveFormat::Zstd => Box::new(
            ruzstd::decoding::StreamingDecoder::new(counted)
                .map_err(|e| ArchiveError::Archive(format!("invalid zstd stream: {e}")))?,
        ),
        ArchiveFormat::Zip | ArchiveFormat::SevenZ => {
            return Err(ArchiveError::Archive(format!(
                "{format:?} is not a tar format"
            )))
        }
    };
    let mut archive = tar::Archive::new(decoded);
    let entries = archive
        .entries()
        .map_err(|e| source.classify(e, "reading the tar archive"))?;
    for entry in entries {
        let entry = entry.map_err(|e| source.classify(e, "reading the tar archive"))?;
        add_entry(entry, &mut extractor)?;
    }
    let mut rest = archive.into_inner();
    io::copy(&mut rest, &mut io::sink())
        .map_err(|e| source.classify(e, "after the last tar entry"))?;
    extractor.finish()
}

fn add_entry<R: Read>(
    mut entry: tar::Entry<'_, R>,
    extractor: &mut Extractor<'_>,
) -> Result<(), ArchiveError> {
    let raw = entry.path_bytes().into_owned();
    // A8: tar names must be UTF-8 (kept byte for byte); there is no legacy encoding to assume.
    let name = std::str::from_utf8(&raw).map_err(|_| {
        ArchiveError::entry(String::from_utf8_lossy(&raw), "the name is not valid UTF-8")
    })?;
    let kind = entry.header().entry_type();
    let path = path::normalise(name, NameRules::Tar, extractor.limits())
        .map_err(|reason| ArchiveError::entry(name, reason))?;
    match kind {
        EntryType::Regular | EntryType::Continuous => {
            let declared = entry.size();
            extractor.add_file(path, Some(declared), &mut entry)
        }
        // The expanded size of a sparse entry is counted as it is produced (A5).
        EntryType::GNUSparse => extractor.add_file(path, None, &mut entry),
        EntryType::Directory => extractor.add_directory(path),
        EntryType::Symlink | EntryType::Link => {
            let target = entry
                .link_name_bytes()
                .map(|t| t.into_owned())
                .ok_or_else(|| ArchiveError::entry(name, "the link has no target"))?;
            let target = std::str::from_utf8(&target)
                .map_err(|_| ArchiveError::entry(name, "the link target is not valid UTF-8"))?;
            if kind == EntryType::Symlink {
                extractor.add_symlink(path, target)
            } else {
                let target = path::normalise(target, NameRules::Tar, extractor.limits()).map_err(
                    |reason| ArchiveError::entry(name, format!("hard link target: {reason}")),
                )?;
                extractor.add_hard_link(path, &target)
            }
        }
        EntryType::Char | EntryType::Block | EntryType::Fifo => {
            Err(extractor.refuse(name, "device files, FIFOs and sockets are not allowed"))
        }
        other => Err(extractor.refuse(
            name,
            &format!("unsupported tar entry type {:?}", other.as_byte() as char),
        )),
    }
}
