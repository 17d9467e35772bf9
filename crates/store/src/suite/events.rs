//! The event log and webhook deliveries ([`crate::EventLog`]).

use super::*;

pub(super) async fn events_follow_operations_and_deliveries_follow_events(
    store: &dyn MetadataStore,
) {
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
    // Retried by hand: due at once, and answered with the attempts it had.
    let retried = store
        .retry_delivery(wren.id, "wh_1", ids[1])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(retried.attempts.len(), 1, "{retried:?}");
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
