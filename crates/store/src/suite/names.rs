//! IPNS names kept for accounts and the records of others ([`crate::Names`]).

use super::*;

pub(super) async fn names_move_forward_only_and_foreign_records_keep_the_best(
    store: &dyn MetadataStore,
) {
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
