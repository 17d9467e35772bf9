//! The bytes of TUS uploads, behind one trait: append-only, and the durable length *is* the
//! offset.
//!
//! A PATCH appends through an [`Appender`] and answers `204` only once [`Appender::keep`] has
//! made its bytes durable. Nothing else records offsets, so they survive any crash by
//! construction (a crash may keep more than was acknowledged, never less). A chunk that carries
//! `Upload-Checksum` is *atomic*: all of it is kept or none, even if the process dies mid-chunk.
//!
//! [`FileTusBytes`] keeps one file per upload on local disk; `s3::S3TusBytes` keeps the bytes
//! in a bucket, for several nodes. [`suite::run`] holds both to the same behaviour.

use std::fmt::Debug;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::PathBuf;

use crate::blobs::ReadSeek;
use crate::write_behind::WriteBehind;

pub trait TusBytes: Send + Sync + Debug {
    /// Create the empty bytes of a new upload, durably.
    fn create(&self, id: &str) -> io::Result<()>;
    /// The durable offset, after undoing an atomic chunk a crash interrupted.
    fn offset(&self, id: &str) -> io::Result<u64>;
    /// Append to the upload. `atomic` marks a chunk that must be kept whole or not at all.
    fn appender(&self, id: &str, atomic: bool) -> io::Result<Box<dyn Appender>>;
    /// Read a complete upload's bytes. Nothing may be appended afterwards.
    fn open_read(&self, id: &str) -> io::Result<Box<dyn ReadSeek>>;
    /// Delete an upload's bytes; already gone is fine.
    fn remove(&self, id: &str) -> io::Result<()>;
}

/// Appends one PATCH's bytes. Dropped without `keep` or `discard`, it behaves as a crash would.
pub trait Appender: Send {
    /// The upload's offset when this appender was opened: where its bytes go.
    fn start(&self) -> u64;
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Make every byte appended durable (the `204` may follow) and return the new offset.
    fn keep(self: Box<Self>) -> io::Result<u64>;
    /// Throw this chunk away (checksum mismatch): the upload is back at its old offset.
    fn discard(self: Box<Self>) -> io::Result<u64>;
}

/// Write the concatenation of the complete uploads `parts` as the bytes of `id`, durably
/// (TUS concatenation); returns the length.
pub fn concatenate(bytes: &dyn TusBytes, id: &str, parts: &[String]) -> io::Result<u64> {
    bytes.create(id)?;
    let mut appender = bytes.appender(id, true)?;
    let mut buffer = vec![0u8; 1 << 20];
    for part in parts {
        let mut reader = bytes.open_read(part)?;
        loop {
            let n = reader.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            appender.append(&buffer[..n])?;
        }
    }
    appender.keep()
}

/// Upload ids name files and objects: keep them to letters, digits and `-`.
pub(crate) fn check_id(id: &str) -> io::Result<()> {
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "bad upload id"));
    }
    Ok(())
}

/// One append-only file per upload.
///
/// Before an atomic chunk, a marker file records where it started; on success the marker goes,
/// and on a checksum mismatch the file is cut back to it. If the marker is still there the next
/// time the offset is read, the chunk never finished, and it is cut back.
#[derive(Clone, Debug)]
pub struct FileTusBytes {
    dir: PathBuf,
}

impl FileTusBytes {
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        fs::create_dir_all(&dir)?;
        Ok(Self { dir })
    }

    fn path(&self, id: &str, suffix: &str) -> io::Result<PathBuf> {
        check_id(id)?;
        Ok(self.dir.join(format!("{id}{suffix}")))
    }

    fn cut_back(&self, id: &str, len: u64) -> io::Result<()> {
        let file = OpenOptions::new().write(true).open(self.path(id, "")?)?;
        file.set_len(len)?;
        file.sync_all()
    }
}

impl TusBytes for FileTusBytes {
    fn create(&self, id: &str) -> io::Result<()> {
        File::create_new(self.path(id, "")?)?.sync_all()?;
        File::open(&self.dir)?.sync_all()
    }

    fn offset(&self, id: &str) -> io::Result<u64> {
        let marker = self.path(id, ".chunk")?;
        if let Ok(start) = fs::read_to_string(&marker) {
            let start: u64 = start.trim().parse().map_err(io::Error::other)?;
            self.cut_back(id, start)?;
            fs::remove_file(&marker)?;
        }
        Ok(fs::metadata(self.path(id, "")?)?.len())
    }

    fn appender(&self, id: &str, atomic: bool) -> io::Result<Box<dyn Appender>> {
        let start = self.offset(id)?;
        let marker = if atomic {
            let marker = self.path(id, ".chunk")?;
            let mut file = File::create(&marker)?;
            write!(file, "{start}")?;
            file.sync_all()?;
            Some(marker)
        } else {
            None
        };
        let file = OpenOptions::new().append(true).open(self.path(id, "")?)?;
        Ok(Box::new(FileAppender {
            file,
            start,
            written: 0,
            write_behind: WriteBehind::from(start),
            marker,
        }))
    }

