//! zip (stored, deflate, bzip2), entry by entry into the [`Extractor`].
//!
//! Beyond the shared rules, zip has its own: `\` in names is refused (A1); a name that is not
//! valid UTF-8 is decoded as CP437 (A8; the `zip` crate does not expose the UTF-8 flag, so a
//! flagged but invalid name is decoded too rather than refused); encrypted entries are refused
//! as password-protected (A9); entries whose data overlap, the trick behind non-recursive zip
//! bombs, are refused (A6); every entry's CRC is checked by reading it to its end (A10).

use std::io::{Read, Seek, SeekFrom};

use cairn_unixfs::Link;

use crate::extract::Extractor;
use crate::path::{self, NameRules};
use crate::ArchiveError;

/// Unix file-type bits in a zip entry's external attributes.
const S_IFMT: u32 = 0o170000;
const S_IFLNK: u32 = 0o120000;
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
        .map_err(|e| ArchiveError::Archive(format!("invalid zip archive: {e}")))?;
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
        let name = match std::str::from_utf8(raw.name_raw()) {
            Ok(name) => name.to_owned(),
            Err(_) => path::decode_cp437(raw.name_raw()),
        };
        let (encrypted, is_dir, size) = (raw.encrypted(), raw.is_dir(), raw.size());
        let is_symlink = raw.unix_mode().is_some_and(|m| m & S_IFMT == S_IFLNK);
        drop(raw);
        if encrypted {
            return Err(ArchiveError::entry(
                name,
                "the entry is encrypted (password-protected archives are not supported)",
            ));
        }
        let entry_path = path::normalise(&name, NameRules::Zip, extractor.limits())
            .map_err(|reason| ArchiveError::entry(&name, reason))?;
        let file = archive
            .by_index(index)
            .map_err(|e| ArchiveError::entry(&name, format!("unreadable: {e}")))?;
        if is_dir {
            extractor.add_directory(entry_path)?;
        } else if is_symlink {
            let mut target = String::new();
            file.take(MAX_LINK_TARGET)
                .read_to_string(&mut target)
                .map_err(|e| ArchiveError::entry(&name, format!("symlink target: {e}")))?;
            extractor.add_symlink(entry_path, &target)?;
        } else {
            extractor.add_file(entry_path, Some(size), file)?;
        }
    }
    extractor.finish()
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
