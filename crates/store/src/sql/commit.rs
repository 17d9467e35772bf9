//! What committing an upload writes, inside the caller's transaction: its operation row, the
//! block index entries of its pack, and the root the account keeps (which the quota counts);
//! and what deleting one gives back.

use super::backend::Backend;
use super::dialect::{values_rows, ROW_PARAMETERS};
use super::rows::{account_from, now_ms, operation_from, ModelRow};
use super::writer::WriteTx;
use crate::model::{
    Account, NewPin, NewUpload, Operation, OperationError, OperationStatus, StoredDag,
};
use crate::model::{ArchiveMode, Content, Packed, PackedBlock};
use crate::{Spent, StoreError};

/// Block index rows one `INSERT` writes, five parameters each.
const INDEX_ROWS_PER_STATEMENT: usize = ROW_PARAMETERS / 5;

/// How an upload's operation starts out.
pub(super) enum Starts<'a> {
    /// Waiting, with this message, for a worker.
    Pending(&'a str),
    /// Waiting for its bytes (a TUS upload): no worker may claim it until they are all in.
    Receiving,
    /// Refused before any work.
    Failed(&'a OperationError),
    /// Stored already, with this root (kept by the caller first).
    Completed(&'a StoredDag),
}

/// An upload's operation, as it `starts`, and a use of the link or key that sent it, in
/// the caller's transaction: [`StoreError::Spent`] when its uses are spent, so two nodes
/// racing for a last use cannot both record an upload. The row is returned as written, so
/// no read follows the commit.
pub(super) async fn insert_operation<B: Backend>(
    tx: &mut WriteTx<B>,
    upload: &NewUpload,
    starts: Starts<'_>,
) -> Result<Operation, StoreError> {
    count_use(tx, upload).await?;
    // A worker may claim it once `ready`.
    let (status, message, failure, dag, ready) = match starts {
        Starts::Pending(message) => (OperationStatus::Pending, message, None, None, true),
        Starts::Receiving => (
            OperationStatus::Pending,
            "receiving bytes",
            None,
            None,
            false,
        ),
        Starts::Failed(failure) => (
            OperationStatus::Failed,
            failure.message.as_str(),
            Some(failure),
            None,
            true,
        ),
        Starts::Completed(dag) => (OperationStatus::Completed, "stored", None, Some(dag), true),
    };
    let now = now_ms();
    let terminal = status.is_terminal().then_some(now);
    let keyvalues = upload.keyvalues.to_json();
    let content = upload.content.as_ref();
    let row = B::query(
        "INSERT INTO operations (upload_id, account_id, kind, status, status_message, progress,
            error_code, error_message, name, size, mime_type, archive_mode, profile,
            created_at, updated_at, completed_at, cid, dag_size, ready, meta, key_id, link_id,
            file_name, stored_as, archive_format)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
            $18, $19, $20, $21, $22, $23, $24, $25)
         RETURNING *",
    )
    .bind(&upload.upload_id)
    .bind(upload.account_id)
    .bind(upload.kind.as_str())
    .bind(status.as_str())
    .bind(message)
    .bind(if dag.is_some() { 100.0 } else { 0.0 })
    .bind(failure.map(|f| f.code.as_str()))
    .bind(failure.map(|f| f.message.as_str()))
    .bind(&upload.name)
    .bind(upload.size as i64)
    .bind(content.map_or(upload.mime_type.as_str(), |c| c.media_type.as_str()))
    .bind(upload.archive_mode.map(ArchiveMode::as_str))
    .bind(&upload.profile)
    .bind(now)
    .bind(now)
    .bind(terminal)
    .bind(dag.map(|dag| dag.cid.as_str()))
    .bind(dag.map(|dag| dag.size as i64))
    .bind(i64::from(ready))
    .bind(keyvalues.as_str())
    .bind(upload.key_id)
    .bind(upload.link_id.as_deref())
    .bind(upload.file_name.as_deref())
    .bind(content.map(|c| c.stored_as.as_str()))
    .bind(content.and_then(|c| c.archive_format.as_deref()))
    .fetch_one(tx)
    .await?;
    operation_from(&row)
}

/// A completed upload, inside the caller's transaction: its pack's blocks indexed, its
/// root kept (which the quota may refuse) and its operation inserted completed (one
/// statement fewer than inserting it pending and completing it).
pub(super) async fn commit_upload_in<B: Backend>(
    tx: &mut WriteTx<B>,
    upload: &NewUpload,
    packed: &Packed,
    dag: &StoredDag,
) -> Result<Operation, StoreError> {
    store_packed(tx, packed).await?;
    keep_root(tx, upload.account_id, dag).await?;
    insert_operation(tx, upload, Starts::Completed(dag)).await
}

