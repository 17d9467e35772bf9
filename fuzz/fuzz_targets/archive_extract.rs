//! `archive_extract`: see `fuzz/bodies/archive.rs`, shared with
//! `crates/archive/tests/fuzz_corpus.rs`.
#![no_main]

#[path = "../bodies/archive.rs"]
mod archive;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = archive::archive_extract(data);
});
