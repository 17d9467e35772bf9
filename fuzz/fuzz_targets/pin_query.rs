//! `pin_query`: see `crates/server/src/fuzz.rs`, shared with `crates/server/tests/fuzz_corpus.rs`.
#![no_main]

use cairn_server::fuzz as server;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = server::pin_query(data);
});
