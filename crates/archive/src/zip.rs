//! zip (stored, deflate, bzip2; zip64; data descriptors), entry by entry into the [`Extractor`].
//!
//! Beyond the shared rules, zip has its own: `\` in names is refused (A1); a name flagged as
//! UTF-8 must be valid UTF-8, and one without the flag is kept as UTF-8 when it is valid (what
//! Info-ZIP on Unix writes) and decoded as CP437 otherwise (what Windows tools write; A8); the
//! Info-ZIP Unicode Path extra field (0x7075), when its checksum matches the name, replaces it
//! (the `zip` crate applies it, and sets the UTF-8 flag); Unix devices, FIFOs and sockets are
//! refused (A4); encrypted entries are refused as password-protected (A9); entries whose data
//! overlap, the trick behind non-recursive zip bombs, are refused (A6); every entry's CRC is
//! checked by reading it to its end (A10).

use std::io::{Read, Seek, SeekFrom};

use cairn_unixfs::Link;

use crate::extract::Extractor;
use crate::path::{self, NameRules};
use crate::ArchiveError;

/// Unix file-type bits in a zip entry's external attributes.
const S_IFMT: u32 = 0o170000;
const S_IFLNK: u32 = 0o120000;
const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
/// General-purpose flag bit 11: the name is UTF-8.
const UTF8_FLAG: u16 = 1 << 11;
/// Longest symlink target read from an entry's content.
const MAX_LINK_TARGET: u64 = 4096;

pub fn extract(
    mut input: impl Read + Seek,
    mut extractor: Extractor<'_>,
) -> Result<Link, ArchiveError> {
    let source = extractor.source().clone();
    let recorded =
        recorded_entries(&mut input).map_err(|e| source.classify(e, "reading the zip"))?;
    let mut archive = zip::ZipArchive::new(source.wrap(input))
        .map_err(|e| ArchiveError::Archive(format!("invalid zip archive: {}", unreadable(&e))))?;
    // The `zip` crate indexes entries by name and keeps one of each: a second entry with the
    // same name would vanish silently. Compare with the count the archive itself records (A7).
    if let Some(recorded) = recorded.filter(|r| *r != archive.len() as u64) {
        return Err(ArchiveError::Archive(format!(
            "the archive records {recorded} entries but has {} distinct names: duplicate entries",
            archive.len()
        )));
    }
    let max_entries = extractor.limits().max_entries;
    if archive.len() as u64 > max_entries {
        return Err(ArchiveError::Archive(format!(
            "the archive has more than {max_entries} entries"
        )));
    }
    refuse_overlaps(&mut archive)?;
    for index in 0..archive.len() {
        let raw = archive
            .by_index_raw(index)
            .map_err(|e| ArchiveError::Archive(format!("zip entry {index}: {e}")))?;
        let name = entry_name(raw.name_raw(), raw.flags().as_u16() & UTF8_FLAG != 0)?;
        let unix_type = raw.unix_mode().map(|m| m & S_IFMT).filter(|t| *t != 0);
        let (encrypted, size) = (raw.encrypted(), raw.size());
        let is_dir = raw.is_dir() || unix_type == Some(S_IFDIR);
        drop(raw);
        if encrypted {
            return Err(ArchiveError::entry(
                name,
                "the entry is encrypted (password-protected archives are not supported)",
            ));
        }
        let Some(entry_path) = path::normalise(&name, NameRules::Zip, extractor.limits())
            .map_err(|reason| ArchiveError::entry(&name, reason))?
        else {
            extractor.add_root(&name, is_dir)?;
            continue;
        };
        let file = archive
            .by_index(index)
            .map_err(|e| ArchiveError::entry(&name, format!("unreadable: {e}")))?;
        match unix_type {
            _ if is_dir => extractor.add_directory(entry_path)?,
            Some(S_IFLNK) => {
                let mut target = String::new();
                file.take(MAX_LINK_TARGET)
                    .read_to_string(&mut target)
                    .map_err(|e| ArchiveError::entry(&name, format!("symlink target: {e}")))?;
                extractor.add_symlink(entry_path, &target)?;
            }
            None | Some(S_IFREG) => extractor.add_file(entry_path, Some(size), file)?,
            Some(_) => {
                return Err(
                    extractor.refuse(&name, "device files, FIFOs and sockets are not allowed")
                )
            }
        }
    }
    extractor.finish()
}

