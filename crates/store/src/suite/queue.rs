//! The operation queue ([`crate::OperationQueue`]).

use super::*;

pub(super) async fn the_queue_hands_each_operation_to_one_worker_and_recovers_expired_claims(
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

pub(super) async fn claim_all(
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
