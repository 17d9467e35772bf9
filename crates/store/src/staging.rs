//! Staging: uploads waiting for a worker (archives to extract), kept whole on local disk.
//!
//! A staged upload is written under a temporary name, `fsync`ed, renamed to its upload id and
//! the directory `fsync`ed before the pending operation that points at it is committed, so a
//! worker (after any crash) always finds complete bytes. The worker deletes it when the
//! operation reaches a terminal state.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::packs::sync_dir;

#[derive(Clone, Debug)]
pub struct Staging {
    dir: PathBuf,
}

impl Staging {
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        fs::create_dir_all(&dir)?;
        Ok(Self { dir })
    }

    /// Start staging `upload_id`; nothing is visible under that id until [`Staged::commit`].
    pub fn create(&self, upload_id: &str) -> io::Result<Staged> {
        let temp = self.path(&format!("tmp-{upload_id}"))?;
        Ok(Staged {
            file: Some(File::create_new(&temp)?),
            temp: Some(temp),
            dir: self.dir.clone(),
            final_path: self.path(upload_id)?,
            bytes: 0,
        })
    }

    pub fn open_upload(&self, upload_id: &str) -> io::Result<File> {
        File::open(self.path(upload_id)?)
    }

    /// Remove a staged upload; removing one that is already gone is not an error.
    pub fn remove(&self, upload_id: &str) -> io::Result<()> {
        match fs::remove_file(self.path(upload_id)?) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// Delete interrupted writes, and staged uploads no unfinished operation needs (a crash
    /// between staging and recording the operation). Returns how many files went.
    pub fn sweep(&self, needed: &std::collections::HashSet<String>) -> io::Result<u64> {
        let mut removed = 0;
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("tmp-") || !needed.contains(&name) {
                fs::remove_file(entry.path())?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    fn path(&self, name: &str) -> io::Result<PathBuf> {
        // Upload ids are ours (hex), but never let a name leave the directory.
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "bad staged upload name",
            ));
        }
        Ok(self.dir.join(name))
    }
}

/// A staged upload being written; its temporary file is deleted if dropped before `commit`.
pub struct Staged {
    file: Option<File>,
    temp: Option<PathBuf>,
    dir: PathBuf,
    final_path: PathBuf,
    bytes: u64,
}

impl Write for Staged {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let file = self
            .file
            .as_mut()
            .ok_or_else(|| io::Error::other("already committed"))?;
        let n = file.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().map_or(Ok(()), |f| f.flush())
    }
}

impl Staged {
    /// Make the staged bytes durable under the upload id; returns their length.
    pub fn commit(mut self) -> io::Result<u64> {
        let (Some(file), Some(temp)) = (self.file.take(), self.temp.take()) else {
            return Err(io::Error::other("already committed"));
        };
        let result = (|| {
            file.sync_all()?;
            fs::rename(&temp, &self.final_path)?;
            sync_dir(&self.dir)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&temp);
        }
        result.map(|()| self.bytes)
    }

    pub fn path(&self) -> &Path {
        &self.final_path
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = fs::remove_file(temp);
        }
    }
}
