//! [`Uploads`] on [`SqlStore`].

use super::*;

#[async_trait]
impl<B: Backend> Uploads for SqlStore<B> {
    async fn change_upload(
        &self,
        account_id: i64,
        upload_id: &str,
        name: Option<String>,
        keyvalues: BTreeMap<String, Option<String>>,
    ) -> Result<Option<Operation>, StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        let row = B::query(&format!(
            "SELECT * FROM operations
              WHERE account_id = $1 AND upload_id = $2 AND deleted_at IS NULL
                AND kind <> 'pin'{}",
            B::DIALECT.for_update()
        ))
        .bind(account_id)
        .bind(upload_id)
        .fetch_optional(&mut tx)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let operation = operation_from(&row)?;
        let merged = operation
            .keyvalues
            .merged(keyvalues)
            .map_err(StoreError::Invalid)?;
        let meta = merged.to_json();
        B::query("UPDATE operations SET name = $1, meta = $2, updated_at = $3 WHERE id = $4")
            .bind(name.as_deref().unwrap_or(&operation.name))
            .bind(meta.as_str())
            .bind(now_ms())
            .bind(operation.id)
            .execute(&mut tx)
            .await?;
        tx.commit().await?;
        self.operation_by_id(operation.id).await.map(Some)
    }

    async fn unfinished_upload_ids(&self) -> Result<Vec<String>, StoreError> {
        let rows =
            B::query("SELECT upload_id FROM operations WHERE status IN ('pending', 'processing')")
                .fetch_all(&mut self.conn().await?)
                .await?;
        Ok(rows.iter().map(|row| row.text("upload_id")).collect())
    }

    async fn commit_completed_upload(
        &self,
        upload: NewUpload,
        packed: Packed,
        dag: &StoredDag,
    ) -> Result<Operation, StoreError> {
        if let Some(batches) = &self.upload_batches {
            return batches.commit(upload, packed, dag).await;
        }
        let mut tx = self.write(Line::Requests).await?;
        let operation = commit::commit_upload_in(&mut tx, &upload, &packed, dag).await?;
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
        let operation = commit::insert_operation(&mut tx, &upload, starts).await?;
        tx.commit().await?;
        Ok(operation)
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
        let id = commit::insert_pin(&mut tx, &pin, stored).await?;
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
        match commit::delete_kept_in(&mut tx, account_id, request_id).await? {
            Some(old) if old.deleted_at_ms.is_none() => {}
            // Deleted (or replaced) already: like a request id that does not exist.
            _ => return Ok(None),
        }
        let id = commit::insert_pin(&mut tx, &pin, stored).await?;
        tx.commit().await?;
        self.operation_by_id(id).await.map(Some)
    }

    async fn delete_kept(
        &self,
        account_id: i64,
        upload_id: &str,
    ) -> Result<Option<Operation>, StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        let Some(op) = commit::delete_kept_in(&mut tx, account_id, upload_id).await? else {
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

    async fn accounts_keeping(&self, cid: &str) -> Result<Vec<i64>, StoreError> {
        let rows = B::query("SELECT account_id FROM account_roots WHERE cid = $1 AND refs > 0")
            .bind(cid)
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.iter().map(|row| row.int("account_id")).collect())
    }
}
