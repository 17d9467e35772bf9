//! The node's view of the event log: one task follows every account's events in the metadata
//! store (written there by triggers, on whichever node made the change) and hands each, with
//! its upload or pin, to the streams of its account subscribed on this node. Two queries per
//! round for the node (the events, then what they are about), not one per stream or per
//! event. It also forgets, hourly, what is older than the log keeps.

use cairn_store::{MetadataStore, Uploads};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairn_store::events::{Event, EVENTS_KEPT_MS};
use cairn_store::model::Operation;
use cairn_store::now_ms;
use tokio::sync::{broadcast, watch};

use crate::stop::sleep_unless_stopped;

/// How often the log is read: an event reaches a stream on any node within this (and the
/// round's query).
const FOLLOW_EVERY: Duration = Duration::from_millis(200);
/// Events read per query; a longer backlog takes several rounds back to back.
const PAGE: u32 = 500;
/// How often events older than `EVENTS_KEPT_MS`, and deliveries finished that long ago, are
/// forgotten.
const FORGET_EVERY: Duration = Duration::from_secs(3600);
/// An account's events held for its streams that have not read them yet. A stream that
/// falls further behind is told so and reads its backlog from the store instead (`Lagged`).
/// Each account with a stream has a channel of its own, this many slots long.
const BUFFERED: usize = 256;

/// An event as the node's streams are handed it.
pub struct LiveEvent {
    pub event: Event,
    /// Its upload or pin as it was when the event was read (`None` when that read failed:
    /// a stream then reads it itself).
    pub operation: Option<Operation>,
}

/// Where the node's streams hear of new events: a channel per account with streams, so an
/// event wakes its account's streams only, not every stream on the node.
#[derive(Default)]
pub struct EventBus {
    accounts: Mutex<HashMap<i64, broadcast::Sender<Arc<LiveEvent>>>>,
}

impl EventBus {
    /// The account's events committed from now on (a stream reads what came before from the
    /// store).
    pub fn subscribe(&self, account_id: i64) -> broadcast::Receiver<Arc<LiveEvent>> {
        let mut accounts = self.accounts.lock().unwrap_or_else(|e| e.into_inner());
        accounts
            .entry(account_id)
            .or_insert_with(|| broadcast::channel(BUFFERED).0)
            .subscribe()
    }

    /// Hand `event` to its account's streams; an account whose streams have all gone loses
    /// its channel.
    fn publish(&self, event: LiveEvent) {
        let mut accounts = self.accounts.lock().unwrap_or_else(|e| e.into_inner());
        let account_id = event.event.account_id;
        if let Some(sender) = accounts.get(&account_id) {
            if sender.send(Arc::new(event)).is_err() {
                accounts.remove(&account_id);
            }
        }
    }
}

/// Follow the event log until the service stops, from its newest event at the start.
pub async fn follow_events(
    store: Arc<dyn MetadataStore>,
    bus: Arc<EventBus>,
    stop: watch::Receiver<bool>,
) {
    let mut after = loop {
        match store.last_event_id().await {
            Ok(id) => break id,
            Err(e) => {
                tracing::warn!(error = %e, "reading the event log failed; retrying");
                if sleep_unless_stopped(&stop, Duration::from_secs(1)).await {
                    return;
                }
            }
        }
    };
    let mut forgotten = Instant::now() - FORGET_EVERY;
    loop {
        if forgotten.elapsed() >= FORGET_EVERY {
            forgotten = Instant::now();
            if let Err(e) = store.forget_events(now_ms() - EVENTS_KEPT_MS).await {
                tracing::warn!(error = %e, "forgetting old events failed");
            }
        }
        match store.all_events_after(after, PAGE).await {
            Ok(events) => {
                let full = events.len() == PAGE as usize;
                let mut operations = operations_of(store.as_ref(), events.iter()).await;
                for event in events {
                    after = event.id;
                    let operation = operations.remove(&event.id);
                    bus.publish(LiveEvent { event, operation });
                }
                if full {
                    continue;
                }
            }
            Err(e) => tracing::warn!(error = %e, "reading the event log failed; retrying"),
        }
        if sleep_unless_stopped(&stop, FOLLOW_EVERY).await {
            return;
        }
    }
}

/// The upload or pin each of `events` is about, by event id, in one read; none when the read
/// fails (whoever needs one then reads it alone).
pub async fn operations_of<'a>(
    store: &dyn Uploads,
    events: impl Iterator<Item = &'a Event> + Clone,
) -> HashMap<i64, Operation> {
    let ids: Vec<i64> = events.clone().map(|event| event.operation_id).collect();
    let found = match store.operations_by_id(&ids).await {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(error = %e, "reading the operations of events failed");
            return HashMap::new();
        }
    };
    let by_id: HashMap<i64, &Operation> = found.iter().map(|op| (op.id, op)).collect();
    events
        .filter_map(|event| {
            let op = by_id.get(&event.operation_id)?;
            (op.account_id == event.account_id).then(|| (event.id, (*op).clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_store::events::EventType;

    fn event(id: i64, account_id: i64) -> LiveEvent {
        LiveEvent {
            event: Event {
                id,
                account_id,
                kind: EventType::UploadCompleted,
                operation_id: id,
                created_at_ms: 0,
            },
            operation: None,
        }
    }

    #[test]
    fn an_event_reaches_its_accounts_streams_only_and_idle_channels_go() {
        let bus = EventBus::default();
        let (mut alice, mut bob) = (bus.subscribe(1), bus.subscribe(2));
        bus.publish(event(10, 1));
        assert_eq!(alice.try_recv().unwrap().event.id, 10);
        assert!(bob.try_recv().is_err(), "not bob's");
        drop(bob);
        bus.publish(event(11, 2));
        assert!(!bus.accounts.lock().unwrap().contains_key(&2));
        assert!(bus.accounts.lock().unwrap().contains_key(&1));
    }
}
