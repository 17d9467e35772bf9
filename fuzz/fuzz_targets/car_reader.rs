//! `car_reader`: see `fuzz/bodies/car.rs`, shared with `crates/car/tests/fuzz_corpus.rs`.
#![no_main]

#[path = "../bodies/car.rs"]
mod car;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = car::car_reader(data);
});
