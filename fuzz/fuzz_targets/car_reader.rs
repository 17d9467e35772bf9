//! `car_reader`: see `crates/car/src/fuzz.rs`, shared with `crates/car/tests/fuzz_corpus.rs`.
#![no_main]

use cairn_car::fuzz as car;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = car::car_reader(data);
});
