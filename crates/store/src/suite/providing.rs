//! The provide log and IPNI chains ([`crate::Providing`]).

use super::*;

pub(super) async fn the_provide_log_lists_completed_roots_in_completion_order(
    store: &dyn MetadataStore,
) {
    use crate::model::{LogPlace, ProvideProgress, SweepPass};
    let start = LogPlace::default();
    let before = store.completed_roots(start, 10_000).await.unwrap();
    let end = before.last().map_or(start, |(key, _)| *key);
    assert_eq!(
        store.count_completed_roots(start).await.unwrap(),
        before.len() as u64
    );

    let gina = store
        .create_account("gina", AccountLimits::default())
        .await
        .unwrap();
    let pending = store
        .record_upload(upload("log-pending", gina.id), None)
        .await
        .unwrap();
    for (id, cid) in [
        ("log-1", "bafylogb"),
        ("log-2", "bafyloga"),
        ("log-3", "bafylogb"),
    ] {
        store
            .commit_completed_upload(upload(id, gina.id), Packed::default(), &root(cid, 10))
            .await
            .unwrap();
    }
    let new = store.completed_roots(end, 10).await.unwrap();
    let cids: Vec<&str> = new.iter().map(|(_, cid)| cid.as_str()).collect();
    assert_eq!(
        cids,
        ["bafylogb", "bafyloga", "bafylogb"],
        "pending work is not in it"
    );
    assert!(new.iter().all(|(key, _)| key.operation_id != pending.id));
    assert!(new.windows(2).all(|w| w[0].0 < w[1].0), "in order");
    assert_eq!(store.count_completed_roots(end).await.unwrap(), 3);
    // Paged: from the first one on.
    let rest = store.completed_roots(new[0].0, 1).await.unwrap();
    assert_eq!(rest, new[1..2]);

    // A sweep pages through each root once.
    let mut swept = Vec::new();
    let mut after = String::new();
    loop {
        let page = store.distinct_roots(&after, 2).await.unwrap();
        let Some(last) = page.last() else { break };
        after = last.clone();
        swept.extend(page);
    }
    assert!(swept.windows(2).all(|w| w[0] < w[1]), "distinct, in order");
    assert!(swept.contains(&"bafyloga".to_owned()) && swept.contains(&"bafylogb".to_owned()));

    // Each node's progress is its own.
    assert_eq!(store.provide_progress("12D3KooWA").await.unwrap(), None);
    let progress = ProvideProgress {
        through: new[2].0,
        // Past the middle of the keyspace: its top bit is set.
        pass: Some(SweepPass {
            began_at_ms: 1_000,
            reached: 0xc000_0000_0000_0001,
        }),
    };
    store
        .save_provide_progress("12D3KooWA", &progress)
        .await
        .unwrap();
    let moved = ProvideProgress {
        pass: None,
        ..progress
    };
    store
        .save_provide_progress("12D3KooWB", &moved)
        .await
        .unwrap();
    assert_eq!(
        store.provide_progress("12D3KooWA").await.unwrap(),
        Some(progress)
    );
    assert_eq!(
        store.provide_progress("12D3KooWB").await.unwrap(),
        Some(moved)
    );
}

