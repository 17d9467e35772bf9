//! The conformance suites against the embedded store (SQLite metadata, file blobs), and the
//! pack and staging sweeps.

use cairn_store::{Accounts, Uploads};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use cairn_store::blocks::StoredBlocks;
use cairn_store::model::{Account, BlockLocation, KeyValues, NewUpload, OperationKind};
use cairn_store::packs::Packs;
use cairn_store::sqlite::SqliteStore;
use cairn_store::suite;
use cairn_unixfs::block::{block_cid, RAW};
use cairn_unixfs::{BlockBytes, BlockSink, Cid, CidVersion, Profile};
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{ConnectOptions, Connection};

mod released;

#[tokio::test]
async fn sqlite_store_passes_the_metadata_suite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("cairn.db"))
        .await
        .unwrap();
    let packs = Packs::open(dir.path().join("packs")).unwrap();
    suite::run(&store, &packs).await;
}

#[tokio::test]
async fn two_handles_on_one_database_claim_each_operation_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cairn.db");
    let a = SqliteStore::open(&path).await.unwrap();
    let b = SqliteStore::open(&path).await.unwrap();
    suite::run_two_nodes(&a, &b).await;
}

#[tokio::test]
async fn schema_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cairn.db");
    {
        let store = SqliteStore::open(&path).await.unwrap();
        store
            .create_account("kept", Default::default())
            .await
            .unwrap();
    }
    let store = SqliteStore::open(&path).await.unwrap();
    assert!(store.account_by_name("kept").await.unwrap().is_some());
}

/// The schema of the database at `path`: each table's and index's SQL with its spacing and
/// quoting normalised, and the version.
async fn sqlite_schema(path: &std::path::Path) -> Vec<String> {
    let mut conn = SqliteConnectOptions::new()
        .filename(path)
        .connect()
        .await
        .unwrap();
    let mut schema: Vec<String> = sqlx::query_scalar(
        "SELECT type || ' ' || name || ' ' || sql FROM sqlite_master
          WHERE name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    for line in &mut schema {
        *line = line
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace('"', "");
    }
    let version: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    schema.push(format!("user_version {version}"));
    conn.close().await.unwrap();
    schema
}

/// A database a newer Cairn wrote is refused before anything in it is read or changed.
#[tokio::test]
async fn a_database_of_a_newer_release_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cairn.db");
    SqliteStore::open(&path).await.unwrap().close().await;
    let mut connection = SqliteConnectOptions::new()
        .filename(&path)
        .connect()
        .await
        .unwrap();
    sqlx::query("PRAGMA user_version = 999")
        .execute(&mut connection)
        .await
        .unwrap();
    connection.close().await.unwrap();
    let before = sqlite_schema(&path).await;
    let refused = SqliteStore::open(&path).await.err().expect("refused");
    let message = refused.to_string();
    assert!(
        message.contains("newer Cairn") && message.contains("999"),
        "{message}"
    );
    assert_eq!(sqlite_schema(&path).await, before, "nothing changed");
}

/// A data directory of the previous release, at every schema version it may have been left
/// at, opens, migrates to the schema a new database gets, and works; its rows are kept.
#[tokio::test]
async fn a_database_of_the_previous_release_opens_and_works() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("fresh.db");
    SqliteStore::open(&fresh).await.unwrap().close().await;
    let expected = sqlite_schema(&fresh).await;
    for version in 0..=released::SQLITE.len() {
        let path = dir.path().join(format!("v{version}.db"));
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true);
        let mut conn = SqliteConnection::connect_with(&options).await.unwrap();
        for (index, script) in released::SQLITE[..version].iter().enumerate() {
            sqlx::raw_sql(script).execute(&mut conn).await.unwrap();
            sqlx::raw_sql(&format!("PRAGMA user_version = {}", index + 1))
                .execute(&mut conn)
                .await
                .unwrap();
        }
        let with_rows = version == released::SQLITE.len();
        if with_rows {
            sqlx::raw_sql(released::SQLITE_ROWS)
                .execute(&mut conn)
                .await
                .unwrap();
        }
        conn.close().await.unwrap();
        let store = SqliteStore::open(&path).await.unwrap();
        if with_rows {
            released::check_rows(&store).await;
            let packs = Packs::open(dir.path().join("packs")).unwrap();
            suite::run(&store, &packs).await;
        }
        store.close().await;
        assert_eq!(
            sqlite_schema(&path).await,
            expected,
            "from version {version}"
        );
    }
}

