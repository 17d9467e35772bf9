//! The blob store: named, write-once objects, the boundary behind which content lives.
//!
//! Packs and staged uploads are both blobs. The file implementation is the only place that
//! knows how a write becomes durable. A blob named by its caller goes to `tmp-<name>`, which is
//! `fsync`ed, renamed to `<name>`, and the directory `fsync`ed; a writer dropped before
//! `commit` deletes its temporary file. A blob the store names (`create_unique`: packs) is
//! written into an empty file made ahead under a new name already durable in the directory
//! (see [`Premade`]), so its commit is one `fdatasync`. The S3 implementation slots in behind
//! the same trait.

use std::collections::{HashMap, VecDeque};
use std::fmt::Debug;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::random::random_name;
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
    /// Start writing a blob under a new unique name ending in `suffix`, which the store
    /// picks; returns the name with the writer.
    fn create_unique(&self, suffix: &str) -> io::Result<(String, Box<dyn BlobWriter>)> {
        let name = format!("{}{suffix}", random_name());
        let writer = self.create(&name)?;
        Ok((name, writer))
    }
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
    premade: Arc<Premade>,
}

impl FileBlobs {
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        fs::create_dir_all(&dir)?;
        Ok(Self {
            premade: Arc::new(Premade {
                dir: dir.clone(),
                spares: Mutex::default(),
                refilling: AtomicBool::new(false),
                making: Mutex::default(),
            }),
            dir,
        })
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
        let file = File::create_new(&temp)?;
        let finish = Finish::Rename {
            temp,
            final_path,
            dir: self.dir.clone(),
        };
        Ok(Box::new(FileBlobWriter::new(file, finish)))
    }

    fn create_unique(&self, suffix: &str) -> io::Result<(String, Box<dyn BlobWriter>)> {
        let (spare, file) = self.premade.take(suffix)?;
        let name = spare.name.clone();
        let finish = Finish::InPlace {
            spare,
            suffix: suffix.to_owned(),
            premade: self.premade.clone(),
        };
        Ok((name, Box::new(FileBlobWriter::new(file, finish))))
    }

    fn open(&self, name: &str) -> io::Result<Box<dyn ReadSeek>> {
        Ok(Box::new(File::open(self.path(name)?)?))
    }

    fn read_range(&self, name: &str, offset: u64, length: u64) -> io::Result<Vec<u8>> {
        Ok(self.read_ranges(name, &[(offset, length)])?.remove(0))
    }

    fn read_ranges(&self, name: &str, ranges: &[(u64, u64)]) -> io::Result<Vec<Vec<u8>>> {
        let mut file = File::open(self.path(name)?)?;
        ranges
            .iter()
            .map(|&(offset, length)| {
                // Read into the buffer's spare capacity: zeroing it first cost 4% of the
                // server's CPU while it served 100 Bitswap peers.
                file.seek(SeekFrom::Start(offset))?;
                let mut bytes = Vec::with_capacity(length as usize);
                (&mut file).take(length).read_to_end(&mut bytes)?;
                if bytes.len() as u64 != length {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
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

/// How many empty files [`Premade`] makes at a time (one directory `fsync` for them all).
const PREMADE_BATCH: usize = 64;

/// A spare made longer ago than this is deleted rather than used: the hourly sweep deletes
/// unreferenced files a day old (`cairn serve`), and must never take one being written.
const SPARE_MAX_AGE: Duration = Duration::from_secs(600);

/// Empty files made ahead of need, in batches, under new unique names whose directory entries
/// are already durable: a blob written into one is durable after one `fdatasync`, without the
/// rename and the directory `fsync` each blob would cost, and its inode is not made while a
/// request waits. Until a commit references it, a spare is an unreferenced blob like
/// any a crash leaves, and the startup sweep removes it.
#[derive(Debug)]
struct Premade {
    dir: PathBuf,
    /// By suffix, oldest first.
    spares: Mutex<HashMap<String, VecDeque<Spare>>>,
    /// A thread is making the next batch.
    refilling: AtomicBool,
    /// Held while a batch is made: one at a time.
    making: Mutex<()>,
}

#[derive(Debug)]
struct Spare {
    name: String,
    made: Instant,
}

impl Premade {
    /// A spare ending in `suffix`, opened for writing. When few are left, a thread makes the
    /// next batch, so a writer seldom waits for one (only the first, or one that outruns it).
    fn take(self: &Arc<Self>, suffix: &str) -> io::Result<(Spare, File)> {
        loop {
            if let Some(taken) = self.take_made(suffix)? {
                return Ok(taken);
            }
            self.refill(suffix, 1)?;
        }
    }

    /// A spare from the batches made so far, if one is left.
    fn take_made(self: &Arc<Self>, suffix: &str) -> io::Result<Option<(Spare, File)>> {
        loop {
            let Some((spare, left)) = self
                .lock()
                .get_mut(suffix)
                .and_then(|queue| Some((queue.pop_front()?, queue.len())))
            else {
                return Ok(None);
            };
            if left <= PREMADE_BATCH / 2 && !self.refilling.swap(true, Ordering::AcqRel) {
                let (premade, suffix) = (self.clone(), suffix.to_owned());
                std::thread::spawn(move || {
                    // A failure here shows when a writer finds none left and refills itself.
                    let _ = premade.refill(&suffix, PREMADE_BATCH / 2 + 1);
                    premade.refilling.store(false, Ordering::Release);
                });
            }
            let path = self.dir.join(&spare.name);
            if spare.made.elapsed() > SPARE_MAX_AGE {
                let _ = fs::remove_file(&path);
                continue;
            }
            match OpenOptions::new().write(true).open(&path) {
                Ok(file) => return Ok(Some((spare, file))),
                // Swept (a sweep of every unreferenced file, as tests do): take another.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Make a batch if fewer than `below` spares are left, one batch at a time. (At the first
    /// uploads after a start, every writer making its own batch, each with its directory
    /// `fsync`, stalled them all for seconds.)
    fn refill(&self, suffix: &str, below: usize) -> io::Result<()> {
        let _making = self.making.lock().unwrap_or_else(|e| e.into_inner());
        let left = self.lock().get(suffix).map_or(0, VecDeque::len);
        if left < below {
            let batch = self.make(suffix)?;
            self.lock()
                .entry(suffix.to_owned())
                .or_default()
                .extend(batch);
        }
        Ok(())
    }

    /// A batch of empty files, their names durable. A failure part-way leaves empty
    /// unreferenced files for the sweep.
    fn make(&self, suffix: &str) -> io::Result<VecDeque<Spare>> {
        let mut batch = VecDeque::with_capacity(PREMADE_BATCH);
        for _ in 0..PREMADE_BATCH {
            let name = format!("{}{suffix}", random_name());
            File::create_new(self.dir.join(&name))?;
            batch.push_back(Spare {
                name,
                made: Instant::now(),
            });
        }
        sync_dir(&self.dir)?;
        Ok(batch)
    }

    /// A spare a writer did not commit, emptied for the next one (deleted if it cannot be).
    fn give_back(&self, spare: Spare, suffix: String, file: &File) {
        if file.set_len(0).is_err() {
            let _ = fs::remove_file(self.dir.join(&spare.name));
            return;
        }
        self.lock().entry(suffix).or_default().push_front(spare);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, VecDeque<Spare>>> {
        // A panic while holding the lock cannot leave the map half-changed.
        self.spares.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What makes a written blob durable under its name.
enum Finish {
    /// Written under a temporary name: sync, rename, sync the directory.
    Rename {
        temp: PathBuf,
        final_path: PathBuf,
        dir: PathBuf,
    },
    /// Written into a premade file, whose name is durable already: sync the data.
    InPlace {
        spare: Spare,
        suffix: String,
        premade: Arc<Premade>,
    },
}

struct FileBlobWriter {
    /// Taken by `commit`; dropped otherwise, the drop guard undoes the write.
    open: Option<(File, Finish)>,
    bytes: u64,
    /// So that the sync at `commit` has only a tail left.
    write_behind: WriteBehind,
}

impl FileBlobWriter {
    fn new(file: File, finish: Finish) -> Self {
        Self {
            open: Some((file, finish)),
            bytes: 0,
            write_behind: WriteBehind::from(0),
        }
    }
}

impl Write for FileBlobWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let (file, _) = self
            .open
            .as_mut()
            .ok_or_else(|| io::Error::other("blob already committed"))?;
        let n = file.write(buf)?;
        self.bytes += n as u64;
        self.write_behind.wrote(file, n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.open.as_mut().map_or(Ok(()), |(file, _)| file.flush())
    }
}

impl BlobWriter for FileBlobWriter {
    fn commit(mut self: Box<Self>) -> io::Result<u64> {
        let Some((file, finish)) = self.open.take() else {
            return Err(io::Error::other("blob already committed"));
        };
        match finish {
            // Data, then the name, then the directory entry: after this, a crash keeps the blob.
            Finish::Rename {
                temp,
                final_path,
                dir,
            } => {
                let result = (|| {
                    file.sync_data()?;
                    fs::rename(&temp, &final_path)?;
                    sync_dir(&dir)
                })();
                if result.is_err() {
                    let _ = fs::remove_file(&temp);
                }
                result?;
            }
            Finish::InPlace { spare, premade, .. } => {
                if let Err(e) = file.sync_data() {
                    // Not known durable: the file must not be taken for a kept blob.
                    let _ = fs::remove_file(premade.dir.join(&spare.name));
                    return Err(e);
                }
            }
        }
        Ok(self.bytes)
    }
}

impl Drop for FileBlobWriter {
    fn drop(&mut self) {
        match self.open.take() {
            Some((_, Finish::Rename { temp, .. })) => {
                let _ = fs::remove_file(temp);
            }
            Some((
                file,
                Finish::InPlace {
                    spare,
                    suffix,
                    premade,
                },
            )) => premade.give_back(spare, suffix, &file),
            None => {}
        }
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The conformance suite every [`BlobStore`] must pass; only in tests (`suite` feature).
#[cfg(any(test, feature = "suite"))]
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

        // Names the store picks are new each time, end as asked, and hold what was written;
        // a writer dropped before commit leaves no bytes under its name.
        let mut written = std::collections::HashMap::new();
        for i in 0..40u8 {
            let (name, mut writer) = blobs.create_unique(".car").unwrap();
            assert!(name.ends_with(".car"), "{name}");
            writer.write_all(&[i; 100]).unwrap();
            if i % 3 == 0 {
                drop(writer);
                let mut left = Vec::new();
                if let Ok(mut reader) = blobs.open(&name) {
                    reader.read_to_end(&mut left).unwrap();
                }
                assert!(
                    left.is_empty(),
                    "a dropped writer left {} bytes",
                    left.len()
                );
            } else {
                assert_eq!(writer.commit().unwrap(), 100);
                assert!(
                    written.insert(name.clone(), i).is_none(),
                    "{name} given twice"
                );
            }
        }
        for (name, i) in &written {
            assert_eq!(blobs.read_range(name, 0, 100).unwrap(), [*i; 100]);
            blobs.delete(name).unwrap();
        }
    }
}
