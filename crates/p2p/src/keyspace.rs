//! Kademlia's keyspace, as a sweep over it needs it: where keys and peers lie (the SHA-256 of
//! their bytes), regions of it (prefixes), and which peers a lookup proves are all the peers
//! of a region.
//!
//! A lookup for a target returns the [`K`] peers closest to it. Every peer that shares more
//! leading bits with the target than the farthest of those does is closer to it than that
//! one, so the lookup has found them all: the subtree of the target's first
//! `common prefix + 1` bits is known in full ([`covered_by`]). And when a region holds at
//! least [`K`] peers, the [`K`] closest to any key inside it are inside it too, so knowing
//! the region's peers in full gives every key's replication set without a lookup of its own.

use libp2p::PeerId;
use sha2::{Digest, Sha256};

/// Kademlia's replication factor: a record goes to the `K` peers closest to its key.
pub const K: usize = 20;

/// A place in the keyspace: the SHA-256 of a key's or a peer's bytes, as Kademlia's
/// `kbucket::Key` places them. Distance is XOR, compared as a big-endian number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Point(pub [u8; 32]);

impl Point {
    /// Where a record's key lies (for a provider record, the block's multihash).
    pub fn of_key(key: &[u8]) -> Self {
        Self(Sha256::digest(key).into())
    }

    pub fn of_peer(peer: &PeerId) -> Self {
        Self::of_key(&peer.to_bytes())
    }

    pub fn distance(&self, other: &Point) -> [u8; 32] {
        std::array::from_fn(|i| self.0[i] ^ other.0[i])
    }

    /// Leading bits shared with `other` (256 when they are the same point).
    pub fn common_prefix_len(&self, other: &Point) -> usize {
        for (i, (a, b)) in self.0.iter().zip(&other.0).enumerate() {
            let differ = a ^ b;
            if differ != 0 {
                return i * 8 + differ.leading_zeros() as usize;
            }
        }
        256
    }

    /// Where the point is along the keyspace, as a fraction of 2^64 (its first 64 bits).
    pub fn position(&self) -> u64 {
        u64::from_be_bytes(self.0[..8].try_into().expect("8 bytes"))
    }
}

/// A region of the keyspace: every point that starts with these `len` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Prefix {
    /// The bits, those past `len` zero.
    bits: Point,
    len: usize,
}

impl Prefix {
    /// The whole keyspace.
    pub const WHOLE: Prefix = Prefix {
        bits: Point([0; 32]),
        len: 0,
    };

