//! The conformance suite every [`MetadataStore`] backend must pass: one body, run against
//! SQLite and PostgreSQL. It panics on the first violation.
//!
//! Longer than most files (about 1,450 lines): one function per part of the contract, each
//! reading top to bottom as the behaviour it pins down; it grows with the trait.

use std::io;

use cairn_unixfs::{FileImporter, Profile};

use crate::access::{ApiKey, NewKey, NewLink};
use crate::model::KeyValues;
use crate::model::Packed;
use crate::model::{
    KeptFilter, KeptKey, NameMatch, NewPin, NewUpload, OperationFilter, OperationKind,
    OperationRef, OperationStatus, StoredDag,
};
use crate::packs::Packs;
use crate::{tokens, AccountLimits, MetadataStore, Spent, StoreError};

/// A root as a test names it, for records whose blocks the test does not need.
fn root(cid: &str, size: u64) -> StoredDag {
    StoredDag {
        cid: cid.to_owned(),
        size,
    }
}

fn upload(id: &str, account_id: i64) -> NewUpload {
    NewUpload {
        upload_id: id.to_owned(),
        account_id,
        kind: OperationKind::Upload,
        name: format!("{id}.bin"),
        size: 3000,
        mime_type: "application/octet-stream".to_owned(),
        archive_mode: None,
        profile: Profile::default().name.to_owned(),
        keyvalues: KeyValues::default(),
        key_id: None,
        link_id: None,
        file_name: None,
        content: None,
    }
}

/// A key of `account_id` with every scope, as `cairn token create` makes.
async fn add_token(store: &dyn MetadataStore, account_id: i64, token: &tokens::NewToken) -> ApiKey {
    store
        .create_key(&NewKey::all(account_id), &token.hash, &token.prefix)
        .await
        .unwrap()
}

/// The account a live token belongs to.
async fn account_of(store: &dyn MetadataStore, token: &[u8; 32]) -> Option<String> {
    let found = store.key_for_token(token).await.unwrap();
    found.map(|(account, _)| account.name)
}

/// Store `content` into a new pack, skipping blocks the store already has.
pub async fn pack_content(
    store: &dyn MetadataStore,
    packs: &Packs,
    content: &[u8],
) -> (StoredDag, Packed) {
    // The suite stores small contents: look the known blocks up first, then write synchronously.
    let profile = Profile {
        chunk_size: 1000,
        ..Profile::default()
    };
    let mut probe = cairn_unixfs::MemoryBlocks::default();
    let mut importer = FileImporter::new(&profile, &mut probe);
    importer.push(content).unwrap();
    let root = importer.finish().unwrap();
    let mut known = std::collections::HashSet::new();
    for (cid, _) in probe.iter() {
        if store.has_block(&cid.hash().to_bytes()).await.unwrap() {
            known.insert(cid.hash().to_bytes());
        }
    }
    let mut writer = packs
        .writer(Box::new(move |mh: &[u8]| -> io::Result<bool> {
            Ok(known.contains(mh))
        }))
        .unwrap();
    let mut importer = FileImporter::new(&profile, &mut writer);
    importer.push(content).unwrap();
    importer.finish().unwrap();
    let dag = StoredDag {
        cid: root.cid.to_string(),
        size: writer.dag_bytes(),
    };
    (dag, writer.seal().unwrap())
}

pub async fn run(store: &dyn MetadataStore, packs: &Packs) {
    accounts_and_tokens(store).await;
    uploads_dedup_and_quota(store, packs).await;
    deletes_and_commits_of_one_account_at_once_all_succeed(store, packs).await;
    a_page_and_its_count_agree_while_uploads_complete_and_go(store).await;
    operations_are_private_and_listed_newest_first(store, packs).await;
    the_queue_hands_each_operation_to_one_worker_and_recovers_expired_claims(store, packs).await;
    tus_uploads_become_claimable_only_when_complete(store).await;
    an_upload_lease_has_one_holder_who_can_be_asked_to_stop(store).await;
    rate_buckets_refill_over_time_and_are_kept_apart(store).await;
    nodes_are_named_while_they_announce_themselves(store).await;
    the_provide_log_lists_completed_roots_in_completion_order(store).await;
    each_nodes_ipni_chain_is_its_own_and_published_whole(store).await;
    collections_never_remove_a_block_a_commit_reused(store, packs).await;
    // Last: it leaves pins queued, which the queue's checks above would claim.
    uploads_and_pins_are_listed_filtered_and_deleted(store, packs).await;
    // After every count of operations: it leaves uploads queued and deleted.
    keys_links_and_keyvalues(store).await;
    events_follow_operations_and_deliveries_follow_events(store).await;
    names_move_forward_only_and_foreign_records_keep_the_best(store).await;
}

