//! The event log, webhook endpoints and their deliveries.

use crate::events::{
    Attempt, ClaimedDelivery, Delivery, DeliveryStatus, Event, EventType, NewDeliveries, Webhook,
};
use crate::StoreError;
use async_trait::async_trait;

/// The event log, webhook endpoints and their deliveries.
#[async_trait]
pub trait EventLog: Send + Sync {
    // Events, webhooks and usage (`events`).
    /// The account's events after `after`, of `types` (every type when empty), oldest first.
    async fn events_after(
        &self,
        account_id: i64,
        after: i64,
        types: &[EventType],
        limit: u32,
    ) -> Result<Vec<Event>, StoreError>;

    /// Every account's events after `after`, oldest first: what a node hands its streams.
    async fn all_events_after(&self, after: i64, limit: u32) -> Result<Vec<Event>, StoreError>;

    /// The newest event's id (0 when there is none).
    async fn last_event_id(&self) -> Result<i64, StoreError>;

    /// One operation's events, oldest first.
    async fn operation_events(&self, operation_id: i64) -> Result<Vec<Event>, StoreError>;

    /// `Invalid` when the account has `MAX_WEBHOOKS` endpoints already.
    async fn create_webhook(&self, webhook: &Webhook) -> Result<Webhook, StoreError>;

    async fn list_webhooks(&self, account_id: i64) -> Result<Vec<Webhook>, StoreError>;

    /// Its pending deliveries fail; `None` when the account has no such endpoint.
    async fn delete_webhook(
        &self,
        account_id: i64,
        id: &str,
    ) -> Result<Option<Webhook>, StoreError>;

    /// The endpoint's deliveries with their attempts, newest first, those before the delivery
    /// `before` when given; `None` when the account has no such endpoint.
    async fn webhook_deliveries(
        &self,
        account_id: i64,
        webhook_id: &str,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Option<Vec<Delivery>>, StoreError>;

    /// Queue a delivery again now (for another 24 hours); `None` when there is no such
    /// delivery of a live endpoint of the account.
    async fn retry_delivery(
        &self,
        account_id: i64,
        webhook_id: &str,
        delivery_id: i64,
    ) -> Result<Option<Delivery>, StoreError>;

    /// Deliveries not attempted yet (events after the dispatch cursor, with the endpoints
    /// that hear of them), up to `limit`, for `worker` holding the dispatch lease for `lease`;
    /// none while another dispatcher holds it.
    async fn take_new_deliveries(
        &self,
        worker: &str,
        lease: std::time::Duration,
        limit: u32,
    ) -> Result<NewDeliveries, StoreError>;

    /// Record the first attempts of `new`'s deliveries and move the dispatch cursor past its
    /// events, as one write; the deliveries' ids come back in order. One whose attempt is
    /// still under way (`None`) is left claimed by `worker`, to record with
    /// [`Self::record_attempts`] when it ends. `None`, with nothing written, when `worker`
    /// lost the dispatch lease.
    async fn record_first_attempts(
        &self,
        worker: &str,
        lease: std::time::Duration,
        new: &NewDeliveries,
        attempts: &[(&ClaimedDelivery, Option<&Attempt>)],
    ) -> Result<Option<Vec<i64>>, StoreError>;

    /// Claim up to `limit` deliveries due again for `worker`, for `lease`.
    async fn claim_deliveries(
        &self,
        worker: &str,
        lease: std::time::Duration,
        limit: u32,
    ) -> Result<Vec<ClaimedDelivery>, StoreError>;

    /// Record attempts (one write for a batch: each is a share of what the single writer
    /// does); returns where each delivery now stands.
    async fn record_attempts(
        &self,
        worker: &str,
        attempts: &[(&ClaimedDelivery, &Attempt)],
    ) -> Result<Vec<DeliveryStatus>, StoreError>;

    /// Forget events and finished deliveries older than `before_ms` (pending ones stay).
    async fn forget_events(&self, before_ms: i64) -> Result<u64, StoreError>;
}
