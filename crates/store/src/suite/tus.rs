//! TUS records and upload leases ([`crate::TusRecords`]).

use super::*;

pub(super) async fn tus_uploads_become_claimable_only_when_complete(store: &dyn MetadataStore) {
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

pub(super) async fn an_upload_lease_has_one_holder_who_can_be_asked_to_stop(
    store: &dyn MetadataStore,
) {
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
