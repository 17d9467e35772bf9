//! [`TusRecords`] on [`SqlStore`].

use super::*;

#[async_trait]
impl<B: Backend> TusRecords for SqlStore<B> {
    async fn create_tus_upload(&self, new: NewTusUpload) -> Result<TusUpload, StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        let operation_id = match &new.upload {
            Some(upload) => {
                let operation =
                    commit::insert_operation(&mut tx, upload, Starts::Receiving).await?;
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
                "UPDATE operations SET status = 'failed', status_message = $1, error_code = $2,
                    error_message = $3, updated_at = $4, completed_at = $5
                  WHERE id = $6 AND status IN ('pending', 'processing')",
            )
            .bind(message)
            .bind(crate::model::ErrorCode::Gone.as_str())
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
}
