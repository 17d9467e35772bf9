//! Hostile DAGs against the CAR importer and the reader: a lie is refused at import naming the
//! block and the rule; a DAG that is valid but deep or self-repeating imports, and reading it
//! ends within the budget, never by overflowing a stack.

use cairn_car::hostile;

use cairn_car::{import_complete, CarLimits, CarReader, ImportError};
use cairn_unixfs::read::{ReadError, ReadLimits, Reader, Repeats};
use cairn_unixfs::{Cid, MemoryBlocks, NoBlocks};

fn import(dag: &hostile::Dag) -> Result<(Cid, MemoryBlocks), ImportError> {
    let car = dag.car();
    let mut blocks = MemoryBlocks::default();
    let reader = CarReader::new(&car[..], CarLimits::default()).unwrap();
    let root = import_complete(reader, &mut blocks, &mut NoBlocks)?;
    Ok((root, blocks))
}

#[test]
fn every_lie_is_refused_at_import_naming_the_block_and_the_rule() {
    let cases = [
        (hostile::lying_blocksizes(), "parent's blocksizes say 5"),
        (hostile::lying_filesize(15), "filesize says 15 bytes"),
        (hostile::lying_filesize(25), "filesize says 25 bytes"),
        (hostile::hamt_with_bad_fanout(), "HAMT fanout 255"),
        (
            hostile::hamt_with_mismatched_sub_shard(),
            "sub-shard with fanout 16",
        ),
    ];
    for (dag, rule) in cases {
        let message = match import(&dag) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted a DAG that breaks {rule:?}"),
        };
        assert!(message.contains(rule), "{message:?} should say {rule:?}");
        assert!(message.contains("block baf"), "{message:?} names no block");
    }
}

#[test]
fn a_link_that_reads_a_block_as_another_codec_is_refused() {
    let dag = hostile::raw_block_linked_as_dag_pb();
    let err = import(&dag).map(|_| ()).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("is in the CAR as raw, but") && message.contains("as dag-pb"),
        "{message}"
    );
    assert!(
        message.contains(&dag.root.to_string()),
        "names the parent: {message}"
    );
}

#[test]
fn a_stored_child_that_does_not_fit_its_new_parent_is_refused_too() {
    // The leaves are already stored; the CAR brings only the lying root.
    let dag = hostile::lying_blocksizes();
    let mut stored = MemoryBlocks::default();
    for (cid, block) in &dag.blocks[1..] {
        cairn_unixfs::BlockSink::put_block(&mut stored, cid, cairn_unixfs::BlockBytes::new(block))
            .unwrap();
    }
    let only_root = hostile::Dag {
        root: dag.root,
        blocks: dag.blocks[..1].to_vec(),
    };
    let car = only_root.car();
    let reader = CarReader::new(&car[..], CarLimits::default()).unwrap();
    let err = import_complete(reader, &mut MemoryBlocks::default(), &mut stored).unwrap_err();
    assert!(err.to_string().contains("blocksizes say 5"), "{err}");
}

#[test]
fn a_hundred_thousand_nested_file_nodes_import_and_then_read_as_too_deep() {
    let dag = hostile::deep_file(100_000);
    let (root, mut blocks) = import(&dag).unwrap();
    let mut reader = Reader::new(&mut blocks, ReadLimits::default());
    let result = reader.read_range(&root, 0..1, &mut |_, _| Ok(()), &mut |_| Ok(()));
    assert!(
        matches!(result, Err(ReadError::TooDeep { limit: 1024 })),
        "{result:?}"
    );
}

#[test]
fn walks_keep_their_stack_on_the_heap() {
    // With no depth limit at all, on a thread with a 256 KiB stack: a recursive reader would
    // overflow it long before 100,000 levels.
    let file = hostile::deep_file(100_000);
    let dir = hostile::deep_directory(100_000);
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let (root, mut blocks) = import(&file).unwrap();
            let mut reader = Reader::new(&mut blocks, ReadLimits::UNLIMITED);
            let mut out = Vec::new();
            reader
                .read_range(&root, 0..1, &mut |_, _| Ok(()), &mut |b| {
                    out.extend_from_slice(&b);
                    Ok(())
                })
                .unwrap();
            assert_eq!(out, b"x");
            let (root, mut blocks) = import(&dir).unwrap();
            let mut visited = 0;
            Reader::new(&mut blocks, ReadLimits::UNLIMITED)
                .walk(&root, Repeats::Skip, &mut |_, _| {
                    visited += 1;
                    Ok(())
                })
                .unwrap();
            assert_eq!(visited, 100_001);
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn a_self_repeating_directory_costs_its_budget_and_no_more() {
    let dag = hostile::laughing_directory(16, 10);
    let (root, mut blocks) = import(&dag).unwrap();
    assert_eq!(blocks.len(), 11);
    let limits = ReadLimits {
        max_blocks: 10_000,
        ..ReadLimits::default()
    };
    let mut reader = Reader::new(&mut blocks, limits);
    let mut visits = 0;
    let result = reader.walk(&root, Repeats::Visit, &mut |_, _| {
        visits += 1;
        Ok(())
    });
    assert!(
        matches!(result, Err(ReadError::OverBudget { what: "blocks", .. })),
        "{result:?}"
    );
    assert_eq!(visits, 10_000);
    // Without repeats the same DAG is eleven blocks.
    let mut reader = Reader::new(&mut blocks, limits);
    let mut distinct = 0;
    reader
        .walk(&root, Repeats::Skip, &mut |_, _| {
            distinct += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(distinct, 11);
}

#[test]
fn the_reader_refuses_a_lie_it_meets_instead_of_handing_out_its_bytes() {
    // Stored without the importer's checks (as content from elsewhere could be).
    for (dag, range) in [
        (hostile::lying_blocksizes(), 0..20),
        (hostile::lying_blocksizes(), 12..15),
    ] {
        let mut blocks = MemoryBlocks::default();
        for (cid, block) in &dag.blocks {
            cairn_unixfs::BlockSink::put_block(
                &mut blocks,
                cid,
                cairn_unixfs::BlockBytes::new(block),
            )
            .unwrap();
        }
        let mut out = Vec::new();
        let result = Reader::new(&mut blocks, ReadLimits::default()).read_range(
            &dag.root,
            range.clone(),
            &mut |_, _| Ok(()),
            &mut |b| {
                out.extend_from_slice(&b);
                Ok(())
            },
        );
        assert!(matches!(result, Err(ReadError::Node(_))), "{result:?}");
        assert!(out.is_empty(), "{range:?}: handed out {out:?}");
    }
}