pub(super) async fn each_nodes_ipni_chain_is_its_own_and_published_whole(
    store: &dyn MetadataStore,
) {
    use crate::model::{IpniChain, IpniPublication, LogPlace};
    let start = LogPlace::default();
    let deleted_before = store.deleted_roots(start, 100_000).await.unwrap().len();
    let iris = store
        .create_account("iris", AccountLimits::default())
        .await
        .unwrap();
    for (id, cid) in [
        ("ipni-1", "bafyipnia"),
        ("ipni-2", "bafyipnib"),
        ("ipni-3", "bafyipnib"),
    ] {
        store
            .commit_completed_upload(upload(id, iris.id), Packed::default(), &root(cid, 10))
            .await
            .unwrap();
    }
    let roots = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(store.ipni_chain("12D3KooWA").await.unwrap(), None);
    assert_eq!(
        store
            .ipni_not_advertised(
                "12D3KooWA",
                &roots(&["bafyipnib", "bafyipnia", "bafyipnib"])
            )
            .await
            .unwrap(),
        roots(&["bafyipnib", "bafyipnia"]),
        "each once, in order"
    );

    let chain = IpniChain {
        head: Some("baguqeeraad".into()),
        completed_through: LogPlace {
            at_ms: 5,
            operation_id: 6,
        },
        deleted_through: LogPlace {
            at_ms: 7,
            operation_id: 8,
        },
    };
    let publication = IpniPublication {
        blocks: vec![
            ("baguqeeraad".into(), b"{\"ad\":1}".to_vec()),
            ("baguqeeraentries".into(), vec![0, 255, 1]),
        ],
        chain: chain.clone(),
        advertised: roots(&["bafyipnia", "bafyipnib"]),
        withdrawn: vec![],
    };
    store.publish_ipni("12D3KooWA", &publication).await.unwrap();
    assert_eq!(store.ipni_chain("12D3KooWA").await.unwrap(), Some(chain));
    assert_eq!(
        store
            .ipni_block("12D3KooWA", "baguqeeraentries")
            .await
            .unwrap(),
        Some(vec![0, 255, 1])
    );
    // Another node's chain and blocks are its own.
    assert_eq!(store.ipni_chain("12D3KooWB").await.unwrap(), None);
    assert_eq!(
        store.ipni_block("12D3KooWB", "baguqeeraad").await.unwrap(),
        None
    );
    assert_eq!(
        store
            .ipni_not_advertised("12D3KooWA", &roots(&["bafyipnia", "bafyipnic"]))
            .await
            .unwrap(),
        roots(&["bafyipnic"])
    );
    assert_eq!(
        store
            .ipni_not_advertised("12D3KooWB", &roots(&["bafyipnia"]))
            .await
            .unwrap(),
        roots(&["bafyipnia"])
    );

    // A root is withdrawn once no live upload keeps it: deleting one of two uploads of
    // bafyipnib does not withdraw it; the deletions are logged in order.
    let both = roots(&["bafyipnia", "bafyipnib"]);
    assert!(store
        .ipni_withdrawn("12D3KooWA", &both)
        .await
        .unwrap()
        .is_empty());
    store.delete_kept(iris.id, "ipni-2").await.unwrap().unwrap();
    assert!(store
        .ipni_withdrawn("12D3KooWA", &both)
        .await
        .unwrap()
        .is_empty());
    store.delete_kept(iris.id, "ipni-3").await.unwrap().unwrap();
    store.delete_kept(iris.id, "ipni-1").await.unwrap().unwrap();
    assert_eq!(
        store.ipni_withdrawn("12D3KooWA", &both).await.unwrap(),
        both
    );
    assert!(store
        .ipni_withdrawn("12D3KooWB", &both)
        .await
        .unwrap()
        .is_empty());
    let deleted = store.deleted_roots(start, 100_000).await.unwrap();
    let mut newest: Vec<&str> = deleted[deleted_before..]
        .iter()
        .map(|(_, cid)| cid.as_str())
        .collect();
    newest.sort();
    assert_eq!(newest, ["bafyipnia", "bafyipnib", "bafyipnib"]);
    assert!(deleted.windows(2).all(|w| w[0].0 < w[1].0), "in order");
    let after_first = store
        .deleted_roots(deleted[deleted_before].0, 1)
        .await
        .unwrap();
    assert_eq!(after_first, deleted[deleted_before + 1..deleted_before + 2]);

    let withdrawal = IpniPublication {
        blocks: vec![("baguqeerarm".into(), b"{}".to_vec())],
        chain: IpniChain {
            head: Some("baguqeerarm".into()),
            ..IpniChain::default()
        },
        advertised: vec![],
        withdrawn: both.clone(),
    };
    store.publish_ipni("12D3KooWA", &withdrawal).await.unwrap();
    assert!(store
        .ipni_withdrawn("12D3KooWA", &both)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        store.ipni_not_advertised("12D3KooWA", &both).await.unwrap(),
        both
    );
    assert_eq!(
        store
            .ipni_chain("12D3KooWA")
            .await
            .unwrap()
            .unwrap()
            .head
            .as_deref(),
        Some("baguqeerarm")
    );
}
