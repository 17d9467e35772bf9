//! The disk's durable write speed, the physical limit the upload benches are measured against.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// Write `data` to a new file in `dir` and `fdatasync` it: the disk's durable write speed.
/// `overlapped` also syncs from a second thread every 16 MiB while writing, so the disk works
/// while the writer does (what a pipelined writer can get from it); otherwise the whole
/// flush waits for the one `fdatasync` at the end.
pub fn disk_write(dir: &Path, data: &[u8], overlapped: bool) -> Duration {
    let path = dir.join("disk-probe");
    let start = Instant::now();
    let mut file = std::fs::File::create(&path).unwrap();
    let (wake, woken) = std::sync::mpsc::sync_channel::<()>(1);
    let syncer = overlapped.then(|| {
        let file = file.try_clone().unwrap();
        std::thread::spawn(move || {
            while woken.recv().is_ok() {
                file.sync_data().unwrap();
            }
        })
    });
    for (i, piece) in data.chunks(1 << 20).enumerate() {
        file.write_all(piece).unwrap();
        if overlapped && i % 16 == 15 {
            let _ = wake.try_send(());
        }
    }
    drop(wake);
    if let Some(syncer) = syncer {
        syncer.join().unwrap();
    }
    file.sync_data().unwrap();
    drop(file);
    let took = start.elapsed();
    // Not timed: freeing 100 MB (here, when the last handle goes) is not writing it.
    std::fs::remove_file(path).unwrap();
    took
}
