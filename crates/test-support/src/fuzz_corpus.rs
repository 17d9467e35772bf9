//! The replay tests' side of fuzzing, shared by every crate's `tests/fuzz_corpus.rs` (car,
//! unixfs, archive, server, p2p): the inputs kept as regressions, and where seeds go.

use std::path::Path;

/// Every input kept under `fuzz/regressions/<target>/`, in name order.
pub fn regressions(target: &str) -> Vec<(String, Vec<u8>)> {
    // This crate sits at `crates/test-support`, beside `fuzz/`'s parent.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut inputs: Vec<(String, Vec<u8>)> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect();
    inputs.sort();
    inputs
}

/// Write a seed when `CAIRN_FUZZ_CORPUS` says where.
pub fn save_seed(target: &str, name: &str, input: &[u8]) {
    if let Some(dir) = std::env::var_os("CAIRN_FUZZ_CORPUS") {
        let dir = Path::new(&dir).join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), input).unwrap();
    }
}
