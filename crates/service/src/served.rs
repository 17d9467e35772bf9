//! Bytes served of each account's content, for `GET /api/usage`: the gateway counts the body
//! it sent for a root, this adds them up in memory and every [`FLUSH_EVERY`] credits them to
//! the accounts that keep that root (each of them: it is its content too), per calendar month.
//! A node killed without stopping loses what it had not written yet (at most that interval).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cairn_store::events::Month;
use cairn_store::{now_ms, MetadataStore};
use tokio::sync::watch;

use crate::stop::sleep_unless_stopped;

const FLUSH_EVERY: Duration = Duration::from_secs(10);
/// Roots counted between flushes; bytes for roots past this wait for nothing and are not
/// counted (a flood of distinct CIDs must not grow the map without end).
const MAX_ROOTS: usize = 10_000;

#[derive(Default)]
pub struct ServedBytes {
    pending: Mutex<HashMap<String, u64>>,
}

impl ServedBytes {
    /// `bytes` of a response for the DAG under `root` went out.
    pub fn add(&self, root: &str, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(counted) = pending.get_mut(root) {
            *counted += bytes;
        } else if pending.len() < MAX_ROOTS {
            pending.insert(root.to_owned(), bytes);
        }
    }

    fn take(&self) -> HashMap<String, u64> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Credit what was served until the service stops, and once more then.
pub async fn record_served(
    store: Arc<dyn MetadataStore>,
    served: Arc<ServedBytes>,
    stop: watch::Receiver<bool>,
) {
    loop {
        let stopping = sleep_unless_stopped(&stop, FLUSH_EVERY).await;
        if let Err(e) = flush(store.as_ref(), &served).await {
            tracing::warn!(error = %e, "recording served bytes failed");
        }
        if stopping {
            return;
        }
    }
}

async fn flush(
    store: &dyn MetadataStore,
    served: &ServedBytes,
) -> Result<(), cairn_store::StoreError> {
    let served = served.take();
    let mut by_account: HashMap<i64, u64> = HashMap::new();
    for (root, bytes) in served {
        for account in store.accounts_keeping(&root).await? {
            *by_account.entry(account).or_default() += bytes;
        }
    }
    let by_account: Vec<(i64, u64)> = by_account.into_iter().collect();
    store
        .add_served_bytes(&Month::of(now_ms()).to_string(), &by_account)
        .await
}
