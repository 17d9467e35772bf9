//! IPNS names and the records of names kept elsewhere (see [`crate::names`]).

use super::*;
use crate::names::{ForeignRecord, KeptName, MAX_FOREIGN_RECORDS, MAX_NAMES};
use crate::sql::rows::{now_ms, unique_violation, ModelRow};
use crate::sql::write_queue::Line;
use crate::sql::{Backend, SqlStore};
use crate::StoreError;

fn name_from(row: &impl ModelRow) -> KeptName {
    KeptName {
        name: row.text("name"),
        account_id: row.int("account_id"),
        label: row.maybe_text("label"),
        sealed_key: row.blob("sealed_key"),
        value: row.text("value"),
        sequence: row.int("sequence") as u64,
        record: row.blob("record"),
        expires_at_ms: row.int("expires_at"),
        created_at_ms: row.int("created_at"),
        updated_at_ms: row.int("updated_at"),
    }
}

/// Sequences are u64; the column is a signed 64-bit integer. A sequence past `i64::MAX`
/// (only a foreign record could have one) is kept as `i64::MAX`, which still orders it last.
fn sequence_column(sequence: u64) -> i64 {
    i64::try_from(sequence).unwrap_or(i64::MAX)
}

impl<B: Backend> SqlStore<B> {
    /// A live name matching `condition` (on `$1`), within an account if one is given.
    pub(super) async fn live_name(
        &self,
        condition: &str,
        value: &str,
        account_id: Option<i64>,
    ) -> Result<Option<KeptName>, StoreError> {
        let sql = format!(
            "SELECT * FROM names WHERE {condition} AND deleted_at IS NULL
               AND ($2 IS NULL OR account_id = $2)"
        );
        let row = B::query(&sql)
            .bind(value)
            .bind(account_id)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        Ok(row.map(|row| name_from(&row)))
    }

    pub(super) async fn foreign_record_of(
        &self,
        name: &str,
    ) -> Result<Option<ForeignRecord>, StoreError> {
        let row = B::query("SELECT * FROM ipns_records WHERE name = $1")
            .bind(name)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        Ok(row.map(|row| ForeignRecord {
            name: row.text("name"),
            record: row.blob("record"),
            sequence: row.int("sequence") as u64,
            expires_at_ms: row.int("expires_at"),
        }))
    }
}

