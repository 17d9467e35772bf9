//! Uploads and pins as accounts keep them ([`crate::Uploads`]).

use super::*;

/// `GET /pins` answers a page and the count of every match: read apart, an upload completed or
/// deleted between them made the two disagree (the soak saw 30 results under a count of 29).
pub(super) async fn a_page_and_its_count_agree_while_uploads_complete_and_go(
    store: &dyn MetadataStore,
) {
    let account = store
        .create_account("snapshot", AccountLimits::default())
        .await
        .unwrap();
    const UPLOADS: usize = 150;
    let done = std::sync::atomic::AtomicBool::new(false);
    let changes = async {
        for i in 0..UPLOADS {
            let dag = StoredDag {
                cid: format!("bafy-snapshot-{i}"),
                size: 100,
            };
            store
                .commit_completed_upload(
                    upload(&format!("snapshot-{i}"), account.id),
                    Packed::default(),
                    &dag,
                )
                .await
                .unwrap();
            if i % 3 == 2 {
                store
                    .delete_kept(account.id, &format!("snapshot-{}", i - 1))
                    .await
                    .unwrap();
            }
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
    };
    let every = KeptFilter {
        with_cid: true,
        limit: 1000,
        ..KeptFilter::default()
    };
    let reads = async {
        let mut read = 0;
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            let (page, count) = store.list_kept_counted(account.id, &every).await.unwrap();
            assert_eq!(
                page.len() as u64,
                count,
                "a page of all and its count, read {read}"
            );
            read += 1;
        }
        read
    };
    let ((), read) = futures_util::future::join(changes, reads).await;
    assert!(read > 0);
    let (page, count) = store.list_kept_counted(account.id, &every).await.unwrap();
    let left = UPLOADS - UPLOADS / 3;
    assert_eq!((page.len(), count), (left, left as u64));
}

/// Deletes, commits and pins of stored content of one account at the same moment: each changes
/// the account's stored bytes and an operation, and on PostgreSQL each change to an operation
/// takes the event log's lock and the account's counts; taken in opposite orders, they
/// deadlocked (a `500`, later a `503`, to the client).
pub(super) async fn deletes_and_commits_of_one_account_at_once_all_succeed(
    store: &dyn MetadataStore,
    packs: &Packs,
) {
    let account = store
        .create_account("concurrent", AccountLimits::default())
        .await
        .unwrap();
    let dag = |i: usize, kind: &str| StoredDag {
        cid: format!("bafy-concurrent-{kind}-{i}"),
        size: 1000 + i as u64,
    };
    const EACH: usize = 24;
    for i in 0..EACH {
        store
            .commit_completed_upload(
                upload(&format!("old-{i}"), account.id),
                Packed::default(),
                &dag(i, "old"),
            )
            .await
            .unwrap();
    }
    let deletes = (0..EACH).map(|i| async move {
        store
            .delete_kept(account.id, &format!("old-{i}"))
            .await
            .map(|_| ())
    });
    let commits = (0..EACH).map(|i| async move {
        store
            .commit_completed_upload(
                upload(&format!("new-{i}"), account.id),
                Packed::default(),
                &dag(i, "new"),
            )
            .await
            .map(|_| ())
    });
    // Pins of stored content the account does not keep yet: completed at once, each keeping
    // a new root.
    let source = store
        .create_account("concurrent-source", AccountLimits::default())
        .await
        .unwrap();
    let mut stored_dags = Vec::new();
    for i in 0..EACH {
        let content: Vec<u8> = (0..500u32).map(|b| (b as u8) ^ (i as u8)).collect();
        let (stored, packed) = pack_content(store, packs, &content).await;
        store
            .commit_completed_upload(upload(&format!("source-{i}"), source.id), packed, &stored)
            .await
            .unwrap();
        stored_dags.push(stored);
    }
    let pins = stored_dags
        .iter()
        .enumerate()
        .map(|(i, stored)| async move {
            let pin = NewPin {
                request_id: format!("pin-{i}"),
                account_id: account.id,
                cid: stored.cid.clone(),
                name: String::new(),
                origins: Vec::new(),
                keyvalues: KeyValues::default(),
                key_id: None,
            };
            store.create_pin(pin, Some(stored)).await.map(|_| ())
        });
    let (deleted, committed, pinned) = futures_util::future::join3(
        futures_util::future::join_all(deletes),
        futures_util::future::join_all(commits),
        futures_util::future::join_all(pins),
    )
    .await;
    for outcome in deleted.iter().chain(&committed).chain(&pinned) {
        assert!(outcome.is_ok(), "{outcome:?}");
    }
    let stored = store.account_by_name("concurrent").await.unwrap().unwrap();
    let expected: u64 = (0..EACH).map(|i| dag(i, "new").size).sum::<u64>()
        + stored_dags.iter().map(|d| d.size).sum::<u64>();
    assert_eq!(stored.stored_bytes, expected);
}

