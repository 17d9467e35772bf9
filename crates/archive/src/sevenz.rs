//! 7z, entry by entry into the [`Extractor`].
//!
//! Encrypted archives and entries are refused as password-protected (A9): the reader is opened
//! without a password, so anything encrypted fails with `PasswordRequired`. Every entry's CRC is
//! checked by the decoder (A10). Symlinks (what `7z a -snl` stores) are recognised by the Unix
//! mode that 7-Zip keeps in the high half of the Windows attributes, and devices, FIFOs and
//! sockets refused by it (A4).

use std::io::{Read, Seek};

use cairn_unixfs::Link;
use sevenz_rust2::{ArchiveReader, Error, Password};

use crate::extract::{Extractor, SourceStats};
use crate::path::{self, NameRules};
use crate::ArchiveError;

/// Windows attribute flag: the high 16 bits hold a Unix mode.
const UNIX_EXTENSION: u32 = 0x8000;
const S_IFMT: u32 = 0o170000;
const S_IFLNK: u32 = 0o120000;
const S_IFREG: u32 = 0o100000;
const MAX_LINK_TARGET: u64 = 4096;

pub fn extract(
    input: impl Read + Seek,
    mut extractor: Extractor<'_>,
) -> Result<Link, ArchiveError> {
    let source = extractor.source().clone();
    let mut reader = ArchiveReader::new(source.wrap(input), Password::empty())
        .map_err(|e| invalid(e, &source))?;
    let max_entries = extractor.limits().max_entries;
    let entries = reader.archive().files.len() as u64;
    if entries > max_entries {
        return Err(ArchiveError::Archive(format!(
            "the archive has more than {max_entries} entries"
        )));
    }
    // The crate's callback returns its own error type; ours is kept here and the walk stopped.
    let mut refusal = None;
    let walked =
        reader.for_each_entries(
            |entry, content| match add_entry(&mut extractor, entry, content) {
                Ok(()) => Ok(true),
                Err(e) => {
                    refusal = Some(e);
                    Ok(false)
                }
            },
        );
    if let Some(refusal) = refusal {
        return Err(refusal);
    }
    walked.map_err(|e| invalid(e, &source))?;
    extractor.finish()
}

fn add_entry(
    extractor: &mut Extractor<'_>,
    entry: &sevenz_rust2::ArchiveEntry,
    content: &mut dyn Read,
) -> Result<(), ArchiveError> {
    let name = entry.name();
    if entry.is_anti_item() {
        return Err(ArchiveError::entry(
            name,
            "anti-items (deletions) are not supported",
        ));
    }
    let Some(path) = path::normalise(name, NameRules::Tar, extractor.limits())
        .map_err(|reason| ArchiveError::entry(name, reason))?
    else {
        return extractor.add_root(name, entry.is_directory());
    };
    let attributes = entry.windows_attributes();
    let unix_type = (entry.has_windows_attributes && attributes & UNIX_EXTENSION != 0)
        .then_some((attributes >> 16) & S_IFMT)
        .filter(|t| *t != 0);
    match unix_type {
        _ if entry.is_directory() => extractor.add_directory(path),
        Some(S_IFLNK) => {
            let mut target = String::new();
            content
                .take(MAX_LINK_TARGET)
                .read_to_string(&mut target)
                .map_err(|e| ArchiveError::entry(name, format!("symlink target: {e}")))?;
            extractor.add_symlink(path, &target)
        }
        None | Some(S_IFREG) => extractor.add_file(path, Some(entry.size()), content),
        Some(_) => Err(extractor.refuse(name, "device files, FIFOs and sockets are not allowed")),
    }
}

fn invalid(e: Error, source: &SourceStats) -> ArchiveError {
    match e {
        Error::PasswordRequired | Error::MaybeBadPassword(_) => ArchiveError::Archive(
            "the archive is encrypted (password-protected archives are not supported)".into(),
        ),
        // A cut archive and a failing disk both surface as I/O; only the second is ours.
        Error::Io(io, _) => source.classify(io, "reading the 7z archive"),
        other => ArchiveError::Archive(format!("invalid 7z archive: {other}")),
    }
}
