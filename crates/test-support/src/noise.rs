//! Incompressible benchmark bytes (xorshift64, eight bytes per step).

use crate::xorshift::XorShift64;

/// Distinct seeds give distinct bytes. (It used to start from `seed | 1`, so seeds 2k and 2k+1
/// gave the same bytes and half of each bench's "distinct" files were duplicates; odd seeds
/// keep the bytes they had, so the CIDs recorded in BENCHMARKS.md still hold.)
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    // xorshift needs a state that is not zero; an even seed is moved to an even state, which
    // no odd seed (whose state is itself) can reach.
    let state = if seed % 2 == 1 {
        seed
    } else {
        (seed | 1) ^ 0x9e37_79b9_7f4a_7c15
    };
    let mut out = vec![0; len];
    XorShift64::with_state(state).fill(&mut out);
    out
}
