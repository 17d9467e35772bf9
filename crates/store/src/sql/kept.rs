//! What an account keeps (its live uploads and pins): a page of them, and how many match a
//! filter. The Pinning Service API answers every page with that count, so counting must not
//! read every row: the totals per status come from `kept_counts` (kept by triggers, see
//! [`Dialect::kept_counts_triggers`](super::dialect::Dialect::kept_counts_triggers)), and a
//! window of time (`before`, `after`) is counted on whichever side of it looks smaller.

use super::backend::Conn;
use super::rows::{operation_from, ModelRow};
use super::{Backend, SqlStore, Statement};
use crate::model::{KeptFilter, Operation, OperationStatus};
use crate::StoreError;

impl<B: Backend> SqlStore<B> {
    /// The newest matches of `filter`, after its cursor.
    pub(super) async fn kept_page(
        &self,
        conn: &mut impl Conn<B>,
        account_id: i64,
        filter: &KeptFilter,
    ) -> Result<Vec<Operation>, StoreError> {
        let filter = &self.rarest_keyvalue_first(conn, account_id, filter).await?;
        let (conditions, values) = kept_conditions::<B>(account_id, filter, true);
        // By key-values, the page is read in the order of their index (see `keyvalues`).
        let order = if filter.keyvalues.is_empty() {
            "operations.created_at DESC, operations.id DESC"
        } else {
            "kv0.created_at DESC, kv0.operation_id DESC"
        };
        let sql = format!(
            "SELECT operations.* FROM {} WHERE {conditions} ORDER BY {order} LIMIT ${}",
            kept_from::<B>(filter),
            values.len() + 1
        );
        let rows = bind_all(B::query(&sql), &values)
            .bind(i64::from(filter.limit))
            .fetch_all(conn)
            .await?;
        rows.iter().map(operation_from).collect()
    }

    /// How many things `filter` matches (its cursor aside).
    pub(super) async fn kept_matches(
        &self,
        conn: &mut impl Conn<B>,
        account_id: i64,
        filter: &KeptFilter,
    ) -> Result<u64, StoreError> {
        let filter = &self.rarest_keyvalue_first(conn, account_id, filter).await?;
        // Only what `kept_counts` counts, by status and time alone; a CID, a name or key-values
        // narrow the rows first (the CID and key-values by their index; names row by row).
        let only_keyvalues = !filter.uploads_only
            && filter.link_id.is_none()
            && filter.cids.is_empty()
            && filter.name.is_none()
            && filter.statuses.is_empty()
            && filter.created_before_ms.is_none()
            && filter.created_after_ms.is_none();
        if only_keyvalues && !filter.keyvalues.is_empty() {
            return self.count_keyvalues(conn, account_id, filter).await;
        }
        let by_counts = filter.with_cid
            && !filter.uploads_only
            && filter.link_id.is_none()
            && filter.cids.is_empty()
            && filter.name.is_none()
            && filter.keyvalues.is_empty();
        if !by_counts {
            return self.count_rows(conn, account_id, filter).await;
        }
        let total = self.kept_total(conn, account_id, &filter.statuses).await?;
        let (before, after) = (filter.created_before_ms, filter.created_after_ms);
        if before.is_none() && after.is_none() {
            return Ok(total);
        }
        if let (Some(before), Some(after)) = (before, after) {
            if after >= before - 1 {
                return Ok(0);
            }
        }
        let Some((oldest, newest)) = self.kept_span(conn, account_id).await? else {
            return Ok(0);
        };
        // The window's share of the span of time, as a guess of its share of the rows.
        let first = after.map_or(oldest, |after| after + 1).max(oldest);
        let last = before.map_or(newest, |before| before - 1).min(newest);
        let share = (last - first + 1).max(0) as f64 / (newest - oldest + 1) as f64;
        if share <= 0.5 {
            return self.count_rows(conn, account_id, filter).await;
        }
        let mut outside = 0;
        if let Some(before) = before {
            let newer = KeptFilter {
                created_before_ms: None,
                created_after_ms: Some(before - 1),
                ..filter.clone()
            };
            outside += self.count_rows(conn, account_id, &newer).await?;
        }
        if let Some(after) = after {
            let older = KeptFilter {
                created_before_ms: Some(after + 1),
                created_after_ms: None,
                ..filter.clone()
            };
            outside += self.count_rows(conn, account_id, &older).await?;
        }
        Ok(total.saturating_sub(outside))
    }