async fn names_move_forward_only_and_foreign_records_keep_the_best(store: &dyn MetadataStore) {
    use crate::names::{ForeignRecord, KeptName};
    let owner = store
        .create_account("name-owner", AccountLimits::default())
        .await
        .unwrap();
    let other = store
        .create_account("name-other", AccountLimits::default())
        .await
        .unwrap();
    let site = KeptName {
        name: "k51site".into(),
        account_id: owner.id,
        label: Some("site".into()),
        sealed_key: vec![1, 2, 3],
        value: "/ipfs/bafkqaaa".into(),
        sequence: 0,
        record: vec![9; 100],
        expires_at_ms: 1_000,
        created_at_ms: 1,
        updated_at_ms: 1,
    };
    assert_eq!(store.create_name(&site).await.unwrap(), site);
    // A label is the account's own: another account may use it, the same one may not.
    let again = KeptName {
        name: "k51again".into(),
        ..site.clone()
    };
    assert!(matches!(
        store.create_name(&again).await,
        Err(StoreError::Conflict(_))
    ));
    let elsewhere = KeptName {
        name: "k51else".into(),
        account_id: other.id,
        ..site.clone()
    };
    store.create_name(&elsewhere).await.unwrap();
    assert_eq!(
        store.kept_name_by_label(owner.id, "site").await.unwrap(),
        Some(site.clone())
    );
    assert_eq!(
        store.kept_name("k51site").await.unwrap(),
        Some(site.clone())
    );

    let next = KeptName {
        value: "/ipfs/bafkqaddwgevxmmraojswg33smq".into(),
        sequence: 1,
        expires_at_ms: 5_000,
        ..site.clone()
    };
    assert!(store.update_name(&next, 0).await.unwrap());
    // A second writer that read sequence 0 lost the race: nothing changes.
    let stale = KeptName {
        sequence: 1,
        value: "/ipfs/stale".into(),
        ..site.clone()
    };
    assert!(!store.update_name(&stale, 0).await.unwrap());
    let read = store.kept_name("k51site").await.unwrap().unwrap();
    assert_eq!(
        (read.sequence, read.value.as_str()),
        (1, "/ipfs/bafkqaddwgevxmmraojswg33smq")
    );
    let due: Vec<String> = store
        .names_expiring(2_000, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(due, ["k51else"]);
    assert_eq!(store.list_names(owner.id).await.unwrap().len(), 1);
    assert!(store
        .delete_name(other.id, "k51site")
        .await
        .unwrap()
        .is_none());
    assert!(store
        .delete_name(owner.id, "k51site")
        .await
        .unwrap()
        .is_some());
    assert_eq!(store.kept_name("k51site").await.unwrap(), None);
    assert!(store.list_names(owner.id).await.unwrap().is_empty());

    let record = |sequence, expires_at_ms| ForeignRecord {
        name: "k51foreign".into(),
        record: vec![sequence as u8; 10],
        sequence,
        expires_at_ms,
    };
    assert!(store.put_foreign_record(&record(2, 100)).await.unwrap());
    assert!(
        !store.put_foreign_record(&record(1, 900)).await.unwrap(),
        "older sequence"
    );
    assert!(
        !store.put_foreign_record(&record(2, 50)).await.unwrap(),
        "shorter validity"
    );
    assert!(
        store.put_foreign_record(&record(2, 200)).await.unwrap(),
        "republished"
    );
    assert_eq!(
        store.foreign_record("k51foreign").await.unwrap(),
        Some(record(2, 200))
    );
    assert_eq!(store.forget_foreign_records(300).await.unwrap(), 1);
    assert_eq!(store.foreign_record("k51foreign").await.unwrap(), None);
}

async fn events_follow_operations_and_deliveries_follow_events(store: &dyn MetadataStore) {
    use crate::events::{
        Attempt, ClaimedDelivery, DeliveryStatus, EventType, Webhook, MAX_WEBHOOKS,
    };
    use crate::model::OperationError;
    let wren = store
        .create_account("wren", AccountLimits::default())
        .await
        .unwrap();
    let hook = |id: &str, events: Vec<EventType>| Webhook {
        id: id.to_owned(),
        account_id: wren.id,
        url: "https://example.com/hook".to_owned(),
        events,
        description: String::new(),
        secret: "whsec_c2VjcmV0".to_owned(),
        created_at_ms: crate::now_ms(),
    };
    let made = store
        .create_webhook(&hook(
            "wh_1",
            vec![EventType::UploadFailed, EventType::UploadDeleted],
        ))
        .await
        .unwrap();
    assert_eq!(
        made.events,
        [EventType::UploadFailed, EventType::UploadDeleted]
    );
    let newest_before = store.last_event_id().await.unwrap();

    // A failure and a deletion are events, in commit order; a pending upload is none.
    let failure = || OperationError {
        code: "invalid_archive".into(),
        message: "truncated".into(),
    };
    let failed = store
        .record_upload(upload("ev-1", wren.id), Some(failure()))
        .await
        .unwrap();
    store
        .record_upload(upload("ev-2", wren.id), None)
        .await
        .unwrap();
    store.delete_kept(wren.id, "ev-1").await.unwrap().unwrap();
    let events = store.events_after(wren.id, 0, &[], 10).await.unwrap();
    let kinds: Vec<EventType> = events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [EventType::UploadFailed, EventType::UploadDeleted]);
    assert!(events
        .iter()
        .all(|e| e.operation_id == failed.id && e.id > newest_before));
    assert!(events[0].id < events[1].id);
    let only = store
        .events_after(wren.id, 0, &[EventType::UploadDeleted], 10)
        .await
        .unwrap();
    assert_eq!(only, events[1..]);
    assert_eq!(store.operation_events(failed.id).await.unwrap(), events);
    let all = store.all_events_after(newest_before, 10).await.unwrap();
    assert_eq!(all, events, "nobody else's events came meanwhile");

    // One delivery per event for the endpoint subscribed, taken by one dispatcher at a time.
    let lease = std::time::Duration::from_secs(30);
    // A batch at its limit leaves its last event whole for the next, and says more wait.
    let partial = store.take_new_deliveries("w1", lease, 2).await.unwrap();
    assert_eq!(partial.deliveries.len(), 1);
    assert!(partial.full && partial.through < events[1].id);
    let new = store.take_new_deliveries("w1", lease, 10).await.unwrap();
    assert!(!new.full);
    assert_eq!(new.deliveries.len(), 2);
    assert_eq!(new.deliveries[0].event, events[0]);
    assert_eq!(new.deliveries[0].url, "https://example.com/hook");
    assert_eq!(
        new.deliveries[0].id, None,
        "no row before its first attempt"
    );
    assert!(store
        .take_new_deliveries("w2", lease, 10)
        .await
        .unwrap()
        .deliveries
        .is_empty());
    let now = crate::now_ms();
    let answered = |status: u16| Attempt {
        at_ms: now,
        duration_ms: 12,
        response_status: Some(status),
        error: (status >= 300).then(|| format!("the endpoint answered {status}")),
    };
    let (ok, refused) = (answered(204), answered(500));
    let (first, second) = (&new.deliveries[0], &new.deliveries[1]);
    assert_eq!(first.status_after(&ok), DeliveryStatus::Delivered);
    assert_eq!(second.status_after(&refused), DeliveryStatus::Pending);
    let ids = store
        .record_first_attempts(
            "w1",
            lease,
            &new,
            &[(first, Some(&ok)), (second, Some(&refused))],
        )
        .await
        .unwrap()
        .expect("w1 holds the lease");
    assert_eq!(ids.len(), 2);
    assert!(
        store
            .record_first_attempts("w1", lease, &new, &[])
            .await
            .unwrap()
            .is_none(),
        "the cursor has moved on: the same batch cannot be recorded twice"
    );
    assert!(store
        .take_new_deliveries("w1", lease, 10)
        .await
        .unwrap()
        .deliveries
        .is_empty());
    // The refused one is not due for another 5 s.
    assert!(store
        .claim_deliveries("w1", lease, 10)
        .await
        .unwrap()
        .is_empty());
    let listed = store
        .webhook_deliveries(wren.id, "wh_1", None, 10)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].id, ids[1], "newest first");
    assert_eq!(listed[0].attempts, [answered(500)]);
    assert!(listed[0].next_attempt_at_ms.unwrap() >= now + 5_000);
    assert_eq!(listed[1].status, DeliveryStatus::Delivered);
    assert!(store
        .webhook_deliveries(wren.id + 1, "wh_1", None, 10)
        .await
        .unwrap()
        .is_none());
    // Retried by hand: due at once.
    store
        .retry_delivery(wren.id, "wh_1", ids[1])
        .await
        .unwrap()
        .unwrap();
    let again = store.claim_deliveries("w2", lease, 10).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempts, 1);
    assert_eq!(again[0].message_id(), second.message_id());

    // A first attempt still under way when its batch is recorded: its row stays claimed by
    // the dispatcher, which records the attempt when it ends.
    store
        .record_upload(upload("ev-4", wren.id), Some(failure()))
        .await
        .unwrap();
    let new = store.take_new_deliveries("w1", lease, 10).await.unwrap();
    assert_eq!(new.deliveries.len(), 1);
    let slow = &new.deliveries[0];
    let ids = store
        .record_first_attempts("w1", lease, &new, &[(slow, None)])
        .await
        .unwrap()
        .unwrap();
    assert!(
        store
            .claim_deliveries("w2", lease, 10)
            .await
            .unwrap()
            .is_empty(),
        "still claimed by the dispatcher sending it"
    );
    let slow = ClaimedDelivery {
        id: Some(ids[0]),
        ..slow.clone()
    };
    let statuses = store.record_attempts("w1", &[(&slow, &ok)]).await.unwrap();
    assert_eq!(statuses, [DeliveryStatus::Delivered]);
    let listed = store
        .webhook_deliveries(wren.id, "wh_1", None, 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(listed[0].status, DeliveryStatus::Delivered);
    assert_eq!(listed[0].attempts, [answered(204)]);

    // At most MAX_WEBHOOKS endpoints; a deleted one fails what it had pending.
    for n in 2..=MAX_WEBHOOKS {
        store
            .create_webhook(&hook(&format!("wh_{n}"), vec![EventType::PinPinned]))
            .await
            .unwrap();
    }
    let refused = store
        .create_webhook(&hook("wh_extra", vec![EventType::PinPinned]))
        .await;
    assert!(
        matches!(refused, Err(StoreError::Invalid(_))),
        "{refused:?}"
    );
    assert_eq!(
        store.list_webhooks(wren.id).await.unwrap().len(),
        MAX_WEBHOOKS
    );
    store
        .delete_webhook(wren.id, "wh_1")
        .await
        .unwrap()
        .unwrap();
    assert!(store
        .delete_webhook(wren.id, "wh_1")
        .await
        .unwrap()
        .is_none());
    let listed = store
        .webhook_deliveries(wren.id, "wh_1", None, 10)
        .await
        .unwrap()
        .unwrap();
    assert!(listed.iter().all(|d| d.status != DeliveryStatus::Pending));

    // Usage: the uploads kept (completed, not deleted: neither the pending nor the deleted
    // one), and the bytes uploaded in a window of time (every upload's).
    store
        .commit_completed_upload(
            upload("ev-3", wren.id),
            Packed::default(),
            &root("bafkqaaa", 0),
        )
        .await
        .unwrap();
    let usage = store.usage(wren.id, 0, i64::MAX, "2026-11").await.unwrap();
    assert_eq!((usage.uploads, usage.pins), (1, 0));
    assert_eq!(usage.uploaded_bytes, 12000);
    store
        .add_served_bytes("2026-11", &[(wren.id, 10), (wren.id, 5)])
        .await
        .unwrap();
    let usage = store.usage(wren.id, 0, 1, "2026-11").await.unwrap();
    assert_eq!((usage.uploaded_bytes, usage.served_bytes), (0, 15));

    // An event nobody hears of is kept until the dispatch cursor has passed it (which takes
    // no lease and sends nothing); then the log may forget it.
    let quiet = store
        .create_account("quiet", AccountLimits::default())
        .await
        .unwrap();
    let unheard = store
        .record_upload(upload("ev-5", quiet.id), Some(failure()))
        .await
        .unwrap();
    let new = store.take_new_deliveries("w1", lease, 10).await.unwrap();
    assert!(new.deliveries.is_empty() && new.through > new.after);
    store.forget_events(i64::MAX).await.unwrap();
    assert_eq!(store.operation_events(unheard.id).await.unwrap().len(), 1);
    let passed = |worker: &'static str| store.record_first_attempts(worker, lease, &new, &[]);
    assert_eq!(passed("w2").await.unwrap(), None, "w1 holds the lease");
    assert_eq!(passed("w1").await.unwrap(), Some(Vec::new()));
    store.forget_events(i64::MAX).await.unwrap();
    assert!(store.operation_events(unheard.id).await.unwrap().is_empty());
}

