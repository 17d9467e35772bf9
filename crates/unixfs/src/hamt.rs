//! HAMT-sharded directories, encoded as boxo `ipld/unixfs/hamt` does.
//!
//! Keys are hashed with murmur3 x64_128 (seed 0) and the first 8 bytes of the digest (h1,
//! big-endian, i.e. the top bits of h1 first) select a slot at each level, `log2(fanout)` bits
//! per level. A slot holding one entry links to it by `HEX(slot) + name`; a slot holding two or
//! more entries links to a sub-shard named `HEX(slot)`. Because an import only ever inserts,
//! that rule gives the same canonical structure as boxo's incremental inserts.

use std::io;

use crate::block::{cid_from_digest, BlockBytes, BlockSink, Link, DAG_PB};
use crate::pb::{self, DataType, UnixFsData};
use crate::profile::Profile;

/// Multihash code of murmur3-x64-64, recorded in every shard's `hashType`.
pub(crate) const MURMUR3_X64_64: u64 = 0x22;

/// An entry to place in a shard.
pub(crate) struct ShardEntry {
    pub name: String,
    pub link: Link,
    hash: u64,
}

impl ShardEntry {
    pub fn new(name: String, link: Link) -> Self {
        let hash = name_hash(name.as_bytes());
        Self { name, link, hash }
    }
}

/// The 64-bit key hash of a name: h1 of murmur3 x64_128 with seed 0.
pub(crate) fn name_hash(name: &[u8]) -> u64 {
    // Reading from a byte slice cannot fail.
    let digest = murmur3::murmur3_x64_128(&mut &name[..], 0).unwrap_or_default();
    digest as u64
}

/// Two names in one directory whose 64-bit hashes agree on every level the fanout allows.
#[derive(Debug, thiserror::Error)]
#[error("names {first:?} and {second:?} have colliding HAMT hashes")]
pub struct HashCollision {
    pub first: String,
    pub second: String,
}

/// Build the shard tree over `entries` and return the root shard's link.
pub(crate) fn build(
    profile: &Profile,
    entries: Vec<ShardEntry>,
    sink: &mut dyn BlockSink,
) -> io::Result<Result<Link, HashCollision>> {
    let bits = profile.hamt_fanout.trailing_zeros();
    debug_assert!(profile.hamt_fanout.is_power_of_two() && bits > 0);
    build_level(profile, bits, 0, entries, sink)
}

fn build_level(
    profile: &Profile,
    bits: u32,
    level: u32,
    mut entries: Vec<ShardEntry>,
    sink: &mut dyn BlockSink,
) -> io::Result<Result<Link, HashCollision>> {
    if (level + 1) * bits > 64 {
        return Ok(Err(HashCollision {
            first: entries.swap_remove(0).name,
            second: entries.swap_remove(0).name,
        }));
    }
    let slot_of = |hash: u64| (hash >> (64 - (level + 1) * bits)) as usize & ((1 << bits) - 1);
    entries.sort_by_key(|e| slot_of(e.hash));
    let fanout = usize::from(profile.hamt_fanout);
    let width = format!("{:X}", fanout - 1).len();
    let mut bitfield = vec![0u8; fanout.div_ceil(8)];
    let mut links = Vec::new();
    let mut children_tsize = 0;
    let mut rest = entries;
    while !rest.is_empty() {
        let slot = slot_of(rest[0].hash);
        let same = rest.iter().take_while(|e| slot_of(e.hash) == slot).count();
        let tail = rest.split_off(same);
        let group = std::mem::replace(&mut rest, tail);
        // The bitfield is a big-endian integer in which bit `slot` is set.
        let len = bitfield.len();
        bitfield[len - 1 - slot / 8] |= 1 << (slot % 8);
        let prefix = format!("{slot:0width$X}");
        let (name, link) = if let [single] = group.as_slice() {
            (format!("{prefix}{}", single.name), single.link)
        } else {
            match build_level(profile, bits, level + 1, group, sink)? {
                Ok(link) => (prefix, link),
                Err(collision) => return Ok(Err(collision)),
            }
        };
        children_tsize += link.tsize;
        links.push(pb::link(link.cid, name, link.tsize));
    }
    let leading_zeros = bitfield.iter().take_while(|b| **b == 0).count();
    let mut data = UnixFsData::new(DataType::HamtShard);
    data.data = Some(&bitfield[leading_zeros..]);
    data.hash_type = Some(MURMUR3_X64_64);
    data.fanout = Some(fanout as u64);
    let block = pb::encode_node(links, data.encode());
    let cid = cid_from_digest(
        profile.cid_version,
        DAG_PB,
        &BlockBytes::new(&block).sha256(),
    );
    sink.put_block(&cid, BlockBytes::new(&block))?;
    Ok(Ok(Link {
        cid,
        tsize: block.len() as u64 + children_tsize,
    }))
}
