//! `archive_extract`: see `crates/archive/src/fuzz.rs`, shared with `crates/archive/tests/fuzz_corpus.rs`.
#![no_main]

use cairn_archive::fuzz as archive;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = archive::archive_extract(data);
});