async fn tus_uploads_become_claimable_only_when_complete(store: &dyn MetadataStore) {
    use crate::model::{NewTusUpload, TusConcat, TusState};
    use std::time::Duration;
    let frank = store
        .create_account("frank", AccountLimits::default())
        .await
        .unwrap();
    let new = |id: &str, length, concat| NewTusUpload {
        id: id.to_owned(),
        account_id: frank.id,
        length,
        metadata: "filename aGVsbG8=".into(),
        concat,
        link_id: None,
        expires_at_ms: 1_000,
        upload: Some(NewUpload {
            kind: OperationKind::TusUpload,
            ..upload(id, frank.id)
        }),
    };
    let tus = store
        .create_tus_upload(new("t1", None, TusConcat::None))
        .await
        .unwrap();
    assert_eq!((tus.length, tus.state), (None, TusState::Receiving));
    let op_id = tus.operation_id.expect("an operation from the start");
    let op = store
        .operation(frank.id, &OperationRef::UploadId("t1".into()))
        .await
        .unwrap();
    assert_eq!(op.unwrap().status, OperationStatus::Pending);
    let minute = Duration::from_secs(60);
    assert!(
        store.claim_next("w", minute).await.unwrap().is_none(),
        "not claimable yet"
    );

    store.set_tus_length("t1", 5).await.unwrap();
    assert!(matches!(
        store.set_tus_length("t1", 6).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        store.complete_tus_upload("t1", 5).await.unwrap(),
        Some(op_id)
    );
    let claimed = store.claim_next("w", minute).await.unwrap().unwrap();
    assert_eq!((claimed.id, claimed.size), (op_id, 5));

    // Partial uploads have no operation; ended uploads fail theirs with `gone`.
    let part = store
        .create_tus_upload(NewTusUpload {
            upload: None,
            ..new("p1", Some(3), TusConcat::Partial)
        })
        .await
        .unwrap();
    assert_eq!((part.operation_id, part.concat), (None, TusConcat::Partial));
    let doomed = store
        .create_tus_upload(new("t2", Some(9), TusConcat::None))
        .await
        .unwrap();
    store
        .end_tus_upload("t2", TusState::Terminated)
        .await
        .unwrap();
    let op = store
        .operation(frank.id, &OperationRef::Id(doomed.operation_id.unwrap()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(op.status, OperationStatus::Failed);
    assert_eq!(op.error.unwrap().code, "gone");
    assert_eq!(
        store.tus_upload("t2").await.unwrap().unwrap().state,
        TusState::Terminated
    );
    let expired = store.expired_tus_uploads(2_000).await.unwrap();
    assert_eq!(
        expired.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        ["p1"]
    );
    assert!(store.tus_upload("never-created").await.unwrap().is_none());
}

async fn the_queue_hands_each_operation_to_one_worker_and_recovers_expired_claims(
    store: &dyn MetadataStore,
    packs: &Packs,
) {
    use std::time::Duration;
    let erin = store
        .create_account("erin", AccountLimits::default())
        .await
        .unwrap();
    let first = store
        .record_upload(upload("q1", erin.id), None)
        .await
        .unwrap();
    let second = store
        .record_upload(upload("q2", erin.id), None)
        .await
        .unwrap();
    assert_eq!(first.status, OperationStatus::Pending);
    let minute = Duration::from_secs(60);
    let unfinished = store.unfinished_upload_ids().await.unwrap();
    assert!(unfinished.contains(&"q1".to_owned()) && unfinished.contains(&"q2".to_owned()));
    assert!(
        !unfinished.contains(&"u1".to_owned()),
        "completed uploads need no staging"
    );

    // Oldest first, each to exactly one worker.
    let claimed = store.claim_next("w1", minute).await.unwrap().unwrap();
    assert_eq!(
        (claimed.id, claimed.status),
        (first.id, OperationStatus::Processing)
    );
    let other = store.claim_next("w2", minute).await.unwrap().unwrap();
    assert_eq!(other.id, second.id);
    assert!(store.claim_next("w3", minute).await.unwrap().is_none());

    // Progress never goes back.
    assert!(store
        .report_progress(first.id, "w1", 50.0, "half", minute)
        .await
        .unwrap());
    assert!(store
        .report_progress(first.id, "w1", 30.0, "late report", minute)
        .await
        .unwrap());
    let op = store
        .operation(erin.id, &OperationRef::Id(first.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(op.progress_percent, 50.0);
    assert!(!store
        .report_progress(first.id, "w2", 60.0, "not mine", minute)
        .await
        .unwrap());

    // A claim whose lease ran out (its worker died) goes to the next worker; the old one is out.
    assert!(store
        .report_progress(second.id, "w2", 10.0, "", Duration::ZERO)
        .await
        .unwrap());
    tokio::time::sleep(Duration::from_millis(5)).await;
    let retaken = store.claim_next("w4", minute).await.unwrap().unwrap();
    assert_eq!(retaken.id, second.id);
    assert!(!store
        .report_progress(second.id, "w2", 20.0, "", minute)
        .await
        .unwrap());

    // Completion indexes the pack, sets the CID, and only the current holder may do it.
    // What the worker found the bytes to be is kept with it, and the media type it found.
    let (dag, pack) = pack_content(store, packs, b"queued content").await;
    let found = crate::model::Content {
        stored_as: crate::model::StoredAs::Archive,
        archive_format: Some("tar.gz".into()),
        media_type: "application/gzip".into(),
    };
    assert!(store
        .complete_operation(second.id, "w2", Packed::default(), &dag, Some(&found))
        .await
        .is_err());
    let done = store
        .complete_operation(second.id, "w4", pack, &dag, Some(&found))
        .await
        .unwrap();
    assert_eq!(done.status, OperationStatus::Completed);
    assert_eq!(done.progress_percent, 100.0);
    assert_eq!(done.cid.as_deref(), Some(dag.cid.as_str()));
    assert_eq!(done.dag_size, Some(dag.size));
    assert_eq!(done.stored_as, Some(crate::model::StoredAs::Archive));
    assert_eq!(done.archive_format.as_deref(), Some("tar.gz"));
    assert_eq!(done.mime_type, "application/gzip");

    let failed = store
        .fail_operation(
            first.id,
            "w1",
            crate::model::OperationError {
                code: "invalid_archive".into(),
                message: "entry \"../x\": the name climbs out of the archive root (..)".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(failed.status, OperationStatus::Failed);
    assert!(failed.completed_at_ms.is_some());
    // Terminal states never change.
    assert!(store
        .complete_operation(first.id, "w1", Packed::default(), &dag, None)
        .await
        .is_err());
    assert!(store.claim_next("w5", minute).await.unwrap().is_none());
    counts_match_rows(store, erin.id).await;
}

async fn accounts_and_tokens(store: &dyn MetadataStore) {
    let alice = store
        .create_account("alice", AccountLimits::default())
        .await
        .unwrap();
    assert_eq!(alice.upload_limit, 104_857_600);
    assert!(matches!(
        store
            .create_account("alice", AccountLimits::default())
            .await,
        Err(StoreError::Conflict(_))
    ));
    let token = tokens::generate();
    let info = add_token(store, alice.id, &token).await;
    assert_eq!(
        account_of(store, &token.hash).await,
        Some("alice".to_owned())
    );
    assert_eq!(account_of(store, &tokens::hash("cairn_other")).await, None);
    let revoked = store.revoke_token(&token.prefix).await.unwrap();
    assert_eq!(revoked.id, info.id);
    assert!(revoked.revoked);
    assert_eq!(account_of(store, &token.hash).await, None);
    assert!(matches!(
        store.revoke_token("cairn_nope").await,
        Err(StoreError::NotFound(_))
    ));
    // Wildcard characters match literally, never every token.
    let other = tokens::generate();
    add_token(store, alice.id, &other).await;
    assert!(matches!(
        store.revoke_token("%").await,
        Err(StoreError::NotFound(_))
    ));
    assert!(account_of(store, &other.hash).await.is_some());
    // The full secret also identifies its token.
    assert_eq!(
        store.revoke_token(&other.secret).await.unwrap().prefix,
        other.prefix
    );
    let updated = store
        .set_account_limits("alice", Some(5000), Some(Some(10_000)))
        .await
        .unwrap();
    assert_eq!((updated.upload_limit, updated.quota), (5000, Some(10_000)));
}

async fn keys_links_and_keyvalues(store: &dyn MetadataStore) {
    let ivy = store
        .create_account("ivy", AccountLimits::default())
        .await
        .unwrap();
    let other = store
        .create_account("ivy-neighbour", AccountLimits::default())
        .await
        .unwrap();
    let admin = add_token(store, ivy.id, &tokens::generate()).await;

    // A key keeps what it was made with, and is found by its secret with its account.
    let secret = tokens::generate();
    let new = NewKey {
        account_id: ivy.id,
        name: "browser".into(),
        scopes: "upload,read".parse().unwrap(),
        expires_at_ms: Some(4_000_000_000_000),
        max_uses: Some(2),
        origins: vec!["https://app.example".into(), "http://127.0.0.1:9".into()],
        max_upload_bytes: Some(1 << 20),
    };
    let key = store
        .create_key(&new, &secret.hash, &secret.prefix)
        .await
        .unwrap();
    let (account, found) = store.key_for_token(&secret.hash).await.unwrap().unwrap();
    assert_eq!((account.id, &found), (ivy.id, &key));
    assert_eq!(
        (
            found.name.as_str(),
            found.scopes,
            found.expires_at_ms,
            found.max_uses
        ),
        ("browser", new.scopes, new.expires_at_ms, Some(2))
    );
    assert_eq!(
        (&found.origins, found.max_upload_bytes),
        (&new.origins, Some(1 << 20))
    );
    let ids = |keys: Vec<ApiKey>| keys.into_iter().map(|k| k.id).collect::<Vec<_>>();
    assert_eq!(
        ids(store.list_keys(ivy.id).await.unwrap()),
        [admin.id, key.id]
    );

    // Being seen is written at most once a minute.
    let last_seen = || async {
        let (_, seen) = store.key_for_token(&secret.hash).await.unwrap().unwrap();
        seen.last_used_at_ms
    };
    store.key_seen(key.id, 5_000).await.unwrap();
    store.key_seen(key.id, 5_000 + 30_000).await.unwrap();
    assert_eq!(last_seen().await, Some(5_000));
    store.key_seen(key.id, 5_000 + 61_000).await.unwrap();
    assert_eq!(last_seen().await, Some(66_000));

    // An upload sent with a key is one of its uses, counted with the upload; past the most
    // allowed, nothing is recorded.
    let with_key = |id: &str| NewUpload {
        key_id: Some(key.id),
        ..upload(id, ivy.id)
    };
    store.record_upload(with_key("use-1"), None).await.unwrap();
    store.record_upload(with_key("use-2"), None).await.unwrap();
    assert!(matches!(
        store.record_upload(with_key("use-3"), None).await,
        Err(StoreError::Spent(Spent::Key))
    ));
    let (_, used) = store.key_for_token(&secret.hash).await.unwrap().unwrap();
    assert_eq!(used.uses, 2);
    assert!(used.last_used_at_ms > Some(66_000));
    let spent = OperationRef::UploadId("use-3".into());
    assert!(store.operation(ivy.id, &spent).await.unwrap().is_none());

    // A link lives while neither it nor the key that made it is revoked.
    let link_secret = tokens::generate();
    let link = NewLink {
        id: "link-1".into(),
        hash: link_secret.hash,
        account_id: ivy.id,
        created_by: key.id,
        expires_at_ms: 4_000_000_000_000,
        max_bytes: Some(9 << 20),
        mime_types: vec!["image/*".into()],
        name: Some("avatar".into()),
        keyvalues: KeyValues::from_json(r#"{"user":"7"}"#).unwrap(),
        archive_mode: None,
        uploads: 1,
    };
    let made = store.create_link(&link).await.unwrap();
    assert_eq!(
        store.link_for_secret(&link_secret.hash).await.unwrap(),
        Some(made.clone())
    );
    assert_eq!(store.link("link-1").await.unwrap(), Some(made.clone()));
    assert_eq!(
        (made.uploads, made.uses, made.max_bytes),
        (1, 0, Some(9 << 20))
    );
    let through_link = |id: &str| NewUpload {
        link_id: Some("link-1".into()),
        ..upload(id, ivy.id)
    };
    store
        .record_upload(through_link("linked-1"), None)
        .await
        .unwrap();
    assert!(matches!(
        store.record_upload(through_link("linked-2"), None).await,
        Err(StoreError::Spent(Spent::Link))
    ));
    let listed = store.list_links(ivy.id).await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|l| (l.id.as_str(), l.uses))
            .collect::<Vec<_>>(),
        [("link-1", 1)]
    );
    assert_eq!(store.revoke_key(other.id, key.id).await.unwrap(), None);
    let revoked = store.revoke_key(ivy.id, key.id).await.unwrap().unwrap();
    assert!(revoked.revoked);
    assert_eq!(store.revoke_key(ivy.id, key.id).await.unwrap(), None);
    assert!(store.key_for_token(&secret.hash).await.unwrap().is_none());
    assert_eq!(
        store.link_for_secret(&link_secret.hash).await.unwrap(),
        None
    );
    assert_eq!(store.link("link-1").await.unwrap(), None);
    let second = NewLink {
        id: "link-2".into(),
        hash: tokens::generate().hash,
        created_by: admin.id,
        ..link
    };
    store.create_link(&second).await.unwrap();
    assert_eq!(store.revoke_link(other.id, "link-2").await.unwrap(), None);
    assert!(
        store
            .revoke_link(ivy.id, "link-2")
            .await
            .unwrap()
            .unwrap()
            .revoked
    );
    assert_eq!(store.link("link-2").await.unwrap(), None);
    assert!(store.list_links(ivy.id).await.unwrap().is_empty());

    // Key-values find uploads, change with them, and leave with a deletion.
    let tagged = |id: &str, json: &str| NewUpload {
        keyvalues: KeyValues::from_json(json).unwrap(),
        key_id: Some(admin.id),
        ..upload(id, ivy.id)
    };
    store
        .record_upload(tagged("kv1", r#"{"user":"7","kind":"avatar"}"#), None)
        .await
        .unwrap();
    store
        .record_upload(tagged("kv2", r#"{"user":"7"}"#), None)
        .await
        .unwrap();
    store
        .record_upload(tagged("kv3", r#"{"user":"8"}"#), None)
        .await
        .unwrap();
    let by = |pairs: &[(&str, &str)]| KeptFilter {
        keyvalues: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        limit: 10,
        ..KeptFilter::default()
    };
    let found = |filter: KeptFilter| async move {
        let (page, count) = store.list_kept_counted(ivy.id, &filter).await.unwrap();
        (
            page.into_iter().map(|op| op.upload_id).collect::<Vec<_>>(),
            count,
        )
    };
    assert_eq!(
        found(by(&[("user", "7")])).await,
        (vec!["kv2".into(), "kv1".into()], 2)
    );
    assert_eq!(
        found(by(&[("user", "7"), ("kind", "avatar")])).await,
        (vec!["kv1".into()], 1)
    );
    assert_eq!(found(by(&[("user", "9")])).await, (vec![], 0));
    let next_page = KeptFilter {
        limit: 1,
        ..by(&[("user", "7")])
    };
    let first = store.list_kept(ivy.id, &next_page).await.unwrap();
    let after = KeptFilter {
        cursor: Some(KeptKey {
            created_at_ms: first[0].created_at_ms,
            id: first[0].id,
        }),
        ..next_page
    };
    assert_eq!(found(after).await.0, ["kv1"]);
    // Another account's filter never sees them.
    let theirs = store
        .list_kept(other.id, &by(&[("user", "7")]))
        .await
        .unwrap();
    assert!(theirs.is_empty());

    let changes = [
        ("kind".to_owned(), None),
        ("user".to_owned(), Some("8".to_owned())),
    ];
    let changed = store
        .change_upload(
            ivy.id,
            "kv1",
            Some("renamed".into()),
            changes.into_iter().collect(),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(changed.name, "renamed");
    assert_eq!(changed.keyvalues.to_json(), r#"{"user":"8"}"#);
    assert_eq!(found(by(&[("user", "8")])).await.0, ["kv3", "kv1"]);
    assert_eq!(
        found(by(&[("kind", "avatar")])).await.0,
        Vec::<String>::new()
    );
    let too_many = (0..20)
        .map(|i| (format!("k{i}"), Some("v".to_owned())))
        .collect();
    assert!(matches!(
        store.change_upload(ivy.id, "kv1", None, too_many).await,
        Err(StoreError::Invalid(message)) if message.contains("16")
    ));
    assert!(store
        .change_upload(other.id, "kv1", None, Default::default())
        .await
        .unwrap()
        .is_none());
    store.delete_kept(ivy.id, "kv3").await.unwrap();
    assert_eq!(found(by(&[("user", "8")])).await, (vec!["kv1".into()], 1));

    // An upload-only key reads the operations it began, and no others.
    let mine = OperationFilter {
        status: None,
        cid: None,
        before_id: None,
        key_id: Some(admin.id),
        limit: 10,
    };
    let began = store.list_operations(ivy.id, &mine).await.unwrap();
    assert_eq!(
        began
            .iter()
            .map(|op| op.upload_id.as_str())
            .collect::<Vec<_>>(),
        ["kv3", "kv2", "kv1"]
    );
    let by_key = OperationFilter {
        key_id: Some(key.id),
        ..mine
    };
    let began = store.list_operations(ivy.id, &by_key).await.unwrap();
    assert_eq!(
        began
            .iter()
            .map(|op| op.upload_id.as_str())
            .collect::<Vec<_>>(),
        ["use-2", "use-1"]
    );
}

/// `GET /pins` answers a page and the count of every match: read apart, an upload completed or
/// deleted between them made the two disagree (the soak saw 30 results under a count of 29).
async fn a_page_and_its_count_agree_while_uploads_complete_and_go(store: &dyn MetadataStore) {
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
async fn deletes_and_commits_of_one_account_at_once_all_succeed(
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

async fn uploads_dedup_and_quota(store: &dyn MetadataStore, packs: &Packs) {
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

async fn uploads_and_pins_are_listed_filtered_and_deleted(
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
async fn counts_match_rows(store: &dyn MetadataStore, account_id: i64) {
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

async fn operations_are_private_and_listed_newest_first(store: &dyn MetadataStore, packs: &Packs) {
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

/// Two nodes on one database: operations queued on either are claimed by exactly one worker,
/// however the claims interleave.
pub async fn run_two_nodes(a: &dyn MetadataStore, b: &dyn MetadataStore) {
    let account = a
        .create_account("two-nodes", AccountLimits::default())
        .await
        .unwrap();
    let mut queued = std::collections::BTreeSet::new();
    for i in 0..40 {
        let node = if i % 2 == 0 { a } else { b };
        let op = node
            .record_upload(upload(&format!("two-nodes-{i}"), account.id), None)
            .await
            .unwrap();
        queued.insert(op.id);
    }
    let lease = std::time::Duration::from_secs(60);
    let (from_a, from_b) =
        tokio::join!(claim_all("node-a", a, lease), claim_all("node-b", b, lease));
    let mut claimed: Vec<i64> = from_a.iter().chain(&from_b).copied().collect();
    claimed.sort_unstable();
    let unique: std::collections::BTreeSet<i64> = claimed.iter().copied().collect();
    assert_eq!(
        claimed.len(),
        unique.len(),
        "an operation was claimed twice"
    );
    assert_eq!(unique, queued, "every queued operation is claimed");
}

async fn claim_all(
    worker: &str,
    store: &dyn MetadataStore,
    lease: std::time::Duration,
) -> Vec<i64> {
    let mut mine = Vec::new();
    while let Some(op) = store.claim_next(worker, lease).await.unwrap() {
        mine.push(op.id);
        // Let the other node in between claims.
        tokio::task::yield_now().await;
    }
    mine
}

async fn an_upload_lease_has_one_holder_who_can_be_asked_to_stop(store: &dyn MetadataStore) {
    use crate::model::LeaseAttempt::{Held, Taken};
    let take =
        |holder: &'static str, now: i64| store.take_upload_lease("u", holder, now, now + 1000);
    assert_eq!(take("a", 0).await.unwrap(), Taken);
    assert_eq!(take("b", 10).await.unwrap(), Held { until_ms: 1000 });
    assert_eq!(
        take("a", 20).await.unwrap(),
        Taken,
        "a holder may take it again"
    );
    assert_eq!(
        store.renew_upload_lease("u", "a", 2000).await.unwrap(),
        Some(false)
    );
    store.ask_upload_holder_to_stop("u").await.unwrap();
    assert_eq!(
        store.renew_upload_lease("u", "a", 2000).await.unwrap(),
        Some(true)
    );

    // A holder that stops renewing loses the lease once it runs out.
    assert_eq!(take("b", 1999).await.unwrap(), Held { until_ms: 2000 });
    assert_eq!(take("b", 2001).await.unwrap(), Taken);
    assert_eq!(
        store.renew_upload_lease("u", "a", 5000).await.unwrap(),
        None
    );
    store.release_upload_lease("u", "a").await.unwrap();
    assert_eq!(take("c", 2002).await.unwrap(), Held { until_ms: 3001 });
    assert_eq!(
        store.renew_upload_lease("u", "b", 3000).await.unwrap(),
        Some(false),
        "a new holder is not asked to stop"
    );

    store.release_upload_lease("u", "b").await.unwrap();
    assert_eq!(take("c", 2003).await.unwrap(), Taken);
    assert_eq!(
        store.take_upload_lease("other", "d", 0, 1).await.unwrap(),
        Taken
    );
}

async fn rate_buckets_refill_over_time_and_are_kept_apart(store: &dyn MetadataStore) {
    // Two requests a second (0.002 a millisecond), with a burst of two.
    let take = |account: i64, endpoint: &'static str, now: i64| {
        store.take_rate_token(account, endpoint, 2, 0.002, now)
    };
    assert_eq!(take(1, "upload", 0).await.unwrap(), (true, 1.0));
    assert_eq!(take(1, "upload", 0).await.unwrap(), (true, 0.0));
    let (granted, left) = take(1, "upload", 250).await.unwrap();
    assert!(!granted && (left - 0.5).abs() < 1e-9, "{left}");
    // Other accounts and endpoints have their own buckets.
    assert!(take(2, "upload", 250).await.unwrap().0);
    assert!(take(1, "operations", 250).await.unwrap().0);
    // Refilled by half a second more; a clock behind the last look refills nothing.
    assert_eq!(take(1, "upload", 500).await.unwrap(), (true, 0.0));
    assert!(!take(1, "upload", 400).await.unwrap().0);
    // Never above the burst.
    assert_eq!(take(1, "upload", 100_000).await.unwrap(), (true, 1.0));
}

async fn nodes_are_named_while_they_announce_themselves(store: &dyn MetadataStore) {
    use crate::model::NodeRecord;
    let node = |peer_id: &str, seen_at_ms: i64| NodeRecord {
        peer_id: peer_id.to_owned(),
        addrs: vec![
            "/ip4/10.0.0.1/tcp/4001".to_owned(),
            "/ip4/10.0.0.1/udp/4001/quic-v1".to_owned(),
        ],
        gateway: Some("/dns/up.example/tcp/443/tls/http".to_owned()),
        seen_at_ms,
    };
    store
        .announce_node(&node("12D3KooWA", 1_000))
        .await
        .unwrap();
    store
        .announce_node(&node("12D3KooWB", 1_500))
        .await
        .unwrap();
    assert_eq!(
        store.live_nodes(0).await.unwrap(),
        vec![node("12D3KooWA", 1_000), node("12D3KooWB", 1_500)]
    );
    // A node that stops announcing drops out; one that announces again is refreshed in place.
    let mut moved = node("12D3KooWA", 2_000);
    moved.addrs = vec!["/ip4/10.0.0.2/tcp/4001".to_owned()];
    moved.gateway = None;
    store.announce_node(&moved).await.unwrap();
    assert_eq!(store.live_nodes(1_800).await.unwrap(), vec![moved]);
    store.forget_node("12D3KooWA").await.unwrap();
    store.forget_node("12D3KooWB").await.unwrap();
    assert!(store.live_nodes(0).await.unwrap().is_empty());
}

async fn the_provide_log_lists_completed_roots_in_completion_order(store: &dyn MetadataStore) {
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

async fn each_nodes_ipni_chain_is_its_own_and_published_whole(store: &dyn MetadataStore) {
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

/// Every live root in the store: what a collector's walk would have walked.
async fn live_roots(store: &dyn MetadataStore) -> std::collections::HashSet<String> {
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
async fn collect_removing(
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
async fn collections_never_remove_a_block_a_commit_reused(
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
    let mut writer = packs.writer(Box::new(|_: &[u8]| Ok(false))).unwrap();
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
        let mut writer = packs.writer(Box::new(|_: &[u8]| Ok(false))).unwrap();
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
