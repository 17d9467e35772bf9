//! A CAR written from any DAG reads back as exactly the same blocks, each verified.

use std::collections::BTreeMap;

use cairn_car::{export_dfs, CarLimits, CarReader, CarWriter};
use cairn_unixfs::{DirectoryBuilder, FileImporter, MemoryBlocks, Profile};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn every_block_survives_a_car_round_trip(
        files in prop::collection::btree_map("[a-e]{1,3}", prop::collection::vec(any::<u8>(), 0..3000), 0..30),
        chunk_size in 1usize..600,
        v0 in any::<bool>(),
    ) {
        let base = if v0 { Profile::UNIXFS_V0_2015 } else { Profile::UNIXFS_V1_2025 };
        let profile = Profile { chunk_size, max_links: 4, hamt_threshold: 120, ..base };
        let mut blocks = MemoryBlocks::default();
        let mut dir = DirectoryBuilder::new(&profile);
        for (name, content) in &files {
            let mut file = FileImporter::new(&profile, &mut blocks);
            file.push(content).unwrap();
            dir.add_file(name, file.finish().unwrap()).unwrap();
        }
        let root = dir.finish(&mut blocks).unwrap().cid;

        let mut writer = CarWriter::new(Vec::new(), &[root]).unwrap();
        export_dfs(&root, &mut blocks, &mut writer).unwrap();
        let car = writer.into_inner();

        let mut reader = CarReader::new(&car[..], CarLimits::default()).unwrap();
        prop_assert_eq!(reader.roots(), &[root][..]);
        let read: BTreeMap<_, _> = reader.by_ref().map(Result::unwrap).collect();
        let written: BTreeMap<_, _> = blocks.iter().map(|(c, b)| (*c, b.to_vec())).collect();
        prop_assert_eq!(read, written);
    }
}
