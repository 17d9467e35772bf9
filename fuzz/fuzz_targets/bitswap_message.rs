//! `bitswap_message`: see `fuzz/bodies/bitswap.rs`, shared with `crates/p2p/tests/fuzz_corpus.rs`.
#![no_main]

#[path = "../bodies/bitswap.rs"]
mod bitswap;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = bitswap::bitswap_message(data);
});