/// One more upload begun by the upload's link, or else its key.
async fn count_use<B: Backend>(tx: &mut WriteTx<B>, upload: &NewUpload) -> Result<(), StoreError> {
    let counted = match (&upload.link_id, upload.key_id) {
        (Some(link), _) => {
            B::query("UPDATE upload_links SET uses = uses + 1 WHERE id = $1 AND uses < uploads")
                .bind(link.as_str())
                .execute(&mut *tx)
                .await?
        }
        (None, Some(key)) => {
            B::query(
                "UPDATE tokens SET uses = uses + 1, last_used_at = $1
              WHERE id = $2 AND (max_uses IS NULL OR uses < max_uses)",
            )
            .bind(now_ms())
            .bind(key)
            .execute(&mut *tx)
            .await?
        }
        (None, None) => return Ok(()),
    };
    if counted == 0 {
        return Err(StoreError::Spent(match upload.link_id {
            Some(_) => Spent::Link,
            None => Spent::Key,
        }));
    }
    Ok(())
}

/// Wait for a collection being applied, and keep the next from starting until this
/// transaction ends (see [`Dialect::hold_off_collector`](super::dialect::Dialect::hold_off_collector)).
pub(super) async fn hold_off_collector<B: Backend>(tx: &mut WriteTx<B>) -> Result<(), StoreError> {
    if let Some(sql) = B::DIALECT.hold_off_collector() {
        B::query(sql).fetch_optional(tx).await?;
    }
    Ok(())
}

/// Index what a pack writer sealed, inside the caller's transaction: the blocks it found
/// stored must still be (else `BlocksCollected`), and the new pack's blocks are indexed.
/// Another upload may have stored the same block meanwhile: the first copy wins.
pub(super) async fn store_packed<B: Backend>(
    tx: &mut WriteTx<B>,
    packed: &Packed,
) -> Result<(), StoreError> {
    hold_off_collector(tx).await?;
    let mut missing = 0;
    for batch in packed.reused.chunks(B::DIALECT.lookup_batch()) {
        let sql = format!(
            "SELECT COUNT(*) AS found FROM blocks WHERE multihash {}",
            B::DIALECT.multihash_in(batch.len())
        );
        let found = B::query(&sql)
            .bind_multihashes(batch)
            .fetch_one(tx)
            .await?
            .int("found");
        missing += batch.len() - found as usize;
    }
    if missing > 0 {
        return Err(StoreError::BlocksCollected(missing));
    }
    let Some(pack) = &packed.pack else {
        return Ok(());
    };
    let pack_id =
        B::query("INSERT INTO packs (name, size, created_at) VALUES ($1, $2, $3) RETURNING id")
            .bind(&pack.name)
            .bind(pack.size as i64)
            .bind(now_ms())
            .fetch_one(tx)
            .await?
            .int("id");
    index_blocks(tx, pack_id, &pack.blocks).await
}

/// Index `blocks` as stored in pack `pack_id`; a block indexed already keeps its entry.
pub(super) async fn index_blocks<B: Backend>(
    tx: &mut WriteTx<B>,
    pack_id: i64,
    blocks: &[PackedBlock],
) -> Result<(), StoreError> {
    for batch in blocks.chunks(INDEX_ROWS_PER_STATEMENT) {
        let sql = format!(
            "INSERT INTO blocks (multihash, pack_id, \"offset\", length, without_links)
             VALUES {}
             ON CONFLICT DO NOTHING",
            values_rows(batch.len(), 5)
        );
        let mut insert = B::query(&sql);
        for block in batch {
            insert = insert
                .bind(&block.multihash)
                .bind(pack_id)
                .bind(block.offset as i64)
                .bind(block.length as i64)
                .bind(i64::from(block.without_links));
        }
        insert.execute(tx).await?;
    }
    Ok(())
}