/// A block read again soon after it was verified is checked by a checksum of the bytes
/// verified rather than hashed again (`blocks.rs`): rot in between is still refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_block_is_never_served_once_it_rots_even_just_after_it_was_served() {
    let dir = tempfile::tempdir().unwrap();
    let (store, packs, account) = store_with_account(&dir, "reader").await;
    let content = b"one block that many peers ask for at once";
    let cid = store_upload(&store, &packs, account.id, "rots", content).await;
    let blocks = StoredBlocks::new(store.clone(), packs);
    for read in ["first", "again"] {
        let block = blocks.get(&cid).await.unwrap();
        assert_eq!(block.as_deref(), Some(&content[..]), "{read}");
    }

    rot(&dir, content);
    let refused = blocks.get(&cid).await;
    assert!(refused.is_err(), "served after it rotted: {refused:?}");
}

/// A fresh embedded store and packs in `dir`, with an account `name`.
async fn store_with_account(
    dir: &tempfile::TempDir,
    name: &str,
) -> (Arc<SqliteStore>, Packs, Account) {
    let store = Arc::new(
        SqliteStore::open(&dir.path().join("cairn.db"))
            .await
            .unwrap(),
    );
    let packs = Packs::open(dir.path().join("packs")).unwrap();
    let account = store
        .create_account(name, Default::default())
        .await
        .unwrap();
    (store, packs, account)
}

/// One bit of the block holding `content` flips in its pack.
fn rot(dir: &tempfile::TempDir, content: &[u8]) {
    for entry in std::fs::read_dir(dir.path().join("packs")).unwrap() {
        let path = entry.unwrap().path();
        let mut bytes = std::fs::read(&path).unwrap();
        if let Some(at) = bytes.windows(content.len()).position(|w| w == content) {
            bytes[at + 5] ^= 0x01;
            std::fs::write(&path, bytes).unwrap();
        }
    }
}

/// `content`, uploaded whole as `id`: its root's CID.
async fn store_upload(
    store: &SqliteStore,
    packs: &Packs,
    account_id: i64,
    id: &str,
    content: &[u8],
) -> Cid {
    let (dag, packed) = suite::pack_content(store, packs, content).await;
    let upload = NewUpload {
        upload_id: id.into(),
        account_id,
        kind: OperationKind::Upload,
        name: format!("{id}.bin"),
        size: content.len() as u64,
        mime_type: "application/octet-stream".into(),
        archive_mode: None,
        profile: Profile::default().name.to_owned(),
        keyvalues: KeyValues::default(),
        key_id: None,
        link_id: None,
        file_name: None,
        content: None,
    };
    store
        .commit_completed_upload(upload, packed, &dag)
        .await
        .unwrap();
    dag.cid.parse().unwrap()
}

