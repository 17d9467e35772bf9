//! Import throughput against the physical limit, measured in one run:
//!
//! 1. plain single-core sha2-256 over 512 MiB in memory (the limit: hashing is the one piece of
//!    work an importer cannot avoid);
//! 2. importing the same bytes under each profile on one thread, and on all cores;
//! 3. a directory of 100,000 small files: entries per second and peak memory;
//! 4. a 2 GiB file streamed in 100,000-byte pieces (as network reads arrive, unaligned to
//!    chunks): peak memory, which must not grow with the file.
//!
//! Run: `cargo bench -p cairn-unixfs --bench import`. Each timing is the best of 3 runs.

use cairn_test_support::vectors;

use std::hint::black_box;
use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

use cairn_unixfs::{DirectoryBuilder, DiscardBlocks, FileImporter, Profile};
use sha2::{Digest, Sha256};

const MIB: usize = 1 << 20;
const FILE_BYTES: usize = 512 * MIB;
const DIR_FILES: usize = 100_000;
const STREAM_BYTES: u64 = 2 << 30;

fn best_of_3(mut run: impl FnMut()) -> Duration {
    (0..3)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn mb_per_s(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / 1e6 / time.as_secs_f64()
}

/// A memory figure of this process from `/proc/self/status` (`VmHWM`: peak RSS since the last
/// reset; `VmRSS`: current), in bytes.
fn memory(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Reset `VmHWM` to the current RSS, so the next peak is this phase's own.
fn reset_peak_rss() {
    // Writing 5 to clear_refs resets the peak RSS (Linux >= 4.0); harmless where unsupported.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn main() {
    let threads = std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN);
    println!("cores: {threads}");
    println!();

    // Memory phases first, before the 512 MiB buffer inflates the RSS.
    let (dir_time, dir_peak) = directory_of_small_files();
    let stream_peak = streamed_file_peak(threads);

    let data = vectors::xorshift(FILE_BYTES, 1);
    let sha_time = best_of_3(|| {
        black_box(Sha256::digest(black_box(&data)));
    });
    let sha = mb_per_s(FILE_BYTES, sha_time);

    println!("| import of 512 MiB from memory | threads | MB/s | ratio to sha2-256 single-core |");
    println!("|---|---|---|---|");
    println!("| plain sha2-256 (the limit) | 1 | {sha:.0} | 1.00 |");
    for profile in Profile::ALL {
        for t in [NonZeroUsize::MIN, threads] {
            let time = best_of_3(|| {
                let mut importer = FileImporter::with_threads(&profile, DiscardBlocks, t);
                importer.push(&data).unwrap();
                black_box(importer.finish().unwrap());
            });
            let speed = mb_per_s(FILE_BYTES, time);
            println!(
                "| {} | {t} | {speed:.0} | {:.2} |",
                profile.name,
                speed / sha
            );
        }
    }
    println!();
    println!("| directory of {DIR_FILES} small files (unixfs-v1-2025) | value |");
    println!("|---|---|");
    println!(
        "| entries per second | {:.0} |",
        DIR_FILES as f64 / dir_time.as_secs_f64()
    );
    println!(
        "| peak memory above baseline | {:.1} MiB |",
        dir_peak as f64 / MIB as f64
    );
    println!();
    println!(
        "| 2 GiB file streamed in 100,000-byte pieces, {threads} threads | peak memory above baseline: {:.1} MiB |",
        stream_peak as f64 / MIB as f64
    );
}

/// Import 100,000 files of 64-byte distinct content into one directory (a HAMT) and write it.
fn directory_of_small_files() -> (Duration, u64) {
    let profile = Profile::UNIXFS_V1_2025;
    reset_peak_rss();
    let baseline = memory("VmRSS");
    let start = Instant::now();
    let mut dir = DirectoryBuilder::new(&profile);
    let mut content = [0u8; 64];
    for i in 0..DIR_FILES {
        content[..8].copy_from_slice(&(i as u64).to_le_bytes());
        let mut file = FileImporter::new(&profile, DiscardBlocks);
        file.push(&content).unwrap();
        dir.add_file(&format!("file-{i:06}.txt"), file.finish().unwrap())
            .unwrap();
    }
    black_box(dir.finish(&mut DiscardBlocks).unwrap());
    let time = start.elapsed();
    (time, memory("VmHWM").saturating_sub(baseline))
}

/// Stream a 2 GiB file through the importer from a generator, never holding it.
fn streamed_file_peak(threads: NonZeroUsize) -> u64 {
    let mut source = vectors::Content::XorShift(vectors::XorShift64::new(7));
    reset_peak_rss();
    let baseline = memory("VmRSS");
    let mut importer = FileImporter::with_threads(&Profile::UNIXFS_V1_2025, DiscardBlocks, threads);
    vectors::for_each_piece(&mut source, STREAM_BYTES, 100_000, |piece| {
        importer.push(piece).unwrap()
    });
    black_box(importer.finish().unwrap());
    memory("VmHWM").saturating_sub(baseline)
}