/// Commits at once of many uploads (which SQLite commits in one transaction) where some break
/// a limit: exactly those fail, each with its own error, and leave nothing behind; the others
/// are recorded and counted as if each had been alone.
pub(super) async fn commits_at_once_that_break_a_limit_fail_alone(
    store: &dyn MetadataStore,
    packs: &Packs,
) {
    const EACH: usize = 8;
    let free = store
        .create_account("at-once-free", AccountLimits::default())
        .await
        .unwrap();
    let capped = store
        .create_account(
            "at-once-capped",
            AccountLimits {
                upload_limit: 1 << 20,
                quota: Some(3 * 600 + 599),
            },
        )
        .await
        .unwrap();
    let keyed = store
        .create_account("at-once-keyed", AccountLimits::default())
        .await
        .unwrap();
    let token = tokens::generate();
    let key = NewKey {
        max_uses: Some(3),
        ..NewKey::all(keyed.id)
    };
    let key = store
        .create_key(&key, &token.hash, &token.prefix)
        .await
        .unwrap();
    // Each upload of its own content (so each costs its account), packed before the commits.
    let mut ready = Vec::new();
    for (account, who) in [(&free, "free"), (&capped, "capped"), (&keyed, "keyed")] {
        for i in 0..EACH {
            let content: Vec<u8> = (0..600u32)
                .map(|b| (b as u8) ^ (i as u8) ^ who.as_bytes()[0])
                .collect();
            let (dag, packed) = pack_content(store, packs, &content).await;
            assert_eq!(dag.size, 600, "one raw block each");
            let new = NewUpload {
                key_id: (who == "keyed").then_some(key.id),
                ..upload(&format!("at-once-{who}-{i}"), account.id)
            };
            ready.push((who, new, packed, dag));
        }
    }
    let outcomes = futures_util::future::join_all(ready.into_iter().map(
        |(who, new, packed, dag)| async move {
            let (id, account) = (new.upload_id.clone(), new.account_id);
            let outcome = store.commit_completed_upload(new, packed, &dag).await;
            (who, account, id, outcome)
        },
    ))
    .await;

    let mut by_account = std::collections::BTreeMap::<&str, (usize, Vec<String>)>::new();
    for (who, _, id, outcome) in &outcomes {
        let entry = by_account.entry(who).or_default();
        match outcome {
            Ok(op) => {
                assert_eq!(op.status, OperationStatus::Completed, "{id}");
                entry.0 += 1;
            }
            Err(e) => entry.1.push(format!("{e:?}")),
        }
    }
    assert_eq!(by_account["free"], (EACH, vec![]));
    let (capped_ok, capped_errors) = &by_account["capped"];
    assert_eq!(*capped_ok, 3, "three fit the quota: {capped_errors:?}");
    assert!(
        capped_errors.iter().all(|e| e.starts_with("QuotaExceeded")),
        "{capped_errors:?}"
    );
    let (keyed_ok, keyed_errors) = &by_account["keyed"];
    assert_eq!(*keyed_ok, 3, "the key's three uses: {keyed_errors:?}");
    assert!(
        keyed_errors.iter().all(|e| e == "Spent(Key)"),
        "{keyed_errors:?}"
    );
    // What failed left nothing: no operation, no bytes counted, no use of the key.
    for (_, account, id, outcome) in &outcomes {
        let found = store
            .operation(*account, &OperationRef::UploadId(id.clone()))
            .await
            .unwrap();
        assert_eq!(found.is_some(), outcome.is_ok(), "{id}");
    }
    for (name, uploads) in [
        ("at-once-free", EACH),
        ("at-once-capped", 3),
        ("at-once-keyed", 3),
    ] {
        let account = store.account_by_name(name).await.unwrap().unwrap();
        assert_eq!(account.stored_bytes, 600 * uploads as u64, "{name}");
    }
    let keys = store.list_keys(keyed.id).await.unwrap();
    assert_eq!(keys.iter().find(|k| k.id == key.id).unwrap().uses, 3);
}

