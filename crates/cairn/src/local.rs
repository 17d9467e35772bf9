//! Importing a local file or directory tree, as `ipfs add -r --only-hash` does.
//!
//! Every entry is walked; symlinks are stored as symlinks (never followed), empty directories
//! are kept, and hidden files are included (a website's `.well-known` must survive). Special
//! files (devices, FIFOs, sockets) have no UnixFS form and are refused by name.
//!
//! Speed: a large file is mapped in windows and hashed on every core straight from the page
//! cache. In a tree, small files are opened, read and imported on every core at once (a
//! bounded number in flight), and their blocks handed to the sink on the calling thread, which
//! also walks the directories. Insertion order never changes a directory's CID.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::num::NonZeroUsize;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Mutex;

use anyhow::{anyhow, bail, Context, Result};
use cairn_unixfs::{
    BlockBytes, BlockSink, Cid, DirectoryBuilder, FileImporter, ImportedFile, Link, Profile,
};

/// Files up to this size are imported whole by the tree's workers; larger ones by the calling
/// thread, hashing on every core. Bounds each file's bytes in flight.
const SMALL_FILE: u64 = 1 << 20;

/// Import `path` (a file, a directory or a symlink) and return its root.
pub fn import_path(path: &Path, profile: &Profile, sink: &mut dyn BlockSink) -> Result<Link> {
    let threads = std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN);
    exit_on_bus_error();
    let meta = fs::symlink_metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if meta.is_dir() {
        return import_tree(path, profile, sink, threads);
    }
    if meta.file_type().is_symlink() {
        return Ok(cairn_unixfs::dir::write_symlink(
            profile,
            &link_target(path)?,
            sink,
        )?);
    }
    if meta.is_file() {
        let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
        let mut reader = LargeFileReader::default();
        return Ok(reader.import(path, file, profile, sink, threads)?.into());
    }
    bail!(
        "{}: not a regular file, directory or symlink",
        path.display()
    )
}

fn import_tree(
    root: &Path,
    profile: &Profile,
    sink: &mut dyn BlockSink,
    threads: NonZeroUsize,
) -> Result<Link> {
    let in_flight = threads.get() * 4;
    let (jobs, job_queue) = mpsc::sync_channel::<FileJob>(in_flight);
    let (done, results) = mpsc::sync_channel(in_flight);
    let job_queue = Mutex::new(job_queue);
    std::thread::scope(|scope| {
        for _ in 0..threads.get() {
            let (done, job_queue) = (done.clone(), &job_queue);
            scope.spawn(move || import_small_files(profile, job_queue, done));
        }
        drop(done);
        let mut walk = TreeWalk {
            profile,
            sink,
            threads,
            dir: DirectoryBuilder::new(profile),
            jobs,
            results,
            in_flight: 0,
            large_files: LargeFileReader::default(),
        };
        walk.add_children(root, "")?;
        walk.finish()
            .with_context(|| format!("building directory {}", root.display()))
    })
}

/// A regular file of the tree, for a worker to import.
struct FileJob {
    path: PathBuf,
    entry_path: String,
}

/// What a worker made of a [`FileJob`].
enum FileDone {
    /// Imported, with its blocks in the order the importer made them (children first).
    Small {
        file: ImportedFile,
        blocks: BlocksInOrder,
    },
    /// Too large for a worker: the walking thread imports it on every core.
    Large(File),
}

/// The walking thread's side of a tree import.
struct TreeWalk<'a> {
    profile: &'a Profile,
    sink: &'a mut dyn BlockSink,
    threads: NonZeroUsize,
    dir: DirectoryBuilder,
    jobs: SyncSender<FileJob>,
    results: Receiver<(FileJob, Result<FileDone>)>,
    in_flight: usize,
    large_files: LargeFileReader,
}

