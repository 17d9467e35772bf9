//! `unixfs_reader`: see `crates/unixfs/src/fuzz.rs`, shared with `crates/unixfs/tests/fuzz_corpus.rs`.
#![no_main]

use cairn_unixfs::fuzz as unixfs;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = unixfs::unixfs_reader(data);
});
