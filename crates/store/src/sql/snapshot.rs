//! A consistent copy of the embedded database while it is in use (`cairn backup`), and what
//! that copy says the rest of a backup must hold.
//!
//! The copy is SQLite's `VACUUM INTO`, run on a reading connection: it reads one snapshot of
//! the database (a read transaction on the write-ahead log, so writers go on meanwhile) and
//! writes it, compacted, to a new file in rollback-journal mode: one self-contained file. What
//! the rest of a backup copies is then read from that copy, never from the live database, so
//! the two agree whatever was committed since.

use std::path::Path;

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection, Sqlite};

use super::backend::Backend;
use super::sqlite::SqliteStore;
use crate::StoreError;

/// What a copy of the database references outside itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SnapshotContents {
    /// The schema step the copy is at (`PRAGMA user_version`).
    pub schema_version: u64,
    /// Every pack its block index references, with its size.
    pub packs: Vec<(String, u64)>,
    /// Upload ids of operations not yet finished: their staged bytes (`staging/`) or TUS bytes
    /// (`tus/`) are still needed.
    pub unfinished_uploads: Vec<String>,
    /// TUS uploads still receiving, or complete and not yet processed (`tus/`).
    pub open_tus_uploads: Vec<String>,
    /// How many IPNS names are kept (not deleted): each needs the names key.
    pub live_names: u64,
}

impl SqliteStore {
    /// Write a consistent copy of the database to `dest` (which must not exist), then read
    /// what it references. Safe while other connections and processes read and write.
    pub async fn snapshot_into(&self, dest: &Path) -> Result<SnapshotContents, StoreError> {
        if dest.exists() {
            return Err(StoreError::Conflict(dest.display().to_string()));
        }
        let dest_text = dest
            .to_str()
            .ok_or_else(|| StoreError::Invalid(format!("{} is not UTF-8", dest.display())))?;
        // A reading connection: VACUUM INTO only reads the source, in one read transaction.
        Sqlite::query("VACUUM INTO $1")
            .bind(dest_text)
            .execute(&mut self.conn().await?)
            .await?;
        // VACUUM INTO writes without syncing.
        std::fs::File::open(dest)?.sync_all()?;
        read_snapshot(dest).await
    }
}

/// What the database copy at `path` references (read-only: the file is not changed).
pub async fn read_snapshot(path: &Path) -> Result<SnapshotContents, StoreError> {
    let mut conn = SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .connect()
        .await?;
    let texts = |sql: &'static str| sqlx::query_scalar::<_, String>(sql);
    let schema_version: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&mut conn)
        .await?;
    let packs: Vec<(String, i64)> = sqlx::query_as("SELECT name, size FROM packs ORDER BY name")
        .fetch_all(&mut conn)
        .await?;
    let unfinished_uploads = texts(
        "SELECT upload_id FROM operations WHERE status IN ('pending', 'processing')
          ORDER BY upload_id",
    )
    .fetch_all(&mut conn)
    .await?;
    let open_tus_uploads =
        texts("SELECT id FROM tus_uploads WHERE state IN ('receiving', 'complete') ORDER BY id")
            .fetch_all(&mut conn)
            .await?;
    let live_names: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM names WHERE deleted_at IS NULL")
        .fetch_one(&mut conn)
        .await?;
    conn.close().await?;
    Ok(SnapshotContents {
        schema_version: schema_version as u64,
        packs: packs
            .into_iter()
            .map(|(name, size)| (name, size as u64))
            .collect(),
        unfinished_uploads,
        open_tus_uploads,
        live_names: live_names as u64,
    })
}

/// The size and sha2-256 of the file at `path`, read in full (blocking).
pub fn file_sha256(path: &Path) -> std::io::Result<(u64, [u8; 32])> {
    let mut sink = std::io::sink();
    hash_copy(&mut std::fs::File::open(path)?, &mut sink)
}

/// A file [`copy_hashed`] wrote.
#[derive(Clone, Copy, Debug)]
pub struct CopiedFile {
    pub size: u64,
    pub sha256: [u8; 32],
    /// The source's permission bits, which the copy has too.
    pub mode: u32,
}

/// Copy `from` (its first `limit` bytes) to the new file `to`, with the same permission bits
/// (not masked by the umask: a key stays `0600`), hashing what is written, and sync it
/// (blocking).
pub fn copy_hashed(from: &Path, to: &Path, limit: Option<u64>) -> std::io::Result<CopiedFile> {
    use std::io::Read;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let source = std::fs::File::open(from)?;
    let mode = source.metadata()?.permissions().mode() & 0o777;
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(to)?;
    out.set_permissions(std::fs::Permissions::from_mode(mode))?;
    let (size, sha256) = match limit {
        Some(limit) => hash_copy(&mut source.take(limit), &mut out)?,
        None => hash_copy(&mut { source }, &mut out)?,
    };
    out.sync_all()?;
    Ok(CopiedFile { size, sha256, mode })
}

fn hash_copy(
    from: &mut impl std::io::Read,
    to: &mut impl std::io::Write,
) -> std::io::Result<(u64, [u8; 32])> {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = from.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        to.write_all(&buffer[..n])?;
        size += n as u64;
    }
    Ok((size, hasher.finalize().into()))
}

#[cfg(test)]
mod tests {
    use super::super::write_queue::Line;
    use super::*;

    async fn add_pack(store: &SqliteStore, name: &str) {
        let mut tx = store.write(Line::Requests).await.unwrap();
        Sqlite::query("INSERT INTO packs (name, size, created_at) VALUES ($1, 100, 0)")
            .bind(name)
            .execute(&mut tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }

    #[tokio::test]
    async fn a_snapshot_names_the_packs_committed_before_it_and_not_after() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("cairn.db"))
            .await
            .unwrap();
        add_pack(&store, "before.car").await;
        let contents = store
            .snapshot_into(&dir.path().join("copy.db"))
            .await
            .unwrap();
        add_pack(&store, "after.car").await;
        assert_eq!(contents.packs, [("before.car".to_owned(), 100)]);
        assert!(contents.schema_version > 0);
        assert_eq!(contents.live_names, 0);
        // The copy is one file, reads back the same, and a later snapshot sees the new pack.
        assert!(!dir.path().join("copy.db-wal").exists());
        let again = read_snapshot(&dir.path().join("copy.db")).await.unwrap();
        assert_eq!(again, contents);
        let later = store
            .snapshot_into(&dir.path().join("later.db"))
            .await
            .unwrap();
        assert_eq!(later.packs.len(), 2);
        assert!(
            store
                .snapshot_into(&dir.path().join("later.db"))
                .await
                .is_err(),
            "an existing file is never overwritten"
        );
    }
}