impl TreeWalk<'_> {
    fn add_children(&mut self, dir_path: &Path, prefix: &str) -> Result<()> {
        let entries =
            fs::read_dir(dir_path).with_context(|| format!("listing {}", dir_path.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("listing {}", dir_path.display()))?;
            let path = entry.path();
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                bail!("{}: the name is not valid UTF-8", path.display());
            };
            let entry_path = format!("{prefix}{name}");
            let kind = entry
                .file_type()
                .with_context(|| format!("reading {}", path.display()))?;
            if kind.is_dir() {
                self.dir.add_directory(&entry_path)?;
                self.add_children(&path, &format!("{entry_path}/"))?;
            } else if kind.is_symlink() {
                self.dir.add_symlink(&entry_path, &link_target(&path)?)?;
            } else if kind.is_file() {
                self.submit(FileJob { path, entry_path })?;
            } else {
                bail!(
                    "{}: not a regular file, directory or symlink",
                    path.display()
                );
            }
        }
        Ok(())
    }

    /// Queue a file for the workers, taking finished ones while the queue is full (so neither
    /// side can wait for the other forever).
    fn submit(&mut self, mut job: FileJob) -> Result<()> {
        loop {
            match self.jobs.try_send(job) {
                Ok(()) => {
                    self.in_flight += 1;
                    return Ok(());
                }
                Err(TrySendError::Full(back)) => {
                    job = back;
                    self.take_one()?;
                }
                Err(TrySendError::Disconnected(_)) => bail!("the import workers stopped"),
            }
        }
    }

    fn take_one(&mut self) -> Result<()> {
        let (job, done) = self
            .results
            .recv()
            .map_err(|_| anyhow!("the import workers stopped"))?;
        self.in_flight -= 1;
        let file = match done? {
            FileDone::Small { file, blocks } => {
                for (cid, bytes) in &blocks.0 {
                    self.sink.put_block(cid, BlockBytes::new(bytes))?;
                }
                file
            }
            FileDone::Large(file) => {
                self.large_files
                    .import(&job.path, file, self.profile, self.sink, self.threads)?
            }
        };
        self.dir.add_file(&job.entry_path, file)?;
        Ok(())
    }

    fn finish(mut self) -> Result<Link> {
        while self.in_flight > 0 {
            self.take_one()?;
        }
        Ok(self.dir.finish(self.sink)?)
    }
}

/// A worker: imports the small files it is given, hands large ones back opened.
fn import_small_files(
    profile: &Profile,
    jobs: &Mutex<Receiver<FileJob>>,
    done: SyncSender<(FileJob, Result<FileDone>)>,
) {
    let mut content = Vec::new();
    loop {
        // The lock is held while waiting, by one worker at a time; the others wait for it.
        let next = jobs
            .lock()
            .map_err(|_| ())
            .and_then(|q| q.recv().map_err(|_| ()));
        let Ok(job) = next else {
            return;
        };
        let result = import_small_file(&job.path, profile, &mut content);
        if done.send((job, result)).is_err() {
            return;
        }
    }
}

fn import_small_file(path: &Path, profile: &Profile, content: &mut Vec<u8>) -> Result<FileDone> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let size = file
        .metadata()
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    if size > SMALL_FILE {
        return Ok(FileDone::Large(file));
    }
    content.clear();
    // One byte past the limit tells a file that grew since from one that did not; a large
    // file's import maps it from its start, whatever the read position.
    (&file)
        .take(SMALL_FILE + 1)
        .read_to_end(content)
        .with_context(|| format!("reading {}", path.display()))?;
    if content.len() as u64 > SMALL_FILE {
        return Ok(FileDone::Large(file));
    }
    let mut blocks = BlocksInOrder::default();
    let mut importer = FileImporter::new(profile, &mut blocks);
    importer.push(content)?;
    let file = importer.finish()?;
    Ok(FileDone::Small { file, blocks })
}

/// A small file's blocks, kept to be handed to the sink by the walking thread.
#[derive(Default)]
struct BlocksInOrder(Vec<(Cid, Vec<u8>)>);

impl BlockSink for BlocksInOrder {
    fn put_block(&mut self, cid: &Cid, block: BlockBytes<'_>) -> io::Result<()> {
        self.0.push((*cid, block.to_vec()));
        Ok(())
    }
}

/// Imports large files: mapped where the system allows, so the hashing threads read the page
/// cache directly (a `read` copy of every byte costs about a third as much CPU as hashing it),
/// else read into one reused buffer.
#[derive(Default)]
struct LargeFileReader {
    buffer: Vec<u8>,
}