pub(super) async fn uploads_dedup_and_quota(store: &dyn MetadataStore, packs: &Packs) {
    let bob = store
        .create_account(
            "bob",
            AccountLimits {
                upload_limit: 1 << 20,
                quota: Some(5000),
            },
        )
        .await
        .unwrap();
    let content: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    let (dag, packed) = pack_content(store, packs, &content).await;
    let pack = packed.pack.clone().expect("new content makes a pack");
    assert_eq!(dag.size, pack.stored_bytes(), "every block was new");
    let first_block = pack.blocks[0].clone();
    // What the upload was found to be is kept with it; its media type is the one found.
    let found = crate::model::Content {
        stored_as: crate::model::StoredAs::File,
        archive_format: None,
        media_type: "application/gzip".into(),
    };
    let sent = NewUpload {
        file_name: Some("dump.sql.gz".into()),
        content: Some(found),
        ..upload("u1", bob.id)
    };
    let op = store
        .commit_completed_upload(sent, packed, &dag)
        .await
        .unwrap();
    assert_eq!(
        (op.file_name.as_deref(), op.stored_as, op.mime_type.as_str()),
        (
            Some("dump.sql.gz"),
            Some(crate::model::StoredAs::File),
            "application/gzip"
        )
    );
    assert_eq!(op.status, OperationStatus::Completed);
    assert_eq!(op.cid.as_deref(), Some(dag.cid.as_str()));
    assert_eq!(op.progress_percent, 100.0);
    assert!(op.completed_at_ms.is_some());
    assert_eq!(op.dag_size, Some(dag.size));
    let stored_bytes = |name: &'static str| async move {
        let account = store.account_by_name(name).await.unwrap().unwrap();
        account.stored_bytes
    };
    assert_eq!(stored_bytes("bob").await, dag.size);

    // The block index finds the bytes again.
    let location = store
        .block_location(&first_block.multihash)
        .await
        .unwrap()
        .expect("indexed");
    assert_eq!(
        packs.read(&location).unwrap().len() as u64,
        first_block.length
    );
    let many = store
        .block_locations(&[first_block.multihash.clone(), b"unknown".to_vec()])
        .await
        .unwrap();
    assert_eq!(many, [(first_block.multihash.clone(), location.clone())]);

    // The same content again: nothing new is written, and a root kept already costs nothing.
    let (again, packed) = pack_content(store, packs, &content).await;
    assert_eq!(again, dag);
    assert!(packed.pack.is_none(), "every block was already stored");
    store
        .commit_completed_upload(upload("u2", bob.id), packed, &dag)
        .await
        .unwrap();
    assert_eq!(stored_bytes("bob").await, dag.size);

    // New content over the quota is refused whole.
    let other: Vec<u8> = (0..3000u32).map(|i| (i % 13) as u8 ^ 0x5a).collect();
    let (other_dag, other_pack) = pack_content(store, packs, &other).await;
    let result = store
        .commit_completed_upload(upload("u3", bob.id), other_pack.clone(), &other_dag)
        .await;
    assert!(
        matches!(result, Err(StoreError::QuotaExceeded { .. })),
        "{result:?}"
    );
    assert_eq!(
        store
            .operation(bob.id, &OperationRef::UploadId("u3".into()))
            .await
            .unwrap(),
        None
    );
    assert_eq!(stored_bytes("bob").await, dag.size);

    // Another account keeping the same content is charged for it too; its blocks are not
    // written again.
    let erin = store
        .create_account("bob-twin", AccountLimits::default())
        .await
        .unwrap();
    store
        .commit_completed_upload(upload("e1", erin.id), Packed::default(), &dag)
        .await
        .unwrap();
    assert_eq!(stored_bytes("bob-twin").await, dag.size);

    // Deleting gives the bytes back once no upload of the account keeps the root.
    assert_eq!(
        store.delete_kept(erin.id, "u1").await.unwrap(),
        None,
        "not erin's"
    );
    let deleted = store.delete_kept(bob.id, "u1").await.unwrap().unwrap();
    assert_eq!(deleted.upload_id, "u1");
    assert_eq!(
        stored_bytes("bob").await,
        dag.size,
        "u2 keeps the same root"
    );
    store.delete_kept(bob.id, "u2").await.unwrap().unwrap();
    assert_eq!(stored_bytes("bob").await, 0);
    let again = store.delete_kept(bob.id, "u2").await.unwrap().unwrap();
    assert!(again.deleted_at_ms.is_some(), "deleting twice is fine");
    assert_eq!(stored_bytes("bob").await, 0, "and gives nothing back twice");
    assert_eq!(stored_bytes("bob-twin").await, dag.size);
    // The freed quota takes the content refused before.
    store
        .commit_completed_upload(upload("u3", bob.id), other_pack, &other_dag)
        .await
        .unwrap();
    assert_eq!(stored_bytes("bob").await, other_dag.size);
}

