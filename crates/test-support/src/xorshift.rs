//! The one small random generator the tests and benches share: Marsaglia's xorshift64 (shifts
//! 13, 7, 17). Its streams are fixed: the shared vectors, and CIDs recorded in tests and in
//! `BENCHMARKS.md`, are of its bytes.

/// A xorshift64 stream, read as words, as bytes eight to a word, or a word at a time.
#[derive(Clone)]
pub struct XorShift64 {
    state: u64,
    /// Bytes of the current word not yet handed out by [`XorShift64::fill`].
    carry: Vec<u8>,
}

impl XorShift64 {
    /// Seeded as the shared vectors seed it: `state = seed | 1` (so seeds 2k and 2k+1 give
    /// one stream).
    pub fn new(seed: u64) -> Self {
        Self::with_state(seed | 1)
    }

    /// From `state`, which must not be zero.
    pub fn with_state(state: u64) -> Self {
        assert_ne!(state, 0, "xorshift's state is never zero");
        Self {
            state,
            carry: Vec::new(),
        }
    }

    /// The next word (the state is stepped first).
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        x
    }

    /// `out` filled with the next bytes, each word's eight little-endian (the vectors'
    /// stream); a word cut at the end is finished by the next call.
    pub fn fill(&mut self, out: &mut [u8]) {
        let from_carry = self.carry.len().min(out.len());
        out[..from_carry].copy_from_slice(&self.carry[..from_carry]);
        self.carry.drain(..from_carry);
        let mut words = out[from_carry..].chunks_exact_mut(8);
        for word in &mut words {
            word.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let rest = words.into_remainder();
        if !rest.is_empty() {
            let word = self.next_u64().to_le_bytes();
            rest.copy_from_slice(&word[..rest.len()]);
            self.carry.extend_from_slice(&word[rest.len()..]);
        }
    }
}

/// `len` bytes of `seed`'s stream, one a word (its low byte): the tests' content.
pub fn low_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut stream = XorShift64::new(seed);
    (0..len).map(|_| stream.next_u64() as u8).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_cut_anywhere_goes_on_where_it_stopped() {
        let mut whole = [0u8; 37];
        XorShift64::new(7).fill(&mut whole);
        let mut cut = XorShift64::new(7);
        let (mut a, mut b) = ([0u8; 5], [0u8; 32]);
        cut.fill(&mut a);
        cut.fill(&mut b);
        assert_eq!([&a[..], &b[..]].concat(), whole);
        assert_eq!(low_bytes(3, 7), {
            let mut s = XorShift64::new(7);
            [s.next_u64() as u8, s.next_u64() as u8, s.next_u64() as u8]
        });
    }
}
