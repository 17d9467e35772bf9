//! The [`Extractor`]: where entries of any format become a directory DAG, and where every rule
//! that is not about names is enforced (A3–A7, A11).

use std::cell::Cell;
use std::collections::HashMap;
use std::io::{self, Read};
use std::rc::Rc;

use cairn_unixfs::{BlockSink, DirError, DirectoryBuilder, FileImporter, Link, Profile};

use crate::path::{self, ArchivePath};
use crate::{ArchiveError, Limits};

/// Bytes read from the archive as stored (before decompression), shared with the reader that
/// counts them, and whether that reader itself failed (our I/O, not the archive's fault).
#[derive(Clone, Default)]
pub struct SourceStats {
    consumed: Rc<Cell<u64>>,
    failed: Rc<Cell<bool>>,
}

impl SourceStats {
    pub fn consumed(&self) -> u64 {
        self.consumed.get()
    }

    /// Wrap the archive's byte source so it is counted.
    pub fn wrap<R: Read>(&self, inner: R) -> CountedSource<R> {
        CountedSource {
            inner,
            stats: self.clone(),
        }
    }

    /// Classify a read error met inside one entry: the archive's, naming the entry, unless our
    /// own reader failed.
    pub fn classify_entry(&self, e: io::Error, entry: &str) -> ArchiveError {
        if self.failed.get() {
            ArchiveError::Io(e)
        } else {
            ArchiveError::entry(entry, e.to_string())
        }
    }

    /// Classify a read error from the decoding chain.
    pub fn classify(&self, e: io::Error, context: &str) -> ArchiveError {
        if self.failed.get() {
            ArchiveError::Io(e)
        } else {
            ArchiveError::Archive(format!("{context}: {e}"))
        }
    }
}

pub struct CountedSource<R> {
    inner: R,
    stats: SourceStats,
}

/// zip reads its central directory first, so the source must seek too.
impl<R: io::Seek> io::Seek for CountedSource<R> {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        self.inner.seek(pos)
    }
}

impl<R: Read> Read for CountedSource<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.stats
                    .consumed
                    .set(self.stats.consumed.get() + n as u64);
                Ok(n)
            }
            Err(e) => {
                self.stats.failed.set(true);
                Err(e)
            }
        }
    }
}

/// Builds the directory of one archive.
pub struct Extractor<'a> {
    profile: &'a Profile,
    limits: &'a Limits,
    sink: &'a mut dyn BlockSink,
    source: SourceStats,
    progress: &'a mut dyn FnMut(u64) -> io::Result<()>,
    dir: DirectoryBuilder,
    /// Regular files added so far, for tar hard links (A3).
    files: HashMap<ArchivePath, Link>,
    entries: u64,
    content_bytes: u64,
}

impl<'a> Extractor<'a> {
    /// `progress` is called with the archive bytes consumed so far, after each file; an error
    /// from it stops the extraction (a worker shutting down, or a lost claim).
    pub fn new(
        profile: &'a Profile,
        limits: &'a Limits,
        sink: &'a mut dyn BlockSink,
        source: SourceStats,
        progress: &'a mut dyn FnMut(u64) -> io::Result<()>,
    ) -> Self {
        Self {
            profile,
            limits,
            sink,
            source,
            progress,
            dir: DirectoryBuilder::new(profile),
            files: HashMap::new(),
            entries: 0,
            content_bytes: 0,
        }
    }

    pub fn limits(&self) -> &Limits {
        self.limits
    }

    pub fn source(&self) -> &SourceStats {
        &self.source
    }

