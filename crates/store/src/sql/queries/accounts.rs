//! [`Accounts`] on [`SqlStore`].

use super::*;

#[async_trait]
impl<B: Backend> Accounts for SqlStore<B> {
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

    async fn account_by_id(&self, id: i64) -> Result<Option<Account>, StoreError> {
        self.account_where("SELECT * FROM accounts WHERE id = $1", id)
            .await
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

    async fn usage(
        &self,
        account_id: i64,
        start_ms: i64,
        end_ms: i64,
        month: &str,
    ) -> Result<Usage, StoreError> {
        let mut conn = self.conn().await?;
        let row = B::query(
            // PostgreSQL sums BIGINTs into NUMERIC: cast back.
            "SELECT
                CAST(COALESCE(SUM(CASE WHEN kind <> 'pin' AND status = 'completed'
                                        AND deleted_at IS NULL
                                       THEN 1 ELSE 0 END), 0) AS BIGINT) AS uploads,
                CAST(COALESCE(SUM(CASE WHEN kind = 'pin' AND status = 'completed'
                                        AND deleted_at IS NULL
                                       THEN 1 ELSE 0 END), 0) AS BIGINT) AS pins,
                CAST(COALESCE(SUM(CASE WHEN kind <> 'pin' AND created_at >= $1 AND created_at < $2
                                       THEN size ELSE 0 END), 0) AS BIGINT) AS uploaded
               FROM operations WHERE account_id = $3",
        )
        .bind(start_ms)
        .bind(end_ms)
        .bind(account_id)
        .fetch_one(&mut conn)
        .await?;
        let served =
            B::query("SELECT bytes FROM served_bytes WHERE account_id = $1 AND month = $2")
                .bind(account_id)
                .bind(month)
                .fetch_optional(&mut conn)
                .await?
                .map(|row| row.int("bytes"));
        Ok(Usage {
            uploads: row.int("uploads") as u64,
            pins: row.int("pins") as u64,
            uploaded_bytes: row.int("uploaded") as u64,
            served_bytes: served.unwrap_or(0) as u64,
        })
    }

    async fn add_served_bytes(&self, month: &str, served: &[(i64, u64)]) -> Result<(), StoreError> {
        if served.is_empty() {
            return Ok(());
        }
        let mut tx = self.write(Line::Requests).await?;
        for (account_id, bytes) in served {
            B::query(
                "INSERT INTO served_bytes (account_id, month, bytes) VALUES ($1, $2, $3)
                 ON CONFLICT (account_id, month)
                 DO UPDATE SET bytes = served_bytes.bytes + excluded.bytes",
            )
            .bind(*account_id)
            .bind(month)
            .bind(*bytes as i64)
            .execute(&mut tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
