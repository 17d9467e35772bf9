//! `bitswap_message`: see `crates/p2p/src/fuzz.rs`, shared with `crates/p2p/tests/fuzz_corpus.rs`.
#![no_main]

use cairn_p2p::fuzz as bitswap;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = bitswap::bitswap_message(data);
});