    /// An archive member that adds nothing to the tree (a tar pax global header) still counts
    /// against the entry limit, so a stream of them cannot run unbounded (A6).
    pub fn count_entry(&mut self, name: &str) -> Result<(), ArchiveError> {
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(ArchiveError::entry(
                name,
                format!(
                    "the archive has more than {} entries",
                    self.limits.max_entries
                ),
            ));
        }
        Ok(())
    }

    /// An entry whose name is the archive root itself (`./`, A1): skipped when it is a
    /// directory, as the root is one; anything else there is refused.
    pub fn add_root(&mut self, name: &str, is_directory: bool) -> Result<(), ArchiveError> {
        self.count_entry(name)?;
        if is_directory {
            Ok(())
        } else {
            Err(ArchiveError::entry(
                name,
                "the name is the archive root, which can only be a directory",
            ))
        }
    }

    /// A regular file: its content is imported as it is read, counted against the limits.
    /// `declared` is the size the archive's header states, when it states one: fewer bytes
    /// means the archive was cut inside this entry (A10), and a size past the total cap is
    /// refused before anything is read (for a sparse entry, its expanded size: A5).
    pub fn add_file(
        &mut self,
        path: ArchivePath,
        declared: Option<u64>,
        mut content: impl Read,
    ) -> Result<(), ArchiveError> {
        self.count_entry(path.as_str())?;
        if declared
            .is_some_and(|d| self.content_bytes.saturating_add(d) > self.limits.max_total_bytes)
        {
            return Err(ArchiveError::TooLarge {
                entry: path.as_str().to_owned(),
                limit: self.limits.max_total_bytes,
            });
        }
        let mut importer = FileImporter::new(self.profile, &mut *self.sink);
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = match content.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(self
                        .source
                        .classify(e, &format!("entry {:?}", path.as_str())))
                }
            };
            self.content_bytes += n as u64;
            check_bomb(
                self.limits,
                self.content_bytes,
                self.source.consumed(),
                path.as_str(),
            )?;
            importer.push(&buf[..n])?;
        }
        let file = importer.finish()?;
        if let Some(declared) = declared.filter(|d| *d != file.size) {
            return Err(ArchiveError::entry(
                path.as_str(),
                format!("the entry is truncated: {} of {declared} bytes", file.size),
            ));
        }
        let file: Link = file.into();
        self.insert(&path, |dir| dir.add_file(path.as_str(), file))?;
        self.files.insert(path, file);
        (self.progress)(self.source.consumed())?;
        Ok(())
    }

    pub fn add_directory(&mut self, path: ArchivePath) -> Result<(), ArchiveError> {
        self.count_entry(path.as_str())?;
        self.insert(&path, |dir| dir.add_directory(path.as_str()))
    }

    /// A symlink, kept only when its target stays inside the tree (A2).
    pub fn add_symlink(&mut self, path: ArchivePath, target: &str) -> Result<(), ArchiveError> {
        self.count_entry(path.as_str())?;
        path::check_link_target(&path, target)
            .map_err(|reason| ArchiveError::entry(path.as_str(), reason))?;
        self.insert(&path, |dir| dir.add_symlink(path.as_str(), target))
    }

    /// A tar hard link: only to an earlier regular file of this archive, whose content it
    /// reuses (A3). The host filesystem is never consulted.
    pub fn add_hard_link(
        &mut self,
        path: ArchivePath,
        target: &ArchivePath,
    ) -> Result<(), ArchiveError> {
        self.count_entry(path.as_str())?;
        let Some(file) = self.files.get(target).copied() else {
            return Err(ArchiveError::entry(
                path.as_str(),
                format!(
                    "the hard link target {:?} is not an earlier regular file of the archive",
                    target.as_str()
                ),
            ));
        };
        self.insert(&path, |dir| dir.add_file(path.as_str(), file))
    }

    /// Refuse an entry by name (device files, FIFOs, unknown types...).
    pub fn refuse(&self, name: &str, reason: &str) -> ArchiveError {
        ArchiveError::entry(name, reason)
    }

    fn insert(
        &mut self,
        path: &ArchivePath,
        add: impl FnOnce(&mut DirectoryBuilder) -> Result<(), DirError>,
    ) -> Result<(), ArchiveError> {
        add(&mut self.dir).map_err(|e| match e {
            DirError::Io(io) => ArchiveError::Io(io),
            DirError::Duplicate { .. } => {
                ArchiveError::entry(path.as_str(), "the path appears twice in the archive")
            }
            DirError::NotADirectory { path: clash } => ArchiveError::entry(
                path.as_str(),
                format!("{clash:?} is both a file and a directory"),
            ),
            other => ArchiveError::entry(path.as_str(), other.to_string()),
        })
    }

    /// Write the directory DAG; an archive without entries gives the empty directory (A11).
    pub fn finish(self) -> Result<Link, ArchiveError> {
        self.dir.finish(self.sink).map_err(|e| match e {
            DirError::Io(io) => ArchiveError::Io(io),
            other => ArchiveError::Archive(other.to_string()),
        })
    }
}

/// A6: the total cap on content actually produced, and the expansion ratio.
fn check_bomb(
    limits: &Limits,
    produced: u64,
    consumed: u64,
    entry: &str,
) -> Result<(), ArchiveError> {
    if produced > limits.max_total_bytes {
        return Err(ArchiveError::TooLarge {
            entry: entry.to_owned(),
            limit: limits.max_total_bytes,
        });
    }
    check_ratio(limits, produced, consumed, entry)
}

/// A6: bytes produced (by the importer, or by a decoder) per archive byte consumed, checked
/// once `ratio_after_bytes` have been produced.
pub(crate) fn check_ratio(
    limits: &Limits,
    produced: u64,
    consumed: u64,
    entry: &str,
) -> Result<(), ArchiveError> {
    if produced > limits.ratio_after_bytes
        && produced > consumed.max(1).saturating_mul(limits.max_ratio)
    {
        return Err(ArchiveError::entry(
            entry,
            format!(
                "the archive expands more than {}x its size (a decompression bomb)",
                limits.max_ratio
            ),
        ));
    }
    Ok(())
}
