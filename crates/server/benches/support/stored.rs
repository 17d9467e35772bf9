//! Storing a file as an upload would, straight through the engine and the store (no HTTP),
//! for the benches that measure what comes after.

use cairn_store::Accounts;
use cairn_store::Uploads;
use std::path::Path;
use std::sync::Arc;

use cairn_store::model::{NewUpload, OperationKind, StoredDag};
use cairn_store::packs::Packs;
use cairn_store::sqlite::SqliteStore;
use cairn_store::AccountLimits;
use cairn_unixfs::{FileImporter, Profile};

/// An embedded store in `dir` (`cairn.db`, `packs/`) with one account; its id.
pub async fn embedded_store(dir: &Path) -> (Arc<SqliteStore>, Packs, i64) {
    let store = Arc::new(SqliteStore::open(&dir.join("cairn.db")).await.unwrap());
    let packs = Packs::open(dir.join("packs")).unwrap();
    let account = store
        .create_account("bench", AccountLimits::default())
        .await
        .unwrap();
    (store, packs, account.id)
}

/// Store `bytes` as the completed upload `upload_id` of `account_id`, every block new; its CID.
pub async fn store_file(
    store: &dyn Uploads,
    packs: &Packs,
    account_id: i64,
    upload_id: &str,
    bytes: &[u8],
) -> String {
    let profile = Profile::default();
    let mut pack = packs.writer(cairn_store::packs::nothing_known()).unwrap();
    let mut importer = FileImporter::new(&profile, &mut pack);
    importer.push(bytes).unwrap();
    let cid = importer.finish().unwrap().cid.to_string();
    let dag = StoredDag {
        cid: cid.clone(),
        size: pack.dag_bytes(),
    };
    let upload = NewUpload {
        upload_id: upload_id.into(),
        account_id,
        kind: OperationKind::Upload,
        name: format!("{upload_id}.bin"),
        size: bytes.len() as u64,
        mime_type: "application/octet-stream".into(),
        archive_mode: None,
        profile: profile.name.into(),
        keyvalues: Default::default(),
        key_id: None,
        link_id: None,
        file_name: None,
        content: None,
    };
    store
        .commit_completed_upload(upload, pack.seal().unwrap(), &dag)
        .await
        .unwrap();
    cid
}
