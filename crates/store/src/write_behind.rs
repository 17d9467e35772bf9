//! Starting write-back early. A file's new bytes are handed to the disk in stretches while more
//! are still being written, so the `fdatasync` that makes them durable (before a TUS `204`, at a
//! pack's commit) has only the last stretch left to wait for, instead of the whole chunk in
//! series with its transfer.
//!
//! Only `SYNC_FILE_RANGE_WRITE` is used: it starts write-out and returns. It promises nothing
//! and reports no error; durability and its errors stay with the `fdatasync` that follows. It
//! can still block while the device's queue is full, so it runs on a thread of its own: called
//! inline every 8 MiB, it once slowed POST from 593 to 488 MB/s (BENCHMARKS.md).

use std::fs::File;
use std::sync::mpsc::{self, SyncSender};

/// Bytes written before their write-back is started.
const STRETCH: u64 = 1 << 20;

/// Tracks how far write-back of an append-only file has been started.
#[derive(Debug)]
pub(crate) struct WriteBehind {
    /// Write-back has been asked for the bytes before this offset.
    started: u64,
    /// The end of the bytes written.
    end: u64,
    /// The thread that starts write-back, once there is a stretch to start; it ends when this
    /// value is dropped.
    starter: Option<SyncSender<(u64, u64)>>,
}

impl WriteBehind {
    /// For a file whose bytes before `offset` were already synced or are someone else's.
    pub(crate) fn from(offset: u64) -> Self {
        Self {
            started: offset,
            end: offset,
            starter: None,
        }
    }

    /// `len` more bytes were appended to `file`.
    pub(crate) fn wrote(&mut self, file: &File, len: u64) {
        self.end += len;
        if self.end - self.started < STRETCH {
            return;
        }
        if self.starter.is_none() {
            self.starter = spawn_starter(file);
        }
        let Some(starter) = &self.starter else {
            return;
        };
        // While the thread is busy the range waits; the next call then covers both.
        if starter
            .try_send((self.started, self.end - self.started))
            .is_ok()
        {
            self.started = self.end;
        }
    }
}

/// A thread that starts write-back of the ranges it is sent; none if the file cannot be shared
/// or no thread started (then the final sync simply does all the work).
fn spawn_starter(file: &File) -> Option<SyncSender<(u64, u64)>> {
    let file = file.try_clone().ok()?;
    let (ranges, received) = mpsc::sync_channel::<(u64, u64)>(2);
    std::thread::Builder::new()
        .name("write-behind".into())
        .spawn(move || {
            for (offset, len) in received {
                start_write_back(&file, offset, len);
            }
        })
        .ok()?;
    Some(ranges)
}

#[cfg(target_os = "linux")]
fn start_write_back(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: the descriptor is open for the call's duration (borrowed from `file`), and the
    // call touches no memory of ours. Its result is deliberately ignored (see the module doc).
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn start_write_back(_file: &File, _offset: u64, _len: u64) {}
