//! The node's view of the event log: one task follows every account's events in the metadata
//! store (written there by triggers, on whichever node made the change) and hands each to the
//! streams subscribed on this node. One query per round for the node, not one per stream. It
//! also forgets, hourly, what is older than the log keeps.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_store::events::{Event, EVENTS_KEPT_MS};
use cairn_store::{now_ms, MetadataStore};
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
/// Events held for streams that have not read them yet. A stream that falls further behind
/// is told so and reads its backlog from the store instead (`Lagged`).
const BUFFERED: usize = 4096;

/// Where the node's streams hear of new events.
pub struct EventBus {
    sender: broadcast::Sender<Arc<Event>>,
}

impl Default for EventBus {
    fn default() -> Self {
        Self {
            sender: broadcast::channel(BUFFERED).0,
        }
    }
}

impl EventBus {
    /// Events committed from now on (a stream reads what came before from the store).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.sender.subscribe()
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
                for event in events {
                    after = event.id;
                    // No stream listening is not an error.
                    let _ = bus.sender.send(Arc::new(event));
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