pub(super) async fn uploads_and_pins_are_listed_filtered_and_deleted(
    store: &dyn MetadataStore,
    packs: &Packs,
) {
    let hana = store
        .create_account("hana", AccountLimits::default())
        .await
        .unwrap();
    let ivan = store
        .create_account("ivan", AccountLimits::default())
        .await
        .unwrap();
    let named = |id: &str, name: &str| {
        let mut upload = upload(id, hana.id);
        upload.name = name.to_owned();
        upload
    };
    let photo = store
        .commit_completed_upload(
            named("k1", "Holiday Photo.jpg"),
            Packed::default(),
            &root("bafyk1", 10),
        )
        .await
        .unwrap();
    let pending = store
        .record_upload(named("k2", "site.tar"), None)
        .await
        .unwrap();
    let pin = store
        .create_pin(
            NewPin {
                request_id: "k3".into(),
                account_id: hana.id,
                cid: "bafyk3".into(),
                name: "photo backup".into(),
                origins: vec!["/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWA".into()],
                keyvalues: KeyValues::from_json(r#"{"app":"gallery","v":"1"}"#).unwrap(),
                key_id: None,
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(pin.kind, OperationKind::Pin);
    assert_eq!(pin.status, OperationStatus::Pending);
    assert_eq!(pin.cid.as_deref(), Some("bafyk3"));
    assert_eq!(pin.origins, ["/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWA"]);
    store
        .commit_completed_upload(
            upload("other", ivan.id),
            Packed::default(),
            &root("bafyk1", 10),
        )
        .await
        .unwrap();

    let list = |filter: KeptFilter| async move {
        let (page, count) = store.list_kept_counted(hana.id, &filter).await.unwrap();
        let ids: Vec<String> = page.into_iter().map(|op| op.upload_id).collect();
        assert!(count as usize >= ids.len());
        (ids, count)
    };
    let all = KeptFilter {
        limit: 10,
        ..KeptFilter::default()
    };
    assert_eq!(
        list(all.clone()).await,
        (vec!["k3".into(), "k2".into(), "k1".into()], 3)
    );
    // Pages, newest first, and the count is of every match.
    let first = KeptFilter {
        limit: 2,
        ..all.clone()
    };
    let page = store.list_kept(hana.id, &first).await.unwrap();
    assert_eq!(
        list(first.clone()).await,
        (vec!["k3".into(), "k2".into()], 3)
    );
    let last = &page[1];
    let next = KeptFilter {
        cursor: Some(KeptKey {
            created_at_ms: last.created_at_ms,
            id: last.id,
        }),
        ..first.clone()
    };
    assert_eq!(list(next).await.0, ["k1"]);
    // Only what has a root (pins), by CID, by status.
    let with_cid = KeptFilter {
        with_cid: true,
        ..all.clone()
    };
    assert_eq!(list(with_cid.clone()).await.0, ["k3", "k1"]);
    let uploads_only = KeptFilter {
        uploads_only: true,
        ..all.clone()
    };
    assert_eq!(list(uploads_only).await.0, ["k2", "k1"]);
    let by_cid = KeptFilter {
        cids: vec!["bafyk1".into(), "bafynone".into()],
        ..all.clone()
    };
    assert_eq!(list(by_cid).await, (vec!["k1".into()], 1));
    let by_status = KeptFilter {
        statuses: vec![OperationStatus::Pending, OperationStatus::Failed],
        ..all.clone()
    };
    assert_eq!(list(by_status).await.0, ["k3", "k2"]);
    // Names, each way of matching; `%` and `_` are plain characters.
    for (text, how, expected) in [
        ("Holiday Photo.jpg", NameMatch::Exact, vec!["k1"]),
        ("holiday photo.jpg", NameMatch::Exact, vec![]),
        ("holiday photo.JPG", NameMatch::IExact, vec!["k1"]),
        ("Photo", NameMatch::Partial, vec!["k1"]),
        ("photo", NameMatch::Partial, vec!["k3"]),
        ("PHOTO", NameMatch::IPartial, vec!["k3", "k1"]),
        ("%", NameMatch::Partial, vec![]),
        ("_", NameMatch::IPartial, vec![]),
    ] {
        let filter = KeptFilter {
            name: Some((text.into(), how)),
            ..all.clone()
        };
        assert_eq!(list(filter).await.0, expected, "{text:?} {how:?}");
    }
    // Created before and after.
    let around = |before: Option<i64>, after: Option<i64>| KeptFilter {
        created_before_ms: before,
        created_after_ms: after,
        ..all.clone()
    };
    assert_eq!(
        list(around(Some(photo.created_at_ms), None)).await.0,
        Vec::<String>::new()
    );
    assert_eq!(list(around(None, Some(photo.created_at_ms - 1))).await.1, 3);
    // Meta, as a subset of the pin's.
    for (meta, expected) in [
        (vec![("app", "gallery")], vec!["k3"]),
        (vec![("app", "gallery"), ("v", "1")], vec!["k3"]),
        (vec![("app", "gallery"), ("v", "2")], vec![]),
        (vec![("$.app", "gallery")], vec![]),
    ] {
        let filter = KeptFilter {
            keyvalues: meta
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..all.clone()
        };
        assert_eq!(list(filter).await.0, expected, "{meta:?}");
    }

    // Deleting unfinished work stops it; a deleted thing is no longer listed.
    let stopped = store
        .delete_kept(hana.id, &pending.upload_id)
        .await
        .unwrap();
    let stopped = store
        .operation(hana.id, &OperationRef::Id(stopped.unwrap().id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stopped.status, OperationStatus::Failed);
    assert_eq!(stopped.error.unwrap().code, "deleted");
    assert_eq!(list(all.clone()).await, (vec!["k3".into(), "k1".into()], 2));

    // Replacing a pin is deleting it and queueing the new one, at once.
    let replacement = NewPin {
        request_id: "k4".into(),
        account_id: hana.id,
        cid: "bafyk4".into(),
        name: String::new(),
        origins: Vec::new(),
        keyvalues: KeyValues::default(),
        key_id: None,
    };
    let replaced = store
        .replace_pin(hana.id, "k3", replacement.clone(), None)
        .await
        .unwrap()
        .expect("k3 is hana's");
    assert_eq!(replaced.upload_id, "k4");
    assert_eq!(list(all.clone()).await.0, ["k4", "k1"]);
    let again = NewPin {
        request_id: "k5".into(),
        ..replacement
    };
    for (account, id) in [(hana.id, "k3"), (ivan.id, "k4")] {
        let replaced = store.replace_pin(account, id, again.clone(), None).await;
        assert_eq!(replaced.unwrap(), None, "{id}");
    }
    assert_eq!(list(all.clone()).await.0, ["k4", "k1"]);

    // A pin of a root kept already is kept at once, and charged like an upload of it.
    assert_eq!(store.kept_dag_size("bafyk1").await.unwrap(), Some(10));
    assert_eq!(
        store.kept_dag_size("bafyk4").await.unwrap(),
        None,
        "not fetched yet"
    );
    let (stored, packed) = pack_content(store, packs, b"ivan's stored content").await;
    store
        .commit_completed_upload(upload("i-stored", ivan.id), packed, &stored)
        .await
        .unwrap();
    let before = store
        .account_by_id(ivan.id)
        .await
        .unwrap()
        .unwrap()
        .stored_bytes;
    let pin_of = |request_id: &str, cid: &str| NewPin {
        request_id: request_id.into(),
        account_id: ivan.id,
        cid: cid.into(),
        name: String::new(),
        origins: Vec::new(),
        keyvalues: KeyValues::default(),
        key_id: None,
    };
    let at_once = store
        .create_pin(pin_of("i2", &stored.cid), Some(&stored))
        .await
        .unwrap();
    assert_eq!(at_once.status, OperationStatus::Completed);
    assert_eq!(at_once.dag_size, Some(stored.size));
    // A root whose blocks are gone by the time the pin commits (collected since it was looked
    // up) is fetched instead.
    let never = {
        let mut importer = FileImporter::new(&Profile::default(), cairn_unixfs::DiscardBlocks);
        importer.push(b"never stored").unwrap();
        importer.finish().unwrap().cid.to_string()
    };
    let fetched = store
        .create_pin(pin_of("i3", &never), Some(&root(&never, 10)))
        .await
        .unwrap();
    assert_eq!(fetched.status, OperationStatus::Pending);
    let after = store
        .account_by_id(ivan.id)
        .await
        .unwrap()
        .unwrap()
        .stored_bytes;
    assert_eq!(after, before, "ivan kept that root already");
    counts_match_rows(store, hana.id).await;
    counts_match_rows(store, ivan.id).await;

    // Pins go through the queue; the counts follow every step. Oldest first: what earlier
    // checks left queued fails out of the way.
    let minute = std::time::Duration::from_secs(60);
    let failure = crate::model::OperationError {
        code: "not_found".into(),
        message: "no provider".into(),
    };
    let next_pin = || async {
        loop {
            let op = store.claim_next("wk", minute).await.unwrap().unwrap();
            if op.kind == OperationKind::Pin {
                counts_match_rows(store, op.account_id).await;
                return op;
            }
            store
                .fail_operation(op.id, "wk", failure.clone())
                .await
                .unwrap();
        }
    };
    let claimed = next_pin().await;
    store.release_operation(claimed.id, "wk").await.unwrap();
    counts_match_rows(store, claimed.account_id).await;
    let claimed = next_pin().await;
    let dag = root(claimed.cid.as_deref().unwrap(), 10);
    store
        .complete_operation(claimed.id, "wk", Packed::default(), &dag, None)
        .await
        .unwrap();
    counts_match_rows(store, claimed.account_id).await;
    let claimed = next_pin().await;
    store
        .fail_operation(claimed.id, "wk", failure.clone())
        .await
        .unwrap();
    counts_match_rows(store, claimed.account_id).await;
    store
        .delete_kept(claimed.account_id, &claimed.upload_id)
        .await
        .unwrap();
    counts_match_rows(store, claimed.account_id).await;
}

/// `list_kept_counted`'s count for `GET /pins` (from the counts the triggers keep, and windows
/// of time counted on either side) equals the rows it counts: for every status, and for
/// windows around each thing's creation time.
pub(super) async fn counts_match_rows(store: &dyn MetadataStore, account_id: i64) {
    use OperationStatus::{Completed, Failed, Pending, Processing};
    let every = KeptFilter {
        with_cid: true,
        limit: 1000,
        ..KeptFilter::default()
    };
    let rows = store.list_kept(account_id, &every).await.unwrap();
    let mut windows = vec![(None, None)];
    for op in &rows {
        let t = op.created_at_ms;
        windows.extend([(Some(t), None), (None, Some(t)), (Some(t + 1), Some(t - 1))]);
    }
    let status_sets = [
        vec![],
        vec![Pending],
        vec![Processing],
        vec![Completed],
        vec![Failed],
        vec![Pending, Failed],
    ];
    for statuses in &status_sets {
        for &(before, after) in &windows {
            let expected = rows
                .iter()
                .filter(|op| statuses.is_empty() || statuses.contains(&op.status))
                .filter(|op| before.is_none_or(|before| op.created_at_ms < before))
                .filter(|op| after.is_none_or(|after| op.created_at_ms > after))
                .count() as u64;
            let filter = KeptFilter {
                statuses: statuses.clone(),
                created_before_ms: before,
                created_after_ms: after,
                ..every.clone()
            };
            assert_eq!(
                store
                    .list_kept_counted(account_id, &filter)
                    .await
                    .unwrap()
                    .1,
                expected,
                "statuses {statuses:?}, before {before:?}, after {after:?}"
            );
        }
    }
}

pub(super) async fn operations_are_private_and_listed_newest_first(
    store: &dyn MetadataStore,
    packs: &Packs,
) {
    let carol = store
        .create_account("carol", AccountLimits::default())
        .await
        .unwrap();
    let dave = store
        .create_account("dave", AccountLimits::default())
        .await
        .unwrap();
    let mut ids = Vec::new();
    for i in 0..5u8 {
        let (dag, pack) = pack_content(store, packs, &[i; 10]).await;
        let op = store
            .commit_completed_upload(upload(&format!("c{i}"), carol.id), pack, &dag)
            .await
            .unwrap();
        ids.push(op.id);
    }
    let failed = store
        .record_upload(
            upload("c-bad", carol.id),
            Some(crate::model::OperationError {
                code: "invalid_archive".into(),
                message: "entry ../x escapes the root".into(),
            }),
        )
        .await
        .unwrap();
    assert_eq!(failed.status, OperationStatus::Failed);
    assert_eq!(failed.error.as_ref().unwrap().code, "invalid_archive");

    let by_upload = store
        .operation(carol.id, &OperationRef::UploadId("c2".into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_upload.id, ids[2]);
    assert_eq!(
        store
            .operation(dave.id, &OperationRef::Id(ids[2]))
            .await
            .unwrap(),
        None,
        "another account's operation is invisible"
    );

    let page = |before_id, status| OperationFilter {
        key_id: None,
        limit: 2,
        before_id,
        status,
        cid: None,
    };
    let first = store
        .list_operations(carol.id, &page(None, None))
        .await
        .unwrap();
    assert_eq!(
        first.iter().map(|o| o.id).collect::<Vec<_>>(),
        [failed.id, ids[4]]
    );
    let second = store
        .list_operations(carol.id, &page(Some(ids[4]), None))
        .await
        .unwrap();
    assert_eq!(
        second.iter().map(|o| o.id).collect::<Vec<_>>(),
        [ids[3], ids[2]]
    );
    let failures = store
        .list_operations(carol.id, &page(None, Some(OperationStatus::Failed)))
        .await
        .unwrap();
    assert_eq!(failures.len(), 1);
    let by_cid = OperationFilter {
        cid: by_upload.cid.clone(),
        limit: 10,
        ..OperationFilter::default()
    };
    let matching = store.list_operations(carol.id, &by_cid).await.unwrap();
    assert_eq!(matching.iter().map(|o| o.id).collect::<Vec<_>>(), [ids[2]]);

    let counts = store.operation_counts().await.unwrap();
    let failed_count = counts
        .iter()
        .find(|(status, _)| *status == OperationStatus::Failed)
        .map(|(_, n)| *n);
    assert_eq!(failed_count, Some(1));
}