/// Charge `dag` to the account, inside the caller's transaction: a root the account already
/// keeps costs nothing more; a new one costs its DAG's size, unless that would pass the
/// quota: then `QuotaExceeded`, and the caller drops the transaction, undoing both
/// statements. Two statements for a new root, one for a kept one: each is a round trip
/// while holding SQLite's writer. On PostgreSQL the root's row is locked first and then the
/// account's (as `release_root` does), and concurrent commits for one account count
/// against its quota one after the other.
pub(super) async fn keep_root<B: Backend>(
    tx: &mut WriteTx<B>,
    account_id: i64,
    dag: &StoredDag,
) -> Result<(), StoreError> {
    let refs = B::query(
        "INSERT INTO account_roots (account_id, cid, dag_size, refs) VALUES ($1, $2, $3, 1)
         ON CONFLICT (account_id, cid) DO UPDATE SET refs = account_roots.refs + 1
         RETURNING refs",
    )
    .bind(account_id)
    .bind(&dag.cid)
    .bind(dag.size as i64)
    .fetch_one(tx)
    .await?
    .int("refs");
    if refs > 1 {
        return Ok(());
    }
    let account = account_from(
        &B::query("UPDATE accounts SET stored_bytes = stored_bytes + $1 WHERE id = $2 RETURNING *")
            .bind(dag.size as i64)
            .bind(account_id)
            .fetch_one(tx)
            .await?,
    );
    // As the account was before this root.
    let before = Account {
        stored_bytes: account.stored_bytes - dag.size,
        ..account
    };
    match before.remaining_quota() {
        Some(remaining) if dag.size > remaining => Err(StoreError::QuotaExceeded {
            needed: dag.size,
            remaining,
        }),
        _ => Ok(()),
    }
}

/// Mark operation `id` of `account_id` completed with `dag` as its root, keeping the root
/// (which may refuse it over the quota), inside the caller's transaction.
pub(super) async fn complete_in<B: Backend>(
    tx: &mut WriteTx<B>,
    account_id: i64,
    id: i64,
    dag: &StoredDag,
    content: Option<&Content>,
) -> Result<(), StoreError> {
    keep_root(tx, account_id, dag).await?;
    let now = now_ms();
    B::query(
        "UPDATE operations SET status = 'completed', status_message = 'stored', progress = 100,
            cid = $1, dag_size = $2, updated_at = $3, completed_at = $4,
            stored_as = COALESCE($5, stored_as),
            archive_format = COALESCE($6, archive_format),
            mime_type = COALESCE($7, mime_type)
          WHERE id = $8",
    )
    .bind(dag.cid.as_str())
    .bind(dag.size as i64)
    .bind(now)
    .bind(now)
    .bind(content.map(|c| c.stored_as.as_str()))
    .bind(content.and_then(|c| c.archive_format.as_deref()))
    .bind(content.map(|c| c.media_type.as_str()))
    .bind(id)
    .execute(tx)
    .await?;
    Ok(())
}

/// The account no longer keeps `cid` through one of its uploads or pins; its last one gives
/// the DAG's bytes back.
pub(super) async fn release_root<B: Backend>(
    tx: &mut WriteTx<B>,
    account_id: i64,
    cid: &str,
) -> Result<(), StoreError> {
    let sql = format!(
        "SELECT * FROM account_roots WHERE account_id = $1 AND cid = $2{}",
        B::DIALECT.for_update()
    );
    let Some(root) = B::query(&sql)
        .bind(account_id)
        .bind(cid)
        .fetch_optional(tx)
        .await?
    else {
        return Ok(());
    };
    if root.int("refs") > 1 {
        B::query("UPDATE account_roots SET refs = refs - 1 WHERE account_id = $1 AND cid = $2")
            .bind(account_id)
            .bind(cid)
            .execute(tx)
            .await?;
        return Ok(());
    }
    B::query("DELETE FROM account_roots WHERE account_id = $1 AND cid = $2")
        .bind(account_id)
        .bind(cid)
        .execute(tx)
        .await?;
    B::query("UPDATE accounts SET stored_bytes = stored_bytes - $1 WHERE id = $2")
        .bind(root.int("dag_size"))
        .bind(account_id)
        .execute(tx)
        .await?;
    Ok(())
}

