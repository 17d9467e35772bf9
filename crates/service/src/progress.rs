//! How far the background tasks have come: what `/metrics` and `/api/node` show of providing
//! and of IPNI publishing, kept by the tasks and read by anyone.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use cairn_store::model::LogPlace;

/// What `/metrics` and `/api/node` show of providing.
#[derive(Debug, Default)]
pub struct ProvideStats {
    pub provided: AtomicU64,
    /// Provides that reached no DHT peer and wait for peers to be done again.
    pub waiting_for_peers: AtomicU64,
    pub sweeps: AtomicU64,
    pub last_sweep_seconds: AtomicU64,
    /// Milliseconds since the epoch; 0 before the first sweep.
    pub last_sweep_at_ms: AtomicI64,
    /// The place in the log this node has provided through (its `completed_at`, `id`).
    through_at_ms: AtomicI64,
    through_operation_id: AtomicI64,
}

impl ProvideStats {
    /// How far this node has provided the log.
    pub fn through(&self) -> LogPlace {
        LogPlace {
            at_ms: self.through_at_ms.load(Ordering::Relaxed),
            operation_id: self.through_operation_id.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn set_through(&self, key: LogPlace) {
        self.through_at_ms.store(key.at_ms, Ordering::Relaxed);
        self.through_operation_id
            .store(key.operation_id, Ordering::Relaxed);
    }
}

/// What `/metrics` shows of publishing.
#[derive(Debug, Default)]
pub struct IpniStats {
    pub advertisements: AtomicU64,
    pub removals: AtomicU64,
    pub multihashes: AtomicU64,
    pub announces_sent: AtomicU64,
    pub announces_failed: AtomicU64,
}