    fn open_read(&self, id: &str) -> io::Result<Box<dyn ReadSeek>> {
        Ok(Box::new(File::open(self.path(id, "")?)?))
    }

    fn remove(&self, id: &str) -> io::Result<()> {
        for suffix in [".chunk", ""] {
            match fs::remove_file(self.path(id, suffix)?) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }
}

struct FileAppender {
    file: File,
    start: u64,
    written: u64,
    /// The `fdatasync` before the `204` then waits for little more than the last stretch.
    write_behind: WriteBehind,
    marker: Option<PathBuf>,
}

impl Appender for FileAppender {
    fn start(&self) -> u64 {
        self.start
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)?;
        self.written += bytes.len() as u64;
        self.write_behind.wrote(&self.file, bytes.len() as u64);
        Ok(())
    }

    fn keep(self: Box<Self>) -> io::Result<u64> {
        self.file.sync_data()?;
        if let Some(marker) = &self.marker {
            fs::remove_file(marker)?;
        }
        Ok(self.start + self.written)
    }

    fn discard(self: Box<Self>) -> io::Result<u64> {
        self.file.set_len(self.start)?;
        self.file.sync_all()?;
        if let Some(marker) = &self.marker {
            fs::remove_file(marker)?;
        }
        Ok(self.start)
    }
}

/// The behaviour every `TusBytes` must have, run against each implementation; only in tests
/// (`suite` feature).
#[cfg(any(test, feature = "suite"))]
pub mod suite {
    use std::io::Read;

    use super::{concatenate, TusBytes};

    fn read_all(bytes: &dyn TusBytes, id: &str) -> Vec<u8> {
        let mut all = Vec::new();
        bytes.open_read(id).unwrap().read_to_end(&mut all).unwrap();
        all
    }

    /// `big` is a size that makes the backend cut its storage into several pieces (for S3,
    /// above the minimum part size); it must hold at least 3 bytes.
    pub fn run(bytes: &dyn TusBytes, big: usize) {
        bytes.create("u1").unwrap();
        assert_eq!(bytes.offset("u1").unwrap(), 0);

        let mut plain = bytes.appender("u1", false).unwrap();
        plain.append(b"hello ").unwrap();
        assert_eq!(plain.keep().unwrap(), 6);

        let mut checked = bytes.appender("u1", true).unwrap();
        checked.append(b"garbage").unwrap();
        assert_eq!(checked.discard().unwrap(), 6);
        assert_eq!(bytes.offset("u1").unwrap(), 6);

        // An atomic chunk cut off by a crash (the appender is never finished).
        let mut interrupted = bytes.appender("u1", true).unwrap();
        interrupted.append(b"half a chu").unwrap();
        std::mem::forget(interrupted);
        assert_eq!(
            bytes.offset("u1").unwrap(),
            6,
            "the unfinished chunk is undone"
        );

        let mut checked = bytes.appender("u1", true).unwrap();
        checked.append(b"world").unwrap();
        assert_eq!(checked.keep().unwrap(), 11);
        assert_eq!(bytes.offset("u1").unwrap(), 11);

        // Big chunks, in odd slices, survive a crash mid-chunk up to what was kept, and an
        // interrupted atomic big chunk leaves nothing behind.
        let pattern: Vec<u8> = (0..big * 2 + 3).map(|i| (i % 251) as u8).collect();
        bytes.create("big").unwrap();
        let mut first = bytes.appender("big", false).unwrap();
        first.append(&pattern[..3]).unwrap();
        assert_eq!(first.keep().unwrap(), 3);
        let mut lost = bytes.appender("big", true).unwrap();
        lost.append(&pattern[3..big + 3]).unwrap();
        std::mem::forget(lost);
        assert_eq!(bytes.offset("big").unwrap(), 3);
        let mut second = bytes.appender("big", false).unwrap();
        for slice in pattern[3..].chunks(big / 3 + 1) {
            second.append(slice).unwrap();
        }
        assert_eq!(second.keep().unwrap(), pattern.len() as u64);
        assert_eq!(read_all(bytes, "big"), pattern);

        bytes.create("u2").unwrap();
        let mut more = bytes.appender("u2", false).unwrap();
        more.append(b"!").unwrap();
        more.keep().unwrap();
        assert_eq!(
            concatenate(bytes, "u3", &["u1".into(), "u2".into()]).unwrap(),
            12
        );
        assert_eq!(read_all(bytes, "u3"), b"hello world!");

        bytes.create("empty").unwrap();
        assert_eq!(read_all(bytes, "empty"), b"");

        for id in ["u1", "u2", "u3", "big", "empty"] {
            bytes.remove(id).unwrap();
            bytes.remove(id).unwrap();
            assert!(bytes.offset(id).is_err(), "{id} is gone");
        }
        assert!(bytes.create("../x").is_err());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_tus_bytes_pass_the_suite() {
        let dir = tempfile::tempdir().unwrap();
        suite::run(&FileTusBytes::open(dir.path()).unwrap(), 1000);
    }
}
