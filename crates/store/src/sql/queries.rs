//! `MetadataStore` on [`SqlStore`], written once for both databases. Statements use `$1`
//! parameters (which SQLite takes too); the few words that differ come from [`Backend`].
//!
//! Longer than most files (about 1,100 lines) because it is one `impl` block, which Rust cannot
//! split across files, with one method for each of the trait's: splitting it would only add a
//! forwarding layer. What commits write is in `commit.rs`.

use std::collections::HashSet;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;

use super::backend::{Backend, Param};
use super::commit::Starts;
use super::dialect::parameters;
use super::ipni_chain::IpniRoots;
use super::rows::{
    account_from, key_from, node_from, now_ms, operation_from, tus_from, unique_violation, ModelRow,
};
use super::write_queue::Line;
use super::writer::WriteTx;
use super::SqlStore;
use crate::access::{ApiKey, NewKey, NewLink, UploadLink};
use crate::events::{
    Attempt, ClaimedDelivery, Delivery, DeliveryStatus, Event, EventType, NewDeliveries, Usage,
    Webhook,
};
use crate::model::{
    Account, BlockLocation, Collected, Collection, Compaction, IndexedBlock, IpniChain,
    IpniPublication, KeptFilter, LeaseAttempt, LogPlace, NewPin, NewTusUpload, NewUpload,
    NodeRecord, Operation, OperationError, OperationFilter, OperationRef, OperationStatus,
    ProvideProgress, StoredDag, SweepPass, TusConcat, TusState, TusUpload,
};
use crate::model::{Content, Packed};
use crate::names::{ForeignRecord, KeptName};
use crate::{AccountLimits, CollectorLock, MetadataStore, StoreError};
use std::collections::BTreeMap;

impl<B: Backend> SqlStore<B> {
    async fn account_where<'q>(
        &self,
        sql: &'q str,
        key: impl Param<'q> + Send,
    ) -> Result<Option<Account>, StoreError> {
        let row = B::query(sql)
            .bind(key)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        Ok(row.as_ref().map(account_from))
    }

    pub(super) async fn operation_by_id(&self, id: i64) -> Result<Operation, StoreError> {
        let row = B::query("SELECT * FROM operations WHERE id = $1")
            .bind(id)
            .fetch_one(&mut self.conn().await?)
            .await?;
        operation_from(&row)
    }
}

impl<B: Backend> SqlStore<B> {
    /// Record `moved.pack` and point each of its blocks at it, where the block's entry still
    /// names its source pack; how many moved.
    async fn move_blocks(tx: &mut WriteTx<B>, moved: &Compaction) -> Result<u64, StoreError> {
        let pack = &moved.pack;
        let pack_id =
            B::query("INSERT INTO packs (name, size, created_at) VALUES ($1, $2, $3) RETURNING id")
                .bind(&pack.name)
                .bind(pack.size as i64)
                .bind(now_ms())
                .fetch_one(&mut *tx)
                .await?
                .int("id");
        let mut count = 0;
        for (block, source) in pack.blocks.iter().zip(&moved.sources) {
            count += B::query(
                "UPDATE blocks SET pack_id = $1, \"offset\" = $2, length = $3
                  WHERE multihash = $4 AND pack_id = (SELECT id FROM packs WHERE name = $5)",
            )
            .bind(pack_id)
            .bind(block.offset as i64)
            .bind(block.length as i64)
            .bind(&block.multihash)
            .bind(source)
            .execute(&mut *tx)
            .await?;
        }
        Ok(count)
    }
}

/// The location columns of `blocks JOIN packs`, as `SELECT`ed by the block lookups.
fn location(row: &impl ModelRow) -> BlockLocation {
    BlockLocation {
        pack: row.text("name"),
        offset: row.int("offset") as u64,
        length: row.int("length") as u64,
        without_links: row.maybe_int("without_links") == Some(1),
    }
}

const LOCATION: &str = "SELECT blocks.multihash, packs.name, blocks.\"offset\", blocks.length,
        blocks.without_links
    FROM blocks JOIN packs ON packs.id = blocks.pack_id WHERE multihash";

#[async_trait]
impl<B: Backend> MetadataStore for SqlStore<B> {
    async fn create_account(
        &self,
        name: &str,
        limits: AccountLimits,
    ) -> Result<Account, StoreError> {
        let result = B::query(
            "INSERT INTO accounts (name, upload_limit, quota, created_at) VALUES ($1, $2, $3, $4)
             RETURNING *",
        )
        .bind(name)
        .bind(limits.upload_limit as i64)
        .bind(limits.quota.map(|q| q as i64))
        .bind(now_ms())
        .fetch_one(&mut self.write_conn(Line::Requests).await?)
        .await;
        match result {
            Ok(row) => Ok(account_from(&row)),
            Err(e) if unique_violation(&e) => {
                Err(StoreError::Conflict(format!("account {name:?}")))
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn account_by_name(&self, name: &str) -> Result<Option<Account>, StoreError> {
        self.account_where("SELECT * FROM accounts WHERE name = $1", name)
            .await
    }

    async fn list_accounts(&self) -> Result<Vec<Account>, StoreError> {
        let rows = B::query("SELECT * FROM accounts ORDER BY id")
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.iter().map(account_from).collect())
    }

    async fn set_account_limits(
        &self,
        name: &str,
        upload_limit: Option<u64>,
        quota: Option<Option<u64>>,
    ) -> Result<Account, StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        if let Some(limit) = upload_limit {
            B::query("UPDATE accounts SET upload_limit = $1 WHERE name = $2")
                .bind(limit as i64)
                .bind(name)
                .execute(&mut tx)
                .await?;
        }
        if let Some(quota) = quota {
            B::query("UPDATE accounts SET quota = $1 WHERE name = $2")
                .bind(quota.map(|q| q as i64))
                .bind(name)
                .execute(&mut tx)
                .await?;
        }
        tx.commit().await?;
        self.account_by_name(name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("account {name:?}")))
    }

