//! Providing: announcing to the DHT that this node has what the service stores, so that any
//! IPFS node finds it by the CID alone.
//!
//! The queue is the metadata store's provide log (completed uploads in completion order), so
//! an upload never waits for it and nothing is held in memory but a page. Each node provides
//! every root (any node serves any block) and keeps its own place in the log, and:
//! - follows the log for new roots ([`follow_the_log`]), a few provides at a time;
//! - provides every distinct root (or, with [`ProvideStrategy::All`], every indexed block)
//!   again every 22 hours (`--reprovide-interval`), region by region of the
//!   DHT's keyspace spread over the interval ([`sweep`]), as provider records expire on the
//!   DHT after 48 hours;
//! - when a provide finds no DHT peer (content stored before the node joined), waits for peers
//!   and provides again, instead of leaving it to the next sweep.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use cairn_p2p::NodeHandle;
use cairn_store::model::{LogPlace, ProvideProgress};
use cairn_store::{now_ms, StoreError};
use cairn_unixfs::block::RAW;
use cairn_unixfs::Cid;
use futures_util::StreamExt;
use tokio::sync::watch;

mod sweep;

use crate::config::ProvideStrategy;
use crate::gc::walk::dag_multihashes;
use crate::stop::sleep_unless_stopped;
use crate::Service;

/// How often the log is read for new roots.
const POLL_EVERY: Duration = Duration::from_secs(1);
/// Roots read from the store at once.
const PAGE: u32 = 256;
/// Provides under way at once; each is a DHT query that takes a while on the public network.
const CONCURRENT_PROVIDES: usize = 8;
/// Uploads may become visible out of order (transactions commit in their own time, nodes'
/// clocks differ): every [`LOOK_BACK_EVERY`] polls the log is read again this far back,
/// skipping what was already provided; the other polls read what follows the place reached.
/// IPNI's publisher follows its logs the same way.
const LOOK_BACK_MS: i64 = 30_000;
const LOOK_BACK_EVERY: u64 = 10;

/// The place in a log [`LOOK_BACK_MS`] before `through`.
fn looked_back(through: LogPlace) -> LogPlace {
    LogPlace {
        at_ms: through.at_ms - LOOK_BACK_MS,
        operation_id: 0,
    }
}

/// Where the `poll`th read of a log that has been followed to `through` starts: a little way
/// back every [`LOOK_BACK_EVERY`] polls (the first included), else right after `through`.
pub(crate) fn read_from(through: LogPlace, poll: u64) -> LogPlace {
    if poll.is_multiple_of(LOOK_BACK_EVERY) {
        looked_back(through)
    } else {
        through
    }
}

/// Roots completed and not yet provided by this node.
pub async fn queued(service: &Service) -> Result<u64, StoreError> {
    service
        .store
        .count_completed_roots(service.provides.through())
        .await
}

/// Provide what the service stores until `stop`.
pub async fn keep_providing(service: Service, stop: watch::Receiver<bool>) {
    let Some(node) = service.node.clone() else {
        return;
    };
    let peer_id = node.peer_id().to_string();
    let progress = loop {
        match service.store.provide_progress(&peer_id).await {
            // A new node has provided nothing: its first pass of the reprovide cycle covers
            // what is stored, and the log is followed from now on (its first read looks
            // back a little, as every tenth does).
            Ok(progress) => {
                break progress.unwrap_or(ProvideProgress {
                    through: LogPlace {
                        at_ms: now_ms(),
                        operation_id: 0,
                    },
                    pass: None,
                })
            }
            Err(e) => {
                tracing::warn!("reading this node's provide progress failed: {e}");
                if sleep_unless_stopped(&stop, Duration::from_secs(5)).await {
                    return;
                }
            }
        }
    };
    service.provides.set_through(progress.through);
    if let Some(pass) = progress.pass {
        service.provides.set_pass(pass);
        // The pass under way began when the one before it ended (or was due to).
        if pass.began_at_ms <= now_ms() {
            service
                .provides
                .last_sweep_at_ms
                .store(pass.began_at_ms, Ordering::Relaxed);
        }
    }
    tokio::join!(
        follow_the_log(&service, &node, &peer_id, stop.clone()),
        sweep::keep_reproviding(&service, &node, &peer_id, stop),
    );
}

