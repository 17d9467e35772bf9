//! What an account keeps (its live uploads and pins): a page of them, and how many match a
//! filter. The Pinning Service API answers every page with that count, so counting must not
//! read every row: the totals per status come from `kept_counts` (kept by triggers, see
//! [`Dialect::kept_counts_triggers`](super::dialect::Dialect::kept_counts_triggers)), and a
//! window of time (`before`, `after`) is counted on whichever side of it looks smaller.

use super::rows::{operation_from, ModelRow};
use super::{Backend, SqlStore, Statement};
use crate::model::{KeptFilter, Operation, OperationStatus};
use crate::StoreError;

impl<B: Backend> SqlStore<B> {
    /// The newest matches of `filter`, after its cursor.
    pub(super) async fn kept_page(
        &self,
        account_id: i64,
        filter: &KeptFilter,
    ) -> Result<Vec<Operation>, StoreError> {
        let (conditions, values) = kept_conditions::<B>(account_id, filter, true);
        let sql = format!(
            "SELECT * FROM {} WHERE {conditions}
             ORDER BY created_at DESC, id DESC LIMIT ${}",
            kept_table::<B>(filter),
            values.len() + 1
        );
        let rows = bind_all(B::query(&sql), &values)
            .bind(i64::from(filter.limit))
            .fetch_all(&mut self.conn().await?)
            .await?;
        rows.iter().map(operation_from).collect()
    }

    /// How many things `filter` matches (its cursor aside).
    pub(super) async fn kept_matches(
        &self,
        account_id: i64,
        filter: &KeptFilter,
    ) -> Result<u64, StoreError> {
        // Only what `kept_counts` counts, by status and time alone; a CID, a name or meta
        // narrows the rows first (the CID by its index; names and meta are read row by row).
        let by_counts = filter.with_cid
            && !filter.uploads_only
            && filter.cids.is_empty()
            && filter.name.is_none()
            && filter.meta.is_empty();
        if !by_counts {
            return self.count_rows(account_id, filter).await;
        }
        let total = self.kept_total(account_id, &filter.statuses).await?;
        let (before, after) = (filter.created_before_ms, filter.created_after_ms);
        if before.is_none() && after.is_none() {
            return Ok(total);
        }
        if let (Some(before), Some(after)) = (before, after) {
            if after >= before - 1 {
                return Ok(0);
            }
        }
        let Some((oldest, newest)) = self.kept_span(account_id).await? else {
            return Ok(0);
        };
        // The window's share of the span of time, as a guess of its share of the rows.
        let first = after.map_or(oldest, |after| after + 1).max(oldest);
        let last = before.map_or(newest, |before| before - 1).min(newest);
        let share = (last - first + 1).max(0) as f64 / (newest - oldest + 1) as f64;
        if share <= 0.5 {
            return self.count_rows(account_id, filter).await;
        }
        let mut outside = 0;
        if let Some(before) = before {
            let newer = KeptFilter {
                created_before_ms: None,
                created_after_ms: Some(before - 1),
                ..filter.clone()
            };
            outside += self.count_rows(account_id, &newer).await?;
        }
        if let Some(after) = after {
            let older = KeptFilter {
                created_before_ms: Some(after + 1),
                created_after_ms: None,
                ..filter.clone()
            };
            outside += self.count_rows(account_id, &older).await?;
        }
        Ok(total.saturating_sub(outside))
    }

    /// Counts the rows `filter` matches, one by one.
    async fn count_rows(&self, account_id: i64, filter: &KeptFilter) -> Result<u64, StoreError> {
        let (conditions, values) = kept_conditions::<B>(account_id, filter, false);
        let table = kept_table::<B>(filter);
        let sql = format!("SELECT COUNT(*) AS n FROM {table} WHERE {conditions}");
        let row = bind_all(B::query(&sql), &values)
            .fetch_one(&mut self.conn().await?)
            .await?;
        Ok(row.int("n") as u64)
    }

    /// The account's count in `kept_counts` of each of `statuses` (all when empty), summed.
    async fn kept_total(
        &self,
        account_id: i64,
        statuses: &[OperationStatus],
    ) -> Result<u64, StoreError> {
        let row = B::query("SELECT * FROM kept_counts WHERE account_id = $1")
            .bind(account_id)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        let Some(row) = row else { return Ok(0) };
        let statuses = if statuses.is_empty() {
            &OperationStatus::ALL[..]
        } else {
            statuses
        };
        Ok(statuses
            .iter()
            .map(|status| row.int(status.as_str()) as u64)
            .sum())
    }