    async fn create_key(
        &self,
        key: &NewKey,
        hash: &[u8; 32],
        prefix: &str,
    ) -> Result<ApiKey, StoreError> {
        self.insert_key(key, hash, prefix).await
    }

    async fn revoke_token(&self, prefix_or_id: &str) -> Result<ApiKey, StoreError> {
        let mut conn = self.write_conn(Line::Requests).await?;
        let rows = match prefix_or_id.parse::<i64>() {
            Ok(id) => B::query("SELECT * FROM tokens WHERE id = $1").bind(id),
            // Either string may be the longer one: a full token, or a few characters of one.
            // Exact comparisons, not LIKE, so `%` and `_` typed by an admin match literally.
            Err(_) => B::query(
                "SELECT * FROM tokens WHERE substr($1, 1, length(prefix)) = prefix
                    OR substr(prefix, 1, length($1)) = $1",
            )
            .bind(prefix_or_id),
        }
        .fetch_all(&mut conn)
        .await?;
        let token = match rows.as_slice() {
            [row] => key_from(row, "")?,
            [] => return Err(StoreError::NotFound(format!("token {prefix_or_id:?}"))),
            _ => {
                return Err(StoreError::Conflict(format!(
                    "more than one token matching {prefix_or_id:?}"
                )))
            }
        };
        B::query("UPDATE tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(now_ms())
            .bind(token.id)
            .execute(&mut conn)
            .await?;
        Ok(ApiKey {
            revoked: true,
            ..token
        })
    }

    async fn key_for_token(
        &self,
        hash: &[u8; 32],
    ) -> Result<Option<(Account, ApiKey)>, StoreError> {
        self.key_and_account(hash).await
    }

    async fn list_keys(&self, account_id: i64) -> Result<Vec<ApiKey>, StoreError> {
        self.keys_of(account_id).await
    }

    async fn revoke_key(&self, account_id: i64, id: i64) -> Result<Option<ApiKey>, StoreError> {
        self.revoke_key_of(account_id, id).await
    }

    async fn key_seen(&self, id: i64, now_ms: i64) -> Result<(), StoreError> {
        self.note_key_seen(id, now_ms).await
    }

    async fn create_link(&self, link: &NewLink) -> Result<UploadLink, StoreError> {
        self.insert_link(link).await
    }

    async fn link_for_secret(&self, hash: &[u8; 32]) -> Result<Option<UploadLink>, StoreError> {
        self.live_link_by_hash(hash).await
    }

    async fn link(&self, id: &str) -> Result<Option<UploadLink>, StoreError> {
        self.live_link_by_id(id).await
    }

    async fn list_links(&self, account_id: i64) -> Result<Vec<UploadLink>, StoreError> {
        self.links_of(account_id).await
    }

    async fn revoke_link(
        &self,
        account_id: i64,
        id: &str,
    ) -> Result<Option<UploadLink>, StoreError> {
        self.revoke_link_of(account_id, id).await
    }

    async fn change_upload(
        &self,
        account_id: i64,
        upload_id: &str,
        name: Option<String>,
        keyvalues: BTreeMap<String, Option<String>>,
    ) -> Result<Option<Operation>, StoreError> {
        self.change_kept(account_id, upload_id, name, keyvalues)
            .await
    }

    async fn has_block(&self, multihash: &[u8]) -> Result<bool, StoreError> {
        Ok(
            B::query("SELECT 1 AS found FROM blocks WHERE multihash = $1")
                .bind(multihash)
                .fetch_optional(&mut self.conn().await?)
                .await?
                .is_some(),
        )
    }

    async fn block_location(&self, multihash: &[u8]) -> Result<Option<BlockLocation>, StoreError> {
        let sql = format!("{LOCATION} = $1");
        let row = B::query(&sql)
            .bind(multihash)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        Ok(row.as_ref().map(location))
    }

    async fn block_locations(
        &self,
        multihashes: &[Vec<u8>],
    ) -> Result<Vec<(Vec<u8>, BlockLocation)>, StoreError> {
        let mut conn = self.conn().await?;
        let mut found = Vec::with_capacity(multihashes.len());
        for batch in multihashes.chunks(B::DIALECT.lookup_batch()) {
            let sql = format!("{LOCATION} {}", B::DIALECT.multihash_in(batch.len()));
            let rows = B::query(&sql)
                .bind_multihashes(batch)
                .fetch_all(&mut conn)
                .await?;
            found.extend(
                rows.iter()
                    .map(|row| (row.blob("multihash"), location(row))),
            );
        }
        Ok(found)
    }

    async fn unfinished_upload_ids(&self) -> Result<Vec<String>, StoreError> {
        let rows =
            B::query("SELECT upload_id FROM operations WHERE status IN ('pending', 'processing')")
                .fetch_all(&mut self.conn().await?)
                .await?;
        Ok(rows.iter().map(|row| row.text("upload_id")).collect())
    }

    async fn pack_names(&self) -> Result<Vec<String>, StoreError> {
        let rows = B::query("SELECT name FROM packs")
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.iter().map(|row| row.text("name")).collect())
    }

