//! `unixfs_node`: see `fuzz/bodies/unixfs.rs`, shared with `crates/unixfs/tests/fuzz_corpus.rs`.
#![no_main]

#[path = "../bodies/unixfs.rs"]
mod unixfs;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = unixfs::unixfs_node(data);
});
