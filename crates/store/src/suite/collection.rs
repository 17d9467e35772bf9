//! Garbage collection against concurrent commits ([`crate::GarbageCollection`]).

use super::*;

/// Every live root in the store: what a collector's walk would have walked.
pub(super) async fn live_roots(store: &dyn MetadataStore) -> std::collections::HashSet<String> {
    let mut roots = std::collections::HashSet::new();
    let mut after = String::new();
    loop {
        let page = store.distinct_roots(&after, 1000).await.unwrap();
        let Some(last) = page.last() else {
            return roots;
        };
        after = last.clone();
        roots.extend(page);
    }
}

/// Apply `collection` as a collector that walked every live root would: it removes `pack`,
/// whose name waits in `dead_packs` until its blob is deleted.
pub(super) async fn collect_removing(
    store: &dyn MetadataStore,
    collection: &crate::model::Collection,
    since: i64,
    pack: &str,
) {
    let applied = store
        .apply_collection(collection, since, &live_roots(store).await)
        .await
        .unwrap();
    let removed = vec![pack.to_owned()];
    assert_eq!(
        applied,
        crate::model::Collected::Applied {
            packs_removed: removed.clone()
        }
    );
    assert_eq!(store.dead_packs().await.unwrap(), removed);
    store.forget_dead_packs(&removed).await.unwrap();
    assert!(store.dead_packs().await.unwrap().is_empty());
}

