//! [`OperationQueue`] on [`SqlStore`].

use super::*;

#[async_trait]
impl<B: Backend> OperationQueue for SqlStore<B> {
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
        commit::store_packed(&mut tx, &packed).await?;
        commit::complete_in(&mut tx, op.account_id, id, dag, content).await?;
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
}
