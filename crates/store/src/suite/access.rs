//! Accounts, keys, upload links, key-values and rate buckets ([`crate::Accounts`], [`crate::Access`]).

use super::*;

pub(super) async fn accounts_and_tokens(store: &dyn MetadataStore) {
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

pub(super) async fn keys_links_and_keyvalues(store: &dyn MetadataStore) {
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

pub(super) async fn rate_buckets_refill_over_time_and_are_kept_apart(store: &dyn MetadataStore) {
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
