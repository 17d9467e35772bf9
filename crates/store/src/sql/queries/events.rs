//! Events, webhook endpoints, their deliveries, and usage (see [`crate::events`]). Events are
//! written by triggers (`dialect.rs`, `events_triggers`); this reads them, follows them with
//! the dispatch cursor, and moves deliveries through their attempts.

use super::*;
use std::time::Duration;

use crate::events::{
    Attempt, ClaimedDelivery, Delivery, DeliveryStatus, Event, EventType, NewDeliveries, Webhook,
    DELIVERY_WINDOW_MS, MAX_WEBHOOKS,
};
use crate::sql::backend::Conn;
use crate::sql::dialect::{parameters, values_rows};
use crate::sql::rows::{now_ms, ModelRow};
use crate::sql::write_queue::Line;
use crate::sql::{Backend, SqlStore, WriteTx};
use crate::StoreError;

fn corrupt(e: String) -> StoreError {
    StoreError::Database(sqlx::Error::Decode(e.into()))
}

/// An event from a row of `events`, its columns named with `prefix`.
fn event_from(row: &impl ModelRow, prefix: &str) -> Result<Event, StoreError> {
    let column = |name: &str| format!("{prefix}{name}");
    Ok(Event {
        id: row.int(&column("id")),
        account_id: row.int(&column("account_id")),
        kind: row.text(&column("type")).parse().map_err(corrupt)?,
        operation_id: row.int(&column("operation_id")),
        created_at_ms: row.int(&column("created_at")),
    })
}

fn webhook_from(row: &impl ModelRow) -> Result<Webhook, StoreError> {
    let events = row.text("events");
    Ok(Webhook {
        id: row.text("id"),
        account_id: row.int("account_id"),
        url: row.text("url"),
        events: crate::events::parse_types(&events).map_err(corrupt)?,
        description: row.text("description"),
        secret: row.text("secret"),
        created_at_ms: row.int("created_at"),
    })
}

/// An event's columns (`e`) beside a delivery's (`d`), renamed `event_*` (see [`event_from`];
/// `event_id` is the delivery's own column).
const EVENT_COLUMNS: &str = "e.account_id AS event_account_id, e.type AS event_type,
        e.operation_id AS event_operation_id, e.created_at AS event_created_at";

/// Deliveries with their events.
fn deliveries_and_events() -> String {
    format!(
        "SELECT d.*, {EVENT_COLUMNS}
           FROM webhook_deliveries d JOIN events e ON e.id = d.event_id"
    )
}

impl<B: Backend> SqlStore<B> {
    /// `deliveries` with their attempts, oldest first, read in one query.
    async fn with_attempts(
        conn: &mut impl Conn<B>,
        mut deliveries: Vec<Delivery>,
    ) -> Result<Vec<Delivery>, StoreError> {
        if deliveries.is_empty() {
            return Ok(deliveries);
        }
        let sql = format!(
            "SELECT * FROM webhook_attempts WHERE delivery_id IN ({}) ORDER BY delivery_id, attempt",
            parameters(1, deliveries.len())
        );
        let mut query = B::query(&sql);
        for delivery in &deliveries {
            query = query.bind(delivery.id);
        }
        for row in query.fetch_all(&mut *conn).await? {
            let id = row.int("delivery_id");
            if let Some(delivery) = deliveries.iter_mut().find(|d| d.id == id) {
                delivery.attempts.push(attempt_from(&row));
            }
        }
        Ok(deliveries)
    }

    /// Take or renew the dispatch lease for `worker` (held by it, or free) for `lease`, and
    /// move the cursor from `from` to `to` (the same to only take the lease); `false` when
    /// another dispatcher holds it or has moved the cursor.
    async fn move_dispatch(
        conn: &mut impl Conn<B>,
        worker: &str,
        lease: Duration,
        from: i64,
        to: i64,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        let moved = B::query(
            "UPDATE webhook_dispatch
                SET through_event_id = $1, claimed_by = $2, claimed_until = $3
              WHERE id = 1 AND through_event_id = $4
                AND (claimed_by = $5 OR claimed_until IS NULL OR claimed_until < $6)",
        )
        .bind(to)
        .bind(worker)
        .bind(now + lease.as_millis() as i64)
        .bind(from)
        .bind(worker)
        .bind(now)
        .execute(conn)
        .await?;
        Ok(moved == 1)
    }

