//! The blob store: named, write-once objects, the boundary behind which content lives.
//!
//! Packs and staged uploads are both blobs. The file implementation is the only place that
//! knows how a write becomes durable: bytes go to `tmp-<name>`, which is `fsync`ed, renamed to
//! `<name>`, and the directory `fsync`ed; a writer dropped before `commit` deletes its
//! temporary file. An S3 implementation (issue 6) slots in behind the same trait.

use std::fmt::Debug;
use std::fs::{self, File};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::write_behind::WriteBehind;

const TEMP_PREFIX: &str = "tmp-";

/// How long ago `time` was (zero if it is in the future).
pub(crate) fn age(time: SystemTime) -> Duration {
    SystemTime::now().duration_since(time).unwrap_or_default()
}

/// Something readable from any offset (zip and 7z read their index first).
pub trait ReadSeek: Read + Seek + Send {}
impl<T: Read + Seek + Send> ReadSeek for T {}

/// A blob being written; nothing is visible under its name until [`BlobWriter::commit`].
pub trait BlobWriter: Write + Send {
    /// Make the bytes durable under the blob's name; returns how many there are.
    fn commit(self: Box<Self>) -> io::Result<u64>;
}

pub trait BlobStore: Send + Sync + Debug {
    /// Start writing the blob `name` (letters, digits and `-` only).
    fn create(&self, name: &str) -> io::Result<Box<dyn BlobWriter>>;
    fn open(&self, name: &str) -> io::Result<Box<dyn ReadSeek>>;
    fn read_range(&self, name: &str, offset: u64, length: u64) -> io::Result<Vec<u8>>;
    /// How many bytes of neighbouring ranges are worth reading together: none where a read
    /// is cheap (a file, where reading ahead only pushes the bytes out of the CPU's caches
    /// before they are used), more where every read is a request.
    fn batch_bytes(&self) -> u64 {
        0
    }
    /// Several `(offset, length)` ranges of one blob, in order. A store where each read is a
    /// request fetches neighbouring ranges together.
    fn read_ranges(&self, name: &str, ranges: &[(u64, u64)]) -> io::Result<Vec<Vec<u8>>> {
        ranges
            .iter()
            .map(|&(offset, length)| self.read_range(name, offset, length))
            .collect()
    }
    /// Delete a blob; one that is already gone is not an error.
    fn delete(&self, name: &str) -> io::Result<()>;
    /// Committed blobs last written at least `older_than` ago.
    fn list(&self, older_than: Duration) -> io::Result<Vec<String>>;
    /// Remove what interrupted writes begun at least `older_than` ago left behind (on a shared
    /// store, another node's write in progress looks the same until then); returns how many.
    fn remove_incomplete(&self, older_than: Duration) -> io::Result<u64>;
}

/// Blobs as files in one directory.
#[derive(Clone, Debug)]
pub struct FileBlobs {
    dir: PathBuf,
}

impl FileBlobs {
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        fs::create_dir_all(&dir)?;
        Ok(Self { dir })
    }

    /// The names of the files last modified at least `older_than` ago.
    fn entries(&self, older_than: Duration) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            if age(entry.metadata()?.modified()?) >= older_than {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        Ok(names)
    }

    fn path(&self, name: &str) -> io::Result<PathBuf> {
        // Names are ours (random hex), but never let one leave the directory.
        let valid = !name.is_empty()
            && !name.starts_with(TEMP_PREFIX)
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
        if !valid || name.starts_with('.') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad blob name {name:?}"),
            ));
        }
        Ok(self.dir.join(name))
    }
}

impl BlobStore for FileBlobs {
    fn create(&self, name: &str) -> io::Result<Box<dyn BlobWriter>> {
        let final_path = self.path(name)?;
        let temp = self.dir.join(format!("{TEMP_PREFIX}{name}"));
        Ok(Box::new(FileBlobWriter {
            file: Some(File::create_new(&temp)?),
            temp: Some(temp),
            final_path,
            dir: self.dir.clone(),
            bytes: 0,
            write_behind: WriteBehind::from(0),
        }))
    }

    fn open(&self, name: &str) -> io::Result<Box<dyn ReadSeek>> {
        Ok(Box::new(File::open(self.path(name)?)?))
    }

    fn read_range(&self, name: &str, offset: u64, length: u64) -> io::Result<Vec<u8>> {
        Ok(self.read_ranges(name, &[(offset, length)])?.remove(0))
    }

