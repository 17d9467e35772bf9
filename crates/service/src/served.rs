//! Bytes served of each account's content, for `GET /api/usage`, credited every
//! [`FLUSH_EVERY`] to the accounts that keep the DAG's root (each of them: it is its content
//! too), per calendar month:
//! - the gateway counts each response's body for the root it was asked for ([`ServedBytes`]);
//! - Bitswap serves blocks, not DAGs: a peer's blocks are credited to the root it last asked
//!   for ([`PeerRoots`]), since a DAG is fetched from its root down (Kubo, Helia, boxo).
//!
//! A node killed without stopping loses what it had not written yet (at most that interval).

use cairn_store::Uploads;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cairn_p2p::bitswap::{Bitswap, SentToPeer};
use cairn_p2p::PeerId;
use cairn_store::events::Month;
use cairn_store::{now_ms, MetadataStore, StoreError};
use tokio::sync::watch;

use crate::stop::sleep_unless_stopped;

const FLUSH_EVERY: Duration = Duration::from_secs(10);
/// Roots counted between flushes; bytes for roots past this wait for nothing and are not
/// counted (a flood of distinct CIDs must not grow the map without end).
const MAX_ROOTS: usize = 10_000;
/// Blocks looked up per flush to find which roots peers asked for (a look-up each); the
/// peers past it are credited to the root they asked for before.
const ROOT_LOOKUPS: usize = 2_000;
/// A peer that has asked for nothing this long has no root any more.
const PEER_ROOT_KEPT_MS: i64 = 10 * 60 * 1000;

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
    bitswap: Option<Bitswap>,
    stop: watch::Receiver<bool>,
) {
    let mut peer_roots = PeerRoots::default();
    loop {
        let stopping = sleep_unless_stopped(&stop, FLUSH_EVERY).await;
        let mut by_root = served.take();
        if let Some(bitswap) = &bitswap {
            let sent = bitswap.take_sent();
            match peer_roots.credit(store.as_ref(), sent, now_ms()).await {
                Ok(credited) => {
                    for (root, bytes) in credited {
                        *by_root.entry(root).or_default() += bytes;
                    }
                }
                Err(e) => tracing::warn!(error = %e, "finding what Bitswap peers fetched failed"),
            }
        }
        if let Err(e) = flush(store.as_ref(), by_root).await {
            tracing::warn!(error = %e, "recording served bytes failed");
        }
        if stopping {
            return;
        }
    }
}

async fn flush(store: &dyn MetadataStore, by_root: HashMap<String, u64>) -> Result<(), StoreError> {
    let mut by_account: HashMap<i64, u64> = HashMap::new();
    for (root, bytes) in by_root {
        for account in store.accounts_keeping(&root).await? {
            *by_account.entry(account).or_default() += bytes;
        }
    }
    let by_account: Vec<(i64, u64)> = by_account.into_iter().collect();
    store
        .add_served_bytes(&Month::of(now_ms()).to_string(), &by_account)
        .await
}

/// The kept root each Bitswap peer last asked for, and when it last fetched.
#[derive(Default)]
struct PeerRoots(HashMap<PeerId, (String, i64)>);

impl PeerRoots {
    /// Each peer's bytes and the root they are credited to: the first of its blocks that is
    /// a root some account keeps, else the root it asked for before. Bytes of a peer with no
    /// root are not credited.
    async fn credit(
        &mut self,
        store: &dyn Uploads,
        sent: Vec<SentToPeer>,
        now: i64,
    ) -> Result<Vec<(String, u64)>, StoreError> {
        let mut lookups = ROOT_LOOKUPS;
        let mut credited = Vec::new();
        for peer in sent {
            for cid in &peer.first_blocks {
                if lookups == 0 {
                    break;
                }
                lookups -= 1;
                let cid = cid.to_string();
                if !store.accounts_keeping(&cid).await?.is_empty() {
                    self.0.insert(peer.peer, (cid, now));
                    break;
                }
            }
            if let Some((root, seen)) = self.0.get_mut(&peer.peer) {
                *seen = now;
                credited.push((root.clone(), peer.bytes));
            }
        }
        self.0
            .retain(|_, (_, seen)| *seen > now - PEER_ROOT_KEPT_MS);
        Ok(credited)
    }
}