    /// The first `len` bits of `point`.
    pub fn of(point: &Point, len: usize) -> Self {
        let len = len.min(256);
        let mut bits = point.0;
        for (i, byte) in bits.iter_mut().enumerate() {
            let kept = len.saturating_sub(i * 8).min(8);
            *byte &= if kept == 0 { 0 } else { 0xffu8 << (8 - kept) };
        }
        Self {
            bits: Point(bits),
            len,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn contains(&self, point: &Point) -> bool {
        point.common_prefix_len(&self.bits) >= self.len
    }

    /// Whether every point of `other` is in this region.
    pub fn includes(&self, other: &Prefix) -> bool {
        other.len >= self.len && self.contains(&other.bits)
    }

    /// The region one bit shorter; `None` for the whole keyspace.
    pub fn parent(&self) -> Option<Prefix> {
        (self.len > 0).then(|| Prefix::of(&self.bits, self.len - 1))
    }

    /// Its two halves.
    pub fn children(&self) -> [Prefix; 2] {
        assert!(self.len < 256, "a single point has no halves");
        let low = Prefix {
            bits: self.bits,
            len: self.len + 1,
        };
        let mut high = low;
        high.bits.0[self.len / 8] |= 0x80 >> (self.len % 8);
        [low, high]
    }

    /// Where the region begins along the keyspace (see [`Point::position`]).
    pub fn start(&self) -> u64 {
        self.bits.position()
    }

    /// Where the next region of the same length begins; `None` past the keyspace's end.
    pub fn end(&self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let width = 1u128 << 64u32.saturating_sub(self.len.min(64) as u32);
        u64::try_from(u128::from(self.start()) + width).ok()
    }

    /// Bytes whose point lies in the region, to look it up by: ground out by trying
    /// counters, at most 2^`max_bits` of them; the region is cut to its first `max_bits`
    /// bits first (a longer one would take too long to hit).
    pub fn target(&self, max_bits: usize) -> (Vec<u8>, Point) {
        let aimed = Prefix::of(&self.bits, self.len.min(max_bits));
        for counter in 0u64.. {
            let bytes = [b"cairn-sweep:".as_slice(), &counter.to_be_bytes()].concat();
            let point = Point::of_key(&bytes);
            if aimed.contains(&point) {
                return (bytes, point);
            }
        }
        unreachable!("a 64-bit counter hits any prefix of at most 64 bits")
    }
}

/// The region a lookup for `target` is proven to have found every peer of: `closest` is the
/// lookup's answer, the peers closest to the target. Fewer than [`K`] answers mean the
/// lookup ran out of peers, so every peer there is was found.
pub fn covered_by(target: &Point, closest: &[Point]) -> Prefix {
    if closest.len() < K {
        return Prefix::WHOLE;
    }
    let farthest = closest
        .iter()
        .map(|peer| target.common_prefix_len(peer))
        .min()
        .unwrap_or(256);
    Prefix::of(target, (farthest + 1).min(256))
}

/// The regions known in full, and what is left to look up to know a region in full.
#[derive(Debug, Default)]
pub struct Coverage {
    known: Vec<Prefix>,
}

impl Coverage {
    pub fn add(&mut self, region: Prefix) {
        if self.known.iter().any(|known| known.includes(&region)) {
            return;
        }
        self.known.retain(|known| !region.includes(known));
        self.known.push(region);
    }

    /// A part of `region` not yet known in full (the lowest one), to look up next; `None`
    /// when all of it is known.
    pub fn next_gap(&self, region: &Prefix) -> Option<Prefix> {
        let mut pending = vec![*region];
        while let Some(part) = pending.pop() {
            if self.known.iter().any(|known| known.includes(&part)) {
                continue;
            }
            if self.known.iter().any(|known| part.includes(known)) {
                // Partly known: look at its halves, the lower one first.
                let [low, high] = part.children();
                pending.push(high);
                pending.push(low);
                continue;
            }
            return Some(part);
        }
        None
    }
}

/// Where in `peers` the `k` closest to `key` are, closest first.
pub fn closest<P>(key: &Point, peers: &[(Point, P)], k: usize) -> Vec<usize> {
    let distance = |i: &usize| key.distance(&peers[*i].0);
    let mut by_distance: Vec<usize> = (0..peers.len()).collect();
    if by_distance.len() > k && k > 0 {
        by_distance.select_nth_unstable_by_key(k - 1, distance);
        by_distance.truncate(k);
    }
    by_distance.sort_by_key(distance);
    by_distance
}

/// About how many leading bits a region with at least [`K`] peers has, from lookups of
/// random targets: each lookup's [`K`] peers share with its target at least the bits its
/// farthest does, so a region that long holds at least [`K`] peers. Their mean, rounded
/// down (Kubo estimates its regions the same way).
pub fn region_len(lookups: &[(Point, Vec<Point>)]) -> usize {
    let lens: Vec<usize> = lookups
        .iter()
        .map(|(target, closest)| {
            let covered = covered_by(target, closest);
            covered.len().saturating_sub(1)
        })
        .collect();
    if lens.is_empty() {
        return 0;
    }
    lens.iter().sum::<usize>() / lens.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(first: u8) -> Point {
        let mut bytes = [0u8; 32];
        bytes[0] = first;
        Point(bytes)
    }

    #[test]
    fn prefixes_hold_the_points_that_start_with_them() {
        let region = Prefix::of(&point(0b1010_0000), 3);
        assert!(region.contains(&point(0b1011_1111)));
        assert!(!region.contains(&point(0b1000_0000)));
        assert_eq!(region.start(), 0b1010_0000u64 << 56);
        assert_eq!(region.end(), Some(0b1100_0000u64 << 56));
        assert_eq!(Prefix::of(&point(0b1110_0000), 3).end(), None);
        assert_eq!(region.parent(), Some(Prefix::of(&point(0b1010_0000), 2)));
        let [low, high] = region.children();
        assert_eq!(low, Prefix::of(&point(0b1010_0000), 4));
        assert_eq!(high, Prefix::of(&point(0b1011_0000), 4));
        assert!(region.includes(&high) && !high.includes(&region));
        assert!(Prefix::WHOLE.includes(&region));
    }

    #[test]
    fn a_target_lies_in_its_region() {
        let region = Prefix::of(&point(0b0110_1100), 6);
        let (bytes, at) = region.target(20);
        assert_eq!(Point::of_key(&bytes), at);
        assert!(region.contains(&at));
    }

    #[test]
    fn a_lookup_covers_the_subtree_its_farthest_answer_leaves_out() {
        let target = point(0b0000_0000);
        // 19 peers sharing 4 bits or more with the target, the farthest sharing 2.
        let mut closest: Vec<Point> = (0..19).map(|i| point(i % 16)).collect();
        closest.push(point(0b0010_0000));
        assert_eq!(covered_by(&target, &closest), Prefix::of(&target, 3));
        // Fewer than K answers: there are no other peers.
        assert_eq!(covered_by(&target, &closest[..5]), Prefix::WHOLE);
    }

    #[test]
    fn coverage_names_the_gaps_left_in_a_region() {
        let mut coverage = Coverage::default();
        let region = Prefix::of(&point(0), 1);
        assert_eq!(coverage.next_gap(&region), Some(region));
        coverage.add(Prefix::of(&point(0b0000_0000), 3));
        assert_eq!(
            coverage.next_gap(&region),
            Some(Prefix::of(&point(0b0010_0000), 3))
        );
        coverage.add(Prefix::of(&point(0b0010_0000), 3));
        assert_eq!(
            coverage.next_gap(&region),
            Some(Prefix::of(&point(0b0100_0000), 2))
        );
        coverage.add(Prefix::of(&point(0b0100_0000), 2));
        assert_eq!(coverage.next_gap(&region), None);
        // A wider region known makes the narrower ones redundant.
        coverage.add(Prefix::WHOLE);
        assert_eq!(coverage.known, [Prefix::WHOLE]);
    }

    #[test]
    fn closest_orders_by_xor_distance() {
        let peers: Vec<(Point, u8)> = [0b1000_0000u8, 0b0000_0001, 0b0100_0000, 0b0000_1000]
            .iter()
            .map(|b| (point(*b), *b))
            .collect();
        let names: Vec<u8> = closest(&point(0), &peers, 3)
            .iter()
            .map(|i| peers[*i].1)
            .collect();
        assert_eq!(names, [0b0000_0001, 0b0000_1000, 0b0100_0000]);
    }
}
