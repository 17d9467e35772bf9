//! Databases as the code before the SQL backends were folded into one left them: the
//! migrations exactly as they were (`*.sql` beside this file: the last release's, from commit
//! 985a14e, and the two steps added after it, from 4f5433b), and a few rows written into that
//! schema. A store opened on such a database must migrate it and
//! keep working, with the rows readable.

// Each test binary uses one database's half.
#![allow(dead_code)]

use cairn_store::access::Scopes;
use cairn_store::model::{KeptFilter, LogPlace, OperationFilter, OperationStatus};
use cairn_store::MetadataStore;

/// SQLite's released migrations, tracked by `PRAGMA user_version`.
pub const SQLITE: [&str; 7] = [
    include_str!("sqlite-1.sql"),
    include_str!("sqlite-2.sql"),
    include_str!("sqlite-3.sql"),
    include_str!("sqlite-4.sql"),
    include_str!("sqlite-5.sql"),
    include_str!("sqlite-6.sql"),
    include_str!("sqlite-7.sql"),
];
pub const SQLITE_ROWS: &str = include_str!("sqlite-data.sql");

/// PostgreSQL's released migrations, tracked as rows of `cairn_schema`.
pub const POSTGRES: [&str; 5] = [
    include_str!("postgres-1.sql"),
    include_str!("postgres-2.sql"),
    include_str!("postgres-3.sql"),
    include_str!("postgres-4.sql"),
    include_str!("postgres-5.sql"),
];
pub const POSTGRES_ROWS: &str = include_str!("postgres-data.sql");

/// The rows of `*-data.sql` read back through the store, and the store still writing.
pub async fn check_rows(store: &dyn MetadataStore) {
    let account = store.account_by_name("released").await.unwrap().unwrap();
    assert_eq!(
        (account.upload_limit, account.quota, account.stored_bytes),
        (1000, Some(5000), 5)
    );
    // A token made before keys had scopes can do everything it could.
    let (owner, key) = store.key_for_token(&[0x11; 32]).await.unwrap().unwrap();
    assert_eq!((owner.id, key.scopes), (account.id, Scopes::ALL));
    assert_eq!(
        (key.expires_at_ms, key.max_uses, key.origins.len()),
        (None, None, 0)
    );
    let mut multihash = vec![0x12, 0x20];
    multihash.extend([0x22; 32]);
    let location = store.block_location(&multihash).await.unwrap().unwrap();
    assert_eq!(
        (location.pack.as_str(), location.offset, location.length),
        ("released.car", 40, 5)
    );
    let filter = OperationFilter {
        limit: 10,
        ..OperationFilter::default()
    };
    let operations = store.list_operations(account.id, &filter).await.unwrap();
    assert_eq!(operations.len(), 1);
    assert_eq!(operations[0].status, OperationStatus::Completed);
    assert_eq!(operations[0].cid.as_deref(), Some("bafyreleased"));
    // The bucket written by the release refills from where it was.
    let (granted, _) = store
        .take_rate_token(account.id, "released", 10, 0.0, 6)
        .await
        .unwrap();
    assert!(granted);
    let (granted, left) = store
        .take_rate_token(account.id, "released", 10, 0.0, 7)
        .await
        .unwrap();
    assert!(granted && left < 1.0, "2.5 tokens were left: {left}");
    let nodes = store.live_nodes(0).await.unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].addrs, ["/ip4/10.0.0.1/tcp/4001"]);
    // Gone again, so the suite that runs next finds no node it did not announce.
    store.forget_node("12D3released").await.unwrap();
    let progress = store
        .provide_progress("12D3released")
        .await
        .unwrap()
        .unwrap();
    let key = LogPlace {
        at_ms: 4,
        operation_id: operations[0].id,
    };
    assert_eq!(progress.through, key);
    let roots = store
        .completed_roots(LogPlace::default(), 10)
        .await
        .unwrap();
    assert_eq!(roots, [(key, "bafyreleased".to_owned())]);
    // The Pinning Service API's count of the released upload, from the counts the migration
    // made.
    let pins = KeptFilter {
        with_cid: true,
        limit: 10,
        ..KeptFilter::default()
    };
    let (_, pins_counted) = store.list_kept_counted(account.id, &pins).await.unwrap();
    assert_eq!(pins_counted, 1);
    store
        .create_account("after-upgrade", Default::default())
        .await
        .unwrap();
}
