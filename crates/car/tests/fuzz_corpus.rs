//! The fuzz targets of this crate, on stable and without cargo-fuzz: every input kept under
//! `fuzz/regressions/car_*` replays through the very bodies the targets run
//! (`src/fuzz.rs`) without panicking, and so do the seeds: the hostile DAGs of
//! `cairn_test_support::hostile` and DAGs of our own importer, as CARs (each must be read, and imported
//! or refused, as it deserves). With `CAIRN_FUZZ_CORPUS=DIR` set, the seeds are written to
//! `DIR/<target>/` (what `scripts/fuzz` does before fuzzing); the hostile DAGs are also written
//! as `unixfs_reader` seeds, in that target's framing.

use cairn_car::fuzz as bodies;
use cairn_car::hostile;
use cairn_test_support::fuzz_corpus as corpus;
use cairn_unixfs::fuzz as unixfs_bodies;

use cairn_car::{export_dfs, CarWriter};
use cairn_unixfs::profile::{CidVersion, LeafKind};
use cairn_unixfs::{Cid, DirectoryBuilder, FileImporter, MemoryBlocks};

/// A tree from our importer (small chunks, few links, a HAMT of 40 files), as a CAR.
fn imported_car(cid_version: CidVersion, leaves: LeafKind) -> (Vec<u8>, u64) {
    let profile = cairn_unixfs::fuzz::tiny_profile(cid_version, leaves);
    let mut blocks = MemoryBlocks::default();
    let mut dir = DirectoryBuilder::new(&profile);
    let mut file = FileImporter::new(&profile, &mut blocks);
    file.push(&[7u8; 700]).unwrap();
    file.push(b"and some text to end with").unwrap();
    dir.add_file("big", file.finish().unwrap()).unwrap();
    for i in 0..40 {
        let mut file = FileImporter::new(&profile, &mut blocks);
        file.push(format!("file {i}").as_bytes()).unwrap();
        dir.add_file(&format!("many/f{i:02}"), file.finish().unwrap())
            .unwrap();
    }
    dir.add_symlink("link", "big").unwrap();
    let root = dir.finish(&mut blocks).unwrap().cid;
    let mut car = CarWriter::new(Vec::new(), &[root]).unwrap();
    let written = export_dfs(&root, &mut blocks, &mut car).unwrap();
    (car.into_inner(), written)
}

/// The hostile DAGs small enough to be seeds, and whether the importer accepts each.
fn hostile_dags() -> Vec<(&'static str, hostile::Dag, bool)> {
    vec![
        ("deep-file", hostile::deep_file(100), true),
        ("deep-directory", hostile::deep_directory(100), true),
        (
            "laughing-directory",
            hostile::laughing_directory(8, 8),
            true,
        ),
        ("laughing-file", hostile::laughing_file(8, 8), true),
        ("lying-blocksizes", hostile::lying_blocksizes(), false),
        ("lying-filesize", hostile::lying_filesize(15), false),
        ("hamt-bad-fanout", hostile::hamt_with_bad_fanout(), false),
        (
            "hamt-mismatched-sub-shard",
            hostile::hamt_with_mismatched_sub_shard(),
            false,
        ),
        ("symlink-cycle", hostile::symlink_cycle(), true),
    ]
}

#[test]
fn car_regressions_replay_without_panicking() {
    for (name, input) in corpus::regressions("car_reader") {
        println!("{name}: {:?}", bodies::car_reader(&input));
    }
    for (name, input) in corpus::regressions("car_import") {
        println!("{name}: {:?}", bodies::car_import(&input));
    }
}

#[test]
fn seed_cars_are_read_and_imported_or_refused_as_they_deserve() {
    for (label, cid_version, leaves) in [
        ("imported-v1", CidVersion::V1, LeafKind::Raw),
        ("imported-v0", CidVersion::V0, LeafKind::DagPb),
    ] {
        let (car, blocks) = imported_car(cid_version, leaves);
        assert_eq!(bodies::car_reader(&car).unwrap() as u64, blocks, "{label}");
        bodies::car_import(&car).unwrap();
        corpus::save_seed("car_reader", label, &car);
        corpus::save_seed("car_import", label, &car);
    }
    for (label, dag, valid) in hostile_dags() {
        let car = dag.car();
        assert_eq!(
            bodies::car_reader(&car).unwrap(),
            dag.blocks.len(),
            "{label}"
        );
        let imported = bodies::car_import(&car);
        assert_eq!(imported.is_ok(), valid, "{label}: {imported:?}");
        corpus::save_seed("car_reader", label, &car);
        corpus::save_seed("car_import", label, &car);
        // The same DAG for the reader target: walk it, with repeats (budget-bound).
        let frames: Vec<&[u8]> = dag.blocks.iter().map(|(_, b)| b.as_slice()).collect();
        let input = unixfs_bodies::reader_input(3 | 4, (0, 100), "", &frames);
        let _ = unixfs_bodies::unixfs_reader(&input);
        corpus::save_seed("unixfs_reader", &format!("hostile-{label}"), &input);
    }
    // Headers the importer must refuse: no root, two roots; and a cut-off CAR.
    let (car, _) = imported_car(CidVersion::V1, LeafKind::Raw);
    let root: Cid = *cairn_car::CarReader::new(&car[..], bodies::CAR_LIMITS)
        .unwrap()
        .roots()
        .first()
        .unwrap();
    let header_len = cairn_car::header(&[root]).len();
    for (label, roots) in [("no-root", vec![]), ("two-roots", vec![root, root])] {
        let other = [cairn_car::header(&roots), car[header_len..].to_vec()].concat();
        assert!(bodies::car_import(&other).is_err(), "{label}");
        corpus::save_seed("car_import", label, &other);
    }
    let cut = &car[..car.len() - 3];
    assert!(bodies::car_reader(cut).is_err());
    corpus::save_seed("car_reader", "truncated", cut);
}
