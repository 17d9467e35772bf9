//! `pin_query`: see `fuzz/bodies/server.rs`, shared with `crates/server/tests/fuzz_corpus.rs`.
#![no_main]

#[path = "../bodies/server.rs"]
mod server;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = server::pin_query(data);
});