#[tokio::test]
async fn many_blocks_are_read_at_once_in_order_as_far_as_the_bytes_allow_and_verified() {
    let dir = tempfile::tempdir().unwrap();
    let (store, packs, account) = store_with_account(&dir, "peer").await;
    // Three blocks of 1,000 bytes (one block each), and one that was never stored.
    let contents: Vec<Vec<u8>> = (1..=3u8).map(|i| vec![i; 1000]).collect();
    let mut cids = Vec::new();
    for (i, content) in contents.iter().enumerate() {
        cids.push(store_upload(&store, &packs, account.id, &format!("b{i}"), content).await);
    }
    let missing: Cid = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"
        .parse()
        .unwrap();
    let blocks = StoredBlocks::new(store.clone(), packs);
    let asked = [cids[0], missing, cids[1], cids[2]];

    // 1,500 bytes: the first block, the missing one (nothing), and the block that passes the
    // limit; not the last.
    let read = blocks.get_many(&asked, 1500).await.unwrap();
    let expected = [Some(contents[0].clone()), None, Some(contents[1].clone())];
    assert_eq!(read, expected);
    // No limit to speak of: the first alone, always.
    let read = blocks.get_many(&asked, 0).await.unwrap();
    assert_eq!(read, [Some(contents[0].clone())]);
    let read = blocks.get_many(&asked, u64::MAX).await.unwrap();
    assert!(blocks.get_many(&[], 0).await.unwrap().is_empty());
    assert_eq!(read.len(), 4);
    assert_eq!(read[3].as_deref(), Some(&contents[2][..]));

    // A block that rots is refused, read alone or with others.
    rot(&dir, &contents[1]);
    assert!(blocks.get_many(&asked, u64::MAX).await.is_err());
    assert!(blocks.get_many(&asked[..2], u64::MAX).await.is_ok());
}

#[tokio::test]
async fn sweep_removes_unreferenced_and_half_written_packs_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("cairn.db"))
        .await
        .unwrap();
    let packs = Packs::open(dir.path().join("packs")).unwrap();
    let (_, kept) = suite::pack_content(&store, &packs, b"kept content").await;
    let (_, orphan) = suite::pack_content(&store, &packs, b"never committed").await;
    std::fs::write(dir.path().join("packs/tmp-crashed.car"), b"partial").unwrap();
    let kept = kept.pack.unwrap();
    let referenced: HashSet<String> = [kept.name.clone()].into();
    // Everything but the kept pack goes: the orphan, the half-written one, and the empty
    // files made ahead for packs to be written into.
    let files = std::fs::read_dir(dir.path().join("packs")).unwrap().count() as u64;
    assert_eq!(packs.sweep(&referenced, Duration::ZERO).unwrap(), files - 1);
    let left: Vec<_> = std::fs::read_dir(dir.path().join("packs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, [kept.name]);
    assert!(orphan.pack.is_some());
}

#[tokio::test]
async fn a_dropped_pack_writer_leaves_only_empty_files_for_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let packs = Packs::open(dir.path()).unwrap();
    let mut writer = packs.writer(cairn_store::packs::nothing_known()).unwrap();
    let block = b"never sealed";
    let cid = block_cid(CidVersion::V1, RAW, block);
    writer.put_block(&cid, BlockBytes::new(block)).unwrap();
    drop(writer);
    // Only the empty files made ahead for packs remain, and the next pack is written into
    // one of them.
    let sizes = || -> Vec<u64> {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .collect()
    };
    let before = sizes();
    assert!(before.iter().all(|&len| len == 0), "{before:?}");
    let mut writer = packs.writer(cairn_store::packs::nothing_known()).unwrap();
    writer.put_block(&cid, BlockBytes::new(block)).unwrap();
    let pack = writer.seal().unwrap().pack.unwrap();
    assert_eq!(sizes().len(), before.len(), "no new file for the next pack");
    let location = BlockLocation {
        pack: pack.name,
        offset: pack.blocks[0].offset,
        length: pack.blocks[0].length,
        without_links: false,
    };
    assert_eq!(packs.read(&location).unwrap(), block);
}

