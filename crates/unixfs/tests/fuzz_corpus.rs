//! The fuzz targets of this crate, on stable and without cargo-fuzz: every input kept under
//! `fuzz/regressions/unixfs_*` replays through the very bodies the targets run
//! (`src/fuzz.rs`) without panicking, and so do the seeds, DAGs of our own importer,
//! which must also read back in full. With `CAIRN_FUZZ_CORPUS=DIR` set, the seeds are written
//! to `DIR/<target>/` (what `scripts/fuzz` does before fuzzing).

use cairn_test_support::fuzz_corpus as corpus;
use cairn_test_support::vectors;
use cairn_unixfs::fuzz as bodies;

use cairn_unixfs::block::{DAG_PB, RAW};
use cairn_unixfs::profile::{CidVersion, LeafKind};
use cairn_unixfs::{Cid, DirectoryBuilder, FileImporter, MemoryBlocks, Profile};

/// A tree with a multi-level file, a HAMT directory of 40 files, a nested plain directory and
/// a symlink; returns the root and the blocks, root first.
fn seed_dag(profile: &Profile) -> (Cid, Vec<(Cid, Vec<u8>)>) {
    let mut blocks = MemoryBlocks::default();
    let content = vectors::xorshift(700, 7);
    let mut dir = DirectoryBuilder::new(profile);
    let mut file = FileImporter::new(profile, &mut blocks);
    file.push(&content).unwrap();
    dir.add_file("big", file.finish().unwrap()).unwrap();
    for i in 0..40 {
        let mut file = FileImporter::new(profile, &mut blocks);
        file.push(format!("file {i}").as_bytes()).unwrap();
        dir.add_file(&format!("many/f{i:02}"), file.finish().unwrap())
            .unwrap();
    }
    dir.add_directory("nested/empty").unwrap();
    dir.add_symlink("nested/link", "../big").unwrap();
    let root = dir.finish(&mut blocks).unwrap().cid;
    let mut ordered: Vec<(Cid, Vec<u8>)> = blocks.iter().map(|(c, b)| (*c, b.to_vec())).collect();
    ordered.sort_by_key(|(cid, _)| *cid != root);
    (root, ordered)
}

fn profiles() -> [(&'static str, Profile); 2] {
    [
        (
            "v1",
            cairn_unixfs::fuzz::tiny_profile(CidVersion::V1, LeafKind::Raw),
        ),
        (
            "v0",
            cairn_unixfs::fuzz::tiny_profile(CidVersion::V0, LeafKind::DagPb),
        ),
    ]
}

#[test]
fn unixfs_node_regressions_and_seeds_decode_without_panicking() {
    for (name, input) in corpus::regressions("unixfs_node") {
        println!("{name}: {:?}", bodies::unixfs_node(&input));
    }
    for (label, profile) in profiles() {
        let (_, blocks) = seed_dag(&profile);
        for (i, (cid, block)) in blocks.iter().enumerate() {
            let selector = match (cid.codec(), cid.version()) {
                (RAW, _) => 1,
                (DAG_PB, cid::Version::V0) => 2,
                _ => 0,
            };
            let input = [&[selector][..], block].concat();
            // Every block our importer makes is a well-formed node.
            bodies::unixfs_node(&input).unwrap();
            corpus::save_seed("unixfs_node", &format!("{label}-{i:03}"), &input);
        }
    }
}

#[test]
fn unixfs_reader_regressions_and_seeds_read_without_panicking() {
    for (name, input) in corpus::regressions("unixfs_reader") {
        println!("{name}: {:?}", bodies::unixfs_reader(&input));
    }
    for (label, profile) in profiles() {
        let (_, blocks) = seed_dag(&profile);
        let frames: Vec<&[u8]> = blocks.iter().map(|(_, b)| b.as_slice()).collect();
        // (op, range, path, what a full read gives: entries, bytes or blocks).
        let cases = [
            (0, (0, 0), "many/f07", 0),
            (0, (100, 500), "big", 500),
            (0, (0, 0), "many", 40),
            (1, (0, 0), "", 3),
            (3, (0, 0), "", blocks.len() as u64),
            (3 | 0x10, (0, 0), "", blocks.len() as u64),
        ];
        for (i, (op, range, path, expected)) in cases.into_iter().enumerate() {
            let input = bodies::reader_input(op, range, path, &frames);
            assert_eq!(
                bodies::unixfs_reader(&input).unwrap(),
                expected,
                "{label} {i}"
            );
            corpus::save_seed("unixfs_reader", &format!("{label}-{i}"), &input);
        }
        // A range read of the file alone: its root first, the rest of the blocks after.
        let file_root = blocks.iter().position(|(_, b)| {
            let cid = cairn_unixfs::block::block_cid(profile.cid_version, DAG_PB, b);
            matches!(
                cairn_unixfs::node::Node::decode(&cid, b.clone()),
                Ok(cairn_unixfs::node::Node::File { size: 700, .. })
            )
        });
        let file_root = file_root.expect("the tree holds the 700-byte file");
        let mut frames = frames.clone();
        frames.swap(0, file_root);
        let input = bodies::reader_input(2, (650, 100), "", &frames);
        assert_eq!(bodies::unixfs_reader(&input).unwrap(), 50);
        corpus::save_seed("unixfs_reader", &format!("{label}-range"), &input);
    }
}