    /// Each delivery's attempt (numbered after those it had), as one statement.
    async fn insert_attempts(
        tx: &mut WriteTx<B>,
        rows: &[(i64, &ClaimedDelivery, &Attempt)],
    ) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "INSERT INTO webhook_attempts
                (delivery_id, attempt, at, duration_ms, response_status, error)
             VALUES {}
             ON CONFLICT (delivery_id, attempt) DO NOTHING",
            values_rows(rows.len(), 6)
        );
        let mut insert = B::query(&sql);
        for (id, delivery, attempt) in rows {
            insert = insert
                .bind(*id)
                .bind(i64::from(delivery.attempts + 1))
                .bind(attempt.at_ms)
                .bind(attempt.duration_ms)
                .bind(attempt.response_status.map(i64::from))
                .bind(attempt.error.as_deref());
        }
        insert.execute(tx).await?;
        Ok(())
    }
}

fn delivery_from(row: &impl ModelRow) -> Result<Delivery, StoreError> {
    let status: DeliveryStatus = row.text("status").parse().map_err(corrupt)?;
    Ok(Delivery {
        id: row.int("id"),
        webhook_id: row.text("webhook_id"),
        event: event_from(row, "event_")?,
        status,
        next_attempt_at_ms: (status == DeliveryStatus::Pending).then(|| row.int("next_attempt_at")),
        created_at_ms: row.int("created_at"),
        attempts: Vec::new(),
    })
}

fn attempt_from(row: &impl ModelRow) -> Attempt {
    Attempt {
        at_ms: row.int("at"),
        duration_ms: row.int("duration_ms"),
        response_status: row.maybe_int("response_status").map(|s| s as u16),
        error: row.maybe_text("error"),
    }
}

#[async_trait]
impl<B: Backend> EventLog for SqlStore<B> {
    async fn events_after(
        &self,
        account_id: i64,
        after: i64,
        types: &[EventType],
        limit: u32,
    ) -> Result<Vec<Event>, StoreError> {
        let only = if types.is_empty() {
            String::new()
        } else {
            format!(" AND type IN ({})", parameters(4, types.len()))
        };
        let sql = format!(
            "SELECT * FROM events WHERE account_id = $1 AND id > $2{only} ORDER BY id LIMIT $3"
        );
        let mut query = B::query(&sql)
            .bind(account_id)
            .bind(after)
            .bind(limit as i64);
        for t in types {
            query = query.bind(t.as_str());
        }
        let rows = query.fetch_all(&mut self.conn().await?).await?;
        rows.iter().map(|row| event_from(row, "")).collect()
    }

    async fn all_events_after(&self, after: i64, limit: u32) -> Result<Vec<Event>, StoreError> {
        let rows = B::query("SELECT * FROM events WHERE id > $1 ORDER BY id LIMIT $2")
            .bind(after)
            .bind(limit as i64)
            .fetch_all(&mut self.conn().await?)
            .await?;
        rows.iter().map(|row| event_from(row, "")).collect()
    }

    async fn last_event_id(&self) -> Result<i64, StoreError> {
        let row = B::query("SELECT COALESCE(MAX(id), 0) AS newest FROM events")
            .fetch_one(&mut self.conn().await?)
            .await?;
        Ok(row.int("newest"))
    }

    async fn operation_events(&self, operation_id: i64) -> Result<Vec<Event>, StoreError> {
        let rows = B::query("SELECT * FROM events WHERE operation_id = $1 ORDER BY id")
            .bind(operation_id)
            .fetch_all(&mut self.conn().await?)
            .await?;
        rows.iter().map(|row| event_from(row, "")).collect()
    }

