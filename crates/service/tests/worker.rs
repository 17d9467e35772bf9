//! The operation workers on the embedded store: an upload is imported with the CID profile it
//! was accepted with, whatever the node's default, and one the node does not know fails the
//! upload instead of giving it another CID.

use cairn_store::Accounts;
use std::io::Write;
use std::time::{Duration, Instant};

use cairn_service::{worker, Service, ServiceConfig};
use cairn_store::model::{NewUpload, Operation, OperationKind, OperationRef, OperationStatus};
use cairn_store::AccountLimits;

/// Stage `bytes` as upload `id` of `account`, queued with `profile`; its operation once a
/// worker has finished it.
async fn process(
    service: &Service,
    account: i64,
    id: &str,
    bytes: &[u8],
    profile: &str,
) -> Operation {
    let mut staged = service.staging.create(id).unwrap();
    staged.write_all(bytes).unwrap();
    staged.commit().unwrap();
    let upload = NewUpload {
        upload_id: id.to_owned(),
        account_id: account,
        kind: OperationKind::Upload,
        name: format!("{id}.txt"),
        size: bytes.len() as u64,
        mime_type: "text/plain".to_owned(),
        archive_mode: None,
        profile: profile.to_owned(),
        keyvalues: Default::default(),
        key_id: None,
        link_id: None,
        file_name: None,
        content: None,
    };
    let queued = service.store.record_upload(upload, None).await.unwrap();
    service.queue.notify_waiters();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let op = service
            .store
            .operation(account, &OperationRef::Id(queued.id))
            .await
            .unwrap()
            .unwrap();
        if matches!(
            op.status,
            OperationStatus::Completed | OperationStatus::Failed
        ) {
            return op;
        }
        assert!(Instant::now() < deadline, "{op:?} did not finish");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_keeps_its_profile_and_an_unknown_one_fails_it_rather_than_change_its_cid() {
    let dir = tempfile::tempdir().unwrap();
    let (service, store) = Service::embedded(dir.path(), ServiceConfig::default())
        .await
        .unwrap();
    let account = store
        .create_account("alice", AccountLimits::default())
        .await
        .unwrap()
        .id;
    let (_stop, stopped) = tokio::sync::watch::channel(false);
    worker::spawn(service.clone(), 1, stopped);

    // The node's default is CIDv1; the upload asked for Kubo's old defaults (CIDv0).
    let op = process(&service, account, "v0", b"hello world", "unixfs-v0-2015").await;
    assert_eq!(op.status, OperationStatus::Completed, "{op:?}");
    assert_eq!(
        op.cid.as_deref(),
        Some("Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD"),
        "what `ipfs add` (Kubo's defaults) gives for the same bytes"
    );

    // A profile this node does not know (written by a newer Cairn): failed, no CID.
    let op = process(
        &service,
        account,
        "future",
        b"hello world",
        "unixfs-v9-2099",
    )
    .await;
    assert_eq!(op.status, OperationStatus::Failed, "{op:?}");
    assert_eq!(op.cid, None);
    let error = op.error.unwrap();
    assert_eq!(error.code, "internal");
    assert!(
        error.message.contains("unixfs-v9-2099") && error.message.contains("CID"),
        "{}",
        error.message
    );
}
