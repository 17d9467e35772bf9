//! What the clients upload: bytes made again from a seed whenever they are needed (so the run
//! keeps seeds, not bytes), the sizes a realistic mix asks for, and small tars of such files.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A small, fast generator (xorshift64*): good enough for choosing actions and making bytes
/// that compress badly; no cryptographic claim.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(splitmix(seed) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `low..high` (`high > low`).
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high - low)
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.range(0, 100) < percent
    }

    /// Log-uniform in `low..high`: as many files of a few KiB as of a few hundred.
    pub fn size(&mut self, low: usize, high: usize) -> usize {
        let (ln_low, ln_high) = ((low as f64).ln(), (high as f64).ln());
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        ((ln_low + unit * (ln_high - ln_low)).exp() as usize).clamp(low, high - 1)
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Hands out seeds no other upload of this run, nor of an earlier run against the same server,
/// uses: the run's start time mixed with a counter. Distinct seeds give distinct bytes, so each
/// upload is new content unless a client re-uploads on purpose.
#[derive(Debug)]
pub struct Seeds {
    run: u64,
    next: AtomicU64,
}

impl Seeds {
    pub fn new() -> Self {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Self {
            run: splitmix(now ^ (u64::from(std::process::id()) << 32)),
            next: AtomicU64::new(0),
        }
    }

    pub fn next(&self) -> u64 {
        splitmix(self.run ^ self.next.fetch_add(1, Ordering::Relaxed))
    }
}

/// The `len` bytes of the file made from `seed`; a shorter file of the same seed is a prefix
/// of a longer one. A text line naming the seed comes first: random first bytes would now and
/// then look like gzip (two magic bytes) or another format the server detects by content, and
/// the upload would be taken for an archive.
pub fn file_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut bytes = format!("cairn-load file {seed:016x}\n").into_bytes();
    let mut rng = Rng::new(seed);
    bytes.reserve(len.saturating_sub(bytes.len()) + 8);
    while bytes.len() < len {
        bytes.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

/// A file inside an archive: its path in the tree, and how to make its bytes.
#[derive(Clone, Debug)]
pub struct TreeFile {
    pub path: String,
    pub seed: u64,
    pub len: usize,
}

/// A few files of a small website or data set, as someone would tar up a folder.
pub fn tree(rng: &mut Rng, seeds: &Seeds) -> Vec<TreeFile> {
    let count = rng.range(2, 7) as usize;
    (0..count)
        .map(|i| {
            let path = match i {
                0 => "index.html".to_owned(),
                1 => "style.css".to_owned(),
                i if i % 2 == 0 => format!("assets/image-{i}.bin"),
                i => format!("data/part-{i}.json"),
            };
            TreeFile {
                path,
                seed: seeds.next(),
                len: rng.size(100, 64 << 10),
            }
        })
        .collect()
}

/// The tar (GNU format, as GNU tar writes by default) holding `files`.
pub fn tar_of(files: &[TreeFile]) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    for file in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(file.len as u64);
        header.set_mode(0o644);
        header.set_mtime(1_700_000_000);
        builder.append_data(
            &mut header,
            &file.path,
            &file_bytes(file.seed, file.len)[..],
        )?;
    }
    builder.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_makes_the_same_bytes_and_others_differ() {
        assert_eq!(file_bytes(7, 5000), file_bytes(7, 5000));
        assert_ne!(file_bytes(7, 5000), file_bytes(8, 5000));
        assert_eq!(file_bytes(7, 10).len(), 10);
        assert_eq!(&file_bytes(7, 5000)[..100], &file_bytes(7, 100)[..]);
    }

    #[test]
    fn sizes_stay_in_their_range() {
        let mut rng = Rng::new(1);
        for _ in 0..10_000 {
            let size = rng.size(2 << 10, 400 << 10);
            assert!((2 << 10..400 << 10).contains(&size), "{size}");
        }
    }
}
