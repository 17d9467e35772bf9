//! tar, and tar inside gzip, bzip2, xz or zstd, as the archivers people use write it: GNU tar
//! (gnu, posix, ustar and v7 formats, sparse files), bsdtar, git archive, Python's `tarfile`,
//! npm's `tar`.
//!
//! - [`stream`]: members one by one, with GNU long names and pax headers applied;
//! - [`pax`]: pax records (`x` for one entry, `g` for all that follow; neither is an entry);
//! - [`sparse`]: sparse maps in GNU's three encodings, expanded as read (A5).
//!
//! Corruption is caught by the tar header checksums and by each decoder's own checks (gzip
//! CRC32 and length, bzip2 block CRCs, xz check, zstd frame structure). The archive must end
//! with its end-of-archive block, and the decoder is read to its end after it: that is when a
//! gzip CRC or an xz check is verified, and a cut stream is noticed (A10).

mod pax;
mod sparse;
mod stream;

use std::io::Read;

use cairn_unixfs::Link;

pub(crate) use stream::checksum_ok;
use stream::{Kind, Member, TarStream};

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
    let decoded = match format {
        ArchiveFormat::Zip | ArchiveFormat::SevenZ => {
            return Err(ArchiveError::Archive(format!(
                "{format:?} is not a tar format"
            )))
        }
        tar_family => tar_family.decoder(counted).map_err(|e| {
            ArchiveError::Archive(format!("invalid {} stream: {e}", tar_family.name()))
        })?,
    };
    let mut stream = TarStream::new(decoded, source, extractor.limits().clone());
    while let Some(member) = stream.next_member(&mut extractor)? {
        add_member(member, &mut stream, &mut extractor)?;
    }
    stream.finish()?;
    extractor.finish()
}

fn add_member<R: Read>(
    mut member: Member,
    stream: &mut TarStream<R>,
    extractor: &mut Extractor<'_>,
) -> Result<(), ArchiveError> {
    // A8: tar names must be UTF-8 (kept byte for byte); there is no legacy encoding to assume.
    let name = std::str::from_utf8(&member.name)
        .map_err(|_| {
            ArchiveError::entry(
                String::from_utf8_lossy(&member.name),
                "the name is not valid UTF-8",
            )
        })?
        .to_owned();
    let Some(path) = path::normalise(&name, NameRules::Tar, extractor.limits())
        .map_err(|reason| ArchiveError::entry(&name, reason))?
    else {
        return extractor.add_root(&name, member.kind == Kind::Directory);
    };
    match member.kind {
        Kind::File => {
            let size = member.size;
            extractor.add_file(path, Some(size), stream.content(&mut member)?)
        }
        Kind::Directory => extractor.add_directory(path),
        Kind::Symlink | Kind::HardLink => {
            let target = member
                .link
                .as_deref()
                .filter(|t| !t.is_empty())
                .ok_or_else(|| ArchiveError::entry(&name, "the link has no target"))?;
            let target = std::str::from_utf8(target)
                .map_err(|_| ArchiveError::entry(&name, "the link target is not valid UTF-8"))?;
            if member.kind == Kind::Symlink {
                return extractor.add_symlink(path, target);
            }
            match path::normalise(target, NameRules::Tar, extractor.limits()) {
                Ok(Some(target)) => extractor.add_hard_link(path, &target),
                Ok(None) => Err(ArchiveError::entry(
                    &name,
                    "the hard link points at the archive root, not a regular file",
                )),
                Err(reason) => Err(ArchiveError::entry(
                    &name,
                    format!("hard link target: {reason}"),
                )),
            }
        }
        Kind::Special => {
            Err(extractor.refuse(&name, "device files, FIFOs and sockets are not allowed"))
        }
        Kind::Unsupported(flag) => Err(extractor.refuse(
            &name,
            &format!("unsupported tar entry type {:?}", flag as char),
        )),
    }
}