/// A file's blocks are asked about a batch at a time, never one question a block, and each
/// distinct block once; those storage holds are not written again, nor is a block repeated in
/// the file: a second upload that shares half its chunks with a first writes only the others.
#[test]
fn a_pack_asks_about_a_files_blocks_a_batch_at_a_time_and_writes_only_new_ones() {
    use cairn_unixfs::FileImporter;
    use std::sync::Mutex;

    let dir = tempfile::tempdir().unwrap();
    let packs = Packs::open(dir.path()).unwrap();
    let profile = Profile {
        chunk_size: 1024,
        ..Profile::default()
    };
    // 256 chunks: 0..128 shared with the first upload, 128..256 new, and chunk 200 twice.
    let chunk = |i: usize| -> Vec<u8> {
        let seed = if i == 201 { 200 } else { i };
        (0..1024)
            .map(|j| (seed * 31 + j * 7) as u8 ^ (seed >> 3) as u8)
            .collect()
    };
    let first: Vec<u8> = (0..128).flat_map(chunk).collect();
    let second: Vec<u8> = (0..256).flat_map(chunk).collect();
    let threads = std::num::NonZeroUsize::new(2).unwrap();

    let mut writer = packs.writer(cairn_store::packs::nothing_known()).unwrap();
    let mut importer = FileImporter::with_threads(&profile, &mut writer, threads);
    importer.push(&first).unwrap();
    importer.finish().unwrap();
    let stored: HashSet<Vec<u8>> = writer
        .seal()
        .unwrap()
        .pack
        .unwrap()
        .blocks
        .into_iter()
        .map(|b| b.multihash)
        .collect();

    let questions = Arc::new(Mutex::new(Vec::<Vec<Vec<u8>>>::new()));
    let known = {
        let (questions, stored) = (questions.clone(), stored.clone());
        Box::new(move |asked: &[Vec<u8>]| {
            questions.lock().unwrap().push(asked.to_vec());
            Ok(asked
                .iter()
                .filter(|mh| stored.contains(*mh))
                .cloned()
                .collect())
        })
    };
    let mut writer = packs.writer(known).unwrap();
    let mut importer = FileImporter::with_threads(&profile, &mut writer, threads);
    importer.push(&second).unwrap();
    importer.finish().unwrap();
    let sealed = writer.seal().unwrap();

    let questions = questions.lock().unwrap();
    let asked: Vec<&Vec<u8>> = questions.iter().flatten().collect();
    let distinct: HashSet<&Vec<u8>> = asked.iter().copied().collect();
    assert_eq!(asked.len(), distinct.len(), "a block was asked about twice");
    // 255 distinct leaves and the root's parents, in few questions, not one each.
    assert!(
        distinct.len() >= 255,
        "{} blocks asked about",
        distinct.len()
    );
    assert!(
        questions.len() * 8 < distinct.len(),
        "{} questions",
        questions.len()
    );
    let written = sealed.pack.unwrap().blocks;
    assert!(
        written.iter().all(|b| !stored.contains(&b.multihash)),
        "a stored block written again"
    );
    let leaves = written.iter().filter(|b| b.length == 1024).count();
    assert_eq!(leaves, 127, "the 128 new chunks hold one repeat");
    assert_eq!(
        sealed.reused.len(),
        128,
        "the shared chunks are counted, not written"
    );
}

#[test]
fn staging_commits_durably_and_sweeps_what_no_operation_needs() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let staging = cairn_store::staging::Staging::open(dir.path()).unwrap();
    let mut kept = staging.create("keep").unwrap();
    kept.write_all(b"archive bytes").unwrap();
    assert_eq!(kept.commit().unwrap(), 13);
    let mut orphan = staging.create("orphan").unwrap();
    orphan.write_all(b"x").unwrap();
    orphan.commit().unwrap();
    let interrupted = staging.create("interrupted").unwrap();
    std::mem::forget(interrupted); // as if the process died mid-write
    assert!(staging.create("../escape").is_err());

    let needed: HashSet<String> = ["keep".to_owned()].into();
    assert_eq!(staging.sweep(&needed, Duration::ZERO).unwrap(), 2);
    let mut kept = String::new();
    std::io::Read::read_to_string(&mut staging.open_upload("keep").unwrap(), &mut kept).unwrap();
    assert_eq!(kept, "archive bytes");
    assert!(staging.open_upload("orphan").is_err());
}

#[test]
fn file_blobs_pass_the_blob_store_suite() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = cairn_store::blobs::FileBlobs::open(dir.path()).unwrap();
    cairn_store::blobs::suite::run(&blobs);
}
