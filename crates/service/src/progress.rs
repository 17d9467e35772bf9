//! How far the background tasks have come: what `/metrics` and `/api/node` show of providing,
//! of IPNI publishing and of scrubbing, kept by the tasks and read by anyone.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use cairn_store::model::{LogPlace, ProvideProgress, SweepPass};

/// What `/metrics` and `/api/node` show of providing.
#[derive(Debug, Default)]
pub struct ProvideStats {
    pub provided: AtomicU64,
    /// Provides that reached no DHT peer and wait for peers to be done again.
    pub waiting_for_peers: AtomicU64,
    /// Passes of the reprovide cycle run to their end.
    pub sweeps: AtomicU64,
    /// DHT lookups made to provide, and the provider records the region sweeps sent.
    pub lookups: AtomicU64,
    pub records_sent: AtomicU64,
    pub regions: AtomicU64,
    /// How long the last pass took, from its first region to its end.
    pub last_sweep_seconds: AtomicU64,
    /// When the last pass ended (after a restart, when the pass under way began), in
    /// milliseconds since the epoch; 0 before the first.
    pub last_sweep_at_ms: AtomicI64,
    /// The place in the log this node has provided through (its `completed_at`, `id`).
    through_at_ms: AtomicI64,
    through_operation_id: AtomicI64,
    /// Where the reprovide cycle is.
    pass: Mutex<Option<SweepPass>>,
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

    /// The reprovide cycle's pass under way; `None` before the first.
    pub fn pass(&self) -> Option<SweepPass> {
        *self.pass.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn set_pass(&self, pass: SweepPass) {
        *self.pass.lock().unwrap_or_else(|e| e.into_inner()) = Some(pass);
    }

    /// What is saved in the store for a restart to resume from.
    pub(crate) fn progress(&self) -> ProvideProgress {
        ProvideProgress {
            through: self.through(),
            pass: self.pass(),
        }
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

/// Damaged blocks `GET /api/node` lists, the latest.
const DAMAGED_LISTED: usize = 100;

/// What scrubbing has done since this process started (`GET /api/node`, `/metrics`).
#[derive(Debug, Default)]
pub struct ScrubStats {
    pub(crate) passes_completed: AtomicU64,
    /// 0: no pass finished yet.
    pub(crate) last_pass_finished_at_ms: AtomicI64,
    pub(crate) blocks_checked: AtomicU64,
    pub(crate) bytes_checked: AtomicU64,
    /// Each time a block was found damaged (again in a later pass if not repaired).
    pub(crate) damaged_found: AtomicU64,
    pub(crate) repaired: AtomicU64,
    damaged: Mutex<VecDeque<DamagedEntry>>,
}

/// A damaged block found, as `GET /api/node` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DamagedEntry {
    pub cid: String,
    pub pack: String,
    pub error: String,
    pub repaired: bool,
}

/// A snapshot of [`ScrubStats`].
#[derive(Clone, Debug)]
pub struct ScrubReport {
    pub enabled: bool,
    pub rate_bytes_per_second: u64,
    pub passes_completed: u64,
    pub last_pass_finished_at_ms: Option<i64>,
    pub blocks_checked: u64,
    pub bytes_checked: u64,
    /// Oldest first.
    pub damaged: Vec<DamagedEntry>,
}

impl ScrubStats {
    pub fn report(&self, interval: Duration, rate: u64) -> ScrubReport {
        ScrubReport {
            enabled: !interval.is_zero(),
            rate_bytes_per_second: rate,
            passes_completed: self.passes_completed.load(Ordering::Relaxed),
            last_pass_finished_at_ms: match self.last_pass_finished_at_ms.load(Ordering::Relaxed) {
                0 => None,
                ms => Some(ms),
            },
            blocks_checked: self.blocks_checked.load(Ordering::Relaxed),
            bytes_checked: self.bytes_checked.load(Ordering::Relaxed),
            damaged: self.damaged().iter().cloned().collect(),
        }
    }

    fn damaged(&self) -> MutexGuard<'_, VecDeque<DamagedEntry>> {
        // A poisoned lock only means a panic mid-update of a list that stays well formed.
        self.damaged.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Listed once however many passes find it, as the latest.
    pub(crate) fn found_damaged(&self, entry: DamagedEntry) {
        self.damaged_found.fetch_add(1, Ordering::Relaxed);
        let mut damaged = self.damaged();
        damaged.retain(|e| e.cid != entry.cid);
        if damaged.len() == DAMAGED_LISTED {
            damaged.pop_front();
        }
        damaged.push_back(entry);
    }

    pub(crate) fn repaired(&self, cid: &str) {
        self.repaired.fetch_add(1, Ordering::Relaxed);
        if let Some(entry) = self.damaged().iter_mut().find(|e| e.cid == cid) {
            entry.repaired = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damaged_blocks_are_listed_once_and_at_most_a_hundred() {
        let stats = ScrubStats::default();
        let entry = |i: usize| DamagedEntry {
            cid: format!("cid{i}"),
            pack: "p.car".into(),
            error: "hash mismatch".into(),
            repaired: false,
        };
        for i in 0..150 {
            stats.found_damaged(entry(i));
        }
        stats.found_damaged(entry(120));
        stats.repaired("cid120");
        let listed = stats.report(Duration::from_secs(1), 1).damaged;
        assert_eq!(listed.len(), DAMAGED_LISTED);
        assert_eq!(listed[0].cid, "cid50");
        let last = listed.last().unwrap();
        assert!(last.cid == "cid120" && last.repaired, "{last:?}");
        assert_eq!(listed.iter().filter(|e| e.cid == "cid120").count(), 1);
    }
}