    async fn create_webhook(&self, webhook: &Webhook) -> Result<Webhook, StoreError> {
        let events = Webhook::events_text(&webhook.events);
        let row = B::query(
            "INSERT INTO webhooks (id, account_id, url, events, description, secret, created_at)
             SELECT $1, $2, $3, $4, $5, $6, $7
              WHERE (SELECT COUNT(*) FROM webhooks
                      WHERE account_id = $8 AND deleted_at IS NULL) < $9
             RETURNING *",
        )
        .bind(&webhook.id)
        .bind(webhook.account_id)
        .bind(&webhook.url)
        .bind(&events)
        .bind(&webhook.description)
        .bind(&webhook.secret)
        .bind(webhook.created_at_ms)
        .bind(webhook.account_id)
        .bind(MAX_WEBHOOKS as i64)
        .fetch_optional(&mut self.write_conn(Line::Requests).await?)
        .await?;
        match row {
            Some(row) => webhook_from(&row),
            None => Err(StoreError::Invalid(format!(
                "an account has at most {MAX_WEBHOOKS} webhook endpoints; delete one first"
            ))),
        }
    }

    async fn list_webhooks(&self, account_id: i64) -> Result<Vec<Webhook>, StoreError> {
        let rows = B::query(
            "SELECT * FROM webhooks WHERE account_id = $1 AND deleted_at IS NULL
              ORDER BY created_at, id",
        )
        .bind(account_id)
        .fetch_all(&mut self.conn().await?)
        .await?;
        rows.iter().map(webhook_from).collect()
    }

    async fn delete_webhook(
        &self,
        account_id: i64,
        id: &str,
    ) -> Result<Option<Webhook>, StoreError> {
        let now = now_ms();
        let mut tx = self.write(Line::Requests).await?;
        let row = B::query(
            "UPDATE webhooks SET deleted_at = $1
              WHERE id = $2 AND account_id = $3 AND deleted_at IS NULL RETURNING *",
        )
        .bind(now)
        .bind(id)
        .bind(account_id)
        .fetch_optional(&mut tx)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        B::query(
            "UPDATE webhook_deliveries SET status = 'failed', updated_at = $1
              WHERE webhook_id = $2 AND status = 'pending'",
        )
        .bind(now)
        .bind(id)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        webhook_from(&row).map(Some)
    }