/// A pin by CID: queued for a worker to fetch, or completed and kept at once when its DAG
/// is `stored` already (and still is, collections notwithstanding).
pub(super) async fn insert_pin<B: Backend>(
    tx: &mut WriteTx<B>,
    pin: &NewPin,
    stored: Option<&StoredDag>,
) -> Result<i64, StoreError> {
    // The root is kept before the operation is written, and the operation is written
    // once, as it starts: the order every commit keeps on PostgreSQL (the account's rows,
    // then the operation's, whose triggers take the event log's lock and then the
    // account's counts). A pin's row first, or a row inserted pending and then completed
    // (the counts before the event log), deadlocked with uploads and deletes.
    let kept = match stored {
        Some(dag) => {
            // Still stored, now that no collection can run: a stored root's whole DAG is.
            hold_off_collector(tx).await?;
            let stored_now = match cairn_unixfs::Cid::try_from(dag.cid.as_str()) {
                Ok(root) => B::query("SELECT 1 AS found FROM blocks WHERE multihash = $1")
                    .bind(root.hash().to_bytes().as_slice())
                    .fetch_optional(&mut *tx)
                    .await?
                    .is_some(),
                Err(_) => false,
            };
            if stored_now {
                keep_root(tx, pin.account_id, dag).await?;
            }
            stored_now.then_some(dag)
        }
        None => None,
    };
    let now = now_ms();
    let (status, message, progress, cid, dag_size, completed_at) = match kept {
        Some(dag) => (
            "completed",
            "stored",
            100.0,
            &dag.cid,
            Some(dag.size as i64),
            Some(now),
        ),
        None => (
            "pending",
            "waiting to be fetched",
            0.0,
            &pin.cid,
            None,
            None,
        ),
    };
    let (origins, keyvalues) = (pin.origins.join("\n"), pin.keyvalues.to_json());
    let row = B::query(
        "INSERT INTO operations (upload_id, account_id, kind, status, status_message, progress,
            cid, name, size, mime_type, profile, created_at, updated_at, completed_at,
            dag_size, origins, meta, key_id)
         VALUES ($1, $2, 'pin', $3, $4, $5, $6, $7, 0, '', '', $8, $9, $10, $11, $12, $13,
            $14)
         RETURNING id",
    )
    .bind(&pin.request_id)
    .bind(pin.account_id)
    .bind(status)
    .bind(message)
    .bind(progress)
    .bind(cid.as_str())
    .bind(&pin.name)
    .bind(now)
    .bind(now)
    .bind(completed_at)
    .bind(dag_size)
    .bind(origins.as_str())
    .bind(keyvalues.as_str())
    .bind(pin.key_id)
    .fetch_one(tx)
    .await?;
    let id = row.int("id");
    Ok(id)
}

/// Delete an upload or pin of `account_id`, inside the caller's transaction: it is no
/// longer listed, its root no longer counts against the quota, and unfinished work on it
/// stops (the operation fails, and a TUS upload still receiving is terminated). `None` when
/// the account has no such upload; deleting twice changes nothing the second time.
pub(super) async fn delete_kept_in<B: Backend>(
    tx: &mut WriteTx<B>,
    account_id: i64,
    upload_id: &str,
) -> Result<Option<Operation>, StoreError> {
    let sql = format!(
        "SELECT * FROM operations WHERE upload_id = $1 AND account_id = $2{}",
        B::DIALECT.for_update()
    );
    let Some(row) = B::query(&sql)
        .bind(upload_id)
        .bind(account_id)
        .fetch_optional(tx)
        .await?
    else {
        return Ok(None);
    };
    let op = operation_from(&row)?;
    if op.deleted_at_ms.is_some() {
        return Ok(Some(op));
    }
    // The account's rows before the operation's: changing an operation fires the event
    // trigger, which holds the event log's lock (PostgreSQL) until the commit, and commits
    // that keep a root lock the account first and take that lock after. In the other order
    // a delete and an upload of one account deadlocked.
    if let (OperationStatus::Completed, Some(cid)) = (op.status, &op.cid) {
        release_root(tx, account_id, cid).await?;
    }
    let now = now_ms();
    B::query("UPDATE operations SET deleted_at = $1, updated_at = $2 WHERE id = $3")
        .bind(now)
        .bind(now)
        .bind(op.id)
        .execute(tx)
        .await?;
    if !op.status.is_terminal() {
        let message = "deleted by its owner before it finished";
        B::query(
            "UPDATE operations SET status = 'failed', status_message = $1,
                error_code = 'deleted', error_message = $2, completed_at = $3
              WHERE id = $4",
        )
        .bind(message)
        .bind(message)
        .bind(now)
        .bind(op.id)
        .execute(tx)
        .await?;
        B::query(
            "UPDATE tus_uploads SET state = 'terminated'
              WHERE operation_id = $1 AND state = 'receiving'",
        )
        .bind(op.id)
        .execute(tx)
        .await?;
    }
    Ok(Some(op))
}