/// The race that breaks most stores: an upload skips writing blocks it finds stored, while a
/// collection removes them. Whichever commits first, no live DAG loses a block.
pub(super) async fn collections_never_remove_a_block_a_commit_reused(
    store: &dyn MetadataStore,
    packs: &Packs,
) {
    use crate::model::{Collected, Collection, Compaction};
    let gus = store
        .create_account("gus", AccountLimits::default())
        .await
        .unwrap();
    let since = crate::now_ms() - 600_000;

    // The collection first: the upload's commit fails, changing nothing, and processing it
    // again writes the blocks anew.
    let content: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
    let (dag, packed) = pack_content(store, packs, &content).await;
    let first = packed.pack.clone().expect("new content");
    store
        .commit_completed_upload(upload("g1", gus.id), packed, &dag)
        .await
        .unwrap();
    store.delete_kept(gus.id, "g1").await.unwrap().unwrap();
    let (_, reused) = pack_content(store, packs, &content).await;
    assert!(reused.pack.is_none());
    assert_eq!(reused.reused.len(), first.blocks.len());
    let collection = Collection {
        dead: first.blocks.iter().map(|b| b.multihash.clone()).collect(),
        compacted: None,
        emptied: vec![first.name.clone()],
    };
    collect_removing(store, &collection, since, &first.name).await;
    let result = store
        .commit_completed_upload(upload("g2", gus.id), reused, &dag)
        .await;
    assert!(
        matches!(result, Err(StoreError::BlocksCollected(n)) if n == first.blocks.len()),
        "{result:?}"
    );
    let by_id = OperationRef::UploadId("g2".into());
    assert_eq!(store.operation(gus.id, &by_id).await.unwrap(), None);
    let (_, again) = pack_content(store, packs, &content).await;
    assert!(
        again.pack.is_some(),
        "the collected blocks are written again"
    );
    store
        .commit_completed_upload(upload("g2", gus.id), again, &dag)
        .await
        .unwrap();
    for block in &first.blocks {
        assert!(store.has_block(&block.multihash).await.unwrap());
    }

    // The commit first: the collection, planned from a walk that did not see the new root,
    // is refused and names the root to walk.
    let content: Vec<u8> = (0..5000u32).map(|i| (i * 11 % 241) as u8).collect();
    let (dag, packed) = pack_content(store, packs, &content).await;
    let second = packed.pack.clone().expect("new content");
    store
        .commit_completed_upload(upload("g3", gus.id), packed, &dag)
        .await
        .unwrap();
    store.delete_kept(gus.id, "g3").await.unwrap().unwrap();
    let walked = live_roots(store).await;
    let (_, reused) = pack_content(store, packs, &content).await;
    store
        .commit_completed_upload(upload("g4", gus.id), reused, &dag)
        .await
        .unwrap();
    let collection = Collection {
        dead: second.blocks.iter().map(|b| b.multihash.clone()).collect(),
        compacted: None,
        emptied: vec![second.name.clone()],
    };
    let refused = store
        .apply_collection(&collection, since, &walked)
        .await
        .unwrap();
    assert_eq!(refused, Collected::NewRoots(vec![dag.cid.clone()]));
    for block in &second.blocks {
        assert!(store.has_block(&block.multihash).await.unwrap());
    }

    // A compaction moves live blocks to a new pack; a read that looked one up before it
    // finds the old pack gone and reads the block where it is now.
    let block = &second.blocks[0];
    let before = store
        .block_location(&block.multihash)
        .await
        .unwrap()
        .unwrap();
    let bytes = packs.read(&before).unwrap();
    let mut writer = packs.writer(crate::packs::nothing_known()).unwrap();
    for block in &second.blocks {
        let location = store
            .block_location(&block.multihash)
            .await
            .unwrap()
            .unwrap();
        let cid = [&[1u8, 0x55][..], &block.multihash].concat();
        let cid = cairn_unixfs::Cid::try_from(cid.as_slice()).unwrap();
        use cairn_unixfs::BlockSink;
        writer
            .put_block(
                &cid,
                cairn_unixfs::BlockBytes::new(&packs.read(&location).unwrap()),
            )
            .unwrap();
    }
    let moved_to = writer.seal().unwrap().pack.unwrap();
    let collection = Collection {
        dead: Vec::new(),
        compacted: Some(Compaction {
            sources: vec![second.name.clone(); moved_to.blocks.len()],
            pack: moved_to.clone(),
        }),
        emptied: vec![second.name.clone()],
    };
    collect_removing(store, &collection, since, &second.name).await;
    packs.delete(&second.name).unwrap();
    let now = store
        .block_location(&block.multihash)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(now.pack, moved_to.name);
    let read = packs
        .read_relocating(&before, || Ok(Some(now.clone())))
        .unwrap();
    assert_eq!(read, Some(bytes));

    // A repair moves a block to a fresh copy, only while its entry still names the pack the
    // damaged copy was found in: a second repair from that pack moves and records nothing.
    let cid = [&[1u8, 0x55][..], &block.multihash].concat();
    let cid = cairn_unixfs::Cid::try_from(cid.as_slice()).unwrap();
    let copy_of = |bytes: &[u8]| {
        let mut writer = packs.writer(crate::packs::nothing_known()).unwrap();
        use cairn_unixfs::BlockSink;
        writer
            .put_block(&cid, cairn_unixfs::BlockBytes::new(bytes))
            .unwrap();
        writer.seal().unwrap().pack.unwrap()
    };
    let good = packs.read(&now).unwrap();
    let repair = Compaction {
        pack: copy_of(&good),
        sources: vec![moved_to.name.clone()],
    };
    assert_eq!(store.relocate_blocks(&repair).await.unwrap(), 1);
    let repaired = store
        .block_location(&block.multihash)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(repaired.pack, repair.pack.name);
    assert_eq!(packs.read(&repaired).unwrap(), good);
    let late = Compaction {
        pack: copy_of(&good),
        sources: vec![moved_to.name.clone()],
    };
    assert_eq!(store.relocate_blocks(&late).await.unwrap(), 0);
    let names = store.pack_names().await.unwrap();
    assert!(names.contains(&repair.pack.name) && !names.contains(&late.pack.name));
    assert_eq!(
        store
            .block_location(&block.multihash)
            .await
            .unwrap()
            .unwrap(),
        repaired
    );
    packs.delete(&late.pack.name).unwrap();

    // One collector at a time; its end releases the lock.
    let lock = store.lock_collector().await.unwrap().expect("free");
    assert!(store.lock_collector().await.unwrap().is_none());
    drop(lock);
    let mut again = None;
    for _ in 0..100 {
        again = store.lock_collector().await.unwrap();
        if again.is_some() {
            break;
        }
        // PostgreSQL releases it once it sees the session's connection close.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(again.is_some(), "released");
}