    async fn commit_completed_upload(
        &self,
        upload: NewUpload,
        packed: Packed,
        dag: &StoredDag,
    ) -> Result<Operation, StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        Self::store_packed(&mut tx, &packed).await?;
        Self::keep_root(&mut tx, upload.account_id, dag).await?;
        // Inserted completed: one statement fewer while holding SQLite's writer.
        let operation = Self::insert_operation(&mut tx, &upload, Starts::Completed(dag)).await?;
        tx.commit().await?;
        Ok(operation)
    }

    async fn record_upload(
        &self,
        upload: NewUpload,
        failure: Option<OperationError>,
    ) -> Result<Operation, StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        let starts = match &failure {
            Some(failure) => Starts::Failed(failure),
            None => Starts::Pending("waiting to be processed"),
        };
        let operation = Self::insert_operation(&mut tx, &upload, starts).await?;
        tx.commit().await?;
        Ok(operation)
    }

    async fn account_by_id(&self, id: i64) -> Result<Option<Account>, StoreError> {
        self.account_where("SELECT * FROM accounts WHERE id = $1", id)
            .await
    }

    async fn claim_next(
        &self,
        worker: &str,
        lease: Duration,
    ) -> Result<Option<Operation>, StoreError> {
        let now = now_ms();
        let sql = format!(
            "UPDATE operations
                SET status = 'processing', status_message = 'processing',
                    claimed_by = $1, claimed_until = $2, updated_at = $3
              WHERE id = (SELECT id FROM operations
                           WHERE (status = 'pending' AND ready = 1)
                              OR (status = 'processing' AND claimed_until < $4)
                           ORDER BY id LIMIT 1{})
              RETURNING *",
            B::DIALECT.skip_locked()
        );
        let row = B::query(&sql)
            .bind(worker)
            .bind(now + lease.as_millis() as i64)
            .bind(now)
            .bind(now)
            .fetch_optional(&mut self.write_conn(Line::Operations).await?)
            .await?;
        row.as_ref().map(operation_from).transpose()
    }

    async fn report_progress(
        &self,
        id: i64,
        worker: &str,
        percent: f64,
        message: &str,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        let sql = format!(
            "UPDATE operations
                SET progress = {}(progress, $1), status_message = $2, claimed_until = $3,
                    updated_at = $4
              WHERE id = $5 AND claimed_by = $6 AND status = 'processing'",
            B::DIALECT.greatest_least().0
        );
        let updated = B::query(&sql)
            .bind(percent.clamp(0.0, 99.0))
            .bind(message)
            .bind(now + lease.as_millis() as i64)
            .bind(now)
            .bind(id)
            .bind(worker)
            .execute(&mut self.write_conn(Line::Operations).await?)
            .await?;
        Ok(updated == 1)
    }

    async fn complete_operation(
        &self,
        id: i64,
        worker: &str,
        packed: Packed,
        dag: &StoredDag,
        content: Option<&Content>,
    ) -> Result<Operation, StoreError> {
        let mut tx = self.write(Line::Operations).await?;
        let sql = format!(
            "SELECT * FROM operations WHERE id = $1 AND claimed_by = $2 AND status = 'processing'{}",
            B::DIALECT.for_update()
        );
        let op = B::query(&sql)
            .bind(id)
            .bind(worker)
            .fetch_optional(&mut tx)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("operation {id} claimed by {worker}")))?;
        let op = operation_from(&op)?;
        Self::store_packed(&mut tx, &packed).await?;
        Self::complete_in(&mut tx, op.account_id, id, dag, content).await?;
        tx.commit().await?;
        self.operation_by_id(id).await
    }

    async fn release_operation(&self, id: i64, worker: &str) -> Result<(), StoreError> {
        B::query(
            "UPDATE operations SET status = 'pending', status_message = 'waiting to be processed',
                claimed_by = NULL, claimed_until = NULL, updated_at = $1
              WHERE id = $2 AND claimed_by = $3 AND status = 'processing'",
        )
        .bind(now_ms())
        .bind(id)
        .bind(worker)
        .execute(&mut self.write_conn(Line::Operations).await?)
        .await?;
        Ok(())
    }

    async fn fail_operation(
        &self,
        id: i64,
        worker: &str,
        failure: OperationError,
    ) -> Result<Operation, StoreError> {
        let now = now_ms();
        let updated = B::query(
            "UPDATE operations SET status = 'failed', status_message = $1, error_code = $2,
                error_message = $3, updated_at = $4, completed_at = $5
              WHERE id = $6 AND claimed_by = $7 AND status = 'processing'",
        )
        .bind(&failure.message)
        .bind(&failure.code)
        .bind(&failure.message)
        .bind(now)
        .bind(now)
        .bind(id)
        .bind(worker)
        .execute(&mut self.write_conn(Line::Operations).await?)
        .await?;
        if updated == 0 {
            return Err(StoreError::NotFound(format!(
                "operation {id} claimed by {worker}"
            )));
        }
        self.operation_by_id(id).await
    }

    async fn create_tus_upload(&self, new: NewTusUpload) -> Result<TusUpload, StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        let operation_id = match &new.upload {
            Some(upload) => {
                let operation = Self::insert_operation(&mut tx, upload, Starts::Receiving).await?;
                Some(operation.id)
            }
            None => None,
        };
        let (concat, parts) = match &new.concat {
            TusConcat::None => (None, None),
            TusConcat::Partial => (Some("partial"), None),
            TusConcat::Final(parts) => (Some("final"), Some(parts.join(" "))),
        };
        let row = B::query(
            "INSERT INTO tus_uploads (id, account_id, operation_id, length, metadata, concat, parts,
                state, created_at, expires_at, link_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'receiving', $8, $9, $10)
             RETURNING *",
        )
        .bind(&new.id)
        .bind(new.account_id)
        .bind(operation_id)
        .bind(new.length.map(|l| l as i64))
        .bind(&new.metadata)
        .bind(concat)
        .bind(parts.as_deref())
        .bind(now_ms())
        .bind(new.expires_at_ms)
        .bind(new.link_id.as_deref())
        .fetch_one(&mut tx)
        .await?;
        tx.commit().await?;
        tus_from(&row)
    }

    async fn tus_upload(&self, id: &str) -> Result<Option<TusUpload>, StoreError> {
        let row = B::query("SELECT * FROM tus_uploads WHERE id = $1")
            .bind(id)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        row.as_ref().map(tus_from).transpose()
    }

    async fn set_tus_length(&self, id: &str, length: u64) -> Result<(), StoreError> {
        let updated =
            B::query("UPDATE tus_uploads SET length = $1 WHERE id = $2 AND length IS NULL")
                .bind(length as i64)
                .bind(id)
                .execute(&mut self.write_conn(Line::Requests).await?)
                .await?;
        if updated == 0 {
            return Err(StoreError::Conflict(format!(
                "the length of TUS upload {id}"
            )));
        }
        Ok(())
    }

    async fn complete_tus_upload(&self, id: &str, size: u64) -> Result<Option<i64>, StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        let operation_id = B::query("SELECT operation_id FROM tus_uploads WHERE id = $1")
            .bind(id)
            .fetch_optional(&mut tx)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("TUS upload {id}")))?
            .maybe_int("operation_id");
        B::query("UPDATE tus_uploads SET state = 'complete' WHERE id = $1 AND state = 'receiving'")
            .bind(id)
            .execute(&mut tx)
            .await?;
        if let Some(operation_id) = operation_id {
            B::query(
                "UPDATE operations SET ready = 1, size = $1,
                    status_message = 'waiting to be processed', updated_at = $2
                  WHERE id = $3 AND status = 'pending'",
            )
            .bind(size as i64)
            .bind(now_ms())
            .bind(operation_id)
            .execute(&mut tx)
            .await?;
        }
        tx.commit().await?;
        Ok(operation_id)
    }

    async fn end_tus_upload(&self, id: &str, state: TusState) -> Result<(), StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        let operation_id = B::query(
            "UPDATE tus_uploads SET state = $1 WHERE id = $2 AND state = 'receiving'
             RETURNING operation_id",
        )
        .bind(state.as_str())
        .bind(id)
        .fetch_optional(&mut tx)
        .await?
        .and_then(|row| row.maybe_int("operation_id"));
        if let Some(operation_id) = operation_id {
            let now = now_ms();
            let message = match state {
                TusState::Expired => "the upload expired before it was complete",
                _ => "the upload was terminated before it was complete",
            };
            B::query(
                "UPDATE operations SET status = 'failed', status_message = $1, error_code = 'gone',
                    error_message = $2, updated_at = $3, completed_at = $4
                  WHERE id = $5 AND status IN ('pending', 'processing')",
            )
            .bind(message)
            .bind(message)
            .bind(now)
            .bind(now)
            .bind(operation_id)
            .execute(&mut tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn expired_tus_uploads(&self, now_ms: i64) -> Result<Vec<TusUpload>, StoreError> {
        let rows = B::query(
            "SELECT * FROM tus_uploads WHERE state = 'receiving' AND expires_at < $1
             ORDER BY expires_at",
        )
        .bind(now_ms)
        .fetch_all(&mut self.conn().await?)
        .await?;
        rows.iter().map(tus_from).collect()
    }

    async fn take_upload_lease(
        &self,
        id: &str,
        holder: &str,
        now_ms: i64,
        until_ms: i64,
    ) -> Result<LeaseAttempt, StoreError> {
        let mut conn = self.write_conn(Line::Requests).await?;
        // The holder may let go between the two statements: then try again.
        loop {
            let taken = B::query(
                "INSERT INTO upload_leases (upload_id, holder, until_ms, stop_requested)
                 VALUES ($1, $2, $3, 0)
                 ON CONFLICT (upload_id) DO UPDATE
                    SET holder = excluded.holder, until_ms = excluded.until_ms, stop_requested = 0
                  WHERE upload_leases.until_ms < $4 OR upload_leases.holder = excluded.holder
                 RETURNING holder",
            )
            .bind(id)
            .bind(holder)
            .bind(until_ms)
            .bind(now_ms)
            .fetch_optional(&mut conn)
            .await?;
            if taken.is_some() {
                return Ok(LeaseAttempt::Taken);
            }
            let held = B::query("SELECT until_ms FROM upload_leases WHERE upload_id = $1")
                .bind(id)
                .fetch_optional(&mut conn)
                .await?;
            if let Some(row) = held {
                return Ok(LeaseAttempt::Held {
                    until_ms: row.int("until_ms"),
                });
            }
        }
    }

    async fn renew_upload_lease(
        &self,
        id: &str,
        holder: &str,
        until_ms: i64,
    ) -> Result<Option<bool>, StoreError> {
        let row = B::query(
            "UPDATE upload_leases SET until_ms = $1 WHERE upload_id = $2 AND holder = $3
             RETURNING stop_requested",
        )
        .bind(until_ms)
        .bind(id)
        .bind(holder)
        .fetch_optional(&mut self.write_conn(Line::Requests).await?)
        .await?;
        Ok(row.map(|row| row.int("stop_requested") != 0))
    }

    async fn ask_upload_holder_to_stop(&self, id: &str) -> Result<(), StoreError> {
        B::query("UPDATE upload_leases SET stop_requested = 1 WHERE upload_id = $1")
            .bind(id)
            .execute(&mut self.write_conn(Line::Requests).await?)
            .await?;
        Ok(())
    }

    async fn release_upload_lease(&self, id: &str, holder: &str) -> Result<(), StoreError> {
        B::query("DELETE FROM upload_leases WHERE upload_id = $1 AND holder = $2")
            .bind(id)
            .bind(holder)
            .execute(&mut self.write_conn(Line::Requests).await?)
            .await?;
        Ok(())
    }

    async fn take_rate_token(
        &self,
        account_id: i64,
        endpoint: &str,
        quota: u32,
        per_ms: f64,
        now_ms: i64,
    ) -> Result<(bool, f64), StoreError> {
        // SET expressions all read the row as it was: the refill is computed once per column.
        let (greatest, least) = B::DIALECT.greatest_least();
        let refilled = format!(
            "{least}($3, rate_buckets.tokens + {greatest}(0, $4 - rate_buckets.refilled_ms) * $5)"
        );
        let sql = format!(
            "INSERT INTO rate_buckets (account_id, endpoint, tokens, refilled_ms, granted)
             VALUES ($1, $2, $3 - 1, $4, 1)
             ON CONFLICT (account_id, endpoint) DO UPDATE SET
                tokens = CASE WHEN {refilled} >= 1 THEN {refilled} - 1 ELSE {refilled} END,
                granted = CASE WHEN {refilled} >= 1 THEN 1 ELSE 0 END,
                refilled_ms = {greatest}($4, rate_buckets.refilled_ms)
             RETURNING tokens, granted"
        );
        let row = B::query(&sql)
            .bind(account_id)
            .bind(endpoint)
            .bind(f64::from(quota))
            .bind(now_ms)
            .bind(per_ms)
            .fetch_one(&mut self.write_conn(Line::Requests).await?)
            .await?;
        Ok((row.int("granted") != 0, row.real("tokens")))
    }

    async fn operation(
        &self,
        account_id: i64,
        id: &OperationRef,
    ) -> Result<Option<Operation>, StoreError> {
        let query = match id {
            OperationRef::Id(id) => {
                B::query("SELECT * FROM operations WHERE id = $1 AND account_id = $2").bind(*id)
            }
            OperationRef::UploadId(upload) => {
                B::query("SELECT * FROM operations WHERE upload_id = $1 AND account_id = $2")
                    .bind(upload.as_str())
            }
        };
        let row = query
            .bind(account_id)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        row.as_ref().map(operation_from).transpose()
    }

    async fn operations_by_id(&self, ids: &[i64]) -> Result<Vec<Operation>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT * FROM operations WHERE id IN ({})",
            parameters(1, ids.len())
        );
        let mut query = B::query(&sql);
        for id in ids {
            query = query.bind(*id);
        }
        let rows = query.fetch_all(&mut self.conn().await?).await?;
        rows.iter().map(operation_from).collect()
    }

    async fn operation_counts(&self) -> Result<Vec<(OperationStatus, u64)>, StoreError> {
        let rows = B::query("SELECT status, COUNT(*) AS n FROM operations GROUP BY status")
            .fetch_all(&mut self.conn().await?)
            .await?;
        rows.iter()
            .map(|row| {
                let status = OperationStatus::from_str(&row.text("status"))
                    .map_err(|e| StoreError::Database(sqlx::Error::Decode(e.into())))?;
                Ok((status, row.int("n") as u64))
            })
            .collect()
    }

    async fn list_operations(
        &self,
        account_id: i64,
        filter: &OperationFilter,
    ) -> Result<Vec<Operation>, StoreError> {
        let status = filter.status.map(|s| s.as_str());
        let rows = B::query(
            "SELECT * FROM operations WHERE account_id = $1
               AND ($2 IS NULL OR status = $3) AND ($4 IS NULL OR cid = $5)
               AND ($6 IS NULL OR id < $7) AND ($8 IS NULL OR key_id = $9)
             ORDER BY id DESC LIMIT $10",
        )
        .bind(account_id)
        .bind(status)
        .bind(status)
        .bind(filter.cid.as_deref())
        .bind(filter.cid.as_deref())
        .bind(filter.before_id)
        .bind(filter.before_id)
        .bind(filter.key_id)
        .bind(filter.key_id)
        .bind(i64::from(filter.limit))
        .fetch_all(&mut self.conn().await?)
        .await?;
        rows.iter().map(operation_from).collect()
    }

    async fn create_pin(
        &self,
        pin: NewPin,
        stored: Option<&StoredDag>,
    ) -> Result<Operation, StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        let id = Self::insert_pin(&mut tx, &pin, stored).await?;
        tx.commit().await?;
        self.operation_by_id(id).await
    }

    async fn kept_dag_size(&self, cid: &str) -> Result<Option<u64>, StoreError> {
        let row = B::query(
            "SELECT dag_size FROM operations
              WHERE cid = $1 AND status = 'completed' AND deleted_at IS NULL
                AND dag_size IS NOT NULL
              LIMIT 1",
        )
        .bind(cid)
        .fetch_optional(&mut self.conn().await?)
        .await?;
        Ok(row.map(|row| row.int("dag_size") as u64))
    }

    async fn replace_pin(
        &self,
        account_id: i64,
        request_id: &str,
        pin: NewPin,
        stored: Option<&StoredDag>,
    ) -> Result<Option<Operation>, StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        match Self::delete_kept_in(&mut tx, account_id, request_id).await? {
            Some(old) if old.deleted_at_ms.is_none() => {}
            // Deleted (or replaced) already: like a request id that does not exist.
            _ => return Ok(None),
        }
        let id = Self::insert_pin(&mut tx, &pin, stored).await?;
        tx.commit().await?;
        self.operation_by_id(id).await.map(Some)
    }

    async fn delete_kept(
        &self,
        account_id: i64,
        upload_id: &str,
    ) -> Result<Option<Operation>, StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        let Some(op) = Self::delete_kept_in(&mut tx, account_id, upload_id).await? else {
            return Ok(None);
        };
        tx.commit().await?;
        self.operation_by_id(op.id).await.map(Some)
    }

    async fn list_kept(
        &self,
        account_id: i64,
        filter: &KeptFilter,
    ) -> Result<Vec<Operation>, StoreError> {
        self.kept_page(&mut self.conn().await?, account_id, filter)
            .await
    }

    async fn list_kept_counted(
        &self,
        account_id: i64,
        filter: &KeptFilter,
    ) -> Result<(Vec<Operation>, u64), StoreError> {
        let mut snapshot = self.read_snapshot().await?;
        let page = self.kept_page(&mut snapshot, account_id, filter).await?;
        let count = self.kept_matches(&mut snapshot, account_id, filter).await?;
        snapshot.commit().await?;
        Ok((page, count))
    }

    async fn events_after(
        &self,
        account_id: i64,
        after: i64,
        types: &[EventType],
        limit: u32,
    ) -> Result<Vec<Event>, StoreError> {
        self.events_of(account_id, after, types, limit).await
    }

    async fn all_events_after(&self, after: i64, limit: u32) -> Result<Vec<Event>, StoreError> {
        self.events_of_all(after, limit).await
    }

    async fn last_event_id(&self) -> Result<i64, StoreError> {
        self.newest_event_id().await
    }

    async fn operation_events(&self, operation_id: i64) -> Result<Vec<Event>, StoreError> {
        self.events_of_operation(operation_id).await
    }

    async fn create_webhook(&self, webhook: &Webhook) -> Result<Webhook, StoreError> {
        self.insert_webhook(webhook).await
    }

    async fn list_webhooks(&self, account_id: i64) -> Result<Vec<Webhook>, StoreError> {
        self.webhooks_of(account_id).await
    }

    async fn delete_webhook(
        &self,
        account_id: i64,
        id: &str,
    ) -> Result<Option<Webhook>, StoreError> {
        self.remove_webhook(account_id, id).await
    }

    async fn webhook_deliveries(
        &self,
        account_id: i64,
        webhook_id: &str,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Option<Vec<Delivery>>, StoreError> {
        self.deliveries_of(account_id, webhook_id, before, limit)
            .await
    }

    async fn retry_delivery(
        &self,
        account_id: i64,
        webhook_id: &str,
        delivery_id: i64,
    ) -> Result<Option<Delivery>, StoreError> {
        self.retry_delivery_of(account_id, webhook_id, delivery_id)
            .await
    }

    async fn take_new_deliveries(
        &self,
        worker: &str,
        lease: Duration,
        limit: u32,
    ) -> Result<NewDeliveries, StoreError> {
        self.take_dispatch_batch(worker, lease, limit).await
    }

    async fn record_first_attempts(
        &self,
        worker: &str,
        lease: Duration,
        new: &NewDeliveries,
        attempts: &[(&ClaimedDelivery, Option<&Attempt>)],
    ) -> Result<Option<Vec<i64>>, StoreError> {
        self.record_first_delivery_attempts(worker, lease, new, attempts)
            .await
    }

    async fn claim_deliveries(
        &self,
        worker: &str,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<ClaimedDelivery>, StoreError> {
        self.claim_due_deliveries(worker, lease, limit).await
    }

    async fn record_attempts(
        &self,
        worker: &str,
        attempts: &[(&ClaimedDelivery, &Attempt)],
    ) -> Result<Vec<DeliveryStatus>, StoreError> {
        self.record_delivery_attempts(worker, attempts).await
    }

    async fn forget_events(&self, before_ms: i64) -> Result<u64, StoreError> {
        self.forget_events_before(before_ms).await
    }

    async fn usage(
        &self,
        account_id: i64,
        start_ms: i64,
        end_ms: i64,
        month: &str,
    ) -> Result<Usage, StoreError> {
        self.usage_of(account_id, start_ms, end_ms, month).await
    }

    async fn add_served_bytes(&self, month: &str, served: &[(i64, u64)]) -> Result<(), StoreError> {
        self.add_served(month, served).await
    }

    async fn accounts_keeping(&self, cid: &str) -> Result<Vec<i64>, StoreError> {
        self.accounts_keeping_root(cid).await
    }

    async fn create_name(&self, name: &KeptName) -> Result<KeptName, StoreError> {
        self.insert_name(name).await
    }

    async fn list_names(&self, account_id: i64) -> Result<Vec<KeptName>, StoreError> {
        self.names_of(account_id).await
    }

    async fn kept_name(&self, name: &str) -> Result<Option<KeptName>, StoreError> {
        self.live_name("name = $1", name, None).await
    }

    async fn kept_name_by_label(
        &self,
        account_id: i64,
        label: &str,
    ) -> Result<Option<KeptName>, StoreError> {
        self.live_name("label = $1", label, Some(account_id)).await
    }

    async fn update_name(
        &self,
        name: &KeptName,
        previous_sequence: u64,
    ) -> Result<bool, StoreError> {
        self.store_name_record(name, previous_sequence).await
    }

    async fn delete_name(
        &self,
        account_id: i64,
        name: &str,
    ) -> Result<Option<KeptName>, StoreError> {
        self.remove_name(account_id, name).await
    }

    async fn names_expiring(
        &self,
        before_ms: i64,
        limit: u32,
    ) -> Result<Vec<KeptName>, StoreError> {
        self.names_expiring_before(before_ms, limit).await
    }

    async fn put_foreign_record(&self, record: &ForeignRecord) -> Result<bool, StoreError> {
        self.keep_foreign_record(record).await
    }

    async fn foreign_record(&self, name: &str) -> Result<Option<ForeignRecord>, StoreError> {
        self.foreign_record_of(name).await
    }

    async fn forget_foreign_records(&self, before_ms: i64) -> Result<u64, StoreError> {
        self.forget_foreign_before(before_ms).await
    }

    async fn lock_collector(&self) -> Result<Option<CollectorLock>, StoreError> {
        B::lock_collector(&self.pool).await
    }

    async fn indexed_blocks(
        &self,
        after: &[u8],
        limit: u32,
    ) -> Result<Vec<IndexedBlock>, StoreError> {
        let rows = B::query(
            "SELECT b.multihash, p.name, b.\"offset\", b.length, b.without_links, p.size
               FROM blocks b
               JOIN packs p ON p.id = b.pack_id
              WHERE b.multihash > $1 ORDER BY b.multihash LIMIT $2",
        )
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(&mut self.conn().await?)
        .await?;
        Ok(rows
            .iter()
            .map(|row| IndexedBlock {
                multihash: row.blob("multihash"),
                location: location(row),
                pack_size: row.int("size") as u64,
            })
            .collect())
    }

    async fn apply_collection(
        &self,
        collection: &Collection,
        since_ms: i64,
        walked: &HashSet<String>,
    ) -> Result<Collected, StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        let sql = format!(
            "SELECT id FROM collector WHERE id = 1{}",
            B::DIALECT.for_update()
        );
        B::query(&sql).fetch_one(&mut tx).await?;
        let kept_since = B::query(
            "SELECT DISTINCT cid FROM operations
              WHERE status = 'completed' AND cid IS NOT NULL AND deleted_at IS NULL
                AND completed_at >= $1",
        )
        .bind(since_ms)
        .fetch_all(&mut tx)
        .await?;
        let new_roots: Vec<String> = kept_since
            .iter()
            .map(|row| row.text("cid"))
            .filter(|cid| !walked.contains(cid))
            .collect();
        if !new_roots.is_empty() {
            return Ok(Collected::NewRoots(new_roots));
        }
        if let Some(compaction) = &collection.compacted {
            Self::move_blocks(&mut tx, compaction).await?;
        }
        for multihash in &collection.dead {
            B::query("DELETE FROM blocks WHERE multihash = $1")
                .bind(multihash)
                .execute(&mut tx)
                .await?;
        }
        let mut packs_removed: Vec<String> = Vec::new();
        for name in &collection.emptied {
            let still_used = B::query(
                "SELECT 1 AS used FROM blocks
                  WHERE pack_id = (SELECT id FROM packs WHERE name = $1) LIMIT 1",
            )
            .bind(name)
            .fetch_optional(&mut tx)
            .await?
            .is_some();
            if still_used {
                continue;
            }
            let removed = B::query("DELETE FROM packs WHERE name = $1")
                .bind(name)
                .execute(&mut tx)
                .await?;
            if removed == 1 {
                B::query("INSERT INTO dead_packs (name) VALUES ($1)")
                    .bind(name)
                    .execute(&mut tx)
                    .await?;
                packs_removed.push(name.clone());
            }
        }
        tx.commit().await?;
        Ok(Collected::Applied { packs_removed })
    }

    async fn relocate_blocks(&self, moved: &Compaction) -> Result<u64, StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        let count = Self::move_blocks(&mut tx, moved).await?;
        // Dropping the transaction rolls the pack's row back with it.
        if count > 0 {
            tx.commit().await?;
        }
        Ok(count)
    }

    async fn dead_packs(&self) -> Result<Vec<String>, StoreError> {
        let rows = B::query("SELECT name FROM dead_packs ORDER BY name")
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.iter().map(|row| row.text("name")).collect())
    }

    async fn forget_dead_packs(&self, names: &[String]) -> Result<(), StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        for name in names {
            B::query("DELETE FROM dead_packs WHERE name = $1")
                .bind(name)
                .execute(&mut tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn announce_node(&self, node: &NodeRecord) -> Result<(), StoreError> {
        let addrs = node.addrs.join("\n");
        B::query(
            "INSERT INTO nodes (peer_id, addrs, gateway, seen_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (peer_id) DO UPDATE SET
                addrs = excluded.addrs, gateway = excluded.gateway, seen_at = excluded.seen_at",
        )
        .bind(&node.peer_id)
        .bind(&addrs)
        .bind(node.gateway.as_deref())
        .bind(node.seen_at_ms)
        .execute(&mut self.write_conn(Line::Requests).await?)
        .await?;
        Ok(())
    }

    async fn live_nodes(&self, seen_since_ms: i64) -> Result<Vec<NodeRecord>, StoreError> {
        let rows = B::query("SELECT * FROM nodes WHERE seen_at >= $1 ORDER BY peer_id")
            .bind(seen_since_ms)
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.iter().map(node_from).collect())
    }

    async fn forget_node(&self, peer_id: &str) -> Result<(), StoreError> {
        B::query("DELETE FROM nodes WHERE peer_id = $1")
            .bind(peer_id)
            .execute(&mut self.write_conn(Line::Requests).await?)
            .await?;
        Ok(())
    }

    async fn completed_roots(
        &self,
        after: LogPlace,
        limit: u32,
    ) -> Result<Vec<(LogPlace, String)>, StoreError> {
        let completed = "status = 'completed' AND deleted_at IS NULL";
        self.root_log("completed_at", completed, after, limit).await
    }

    async fn count_completed_roots(&self, after: LogPlace) -> Result<u64, StoreError> {
        let row = B::query(
            "SELECT COUNT(*) AS n FROM operations
             WHERE status = 'completed' AND cid IS NOT NULL AND deleted_at IS NULL
               AND (completed_at, id) > ($1, $2)",
        )
        .bind(after.at_ms)
        .bind(after.operation_id)
        .fetch_one(&mut self.conn().await?)
        .await?;
        Ok(row.int("n") as u64)
    }

    async fn distinct_roots(&self, after: &str, limit: u32) -> Result<Vec<String>, StoreError> {
        let rows = B::query(
            "SELECT DISTINCT cid FROM operations
             WHERE status = 'completed' AND deleted_at IS NULL AND cid > $1
             ORDER BY cid LIMIT $2",
        )
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(&mut self.conn().await?)
        .await?;
        Ok(rows.iter().map(|row| row.text("cid")).collect())
    }

    async fn provide_progress(&self, peer_id: &str) -> Result<Option<ProvideProgress>, StoreError> {
        let row = B::query(
            "SELECT completed_at, operation_id, pass_began_at, pass_reached FROM provide_progress
             WHERE peer_id = $1",
        )
        .bind(peer_id)
        .fetch_optional(&mut self.conn().await?)
        .await?;
        Ok(row.map(|row| ProvideProgress {
            through: LogPlace {
                at_ms: row.int("completed_at"),
                operation_id: row.int("operation_id"),
            },
            pass: row.maybe_int("pass_began_at").map(|began_at_ms| SweepPass {
                began_at_ms,
                // Stored as a signed integer: the same 64 bits.
                reached: row.int("pass_reached") as u64,
            }),
        }))
    }

    async fn save_provide_progress(
        &self,
        peer_id: &str,
        progress: &ProvideProgress,
    ) -> Result<(), StoreError> {
        B::query(
            "INSERT INTO provide_progress
                (peer_id, completed_at, operation_id, pass_began_at, pass_reached)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (peer_id) DO UPDATE SET completed_at = excluded.completed_at,
                operation_id = excluded.operation_id, pass_began_at = excluded.pass_began_at,
                pass_reached = excluded.pass_reached",
        )
        .bind(peer_id)
        .bind(progress.through.at_ms)
        .bind(progress.through.operation_id)
        .bind(progress.pass.map(|pass| pass.began_at_ms))
        .bind(progress.pass.map_or(0, |pass| pass.reached as i64))
        .execute(&mut self.write_conn(Line::Requests).await?)
        .await?;
        Ok(())
    }

    async fn deleted_roots(
        &self,
        after: LogPlace,
        limit: u32,
    ) -> Result<Vec<(LogPlace, String)>, StoreError> {
        self.root_log("deleted_at", "deleted_at IS NOT NULL", after, limit)
            .await
    }

    async fn ipni_chain(&self, peer_id: &str) -> Result<Option<IpniChain>, StoreError> {
        self.read_ipni_chain(peer_id).await
    }

    async fn ipni_block(&self, peer_id: &str, cid: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.read_ipni_block(peer_id, cid).await
    }

    async fn ipni_not_advertised(
        &self,
        peer_id: &str,
        roots: &[String],
    ) -> Result<Vec<String>, StoreError> {
        self.ipni_roots(peer_id, roots, IpniRoots::NotAdvertised)
            .await
    }

    async fn ipni_withdrawn(
        &self,
        peer_id: &str,
        roots: &[String],
    ) -> Result<Vec<String>, StoreError> {
        self.ipni_roots(peer_id, roots, IpniRoots::Withdrawn).await
    }

    async fn publish_ipni(
        &self,
        peer_id: &str,
        publication: &IpniPublication,
    ) -> Result<(), StoreError> {
        self.write_ipni_publication(peer_id, publication).await
    }
}