    /// `filter` with its key-values reordered so that the one fewest uploads have comes
    /// first: the query reads that one's index and checks the others row by row (see
    /// `kept_from`), and neither database knows which value of a key is rare. Each is counted
    /// up to a cap, a few index steps at most.
    async fn rarest_keyvalue_first(
        &self,
        conn: &mut impl Conn<B>,
        account_id: i64,
        filter: &KeptFilter,
    ) -> Result<KeptFilter, StoreError> {
        const CAP: i64 = 1000;
        let mut filter = filter.clone();
        if filter.keyvalues.len() < 2 {
            return Ok(filter);
        }
        let mut counted = Vec::with_capacity(filter.keyvalues.len());
        for (k, v) in filter.keyvalues.drain(..) {
            let row = B::query(
                "SELECT COUNT(*) AS n FROM (SELECT 1 FROM keyvalues
                  WHERE account_id = $1 AND k = $2 AND v = $3 LIMIT $4) AS capped",
            )
            .bind(account_id)
            .bind(k.as_str())
            .bind(v.as_str())
            .bind(CAP)
            .fetch_one(conn)
            .await?;
            counted.push((row.int("n"), (k, v)));
        }
        counted.sort_by_key(|(n, _)| *n);
        filter.keyvalues = counted.into_iter().map(|(_, pair)| pair).collect();
        Ok(filter)
    }

    /// How many live things have every key-value of `filter` (and a root, if it asks), from
    /// the index of the first alone: no operation is read (`keyvalues_rooted` for pins).
    async fn count_keyvalues(
        &self,
        conn: &mut impl Conn<B>,
        account_id: i64,
        filter: &KeptFilter,
    ) -> Result<u64, StoreError> {
        let mut sql = "SELECT COUNT(*) AS n FROM keyvalues kv0
            WHERE kv0.account_id = $1 AND kv0.k = $2 AND kv0.v = $3"
            .to_owned();
        if filter.with_cid {
            sql.push_str(" AND kv0.rooted = 1");
        }
        for n in 1..filter.keyvalues.len() {
            let (k, v) = (2 * n + 2, 2 * n + 3);
            sql.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM keyvalues kv WHERE kv.operation_id = kv0.operation_id
                    AND kv.k = ${k} AND kv.v = ${v})"
            ));
        }
        let mut statement = B::query(&sql).bind(account_id);
        for (k, v) in &filter.keyvalues {
            statement = statement.bind(k.as_str()).bind(v.as_str());
        }
        let row = statement.fetch_one(conn).await?;
        Ok(row.int("n") as u64)
    }

    /// Counts the rows `filter` matches, one by one.
    async fn count_rows(
        &self,
        conn: &mut impl Conn<B>,
        account_id: i64,
        filter: &KeptFilter,
    ) -> Result<u64, StoreError> {
        let (conditions, values) = kept_conditions::<B>(account_id, filter, false);
        let from = kept_from::<B>(filter);
        let sql = format!("SELECT COUNT(*) AS n FROM {from} WHERE {conditions}");
        let row = bind_all(B::query(&sql), &values).fetch_one(conn).await?;
        Ok(row.int("n") as u64)
    }

    /// The account's count in `kept_counts` of each of `statuses` (all when empty), summed.
    async fn kept_total(
        &self,
        conn: &mut impl Conn<B>,
        account_id: i64,
        statuses: &[OperationStatus],
    ) -> Result<u64, StoreError> {
        let row = B::query("SELECT * FROM kept_counts WHERE account_id = $1")
            .bind(account_id)
            .fetch_optional(conn)
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
    async fn kept_span(
        &self,
        conn: &mut impl Conn<B>,
        account_id: i64,
    ) -> Result<Option<(i64, i64)>, StoreError> {
        const COUNTED: &str = "FROM operations
            WHERE account_id = $1 AND deleted_at IS NULL AND cid IS NOT NULL";
        let row = B::query(&format!(
            "SELECT (SELECT MIN(created_at) {COUNTED}) AS oldest,
                    (SELECT MAX(created_at) {COUNTED}) AS newest"
        ))
        .bind(account_id)
        .fetch_one(conn)
        .await?;
        Ok(row.maybe_int("oldest").zip(row.maybe_int("newest")))
    }
}

/// What a query over `filter`'s matches reads from: the index of its first key-value, joined
/// to the operations it names; else the table in order when only reading each row can tell
/// (a name) and no CID narrows it first.
fn kept_from<B: Backend>(filter: &KeptFilter) -> &'static str {
    if !filter.keyvalues.is_empty() {
        "keyvalues kv0 JOIN operations ON operations.id = kv0.operation_id"
    } else if filter.name.is_some() && filter.cids.is_empty() {
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
    // Columns are named with their table: `keyvalues` may be joined (see `kept_from`).
    let mut conditions = vec![
        "operations.account_id = $1".to_owned(),
        "operations.deleted_at IS NULL".to_owned(),
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
    if let Some(link) = &filter.link_id {
        let p = param(&mut values, Value::Text(link));
        conditions.push(format!("operations.link_id = {p}"));
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
        conditions.push(format!("operations.created_at < {p}"));
    }
    if let Some(after) = filter.created_after_ms {
        let p = param(&mut values, Value::Int(after));
        conditions.push(format!("operations.created_at > {p}"));
    }
    for (n, (key, value)) in filter.keyvalues.iter().enumerate() {
        let k = param(&mut values, Value::Text(key));
        let v = param(&mut values, Value::Text(value));
        conditions.push(if n == 0 {
            format!("kv0.account_id = $1 AND kv0.k = {k} AND kv0.v = {v}")
        } else {
            format!(
                "EXISTS (SELECT 1 FROM keyvalues kv WHERE kv.operation_id = operations.id
                    AND kv.k = {k} AND kv.v = {v})"
            )
        });
    }
    if let (true, Some(cursor)) = (paged, filter.cursor) {
        let c = param(&mut values, Value::Int(cursor.created_at_ms));
        let i = param(&mut values, Value::Int(cursor.id));
        conditions.push(if filter.keyvalues.is_empty() {
            format!("(operations.created_at, operations.id) < ({c}, {i})")
        } else {
            format!("(kv0.created_at, kv0.operation_id) < ({c}, {i})")
        });
    }
    (conditions.join(" AND "), values)
}