/// An entry's name (A8): as UTF-8 when flagged so (and refused if it is not), else as UTF-8
/// when valid, else as CP437.
fn entry_name(raw: &[u8], flagged_utf8: bool) -> Result<String, ArchiveError> {
    match std::str::from_utf8(raw) {
        Ok(name) => Ok(name.to_owned()),
        Err(_) if flagged_utf8 => Err(ArchiveError::entry(
            String::from_utf8_lossy(raw),
            "the name is flagged as UTF-8 but is not valid UTF-8",
        )),
        Err(_) => Ok(path::decode_cp437(raw)),
    }
}

/// Why the `zip` crate could not open an archive, in words for the person who sent it (its own
/// are a parser's: "Could not find EOCD").
pub(crate) fn unreadable(e: &zip::result::ZipError) -> String {
    use zip::result::ZipError;
    match e {
        ZipError::InvalidArchive(why) if why.starts_with("Could not find EOCD") => {
            "its end-of-central-directory record, the index every zip ends with, is missing: \
             the file is cut short, or is not a zip"
                .to_owned()
        }
        ZipError::InvalidArchive(why) => format!("its central directory is damaged ({why})"),
        ZipError::UnsupportedArchive(why) => {
            format!("it uses a zip feature Cairn does not read ({why})")
        }
        ZipError::Io(e) => format!("it could not be read: {e}"),
        other => other.to_string(),
    }
}

/// The entry count in the end-of-central-directory record, when it holds one (not a zip64
/// archive, whose count lives elsewhere and is checked by the `zip` crate's own parsing).
fn recorded_entries(input: &mut (impl Read + Seek)) -> std::io::Result<Option<u64>> {
    const EOCD: &[u8] = b"PK\x05\x06";
    // The record is 22 bytes plus a comment of up to 65535.
    let len = input.seek(SeekFrom::End(0))?;
    let tail_len = len.min(22 + 65_535);
    input.seek(SeekFrom::Start(len - tail_len))?;
    let mut tail = vec![0; tail_len as usize];
    input.read_exact(&mut tail)?;
    input.seek(SeekFrom::Start(0))?;
    let Some(at) = tail.windows(4).rposition(|w| w == EOCD) else {
        return Ok(None);
    };
    let Some(count) = tail.get(at + 10..at + 12) else {
        return Ok(None);
    };
    let count = u16::from_le_bytes([count[0], count[1]]);
    Ok((count != u16::MAX).then_some(u64::from(count)))
}

/// Refuse entries whose bytes in the archive overlap another entry's.
fn refuse_overlaps<R: Read + Seek>(archive: &mut zip::ZipArchive<R>) -> Result<(), ArchiveError> {
    let mut spans = Vec::with_capacity(archive.len());
    for index in 0..archive.len() {
        let raw = archive
            .by_index_raw(index)
            .map_err(|e| ArchiveError::Archive(format!("zip entry {index}: {e}")))?;
        let start = raw.header_start();
        let end = raw.data_start().unwrap_or(start) + raw.compressed_size();
        spans.push((
            start,
            end,
            String::from_utf8_lossy(raw.name_raw()).into_owned(),
        ));
    }
    spans.sort_unstable();
    for pair in spans.windows(2) {
        if pair[1].0 < pair[0].1 {
            return Err(ArchiveError::entry(
                &pair[1].2,
                format!(
                    "the entry overlaps {:?} (a zip bomb construction)",
                    pair[0].2
                ),
            ));
        }
    }
    Ok(())
}
