//! What committing an upload writes, inside the caller's transaction: its operation row, the
//! block index entries of its pack, and the bytes charged to the account.

use sqlx::Transaction;

use super::rows::{account_from, now_ms, ModelRow};
use super::{Backend, SqlStore};
use crate::model::{NewUpload, OperationError, OperationStatus};
use crate::packs::SealedPack;
use crate::StoreError;

impl<B: Backend> SqlStore<B> {
    pub(super) async fn insert_operation(
        tx: &mut Transaction<'_, B>,
        upload: &NewUpload,
        status: OperationStatus,
        message: &str,
        cid: Option<&str>,
        failure: Option<&OperationError>,
    ) -> Result<i64, StoreError> {
        let now = now_ms();
        let terminal = status.is_terminal().then_some(now);
        let progress = if status == OperationStatus::Completed {
            100.0
        } else {
            0.0
        };
        let row = B::query(
            "INSERT INTO operations (upload_id, account_id, kind, status, status_message, progress,
                cid, error_code, error_message, name, size, mime_type, archive_mode, profile,
                created_at, updated_at, completed_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
             RETURNING id",
        )
        .bind(&upload.upload_id)
        .bind(upload.account_id)
        .bind(upload.kind.as_str())
        .bind(status.as_str())
        .bind(message)
        .bind(progress)
        .bind(cid)
        .bind(failure.map(|f| f.code.as_str()))
        .bind(failure.map(|f| f.message.as_str()))
        .bind(&upload.name)
        .bind(upload.size as i64)
        .bind(&upload.mime_type)
        .bind(upload.archive_mode.as_deref())
        .bind(&upload.profile)
        .bind(now)
        .bind(now)
        .bind(terminal)
        .fetch_one(tx)
        .await?;
        Ok(row.int("id"))
    }

    /// Index a sealed pack's blocks and charge the bytes actually added to the account, inside
    /// the caller's transaction. Over the quota nothing is changed (the transaction is dropped).
    pub(super) async fn store_pack(
        tx: &mut Transaction<'_, B>,
        account_id: i64,
        pack: Option<&SealedPack>,
    ) -> Result<(), StoreError> {
        let mut added = 0u64;
        if let Some(pack) = pack {
            let pack_id = B::query(
                "INSERT INTO packs (name, size, created_at) VALUES ($1, $2, $3) RETURNING id",
            )
            .bind(&pack.name)
            .bind(pack.size as i64)
            .bind(now_ms())
            .fetch_one(tx)
            .await?
            .int("id");
            for block in &pack.blocks {
                // Another upload may have stored the same block meanwhile: the first copy wins
                // and only bytes actually added count against the quota.
                let inserted = B::query(
                    "INSERT INTO blocks (multihash, pack_id, \"offset\", length)
                     VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                )
                .bind(&block.multihash)
                .bind(pack_id)
                .bind(block.offset as i64)
                .bind(block.length as i64)
                .execute(tx)
                .await?;
                if inserted == 1 {
                    added += block.length;
                }
            }
        }
        let sql = format!(
            "SELECT * FROM accounts WHERE id = $1{}",
            B::DIALECT.for_update()
        );
        let account = B::query(&sql).bind(account_id).fetch_one(tx).await?;
        if let Some(remaining) = account_from(&account).remaining_quota() {
            if added > remaining {
                return Err(StoreError::QuotaExceeded {
                    needed: added,
                    remaining,
                });
            }
        }
        B::query("UPDATE accounts SET stored_bytes = stored_bytes + $1 WHERE id = $2")
            .bind(added as i64)
            .bind(account_id)
            .execute(tx)
            .await?;
        Ok(())
    }
}
