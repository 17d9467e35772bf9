//! Properties that must hold for any input, not just the vectors: the CID depends only on the
//! content and the tree, never on how bytes were sliced, how entries were ordered, or how many
//! threads hashed.

use std::num::NonZeroUsize;

use cairn_unixfs::profile::{CidVersion, DirSizeEstimate, LeafKind};
use cairn_unixfs::{Cid, DirectoryBuilder, DiscardBlocks, FileImporter, MemoryBlocks, Profile};
use proptest::prelude::*;

/// Small chunks, narrow nodes and low HAMT thresholds, so that kilobytes of input exercise
/// deep trees and multi-level shards.
fn tiny_profile() -> impl Strategy<Value = Profile> {
    (
        prop::sample::select(vec![1usize, 7, 64, 1000]),
        2usize..6,
        any::<bool>(),
        prop::sample::select(vec![4u16, 16, 256]),
        50u64..400,
    )
        .prop_map(
            |(chunk_size, max_links, v0, hamt_fanout, hamt_threshold)| Profile {
                name: "test",
                cid_version: if v0 { CidVersion::V0 } else { CidVersion::V1 },
                leaves: if v0 { LeafKind::DagPb } else { LeafKind::Raw },
                chunk_size,
                max_links,
                hamt_threshold,
                dir_size_estimate: if v0 {
                    DirSizeEstimate::LinksBytes
                } else {
                    DirSizeEstimate::BlockBytes
                },
                hamt_fanout,
            },
        )
}

fn import(profile: &Profile, pieces: &[&[u8]], threads: usize) -> Cid {
    let threads = NonZeroUsize::new(threads).unwrap();
    let mut importer = FileImporter::with_threads(profile, DiscardBlocks, threads);
    for piece in pieces {
        importer.push(piece).unwrap();
    }
    importer.finish().unwrap().cid
}

#[derive(Clone, Debug)]
enum Node {
    File(Vec<u8>),
    Symlink(String),
    EmptyDir,
}

/// Up to 40 distinct paths over a small alphabet, so that names share prefixes and collide
/// into the same HAMT slots; parents are implied.
fn tree() -> impl Strategy<Value = Vec<(String, Node)>> {
    let name = "[a-c]{1,2}|[é~🦀0-9]{1,3}";
    let path = prop::collection::vec(name, 1..4).prop_map(|parts| parts.join("/"));
    let node = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300).prop_map(Node::File),
        "[a-z/.]{1,10}".prop_map(Node::Symlink),
        Just(Node::EmptyDir),
    ];
    prop::collection::btree_map(path, node, 0..40).prop_map(|map| {
        // Keep only paths that are not a prefix directory of another path.
        let paths: Vec<String> = map.keys().cloned().collect();
        map.into_iter()
            .filter(|(p, _)| !paths.iter().any(|q| q.starts_with(&format!("{p}/"))))
            .collect()
    })
}

fn build(profile: &Profile, entries: &[(String, Node)], sink: &mut MemoryBlocks) -> Cid {
    let mut dir = DirectoryBuilder::new(profile);
    for (path, node) in entries {
        match node {
            Node::File(bytes) => {
                let mut file = FileImporter::new(profile, &mut *sink);
                file.push(bytes).unwrap();
                dir.add_file(path, file.finish().unwrap()).unwrap();
            }
            Node::Symlink(target) => dir.add_symlink(path, target).unwrap(),
            Node::EmptyDir => dir.add_directory(path).unwrap(),
        }
    }
    dir.finish(sink).unwrap().cid
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_slicing_and_thread_count_gives_the_same_cid(
        profile in tiny_profile(),
        content in prop::collection::vec(any::<u8>(), 0..20_000),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
        threads in 1usize..4,
    ) {
        let whole = import(&profile, &[&content], 1);
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(content.len() + 1)).collect();
        points.sort_unstable();
        let mut pieces = Vec::new();
        let mut start = 0;
        for p in points {
            pieces.push(&content[start..p]);
            start = p;
        }
        pieces.push(&content[start..]);
        prop_assert_eq!(import(&profile, &pieces, threads), whole);
    }

    #[test]
    fn any_insertion_order_gives_the_same_root_and_blocks(
        profile in tiny_profile(),
        entries in tree(),
        seed in any::<u64>(),
    ) {
        let mut first = MemoryBlocks::default();
        let root = build(&profile, &entries, &mut first);
        let mut shuffled = entries.clone();
        // Fisher-Yates with a splitmix step: deterministic per case, so failures replay.
        let mut state = seed;
        for i in (1..shuffled.len()).rev() {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let j = (state >> 33) as usize % (i + 1);
            shuffled.swap(i, j);
        }
        let mut second = MemoryBlocks::default();
        prop_assert_eq!(build(&profile, &shuffled, &mut second), root);
        let mut a: Vec<_> = first.iter().map(|(c, _)| *c).collect();
        let mut b: Vec<_> = second.iter().map(|(c, _)| *c).collect();
        a.sort();
        b.sort();
        prop_assert_eq!(a, b);
    }
}