impl LargeFileReader {
    fn import(
        &mut self,
        path: &Path,
        file: File,
        profile: &Profile,
        sink: &mut dyn BlockSink,
        threads: NonZeroUsize,
    ) -> Result<ImportedFile> {
        let reading = || format!("reading {}", path.display());
        let mut importer = FileImporter::with_threads(profile, sink, threads);
        let size = file.metadata().with_context(reading)?.len();
        let mut offset = 0;
        std::thread::scope(|scope| -> Result<()> {
            while offset < size {
                let len = (size - offset).min(MAP_WINDOW as u64) as usize;
                let Ok(window) = MappedWindow::map(&file, offset, len) else {
                    break;
                };
                importer.push(window.bytes())?;
                offset += len as u64;
                // Unmapping costs about a tenth of hashing: let the next window's hashing
                // overlap it rather than wait.
                scope.spawn(move || drop(window));
            }
            Ok(())
        })?;
        if offset < size {
            // Not mappable (some network and FUSE file systems): read whole batches, which are
            // hashed straight from the buffer.
            let mut file = file;
            file.seek(SeekFrom::Start(offset)).with_context(reading)?;
            self.buffer.resize(importer.batch_len(), 0);
            loop {
                let n = read_full(&mut file, &mut self.buffer).with_context(reading)?;
                if n == 0 {
                    break;
                }
                importer.push(&self.buffer[..n])?;
            }
        }
        Ok(importer.finish()?)
    }
}

/// Bytes of a file mapped at once: enough that mapping costs nothing next to hashing, few
/// enough that the process's resident size stays small.
const MAP_WINDOW: usize = 64 << 20;

/// A read-only window of a file, unmapped when dropped.
struct MappedWindow {
    start: *mut libc::c_void,
    len: usize,
}

impl MappedWindow {
    /// `offset` must be a multiple of the page size (every window but the last is whole).
    fn map(file: &File, offset: u64, len: usize) -> io::Result<Self> {
        let offset = libc::off_t::try_from(offset).map_err(io::Error::other)?;
        // SAFETY: a new private read-only mapping of a descriptor that is open for the call;
        // it aliases no memory of ours.
        let start = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                offset,
            )
        };
        if start == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the range is the mapping just made. Advice only; failing is harmless.
        unsafe { libc::madvise(start, len, libc::MADV_SEQUENTIAL) };
        Ok(Self { start, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is `len` readable bytes for as long as `self` lives. Another
        // process writing the file meanwhile changes what is hashed (as it would with `read`);
        // one truncating it makes the access fault, which `exit_on_bus_error` turns into a
        // message.
        unsafe { std::slice::from_raw_parts(self.start.cast::<u8>(), self.len) }
    }
}

// SAFETY: the window owns its mapping; unmapping it from another thread is as safe as here.
unsafe impl Send for MappedWindow {}

impl Drop for MappedWindow {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping this value owns, once; no slice of it outlives
        // `self` (`bytes` borrows it).
        unsafe { libc::munmap(self.start, self.len) };
    }
}

/// A file truncated by another process while it is mapped makes reading it raise `SIGBUS`;
/// say so and exit 1 instead of dying with "Bus error".
fn exit_on_bus_error() {
    extern "C" fn on_bus_error(_: libc::c_int) {
        const MESSAGE: &[u8] =
            b"error: a file was truncated or could not be read (I/O error) while it was hashed\n";
        // SAFETY: write(2) and _exit(2) are async-signal-safe; MESSAGE is static.
        unsafe {
            libc::write(2, MESSAGE.as_ptr().cast(), MESSAGE.len());
            libc::_exit(1);
        }
    }
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        // SAFETY: installs a handler that only calls async-signal-safe functions; the
        // `sigaction` value is fully initialised (zeroed, then the fields that matter).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_bus_error as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
        }
    });
}

/// Fill `buffer` from `file`, short only at the end of the file; returns the bytes read.
fn read_full(file: &mut File, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

fn link_target(path: &Path) -> Result<String> {
    let target = fs::read_link(path).with_context(|| format!("reading link {}", path.display()))?;
    target
        .into_os_string()
        .into_string()
        .map_err(|_| anyhow::anyhow!("{}: the link target is not valid UTF-8", path.display()))
}
