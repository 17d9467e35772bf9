//! The shared metadata store: PostgreSQL through sqlx, for several stateless nodes.
//!
//! The same `MetadataStore` contract as SQLite (the shared suite proves it). Differences that
//! matter: queue claims take the row with `FOR UPDATE SKIP LOCKED`, so nodes never wait on or
//! double-claim one another's operations; quota checks lock the account row, so two nodes
//! committing at once cannot both spend the same remaining bytes; and migrations run under an
//! advisory lock, so nodes starting together apply each script once.

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::{Postgres, Row, Transaction};

use crate::model::{
    Account, BlockLocation, LeaseAttempt, NewTusUpload, NewUpload, NodeRecord, Operation,
    OperationError, OperationFilter, OperationRef, OperationStatus, ProvideProgress, RootKey,
    TokenInfo, TusConcat, TusState, TusUpload,
};
use crate::packs::SealedPack;
use crate::rows::{
    account_from, node_from, now_ms, operation_from, token_from, tus_from, unique_violation,
};
use crate::{AccountLimits, MetadataStore, StoreError};

/// Schema versions, applied in order. Never edit a released entry: add a new one.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE accounts (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    upload_limit BIGINT NOT NULL,
    quota BIGINT,
    stored_bytes BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL
);
CREATE TABLE tokens (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    prefix TEXT NOT NULL,
    hash BYTEA NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE TABLE operations (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    upload_id TEXT NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT NOT NULL,
    progress DOUBLE PRECISION NOT NULL,
    cid TEXT,
    error_code TEXT,
    error_message TEXT,
    name TEXT NOT NULL,
    size BIGINT NOT NULL,
    mime_type TEXT NOT NULL,
    archive_mode TEXT,
    profile TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    completed_at BIGINT,
    claimed_by TEXT,
    claimed_until BIGINT,
    -- An operation is claimable once its bytes are all there (TUS uploads fill in over time).
    ready BIGINT NOT NULL DEFAULT 1
);
CREATE INDEX operations_by_account ON operations(account_id, id DESC);
CREATE INDEX operations_queue ON operations(status, id);
CREATE TABLE packs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    size BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE TABLE blocks (
    multihash BYTEA PRIMARY KEY,
    pack_id BIGINT NOT NULL REFERENCES packs(id),
    "offset" BIGINT NOT NULL,
    length BIGINT NOT NULL
);
CREATE TABLE tus_uploads (
    id TEXT PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    operation_id BIGINT REFERENCES operations(id),
    length BIGINT,
    metadata TEXT NOT NULL,
    concat TEXT,
    parts TEXT,
    state TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX tus_uploads_expiry ON tus_uploads(state, expires_at);
"#,
    r#"
-- One writer per TUS upload across nodes: a lease, renewed while held (see server tus/lock.rs).
CREATE TABLE upload_leases (
    upload_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    until_ms BIGINT NOT NULL,
    stop_requested BIGINT NOT NULL
);
"#,
    r#"
-- Rate limits that nodes sharing the database count together: one token bucket per
-- (account, endpoint class).
CREATE TABLE rate_buckets (
    account_id BIGINT NOT NULL,
    endpoint TEXT NOT NULL,
    tokens DOUBLE PRECISION NOT NULL,
    refilled_ms BIGINT NOT NULL,
    granted BIGINT NOT NULL,
    PRIMARY KEY (account_id, endpoint)
);
"#,
    r#"
-- The IPFS nodes of this service, each refreshing its row while it runs, so that delegated
-- routing on any node names them all as providers.
CREATE TABLE nodes (
    peer_id TEXT PRIMARY KEY,
    addrs TEXT NOT NULL,
    gateway TEXT,
    seen_at BIGINT NOT NULL
);
"#,
    r#"
-- The provide log is the completed uploads in completion order; each node keeps how far it
-- has provided them, and when its last reprovide sweep (over distinct roots) started.
CREATE INDEX operations_completed ON operations(completed_at, id)
    WHERE status = 'completed' AND cid IS NOT NULL;
CREATE INDEX operations_roots ON operations(cid) WHERE status = 'completed';
CREATE TABLE provide_progress (
    peer_id TEXT PRIMARY KEY,
    completed_at BIGINT NOT NULL,
    operation_id BIGINT NOT NULL,
    last_sweep_at BIGINT
);
"#,
];

/// Any constant both nodes agree on: the advisory lock that serialises migrations.
const MIGRATION_LOCK: i64 = 0x6361_6972_6e00;

pub struct PostgresStore {
    pool: PgPool,
}

impl PostgresStore {
    /// Connect to `url` (`postgres://...`) and bring the schema up to date.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(Duration::from_secs(10))
            .connect(url)
            .await?;
        let store = Self { pool };
        store.migrate().await?;
        Ok(store)
    }

    /// A write transaction. Rows that a decision reads are locked explicitly (`FOR UPDATE`).
    async fn write(&self) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
        self.pool.begin().await
    }

    /// Close every connection; later calls fail as a store that is down would.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let mut tx = self.write().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(MIGRATION_LOCK)
            .execute(&mut *tx)
            .await?;
        sqlx::raw_sql("CREATE TABLE IF NOT EXISTS cairn_schema (version BIGINT NOT NULL)")
            .execute(&mut *tx)
            .await?;
        let current: Option<i64> = sqlx::query_scalar("SELECT max(version) FROM cairn_schema")
            .fetch_one(&mut *tx)
            .await?;
        for (index, script) in MIGRATIONS
            .iter()
            .enumerate()
            .skip(current.unwrap_or(0) as usize)
        {
            sqlx::raw_sql(script).execute(&mut *tx).await?;
            sqlx::query("INSERT INTO cairn_schema (version) VALUES ($1)")
                .bind(index as i64 + 1)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn account_where(
        &self,
        clause: &str,
        bind: Bind<'_>,
    ) -> Result<Option<Account>, StoreError> {
        let sql = format!("SELECT * FROM accounts WHERE {clause}");
        let query = sqlx::query(&sql);
        let query = match bind {
            Bind::Int(v) => query.bind(v),
            Bind::Text(v) => query.bind(v),
            Bind::Blob(v) => query.bind(v),
        };
        Ok(query
            .fetch_optional(&self.pool)
            .await?
            .map(|r| account_from(&r)))
    }

    async fn insert_operation(
        tx: &mut Transaction<'_, Postgres>,
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
        let id = sqlx::query(
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
        .fetch_one(&mut **tx)
        .await?
        .get(0);
        Ok(id)
    }

    /// Index a sealed pack's blocks and charge the bytes actually added to the account, inside
    /// the caller's transaction. Over the quota nothing is changed (the transaction is dropped).
    async fn store_pack(
        tx: &mut Transaction<'_, Postgres>,
        account_id: i64,
        pack: Option<&SealedPack>,
    ) -> Result<(), StoreError> {
        let mut added = 0u64;
        if let Some(pack) = pack {
            let pack_id: i64 = sqlx::query_scalar(
                "INSERT INTO packs (name, size, created_at) VALUES ($1, $2, $3) RETURNING id",
            )
            .bind(&pack.name)
            .bind(pack.size as i64)
            .bind(now_ms())
            .fetch_one(&mut **tx)
            .await?;
            for block in &pack.blocks {
                // Another upload may have stored the same block meanwhile: the first copy wins
                // and only bytes actually added count against the quota.
                let inserted = sqlx::query(
                    "INSERT INTO blocks (multihash, pack_id, \"offset\", length) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                )
                .bind(&block.multihash)
                .bind(pack_id)
                .bind(block.offset as i64)
                .bind(block.length as i64)
                .execute(&mut **tx)
                .await?
                .rows_affected();
                if inserted == 1 {
                    added += block.length;
                }
            }
        }
        // Locked, so a concurrent commit on another node waits and sees this one's bytes.
        let account = sqlx::query("SELECT * FROM accounts WHERE id = $1 FOR UPDATE")
            .bind(account_id)
            .fetch_one(&mut **tx)
            .await?;
        if let Some(remaining) = account_from(&account).remaining_quota() {
            if added > remaining {
                return Err(StoreError::QuotaExceeded {
                    needed: added,
                    remaining,
                });
            }
        }
        sqlx::query("UPDATE accounts SET stored_bytes = stored_bytes + $1 WHERE id = $2")
            .bind(added as i64)
            .bind(account_id)
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    async fn operation_by_id(&self, id: i64) -> Result<Operation, StoreError> {
        let row = sqlx::query("SELECT * FROM operations WHERE id = $1")
            .bind(id)
            .fetch_one(&self.pool)
            .await?;
        operation_from(&row)
    }
}

enum Bind<'a> {
    Int(i64),
    Text(&'a str),
    Blob(&'a [u8]),
}

#[async_trait]
impl MetadataStore for PostgresStore {
    async fn create_account(
        &self,
        name: &str,
        limits: AccountLimits,
    ) -> Result<Account, StoreError> {
        let result = sqlx::query(
            "INSERT INTO accounts (name, upload_limit, quota, created_at) VALUES ($1, $2, $3, $4)
             RETURNING id",
        )
        .bind(name)
        .bind(limits.upload_limit as i64)
        .bind(limits.quota.map(|q| q as i64))
        .bind(now_ms())
        .fetch_one(&self.pool)
        .await;
        match result {
            Ok(row) => self
                .account_where("id = $1", Bind::Int(row.get(0)))
                .await?
                .ok_or_else(|| StoreError::NotFound(format!("account {name:?}"))),
            Err(e) if unique_violation(&e) => {
                Err(StoreError::Conflict(format!("account {name:?}")))
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn account_by_name(&self, name: &str) -> Result<Option<Account>, StoreError> {
        self.account_where("name = $1", Bind::Text(name)).await
    }

    async fn list_accounts(&self) -> Result<Vec<Account>, StoreError> {
        let rows = sqlx::query("SELECT * FROM accounts ORDER BY id")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(account_from).collect())
    }

    async fn set_account_limits(
        &self,
        name: &str,
        upload_limit: Option<u64>,
        quota: Option<Option<u64>>,
    ) -> Result<Account, StoreError> {
        let mut tx = self.write().await?;
        if let Some(limit) = upload_limit {
            sqlx::query("UPDATE accounts SET upload_limit = $1 WHERE name = $2")
                .bind(limit as i64)
                .bind(name)
                .execute(&mut *tx)
                .await?;
        }
        if let Some(quota) = quota {
            sqlx::query("UPDATE accounts SET quota = $1 WHERE name = $2")
                .bind(quota.map(|q| q as i64))
                .bind(name)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        self.account_by_name(name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("account {name:?}")))
    }

    async fn add_token(
        &self,
        account_id: i64,
        hash: &[u8; 32],
        prefix: &str,
    ) -> Result<TokenInfo, StoreError> {
        let id = sqlx::query(
            "INSERT INTO tokens (account_id, prefix, hash, created_at) VALUES ($1, $2, $3, $4)
             RETURNING id",
        )
        .bind(account_id)
        .bind(prefix)
        .bind(&hash[..])
        .bind(now_ms())
        .fetch_one(&self.pool)
        .await?
        .get::<i64, _>(0);
        let row = sqlx::query("SELECT * FROM tokens WHERE id = $1")
            .bind(id)
            .fetch_one(&self.pool)
            .await?;
        Ok(token_from(&row))
    }

    async fn revoke_token(&self, prefix_or_id: &str) -> Result<TokenInfo, StoreError> {
        let rows = match prefix_or_id.parse::<i64>() {
            Ok(id) => sqlx::query("SELECT * FROM tokens WHERE id = $1").bind(id),
            // Either string may be the longer one: a full token, or a few characters of one.
            // Exact comparisons, not LIKE, so `%` and `_` typed by an admin match literally.
            Err(_) => sqlx::query(
                "SELECT * FROM tokens WHERE substr($1, 1, length(prefix)) = prefix
                    OR substr(prefix, 1, length($1)) = $1",
            )
            .bind(prefix_or_id),
        }
        .fetch_all(&self.pool)
        .await?;
        let token = match rows.as_slice() {
            [row] => token_from(row),
            [] => return Err(StoreError::NotFound(format!("token {prefix_or_id:?}"))),
            _ => {
                return Err(StoreError::Conflict(format!(
                    "more than one token matching {prefix_or_id:?}"
                )))
            }
        };
        sqlx::query("UPDATE tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(now_ms())
            .bind(token.id)
            .execute(&self.pool)
            .await?;
        Ok(TokenInfo {
            revoked: true,
            ..token
        })
    }

    async fn account_for_token(&self, hash: &[u8; 32]) -> Result<Option<Account>, StoreError> {
        self.account_where(
            "id = (SELECT account_id FROM tokens WHERE hash = $1 AND revoked_at IS NULL)",
            Bind::Blob(&hash[..]),
        )
        .await
    }

    async fn has_block(&self, multihash: &[u8]) -> Result<bool, StoreError> {
        Ok(sqlx::query("SELECT 1 FROM blocks WHERE multihash = $1")
            .bind(multihash)
            .fetch_optional(&self.pool)
            .await?
            .is_some())
    }

    async fn block_location(&self, multihash: &[u8]) -> Result<Option<BlockLocation>, StoreError> {
        let row = sqlx::query(
            "SELECT packs.name, blocks.\"offset\", blocks.length FROM blocks
             JOIN packs ON packs.id = blocks.pack_id WHERE multihash = $1",
        )
        .bind(multihash)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| BlockLocation {
            pack: r.get(0),
            offset: r.get::<i64, _>(1) as u64,
            length: r.get::<i64, _>(2) as u64,
        }))
    }

    async fn unfinished_upload_ids(&self) -> Result<Vec<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT upload_id FROM operations WHERE status IN ('pending', 'processing')",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    async fn block_locations(
        &self,
        multihashes: &[Vec<u8>],
    ) -> Result<Vec<(Vec<u8>, BlockLocation)>, StoreError> {
        let mut found = Vec::with_capacity(multihashes.len());
        for batch in multihashes.chunks(1000) {
            let rows = sqlx::query(
                "SELECT blocks.multihash, packs.name, blocks.\"offset\", blocks.length FROM blocks
                 JOIN packs ON packs.id = blocks.pack_id WHERE multihash = ANY($1)",
            )
            .bind(batch)
            .fetch_all(&self.pool)
            .await?;
            for row in rows {
                found.push((
                    row.get::<Vec<u8>, _>(0),
                    BlockLocation {
                        pack: row.get(1),
                        offset: row.get::<i64, _>(2) as u64,
                        length: row.get::<i64, _>(3) as u64,
                    },
                ));
            }
        }
        Ok(found)
    }

    async fn pack_names(&self) -> Result<Vec<String>, StoreError> {
        Ok(sqlx::query_scalar("SELECT name FROM packs")
            .fetch_all(&self.pool)
            .await?)
    }

    async fn commit_completed_upload(
        &self,
        upload: NewUpload,
        pack: Option<SealedPack>,
        cid: &str,
    ) -> Result<Operation, StoreError> {
        let mut tx = self.write().await?;
        Self::store_pack(&mut tx, upload.account_id, pack.as_ref()).await?;
        let id = Self::insert_operation(
            &mut tx,
            &upload,
            OperationStatus::Completed,
            "stored",
            Some(cid),
            None,
        )
        .await?;
        tx.commit().await?;
        self.operation_by_id(id).await
    }

    async fn record_upload(
        &self,
        upload: NewUpload,
        failure: Option<OperationError>,
    ) -> Result<Operation, StoreError> {
        let mut tx = self.write().await?;
        let (status, message) = match &failure {
            Some(f) => (OperationStatus::Failed, f.message.clone()),
            None => (
                OperationStatus::Pending,
                "waiting to be processed".to_owned(),
            ),
        };
        let id = Self::insert_operation(&mut tx, &upload, status, &message, None, failure.as_ref())
            .await?;
        tx.commit().await?;
        self.operation_by_id(id).await
    }

    async fn account_by_id(&self, id: i64) -> Result<Option<Account>, StoreError> {
        self.account_where("id = $1", Bind::Int(id)).await
    }

    async fn claim_next(
        &self,
        worker: &str,
        lease: Duration,
    ) -> Result<Option<Operation>, StoreError> {
        let now = now_ms();
        let row = sqlx::query(
            "UPDATE operations
                SET status = 'processing', status_message = 'processing',
                    claimed_by = $1, claimed_until = $2, updated_at = $3
              WHERE id = (SELECT id FROM operations
                           WHERE (status = 'pending' AND ready = 1)
                              OR (status = 'processing' AND claimed_until < $4)
                           ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
              RETURNING *",
        )
        .bind(worker)
        .bind(now + lease.as_millis() as i64)
        .bind(now)
        .bind(now)
        .fetch_optional(&self.pool)
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
        let updated = sqlx::query(
            "UPDATE operations
                SET progress = GREATEST(progress, $1), status_message = $2, claimed_until = $3, updated_at = $4
              WHERE id = $5 AND claimed_by = $6 AND status = 'processing'",
        )
        .bind(percent.clamp(0.0, 99.0))
        .bind(message)
        .bind(now + lease.as_millis() as i64)
        .bind(now)
        .bind(id)
        .bind(worker)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(updated == 1)
    }

    async fn complete_operation(
        &self,
        id: i64,
        worker: &str,
        pack: Option<SealedPack>,
        cid: &str,
    ) -> Result<Operation, StoreError> {
        let mut tx = self.write().await?;
        let op = sqlx::query(
            "SELECT * FROM operations WHERE id = $1 AND claimed_by = $2 AND status = 'processing'
             FOR UPDATE",
        )
        .bind(id)
        .bind(worker)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("operation {id} claimed by {worker}")))?;
        let op = operation_from(&op)?;
        Self::store_pack(&mut tx, op.account_id, pack.as_ref()).await?;
        let now = now_ms();
        sqlx::query(
            "UPDATE operations SET status = 'completed', status_message = 'stored', progress = 100,
                cid = $1, updated_at = $2, completed_at = $3 WHERE id = $4",
        )
        .bind(cid)
        .bind(now)
        .bind(now)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        self.operation_by_id(id).await
    }

    async fn fail_operation(
        &self,
        id: i64,
        worker: &str,
        failure: OperationError,
    ) -> Result<Operation, StoreError> {
        let now = now_ms();
        let updated = sqlx::query(
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
        .execute(&self.pool)
        .await?
        .rows_affected();
        if updated == 0 {
            return Err(StoreError::NotFound(format!(
                "operation {id} claimed by {worker}"
            )));
        }
        self.operation_by_id(id).await
    }

    async fn create_tus_upload(&self, new: NewTusUpload) -> Result<TusUpload, StoreError> {
        let mut tx = self.write().await?;
        let operation_id = match &new.upload {
            Some(upload) => {
                let message = "receiving bytes";
                let id = Self::insert_operation(
                    &mut tx,
                    upload,
                    OperationStatus::Pending,
                    message,
                    None,
                    None,
                )
                .await?;
                sqlx::query("UPDATE operations SET ready = 0 WHERE id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                Some(id)
            }
            None => None,
        };
        let (concat, parts) = match &new.concat {
            TusConcat::None => (None, None),
            TusConcat::Partial => (Some("partial"), None),
            TusConcat::Final(parts) => (Some("final"), Some(parts.join(" "))),
        };
        sqlx::query(
            "INSERT INTO tus_uploads (id, account_id, operation_id, length, metadata, concat, parts,
                state, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 'receiving', $8, $9)",
        )
        .bind(&new.id)
        .bind(new.account_id)
        .bind(operation_id)
        .bind(new.length.map(|l| l as i64))
        .bind(&new.metadata)
        .bind(concat)
        .bind(parts)
        .bind(now_ms())
        .bind(new.expires_at_ms)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        self.tus_upload(new.account_id, &new.id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("TUS upload {}", new.id)))
    }

    async fn tus_upload(&self, account_id: i64, id: &str) -> Result<Option<TusUpload>, StoreError> {
        let row = sqlx::query("SELECT * FROM tus_uploads WHERE id = $1 AND account_id = $2")
            .bind(id)
            .bind(account_id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(tus_from).transpose()
    }

    async fn set_tus_length(&self, id: &str, length: u64) -> Result<(), StoreError> {
        let updated =
            sqlx::query("UPDATE tus_uploads SET length = $1 WHERE id = $2 AND length IS NULL")
                .bind(length as i64)
                .bind(id)
                .execute(&self.pool)
                .await?
                .rows_affected();
        if updated == 0 {
            return Err(StoreError::Conflict(format!(
                "the length of TUS upload {id}"
            )));
        }
        Ok(())
    }

    async fn complete_tus_upload(&self, id: &str, size: u64) -> Result<Option<i64>, StoreError> {
        let mut tx = self.write().await?;
        let operation_id: Option<i64> =
            sqlx::query_scalar("SELECT operation_id FROM tus_uploads WHERE id = $1")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or_else(|| StoreError::NotFound(format!("TUS upload {id}")))?;
        sqlx::query(
            "UPDATE tus_uploads SET state = 'complete' WHERE id = $1 AND state = 'receiving'",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if let Some(operation_id) = operation_id {
            sqlx::query(
                "UPDATE operations SET ready = 1, size = $1, status_message = 'waiting to be processed',
                    updated_at = $2 WHERE id = $3 AND status = 'pending'",
            )
            .bind(size as i64)
            .bind(now_ms())
            .bind(operation_id)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(operation_id)
    }

    async fn end_tus_upload(&self, id: &str, state: TusState) -> Result<(), StoreError> {
        let mut tx = self.write().await?;
        let operation_id: Option<i64> = sqlx::query_scalar(
            "UPDATE tus_uploads SET state = $1 WHERE id = $2 AND state = 'receiving'
             RETURNING operation_id",
        )
        .bind(state.as_str())
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?
        .flatten();
        if let Some(operation_id) = operation_id {
            let now = now_ms();
            let message = match state {
                TusState::Expired => "the upload expired before it was complete",
                _ => "the upload was terminated before it was complete",
            };
            sqlx::query(
                "UPDATE operations SET status = 'failed', status_message = $1, error_code = 'gone',
                    error_message = $2, updated_at = $3, completed_at = $4
                  WHERE id = $5 AND status IN ('pending', 'processing')",
            )
            .bind(message)
            .bind(message)
            .bind(now)
            .bind(now)
            .bind(operation_id)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn expired_tus_uploads(&self, now_ms: i64) -> Result<Vec<TusUpload>, StoreError> {
        let rows = sqlx::query(
            "SELECT * FROM tus_uploads WHERE state = 'receiving' AND expires_at < $1 ORDER BY expires_at",
        )
        .bind(now_ms)
        .fetch_all(&self.pool)
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
        // The holder may let go between the two statements: then try again.
        loop {
            let taken: Option<String> = sqlx::query_scalar(
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
            .fetch_optional(&self.pool)
            .await?;
            if taken.is_some() {
                return Ok(LeaseAttempt::Taken);
            }
            let until: Option<i64> =
                sqlx::query_scalar("SELECT until_ms FROM upload_leases WHERE upload_id = $1")
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await?;
            if let Some(until_ms) = until {
                return Ok(LeaseAttempt::Held { until_ms });
            }
        }
    }

    async fn renew_upload_lease(
        &self,
        id: &str,
        holder: &str,
        until_ms: i64,
    ) -> Result<Option<bool>, StoreError> {
        let stop: Option<i64> = sqlx::query_scalar(
            "UPDATE upload_leases SET until_ms = $1
              WHERE upload_id = $2 AND holder = $3
              RETURNING stop_requested",
        )
        .bind(until_ms)
        .bind(id)
        .bind(holder)
        .fetch_optional(&self.pool)
        .await?;
        Ok(stop.map(|stop| stop != 0))
    }

    async fn ask_upload_holder_to_stop(&self, id: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE upload_leases SET stop_requested = 1 WHERE upload_id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn release_upload_lease(&self, id: &str, holder: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM upload_leases WHERE upload_id = $1 AND holder = $2")
            .bind(id)
            .bind(holder)
            .execute(&self.pool)
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
        let (tokens, granted): (f64, i64) = sqlx::query_as(
            "INSERT INTO rate_buckets (account_id, endpoint, tokens, refilled_ms, granted)
             VALUES ($1, $2, $3 - 1, $4, 1)
             ON CONFLICT (account_id, endpoint) DO UPDATE SET
                tokens = CASE WHEN LEAST($3, rate_buckets.tokens + GREATEST(0, $4 - rate_buckets.refilled_ms) * $5) >= 1
                              THEN LEAST($3, rate_buckets.tokens + GREATEST(0, $4 - rate_buckets.refilled_ms) * $5) - 1
                              ELSE LEAST($3, rate_buckets.tokens + GREATEST(0, $4 - rate_buckets.refilled_ms) * $5) END,
                granted = CASE WHEN LEAST($3, rate_buckets.tokens + GREATEST(0, $4 - rate_buckets.refilled_ms) * $5) >= 1 THEN 1 ELSE 0 END,
                refilled_ms = GREATEST($4, rate_buckets.refilled_ms)
             RETURNING tokens, granted",
        )
        .bind(account_id)
        .bind(endpoint)
        .bind(f64::from(quota))
        .bind(now_ms)
        .bind(per_ms)
        .fetch_one(&self.pool)
        .await?;
        Ok((granted != 0, tokens))
    }

    async fn operation(
        &self,
        account_id: i64,
        id: &OperationRef,
    ) -> Result<Option<Operation>, StoreError> {
        let query = match id {
            OperationRef::Id(id) => {
                sqlx::query("SELECT * FROM operations WHERE id = $1 AND account_id = $2").bind(*id)
            }
            OperationRef::UploadId(upload) => {
                sqlx::query("SELECT * FROM operations WHERE upload_id = $1 AND account_id = $2")
                    .bind(upload.as_str())
            }
        };
        let row = query.bind(account_id).fetch_optional(&self.pool).await?;
        row.as_ref().map(operation_from).transpose()
    }

    async fn operation_counts(&self) -> Result<Vec<(OperationStatus, u64)>, StoreError> {
        let rows = sqlx::query("SELECT status, COUNT(*) FROM operations GROUP BY status")
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| {
                let status = OperationStatus::from_str(&row.get::<String, _>(0))
                    .map_err(|e| StoreError::Database(sqlx::Error::Decode(e.into())))?;
                Ok((status, row.get::<i64, _>(1) as u64))
            })
            .collect()
    }

    async fn list_operations(
        &self,
        account_id: i64,
        filter: &OperationFilter,
    ) -> Result<Vec<Operation>, StoreError> {
        let rows = sqlx::query(
            "SELECT * FROM operations WHERE account_id = $1
               AND ($2 IS NULL OR status = $3) AND ($4 IS NULL OR cid = $5) AND ($6 IS NULL OR id < $7)
             ORDER BY id DESC LIMIT $8",
        )
        .bind(account_id)
        .bind(filter.status.map(|s| s.as_str()))
        .bind(filter.status.map(|s| s.as_str()))
        .bind(filter.cid.as_deref())
        .bind(filter.cid.as_deref())
        .bind(filter.before_id)
        .bind(filter.before_id)
        .bind(i64::from(filter.limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(operation_from).collect()
    }

    async fn announce_node(&self, node: &NodeRecord) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO nodes (peer_id, addrs, gateway, seen_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (peer_id) DO UPDATE SET
                addrs = excluded.addrs, gateway = excluded.gateway, seen_at = excluded.seen_at",
        )
        .bind(&node.peer_id)
        .bind(node.addrs.join("\n"))
        .bind(node.gateway.as_deref())
        .bind(node.seen_at_ms)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn live_nodes(&self, seen_since_ms: i64) -> Result<Vec<NodeRecord>, StoreError> {
        let rows = sqlx::query("SELECT * FROM nodes WHERE seen_at >= $1 ORDER BY peer_id")
            .bind(seen_since_ms)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(node_from).collect())
    }

    async fn forget_node(&self, peer_id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM nodes WHERE peer_id = $1")
            .bind(peer_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn completed_roots(
        &self,
        after: RootKey,
        limit: u32,
    ) -> Result<Vec<(RootKey, String)>, StoreError> {
        let rows: Vec<(i64, i64, String)> = sqlx::query_as(
            "SELECT completed_at, id, cid FROM operations
             WHERE status = 'completed' AND cid IS NOT NULL AND (completed_at, id) > ($1, $2)
             ORDER BY completed_at, id LIMIT $3",
        )
        .bind(after.completed_at_ms)
        .bind(after.operation_id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(completed_at_ms, operation_id, cid)| {
                let key = RootKey {
                    completed_at_ms,
                    operation_id,
                };
                (key, cid)
            })
            .collect())
    }

    async fn count_completed_roots(&self, after: RootKey) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM operations
             WHERE status = 'completed' AND cid IS NOT NULL AND (completed_at, id) > ($1, $2)",
        )
        .bind(after.completed_at_ms)
        .bind(after.operation_id)
        .fetch_one(&self.pool)
        .await?;
        Ok(count as u64)
    }

    async fn distinct_roots(&self, after: &str, limit: u32) -> Result<Vec<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT DISTINCT cid FROM operations
             WHERE status = 'completed' AND cid > $1 ORDER BY cid LIMIT $2",
        )
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?)
    }

    async fn provide_progress(&self, peer_id: &str) -> Result<Option<ProvideProgress>, StoreError> {
        let row: Option<(i64, i64, Option<i64>)> = sqlx::query_as(
            "SELECT completed_at, operation_id, last_sweep_at FROM provide_progress
             WHERE peer_id = $1",
        )
        .bind(peer_id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(
            |(completed_at_ms, operation_id, last_sweep_at_ms)| ProvideProgress {
                through: RootKey {
                    completed_at_ms,
                    operation_id,
                },
                last_sweep_at_ms,
            },
        ))
    }

    async fn save_provide_progress(
        &self,
        peer_id: &str,
        progress: &ProvideProgress,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO provide_progress (peer_id, completed_at, operation_id, last_sweep_at)
             VALUES ($1, $2, $3, $4)
             ON CONFLICT (peer_id) DO UPDATE SET completed_at = excluded.completed_at,
                operation_id = excluded.operation_id, last_sweep_at = excluded.last_sweep_at",
        )
        .bind(peer_id)
        .bind(progress.through.completed_at_ms)
        .bind(progress.through.operation_id)
        .bind(progress.last_sweep_at_ms)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