    /// When the oldest and the newest counted thing were created: two probes of the index
    /// `operations_pins` (one aggregate each, as SQLite reads `MIN` from an index only alone).
    async fn kept_span(&self, account_id: i64) -> Result<Option<(i64, i64)>, StoreError> {
        const COUNTED: &str = "FROM operations
            WHERE account_id = $1 AND deleted_at IS NULL AND cid IS NOT NULL";
        let row = B::query(&format!(
            "SELECT (SELECT MIN(created_at) {COUNTED}) AS oldest,
                    (SELECT MAX(created_at) {COUNTED}) AS newest"
        ))
        .bind(account_id)
        .fetch_one(&mut self.conn().await?)
        .await?;
        Ok(row.maybe_int("oldest").zip(row.maybe_int("newest")))
    }
}

/// What a query over `filter`'s matches reads from: the table in order when only reading
/// each row can tell (names, meta) and no CID narrows it first.
fn kept_table<B: Backend>(filter: &KeptFilter) -> &'static str {
    let row_by_row = filter.name.is_some() || !filter.meta.is_empty();
    if row_by_row && filter.cids.is_empty() {
        B::DIALECT.operations_read_whole()
    } else {
        "operations"
    }
}

/// A value bound by a statement built from a filter.
enum Value<'a> {
    Int(i64),
    Text(&'a str),
}

fn bind_all<'q, B: Backend>(statement: Statement<'q, B>, values: &[Value<'q>]) -> Statement<'q, B> {
    values
        .iter()
        .fold(statement, |statement, value| match value {
            Value::Int(v) => statement.bind(*v),
            Value::Text(v) => statement.bind(*v),
        })
}

/// The `WHERE` conditions of a [`KeptFilter`] (with its cursor when `paged`), numbered from
/// `$1`, and the values they bind in order.
fn kept_conditions<'a, B: Backend>(
    account_id: i64,
    filter: &'a KeptFilter,
    paged: bool,
) -> (String, Vec<Value<'a>>) {
    let mut conditions = vec![
        "account_id = $1".to_owned(),
        "deleted_at IS NULL".to_owned(),
    ];
    let mut values = vec![Value::Int(account_id)];
    let param = |values: &mut Vec<Value<'a>>, value: Value<'a>| {
        values.push(value);
        format!("${}", values.len())
    };
    if filter.with_cid {
        conditions.push("cid IS NOT NULL".to_owned());
    }
    if filter.uploads_only {
        conditions.push("kind <> 'pin'".to_owned());
    }
    if !filter.cids.is_empty() {
        let list: Vec<String> = filter
            .cids
            .iter()
            .map(|cid| param(&mut values, Value::Text(cid)))
            .collect();
        conditions.push(format!("cid IN ({})", list.join(", ")));
    }
    if !filter.statuses.is_empty() {
        let list: Vec<String> = filter
            .statuses
            .iter()
            .map(|status| param(&mut values, Value::Text(status.as_str())))
            .collect();
        conditions.push(format!("status IN ({})", list.join(", ")));
    }
    if let Some((name, how)) = &filter.name {
        let p = param(&mut values, Value::Text(name));
        conditions.push(B::DIALECT.name_matches(*how, &p));
    }
    if let Some(before) = filter.created_before_ms {
        let p = param(&mut values, Value::Int(before));
        conditions.push(format!("created_at < {p}"));
    }
    if let Some(after) = filter.created_after_ms {
        let p = param(&mut values, Value::Int(after));
        conditions.push(format!("created_at > {p}"));
    }
    for (key, value) in &filter.meta {
        let k = param(&mut values, Value::Text(key));
        let v = param(&mut values, Value::Text(value));
        conditions.push(B::DIALECT.meta_has(&k, &v));
    }
    if let (true, Some(cursor)) = (paged, filter.cursor) {
        let c = param(&mut values, Value::Int(cursor.created_at_ms));
        let i = param(&mut values, Value::Int(cursor.id));
        conditions.push(format!("(created_at, id) < ({c}, {i})"));
    }
    (conditions.join(" AND "), values)
}