    fn read_ranges(&self, name: &str, ranges: &[(u64, u64)]) -> io::Result<Vec<Vec<u8>>> {
        let file = File::open(self.path(name)?)?;
        ranges
            .iter()
            .map(|&(offset, length)| {
                let mut bytes = vec![0; length as usize];
                file.read_exact_at(&mut bytes, offset)?;
                Ok(bytes)
            })
            .collect()
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        match fs::remove_file(self.path(name)?) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    fn list(&self, older_than: Duration) -> io::Result<Vec<String>> {
        Ok(self
            .entries(older_than)?
            .into_iter()
            .filter(|name| !name.starts_with(TEMP_PREFIX))
            .collect())
    }

    fn remove_incomplete(&self, older_than: Duration) -> io::Result<u64> {
        let mut removed = 0;
        for name in self.entries(older_than)? {
            if name.starts_with(TEMP_PREFIX) {
                fs::remove_file(self.dir.join(name))?;
                removed += 1;
            }
        }
        Ok(removed)
    }
}

struct FileBlobWriter {
    /// Both taken by `commit`; the drop guard removes the temporary file otherwise.
    file: Option<File>,
    temp: Option<PathBuf>,
    final_path: PathBuf,
    dir: PathBuf,
    bytes: u64,
    /// So that the sync at `commit` has only a tail left.
    write_behind: WriteBehind,
}

impl Write for FileBlobWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let file = self
            .file
            .as_mut()
            .ok_or_else(|| io::Error::other("blob already committed"))?;
        let n = file.write(buf)?;
        self.bytes += n as u64;
        self.write_behind.wrote(file, n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().map_or(Ok(()), |f| f.flush())
    }
}

impl BlobWriter for FileBlobWriter {
    fn commit(mut self: Box<Self>) -> io::Result<u64> {
        let (Some(file), Some(temp)) = (self.file.take(), self.temp.take()) else {
            return Err(io::Error::other("blob already committed"));
        };
        // Data, then the name, then the directory entry: after this, a crash keeps the blob.
        let result = (|| {
            file.sync_data()?;
            fs::rename(&temp, &self.final_path)?;
            sync_dir(&self.dir)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&temp);
        }
        result.map(|()| self.bytes)
    }
}

impl Drop for FileBlobWriter {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = fs::remove_file(temp);
        }
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The conformance suite every [`BlobStore`] must pass.
pub mod suite {
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::time::Duration;

    use super::BlobStore;

    const HOUR: Duration = Duration::from_secs(3600);

    pub fn run(blobs: &dyn BlobStore) {
        // Written, committed, then readable whole, by range and from any offset.
        let mut writer = blobs.create("one").unwrap();
        writer.write_all(b"hello blob").unwrap();
        assert!(
            blobs.list(Duration::ZERO).unwrap().is_empty(),
            "nothing is visible before commit"
        );
        assert_eq!(writer.commit().unwrap(), 10);
        assert_eq!(blobs.list(Duration::ZERO).unwrap(), ["one"]);
        assert!(
            blobs.list(HOUR).unwrap().is_empty(),
            "a blob written just now is not an hour old"
        );
        assert_eq!(blobs.read_range("one", 6, 4).unwrap(), b"blob");
        // Ranges come back in the order asked, neighbours, overlaps and all.
        assert_eq!(
            blobs
                .read_ranges("one", &[(0, 5), (6, 4), (2, 3), (9, 1)])
                .unwrap(),
            [&b"hello"[..], b"blob", b"llo", b"b"]
        );
        let mut reader = blobs.open("one").unwrap();
        reader.seek(SeekFrom::Start(6)).unwrap();
        let mut tail = String::new();
        reader.read_to_string(&mut tail).unwrap();
        assert_eq!(tail, "blob");

        // A writer dropped before commit leaves nothing; an interrupted one is cleaned up.
        let mut dropped = blobs.create("two").unwrap();
        dropped.write_all(b"partial").unwrap();
        drop(dropped);
        assert_eq!(blobs.list(Duration::ZERO).unwrap(), ["one"]);
        assert!(blobs.open("two").is_err());
        std::mem::forget(blobs.create("three").unwrap());
        assert_eq!(
            blobs.remove_incomplete(HOUR).unwrap(),
            0,
            "a write begun just now may still be going on"
        );
        assert_eq!(blobs.remove_incomplete(Duration::ZERO).unwrap(), 1);
        assert_eq!(blobs.list(Duration::ZERO).unwrap(), ["one"]);

        // A blob large enough to be synced early, while still being written, reads back whole.
        let big: Vec<u8> = (0..40u32 << 20).map(|i| (i % 251) as u8).collect();
        let mut writer = blobs.create("big").unwrap();
        for piece in big.chunks(1 << 20) {
            writer.write_all(piece).unwrap();
        }
        assert_eq!(writer.commit().unwrap(), big.len() as u64);
        let mut back = Vec::new();
        blobs.open("big").unwrap().read_to_end(&mut back).unwrap();
        assert!(back == big, "the early-synced blob reads back unchanged");
        blobs.delete("big").unwrap();

        // Names cannot leave the store; deleting twice is fine.
        for bad in ["../x", "a/b", "", "tmp-x", ".hidden"] {
            assert!(blobs.create(bad).is_err(), "{bad:?}");
        }
        blobs.delete("one").unwrap();
        blobs.delete("one").unwrap();
        assert!(blobs.list(Duration::ZERO).unwrap().is_empty());
    }
}