/// Provide each root (or its every block) as it completes.
async fn follow_the_log(
    service: &Service,
    node: &NodeHandle,
    peer_id: &str,
    stop: watch::Receiver<bool>,
) {
    // What was provided within the look-back, by its place in the log.
    let mut recent: BTreeSet<LogPlace> = BTreeSet::new();
    for poll in 0u64.. {
        if sleep_unless_stopped(&stop, POLL_EVERY).await {
            return;
        }
        let through = service.provides.through();
        let mut after = read_from(through, poll);
        loop {
            let page = match service.store.completed_roots(after, PAGE).await {
                Ok(page) => page,
                Err(e) => {
                    tracing::warn!("reading the provide log failed: {e}");
                    break;
                }
            };
            let Some((last, _)) = page.last() else { break };
            after = *last;
            let fresh: Vec<(LogPlace, String)> = page
                .into_iter()
                .filter(|(key, _)| *key > through || !recent.contains(key))
                .collect();
            let keys: Vec<LogPlace> = fresh.iter().map(|(key, _)| *key).collect();
            let cids = provided_for(service, fresh.into_iter().map(|(_, cid)| cid)).await;
            if !provide_all(service, node, cids, &stop).await {
                return;
            }
            recent.extend(keys);
            if after > service.provides.through() {
                service.provides.set_through(after);
                save_progress(service, peer_id).await;
            }
        }
        recent = recent.split_off(&looked_back(service.provides.through()));
    }
}

/// What is provided for `roots` under the node's strategy: the roots, or every stored block of
/// their DAGs.
async fn provided_for(service: &Service, roots: impl Iterator<Item = String>) -> Vec<Cid> {
    let mut cids = Vec::new();
    for text in roots {
        let root = match text.parse::<Cid>() {
            Ok(root) => root,
            Err(e) => {
                tracing::warn!("not providing the stored root {text:?}: {e}");
                continue;
            }
        };
        if service.config.provide_strategy == ProvideStrategy::Roots {
            cids.push(root);
            continue;
        }
        match dag_multihashes(&service.store, &service.packs, &root).await {
            Ok(Some(blocks)) => cids.extend(blocks.iter().filter_map(|mh| block_cid(mh))),
            Ok(None) => tracing::warn!("not providing {root}: its root block is not stored"),
            // Its root at least; the next sweep provides every block.
            Err(e) => {
                tracing::warn!("reading {root}'s blocks to provide them failed: {e}");
                cids.push(root);
            }
        }
    }
    cids
}

/// A CID for a block known by its multihash (raw: the codec does not matter to the DHT).
fn block_cid(multihash: &[u8]) -> Option<Cid> {
    let multihash = cid::multihash::Multihash::<64>::from_bytes(multihash).ok()?;
    Some(Cid::new_v1(RAW, multihash))
}

/// Provide `cids`, a few at a time; a provide that reached no peer is done again once the DHT
/// has peers. `false` if stopped first.
pub(crate) async fn provide_all(
    service: &Service,
    node: &NodeHandle,
    cids: Vec<Cid>,
    stop: &watch::Receiver<bool>,
) -> bool {
    let mut pending = cids;
    let mut failures_with_peers = 0;
    while !pending.is_empty() {
        // Each provide is one lookup (in each DHT with peers).
        (service.provides.lookups).fetch_add(pending.len() as u64, Ordering::Relaxed);
        let results: Vec<(Cid, bool)> = futures_util::stream::iter(pending)
            .map(|cid| async move {
                let started = Instant::now();
                let reached = node.provide(cid).await.unwrap_or(0);
                tracing::debug!(%cid, reached, elapsed = ?started.elapsed(), "provided");
                (cid, reached > 0)
            })
            .buffer_unordered(CONCURRENT_PROVIDES)
            .collect()
            .await;
        let stats = &service.provides;
        pending = results
            .into_iter()
            .filter_map(|(cid, reached)| {
                if reached {
                    stats.provided.fetch_add(1, Ordering::Relaxed);
                }
                (!reached).then_some(cid)
            })
            .collect();
        if pending.is_empty() {
            break;
        }
        let peers = node.dht_peers();
        if *peers.borrow() > 0 {
            // Peers are known but none took the record: try a few times, then leave it to
            // the next sweep rather than hold up the log.
            failures_with_peers += 1;
            if failures_with_peers >= 3 {
                tracing::warn!(
                    "{} provides reached no DHT peer three times; the next sweep retries",
                    pending.len()
                );
                break;
            }
        }
        stats
            .waiting_for_peers
            .store(pending.len() as u64, Ordering::Relaxed);
        if !wait_for_dht_peers(node, stop).await {
            return false;
        }
        stats.waiting_for_peers.store(0, Ordering::Relaxed);
    }
    true
}

/// Wait until the DHTs have peers, and a little more for their routing tables to fill;
/// `false` if stopped first.
async fn wait_for_dht_peers(node: &NodeHandle, stop: &watch::Receiver<bool>) -> bool {
    let mut peers = node.dht_peers();
    let mut stopped = stop.clone();
    tokio::select! {
        _ = stopped.wait_for(|stop| *stop) => return false,
        _ = peers.wait_for(|n| *n > 0) => {}
    }
    !sleep_unless_stopped(stop, Duration::from_secs(2)).await
}

/// Save how far this node has provided, for a restart to resume from.
async fn save_progress(service: &Service, peer_id: &str) {
    let progress = service.provides.progress();
    if let Err(e) = service
        .store
        .save_provide_progress(peer_id, &progress)
        .await
    {
        tracing::warn!("saving this node's provide progress failed: {e}");
    }
}