#[async_trait]
impl<B: Backend> Names for SqlStore<B> {
    async fn create_name(&self, name: &KeptName) -> Result<KeptName, StoreError> {
        let inserted = B::query(
            "INSERT INTO names (name, account_id, label, sealed_key, value, sequence, record,
                expires_at, created_at, updated_at)
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10
              WHERE (SELECT COUNT(*) FROM names
                      WHERE account_id = $11 AND deleted_at IS NULL) < $12
             RETURNING *",
        )
        .bind(&name.name)
        .bind(name.account_id)
        .bind(name.label.as_deref())
        .bind(&name.sealed_key[..])
        .bind(&name.value)
        .bind(sequence_column(name.sequence))
        .bind(&name.record[..])
        .bind(name.expires_at_ms)
        .bind(name.created_at_ms)
        .bind(name.updated_at_ms)
        .bind(name.account_id)
        .bind(MAX_NAMES as i64)
        .fetch_optional(&mut self.write_conn(Line::Requests).await?)
        .await;
        match inserted {
            Ok(Some(row)) => Ok(name_from(&row)),
            Ok(None) => Err(StoreError::Invalid(format!(
                "an account keeps at most {MAX_NAMES} names; delete one first"
            ))),
            Err(e) if unique_violation(&e) => Err(StoreError::Conflict(format!(
                "a name labelled {:?}",
                name.label.as_deref().unwrap_or_default()
            ))),
            Err(e) => Err(e.into()),
        }
    }

    async fn list_names(&self, account_id: i64) -> Result<Vec<KeptName>, StoreError> {
        let rows = B::query(
            "SELECT * FROM names WHERE account_id = $1 AND deleted_at IS NULL
              ORDER BY created_at, name",
        )
        .bind(account_id)
        .fetch_all(&mut self.conn().await?)
        .await?;
        Ok(rows.iter().map(name_from).collect())
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
        let changed = B::query(
            "UPDATE names SET value = $1, sequence = $2, record = $3, expires_at = $4,
                    updated_at = $5
              WHERE name = $6 AND sequence = $7 AND deleted_at IS NULL",
        )
        .bind(&name.value)
        .bind(sequence_column(name.sequence))
        .bind(&name.record[..])
        .bind(name.expires_at_ms)
        .bind(now_ms())
        .bind(&name.name)
        .bind(sequence_column(previous_sequence))
        .execute(&mut self.write_conn(Line::Requests).await?)
        .await?;
        Ok(changed == 1)
    }

    async fn delete_name(
        &self,
        account_id: i64,
        name: &str,
    ) -> Result<Option<KeptName>, StoreError> {
        let row = B::query(
            "UPDATE names SET deleted_at = $1
              WHERE name = $2 AND account_id = $3 AND deleted_at IS NULL RETURNING *",
        )
        .bind(now_ms())
        .bind(name)
        .bind(account_id)
        .fetch_optional(&mut self.write_conn(Line::Requests).await?)
        .await?;
        Ok(row.map(|row| name_from(&row)))
    }

    async fn names_expiring(
        &self,
        before_ms: i64,
        limit: u32,
    ) -> Result<Vec<KeptName>, StoreError> {
        let rows = B::query(
            "SELECT * FROM names WHERE expires_at < $1 AND deleted_at IS NULL
              ORDER BY expires_at LIMIT $2",
        )
        .bind(before_ms)
        .bind(i64::from(limit))
        .fetch_all(&mut self.conn().await?)
        .await?;
        Ok(rows.iter().map(name_from).collect())
    }

    async fn put_foreign_record(&self, record: &ForeignRecord) -> Result<bool, StoreError> {
        let changed = B::query(
            "INSERT INTO ipns_records (name, record, sequence, expires_at, received_at)
             SELECT $1, $2, $3, $4, $5
              WHERE EXISTS (SELECT 1 FROM ipns_records WHERE name = $6)
                 OR (SELECT COUNT(*) FROM ipns_records) < $7
             ON CONFLICT (name) DO UPDATE
                SET record = excluded.record, sequence = excluded.sequence,
                    expires_at = excluded.expires_at, received_at = excluded.received_at
              WHERE excluded.sequence > ipns_records.sequence
                 OR (excluded.sequence = ipns_records.sequence
                     AND excluded.expires_at > ipns_records.expires_at)",
        )
        .bind(&record.name)
        .bind(&record.record[..])
        .bind(sequence_column(record.sequence))
        .bind(record.expires_at_ms)
        .bind(now_ms())
        .bind(&record.name)
        .bind(MAX_FOREIGN_RECORDS as i64)
        .execute(&mut self.write_conn(Line::Requests).await?)
        .await?;
        if changed == 1 {
            return Ok(true);
        }
        match self.foreign_record_of(&record.name).await? {
            Some(_) => Ok(false),
            None => Err(StoreError::Invalid(format!(
                "this router keeps records of at most {MAX_FOREIGN_RECORDS} names"
            ))),
        }
    }

    async fn foreign_record(&self, name: &str) -> Result<Option<ForeignRecord>, StoreError> {
        self.foreign_record_of(name).await
    }

    async fn forget_foreign_records(&self, before_ms: i64) -> Result<u64, StoreError> {
        let changed = B::query("DELETE FROM ipns_records WHERE expires_at < $1")
            .bind(before_ms)
            .execute(&mut self.write_conn(Line::Requests).await?)
            .await?;
        Ok(changed)
    }
}
