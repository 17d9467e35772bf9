//! The bytes of TUS uploads: one append-only file per upload.
//!
//! The durable length of the file *is* the upload's offset: a PATCH appends, `fdatasync`s, and
//! only then answers `204` with the new offset. Nothing else records offsets, so they survive
//! any crash by construction (a crash may keep more than was acknowledged, never less).
//!
//! A PATCH that carries `Upload-Checksum` must be all-or-nothing, even if the process dies
//! mid-chunk. Before writing such a chunk a marker file records where it started; on success
//! the marker goes, and on a checksum mismatch the file is cut back to it. If the marker is
//! still there the next time the file is opened, the chunk never finished, and it is cut back.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::PathBuf;

use crate::blobs::ReadSeek;

#[derive(Clone, Debug)]
pub struct TusBytes {
    dir: PathBuf,
}

impl TusBytes {
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        fs::create_dir_all(&dir)?;
        Ok(Self { dir })
    }

    fn path(&self, id: &str, suffix: &str) -> io::Result<PathBuf> {
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "bad upload id"));
        }
        Ok(self.dir.join(format!("{id}{suffix}")))
    }

    /// Create the empty file of a new upload, durably.
    pub fn create(&self, id: &str) -> io::Result<()> {
        File::create_new(self.path(id, "")?)?.sync_all()?;
        File::open(&self.dir)?.sync_all()
    }

    /// The durable offset, after undoing a checksummed chunk a crash interrupted.
    pub fn offset(&self, id: &str) -> io::Result<u64> {
        let marker = self.path(id, ".chunk")?;
        if let Ok(start) = fs::read_to_string(&marker) {
            let start: u64 = start.trim().parse().map_err(io::Error::other)?;
            self.cut_back(id, start)?;
            fs::remove_file(&marker)?;
        }
        Ok(fs::metadata(self.path(id, "")?)?.len())
    }

    /// Append to the upload. `atomic` marks a chunk that must be kept whole or not at all.
    pub fn appender(&self, id: &str, atomic: bool) -> io::Result<Appender> {
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
        Ok(Appender {
            file,
            start,
            written: 0,
            marker,
        })
    }

    pub fn open_read(&self, id: &str) -> io::Result<Box<dyn ReadSeek>> {
        Ok(Box::new(File::open(self.path(id, "")?)?))
    }

    /// Write the concatenation of `parts` as the bytes of `id`, durably; returns the length.
    pub fn concatenate(&self, id: &str, parts: &[String]) -> io::Result<u64> {
        let mut out = File::create_new(self.path(id, "")?)?;
        let mut total = 0;
        for part in parts {
            total += io::copy(&mut File::open(self.path(part, "")?)?, &mut out)?;
        }
        out.sync_all()?;
        File::open(&self.dir)?.sync_all()?;
        Ok(total)
    }

    /// Delete an upload's bytes; already gone is fine.
    pub fn remove(&self, id: &str) -> io::Result<()> {
        for suffix in [".chunk", ""] {
            match fs::remove_file(self.path(id, suffix)?) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    fn cut_back(&self, id: &str, len: u64) -> io::Result<()> {
        let file = OpenOptions::new().write(true).open(self.path(id, "")?)?;
        file.set_len(len)?;
        file.sync_all()
    }
}

/// Appends one PATCH's bytes.
pub struct Appender {
    file: File,
    start: u64,
    written: u64,
    marker: Option<PathBuf>,
}

impl Appender {
    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// The offset the upload will have once this chunk is kept.
    pub fn offset(&self) -> u64 {
        self.start + self.written
    }

    /// Make every byte written durable (the `204` may follow) and return the new offset.
    pub fn keep(self) -> io::Result<u64> {
        self.file.sync_data()?;
        if let Some(marker) = &self.marker {
            fs::remove_file(marker)?;
        }
        Ok(self.start + self.written)
    }

    /// Throw this chunk away (checksum mismatch): the upload is back at its old offset.
    pub fn discard(self) -> io::Result<u64> {
        self.file.set_len(self.start)?;
        self.file.sync_all()?;
        if let Some(marker) = &self.marker {
            fs::remove_file(marker)?;
        }
        Ok(self.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_the_durable_length_and_atomic_chunks_are_all_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = TusBytes::open(dir.path()).unwrap();
        bytes.create("u1").unwrap();
        assert_eq!(bytes.offset("u1").unwrap(), 0);

        let mut plain = bytes.appender("u1", false).unwrap();
        plain.write_all(b"hello ").unwrap();
        assert_eq!(plain.keep().unwrap(), 6);

        let mut checked = bytes.appender("u1", true).unwrap();
        checked.write_all(b"garbage").unwrap();
        assert_eq!(checked.discard().unwrap(), 6);
        assert_eq!(bytes.offset("u1").unwrap(), 6);

        // A checksummed chunk cut off by a crash (the appender is never finished).
        let mut interrupted = bytes.appender("u1", true).unwrap();
        interrupted.write_all(b"half a chu").unwrap();
        std::mem::forget(interrupted);
        assert_eq!(
            bytes.offset("u1").unwrap(),
            6,
            "the unfinished chunk is undone"
        );

        let mut checked = bytes.appender("u1", true).unwrap();
        checked.write_all(b"world").unwrap();
        assert_eq!(checked.keep().unwrap(), 11);
        assert_eq!(bytes.offset("u1").unwrap(), 11);

        bytes.create("u2").unwrap();
        let mut more = bytes.appender("u2", false).unwrap();
        more.write_all(b"!").unwrap();
        more.keep().unwrap();
        assert_eq!(
            bytes
                .concatenate("u3", &["u1".into(), "u2".into()])
                .unwrap(),
            12
        );
        let mut all = String::new();
        std::io::Read::read_to_string(&mut bytes.open_read("u3").unwrap(), &mut all).unwrap();
        assert_eq!(all, "hello world!");
        bytes.remove("u3").unwrap();
        bytes.remove("u3").unwrap();
        assert!(bytes.create("../x").is_err());
    }
}