    async fn webhook_deliveries(
        &self,
        account_id: i64,
        webhook_id: &str,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Option<Vec<Delivery>>, StoreError> {
        let mut conn = self.conn().await?;
        let owned = B::query("SELECT id FROM webhooks WHERE id = $1 AND account_id = $2")
            .bind(webhook_id)
            .bind(account_id)
            .fetch_optional(&mut conn)
            .await?;
        if owned.is_none() {
            return Ok(None);
        }
        let sql = format!(
            "{} WHERE d.webhook_id = $1 AND d.id < $2 ORDER BY d.id DESC LIMIT $3",
            deliveries_and_events()
        );
        let rows = B::query(&sql)
            .bind(webhook_id)
            .bind(before.unwrap_or(i64::MAX))
            .bind(limit as i64)
            .fetch_all(&mut conn)
            .await?;
        let deliveries = rows
            .iter()
            .map(delivery_from)
            .collect::<Result<Vec<_>, _>>()?;
        Self::with_attempts(&mut conn, deliveries).await.map(Some)
    }

    async fn retry_delivery(
        &self,
        account_id: i64,
        webhook_id: &str,
        delivery_id: i64,
    ) -> Result<Option<Delivery>, StoreError> {
        let now = now_ms();
        let updated = B::query(
            "UPDATE webhook_deliveries
                SET status = 'pending', next_attempt_at = $1, expires_at = $2, updated_at = $3,
                    claimed_by = NULL, claimed_until = NULL
              WHERE id = $4 AND webhook_id = $5
                AND webhook_id IN (SELECT id FROM webhooks
                                    WHERE account_id = $6 AND deleted_at IS NULL)",
        )
        .bind(now)
        .bind(now + DELIVERY_WINDOW_MS)
        .bind(now)
        .bind(delivery_id)
        .bind(webhook_id)
        .bind(account_id)
        .execute(&mut self.write_conn(Line::Requests).await?)
        .await?;
        if updated == 0 {
            return Ok(None);
        }
        let sql = format!("{} WHERE d.id = $1", deliveries_and_events());
        let mut conn = self.conn().await?;
        let row = B::query(&sql)
            .bind(delivery_id)
            .fetch_one(&mut conn)
            .await?;
        // Retried, it keeps the attempts it had: the answer shows them.
        let retried = Self::with_attempts(&mut conn, vec![delivery_from(&row)?]).await?;
        Ok(retried.into_iter().next())
    }

    async fn take_new_deliveries(
        &self,
        worker: &str,
        lease: Duration,
        limit: u32,
    ) -> Result<NewDeliveries, StoreError> {
        let now = now_ms();
        let mut conn = self.conn().await?;
        let dispatch = B::query(
            "SELECT through_event_id, claimed_by, claimed_until FROM webhook_dispatch
              WHERE id = 1",
        )
        .fetch_one(&mut conn)
        .await?;
        let after = dispatch.int("through_event_id");
        let holder = dispatch.maybe_text("claimed_by");
        let held_until = dispatch.maybe_int("claimed_until").unwrap_or(0);
        let mine = holder.as_deref() == Some(worker);
        if !mine && held_until >= now {
            return Ok(NewDeliveries::default());
        }
        // Up to the newest event now: events commit in id order (`events_triggers`), so
        // nothing at or below it can commit later, and the cursor may pass every one.
        let newest = B::query("SELECT COALESCE(MAX(id), 0) AS newest FROM events")
            .fetch_one(&mut conn)
            .await?
            .int("newest");
        let sql = format!(
            "SELECT e.id AS event_id, {EVENT_COLUMNS}, w.id AS webhook_id, w.url, w.secret
               FROM webhooks w JOIN events e ON e.account_id = w.account_id
              WHERE w.deleted_at IS NULL AND e.id > $1 AND e.id <= $2
                AND e.created_at >= w.created_at AND w.events LIKE '%,' || e.type || ',%'
              ORDER BY e.id, w.id LIMIT $3"
        );
        let rows = B::query(&sql)
            .bind(after)
            .bind(newest)
            .bind(i64::from(limit))
            .fetch_all(&mut conn)
            .await?;
        drop(conn);
        let mut deliveries = rows
            .iter()
            .map(|row| {
                Ok(ClaimedDelivery {
                    id: None,
                    webhook_id: row.text("webhook_id"),
                    attempts: 0,
                    expires_at_ms: now + DELIVERY_WINDOW_MS,
                    url: row.text("url"),
                    secret: row.text("secret"),
                    event: event_from(row, "event_")?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let mut through = newest;
        let full = deliveries.len() == limit as usize;
        if full {
            // Full: the last event's deliveries may go on past the limit; it comes next time
            // whole (the limit is above the endpoints an account may have).
            let last = deliveries.last().map_or(after, |d| d.event.id);
            deliveries.retain(|d| d.event.id != last);
            through = last - 1;
        }
        if deliveries.is_empty() {
            // Nothing to send: no lease taken. The caller may still move the cursor past
            // `through` now and then (recording no attempts), so the log can be forgotten.
            return Ok(NewDeliveries {
                after,
                through,
                deliveries,
                full,
            });
        }
        // Taken, or renewed when it might run out before this batch's sends end (an attempt
        // has 10 s; the write that records them renews it again).
        if !mine || held_until < now + lease.as_millis() as i64 * 3 / 4 {
            let mut conn = self.write_conn(Line::Operations).await?;
            if !Self::move_dispatch(&mut conn, worker, lease, after, after).await? {
                return Ok(NewDeliveries::default());
            }
        }
        Ok(NewDeliveries {
            after,
            through,
            deliveries,
            full,
        })
    }

    async fn record_first_attempts(
        &self,
        worker: &str,
        lease: Duration,
        new: &NewDeliveries,
        attempts: &[(&ClaimedDelivery, Option<&Attempt>)],
    ) -> Result<Option<Vec<i64>>, StoreError> {
        let now = now_ms();
        let leased_until = now + lease.as_millis() as i64;
        let mut tx = self.write(Line::Operations).await?;
        // Held by `worker`, or free to take (a batch with nothing to send took no lease).
        if !Self::move_dispatch(&mut tx, worker, lease, new.after, new.through).await? {
            return Ok(None);
        }
        if attempts.is_empty() {
            tx.commit().await?;
            return Ok(Some(Vec::new()));
        }
        let sql = format!(
            "INSERT INTO webhook_deliveries
                (webhook_id, event_id, status, attempts, next_attempt_at, expires_at,
                 claimed_by, claimed_until, created_at, updated_at)
             VALUES {}
             RETURNING id, webhook_id, event_id",
            values_rows(attempts.len(), 10)
        );
        let mut insert = B::query(&sql);
        for (delivery, attempt) in attempts {
            insert = insert.bind(&delivery.webhook_id).bind(delivery.event.id);
            insert = match attempt {
                Some(attempt) => insert
                    .bind(delivery.status_after(attempt).as_str())
                    .bind(1_i64)
                    .bind(delivery.next_attempt_ms(attempt))
                    .bind(delivery.expires_at_ms)
                    .bind(None::<&str>)
                    .bind(None::<i64>)
                    .bind(attempt.at_ms),
                None => insert
                    .bind(DeliveryStatus::Pending.as_str())
                    .bind(0_i64)
                    .bind(now)
                    .bind(delivery.expires_at_ms)
                    .bind(Some(worker))
                    .bind(Some(leased_until))
                    .bind(now),
            };
            insert = insert.bind(now);
        }
        // Matched back by (event, endpoint): the order of RETURNING is not promised.
        let ids: std::collections::HashMap<(i64, String), i64> = insert
            .fetch_all(&mut tx)
            .await?
            .iter()
            .map(|row| ((row.int("event_id"), row.text("webhook_id")), row.int("id")))
            .collect();
        let mut rows = Vec::new();
        let mut in_order = Vec::with_capacity(attempts.len());
        for (delivery, attempt) in attempts {
            let key = (delivery.event.id, delivery.webhook_id.clone());
            let id = *ids
                .get(&key)
                .ok_or_else(|| corrupt(format!("no delivery row came back for {key:?}")))?;
            in_order.push(id);
            if let Some(attempt) = attempt {
                rows.push((id, *delivery, *attempt));
            }
        }
        Self::insert_attempts(&mut tx, &rows).await?;
        tx.commit().await?;
        Ok(Some(in_order))
    }

    async fn claim_deliveries(
        &self,
        worker: &str,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<ClaimedDelivery>, StoreError> {
        let now = now_ms();
        // Looked for first on a reading connection: a node with nothing due writes nothing.
        let due = B::query(
            "SELECT id FROM webhook_deliveries
              WHERE status = 'pending' AND next_attempt_at <= $1
                AND (claimed_until IS NULL OR claimed_until < $2)
              LIMIT 1",
        )
        .bind(now)
        .bind(now)
        .fetch_optional(&mut self.conn().await?)
        .await?;
        if due.is_none() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "UPDATE webhook_deliveries SET claimed_by = $1, claimed_until = $2
              WHERE id IN (SELECT id FROM webhook_deliveries
                            WHERE status = 'pending' AND next_attempt_at <= $3
                              AND (claimed_until IS NULL OR claimed_until < $4)
                            ORDER BY next_attempt_at, id LIMIT $5{})
              RETURNING id",
            B::DIALECT.skip_locked()
        );
        let ids: Vec<i64> = B::query(&sql)
            .bind(worker)
            .bind(now + lease.as_millis() as i64)
            .bind(now)
            .bind(now)
            .bind(limit as i64)
            .fetch_all(&mut self.write_conn(Line::Operations).await?)
            .await?
            .iter()
            .map(|row| row.int("id"))
            .collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT d.id, d.event_id, d.webhook_id, d.attempts, d.expires_at, w.url, w.secret,
                    {EVENT_COLUMNS}
               FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
               JOIN webhooks w ON w.id = d.webhook_id
              WHERE d.id IN ({}) ORDER BY d.id",
            parameters(1, ids.len())
        );
        let mut query = B::query(&sql);
        for id in &ids {
            query = query.bind(*id);
        }
        let rows = query.fetch_all(&mut self.conn().await?).await?;
        rows.iter()
            .map(|row| {
                Ok(ClaimedDelivery {
                    id: Some(row.int("id")),
                    webhook_id: row.text("webhook_id"),
                    attempts: row.int("attempts") as u32,
                    expires_at_ms: row.int("expires_at"),
                    url: row.text("url"),
                    secret: row.text("secret"),
                    event: event_from(row, "event_")?,
                })
            })
            .collect()
    }

    async fn record_attempts(
        &self,
        worker: &str,
        attempts: &[(&ClaimedDelivery, &Attempt)],
    ) -> Result<Vec<DeliveryStatus>, StoreError> {
        if attempts.is_empty() {
            return Ok(Vec::new());
        }
        // A few statements for the whole batch, not two per delivery: each statement holds
        // the one writer every upload waits for.
        let statuses: Vec<DeliveryStatus> = attempts
            .iter()
            .map(|(delivery, attempt)| delivery.status_after(attempt))
            .collect();
        let now = now_ms();
        let mut tx = self.write(Line::Operations).await?;
        let rows: Vec<(i64, &ClaimedDelivery, &Attempt)> = attempts
            .iter()
            .filter_map(|(delivery, attempt)| Some((delivery.id?, *delivery, *attempt)))
            .collect();
        Self::insert_attempts(&mut tx, &rows).await?;
        // Delivered (nearly all of them): one statement.
        let delivered: Vec<i64> = rows
            .iter()
            .zip(&statuses)
            .filter(|(_, status)| **status == DeliveryStatus::Delivered)
            .map(|((id, ..), _)| *id)
            .collect();
        if !delivered.is_empty() {
            let sql = format!(
                "UPDATE webhook_deliveries
                    SET attempts = attempts + 1, status = 'delivered', next_attempt_at = $1,
                        updated_at = $1, claimed_by = NULL, claimed_until = NULL
                  WHERE claimed_by = $2 AND status = 'pending' AND id IN ({})",
                parameters(3, delivered.len())
            );
            let mut update = B::query(&sql).bind(now).bind(worker);
            for id in &delivered {
                update = update.bind(*id);
            }
            update.execute(&mut tx).await?;
        }
        // The rest each have their own next time.
        for ((id, delivery, attempt), status) in rows.iter().zip(&statuses) {
            if *status == DeliveryStatus::Delivered {
                continue;
            }
            B::query(
                "UPDATE webhook_deliveries
                    SET attempts = $1, status = $2, next_attempt_at = $3, updated_at = $4,
                        claimed_by = NULL, claimed_until = NULL
                  WHERE id = $5 AND claimed_by = $6 AND status = 'pending'",
            )
            .bind(i64::from(delivery.attempts + 1))
            .bind(status.as_str())
            .bind(delivery.next_attempt_ms(attempt))
            .bind(now)
            .bind(*id)
            .bind(worker)
            .execute(&mut tx)
            .await?;
        }
        tx.commit().await?;
        Ok(statuses)
    }

    async fn forget_events(&self, before_ms: i64) -> Result<u64, StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        B::query(
            "DELETE FROM webhook_attempts WHERE delivery_id IN
                (SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND updated_at < $1)",
        )
        .bind(before_ms)
        .execute(&mut tx)
        .await?;
        B::query("DELETE FROM webhook_deliveries WHERE status <> 'pending' AND updated_at < $1")
            .bind(before_ms)
            .execute(&mut tx)
            .await?;
        // An event a pending delivery, or the dispatcher, still needs stays.
        let gone = B::query(
            "DELETE FROM events WHERE created_at < $1
                AND id <= (SELECT through_event_id FROM webhook_dispatch WHERE id = 1)
                AND id NOT IN (SELECT event_id FROM webhook_deliveries)",
        )
        .bind(before_ms)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        Ok(gone)
    }
}
