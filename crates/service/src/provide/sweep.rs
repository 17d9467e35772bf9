//! The reprovide cycle, region by region of the DHT's keyspace ("sweeping", as Kubo provides
//! since 0.39).
//!
//! Provided one by one, every CID costs a DHT lookup to find the [`K`] peers closest to it,
//! which on the public network takes seconds. Here the keys are sorted by their place in the
//! keyspace and taken a region at a time: a few lookups learn every peer of the region (see
//! [`keyspace`]), each key's [`K`] closest peers are picked from them without a lookup of its
//! own, and each peer gets all of its records on one stream. The lookups grow with the
//! network's size, not with what is stored.
//!
//! A pass of the cycle begins every interval; the region starting at position `p` along the
//! keyspace falls due `p / 2^64` of the interval after the pass began, so the work is spread
//! over the interval instead of coming in bursts. After each region the pass's place is saved
//! in the store ([`SweepPass`]), and a restart resumes after the last region done. A node
//! that has never swept begins its first pass an interval ago: every region is due, and
//! what is stored is provided at once. After such a catch-up the next pass begins where the
//! late one should have ended, so its first regions come again soon: a few records sent
//! early, none late.
//!
//! The keys of a pass are read from the store when it begins and held for the pass (about
//! 100 bytes each); a root stored since then was provided when it was stored (`mod.rs`), and
//! is in the next pass.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use cairn_p2p::keyspace::{self, covered_by, Coverage, Point, Prefix, K};
use cairn_p2p::{Dht, Multiaddr, NodeHandle, PeerId};
use cairn_store::model::SweepPass;
use cairn_store::{now_ms, StoreError};
use cairn_unixfs::Cid;
use futures_util::StreamExt;
use tokio::sync::watch;

use super::{block_cid, provide_all, save_progress, wait_for_dht_peers};
use crate::config::ProvideStrategy;
use crate::stop::sleep_unless_stopped;
use crate::Service;

/// A region with this few keys has them provided one by one: learning its peers would take
/// more lookups.
const FEW: usize = 2;
/// Lookups spent learning one region's peers before its keys are provided one by one instead.
const LOOKUPS_PER_REGION: usize = 64;
/// Lookup targets are ground to lie in their region's first this many bits (2^20 hashes at
/// most; regions on the public DHT are about 10 bits long).
const TARGET_BITS: usize = 20;
/// Random lookups made to estimate how long a region holding [`K`] peers is.
const ESTIMATES: usize = 4;
/// Peers sent their records at once, and how long one peer's sending may take.
const PEERS_AT_ONCE: usize = 20;
const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// Keys read from the store at once.
const PAGE: u32 = 1024;

/// A key to provide: where it lies in the keyspace, and its multihash (the record's key).
struct Key {
    point: Point,
    multihash: Vec<u8>,
}

/// Provide everything again, pass after pass, until `stop`.
pub(super) async fn keep_reproviding(
    service: &Service,
    node: &NodeHandle,
    peer_id: &str,
    stop: watch::Receiver<bool>,
) {
    let interval = service.config.reprovide_interval;
    let interval_ms = interval.as_millis() as i64;
    loop {
        let mut pass = pass_to_go_on(service.provides.pass(), now_ms(), interval_ms);
        service.provides.set_pass(pass);
        if sleep_unless_stopped(&stop, until(pass.began_at_ms)).await {
            return;
        }
        let Some(dhts) = serving_dhts(node, &stop).await else {
            return;
        };
        let Some(keys) = keys_to_provide(service, &stop).await else {
            return;
        };
        let region_len = estimate_region_len(service, node, &dhts, &keys).await;
        tracing::info!(
            keys = keys.len(),
            region_len,
            reached = pass.reached,
            "a pass of the reprovide cycle begins"
        );
        let started = Instant::now();
        let mut next = keys.partition_point(|key| key.point.position() < pass.reached);
        while next < keys.len() {
            let region = Prefix::of(&keys[next].point, region_len);
            let end = next + keys[next..].partition_point(|key| region.contains(&key.point));
            let offset = (i128::from(interval_ms) * i128::from(region.start())) >> 64;
            if sleep_unless_stopped(&stop, until(pass.began_at_ms + offset as i64)).await {
                return;
            }
            if !reprovide_region(service, node, &dhts, region, &keys[next..end], &stop).await {
                return;
            }
            // Past the last region: the keyspace's end (a key at exactly 2^64 - 1 is
            // provided again after a restart, which does no harm).
            pass.reached = region.end().unwrap_or(u64::MAX);
            service.provides.set_pass(pass);
            save_progress(service, peer_id).await;
            // Counted once saved: what `/metrics` shows as swept is not swept again.
            service.provides.regions.fetch_add(1, Ordering::Relaxed);
            next = end;
        }
        let stats = &service.provides;
        stats.sweeps.fetch_add(1, Ordering::Relaxed);
        stats
            .last_sweep_seconds
            .store(started.elapsed().as_secs(), Ordering::Relaxed);
        stats.last_sweep_at_ms.store(now_ms(), Ordering::Relaxed);
        service.provides.set_pass(SweepPass {
            began_at_ms: pass.began_at_ms + interval_ms,
            reached: 0,
        });
        save_progress(service, peer_id).await;
    }
}

/// The pass to go on with at `now_ms`, from the one saved. A node that has never swept
/// begins an interval ago, so that every region is due; so does one stopped for longer than
/// an interval, from the keyspace's start: the records of the regions it had reached before
/// it stopped may have expired too.
fn pass_to_go_on(saved: Option<SweepPass>, now_ms: i64, interval_ms: i64) -> SweepPass {
    let overdue = SweepPass {
        began_at_ms: now_ms - interval_ms,
        reached: 0,
    };
    match saved {
        Some(pass) if pass.began_at_ms >= overdue.began_at_ms => pass,
        _ => overdue,
    }
}

/// How long until `at_ms`.
fn until(at_ms: i64) -> Duration {
    Duration::from_millis(at_ms.saturating_sub(now_ms()).max(0) as u64)
}

/// The DHTs with peers, once there are some; `None` if stopped first.
async fn serving_dhts(node: &NodeHandle, stop: &watch::Receiver<bool>) -> Option<Vec<Dht>> {
    loop {
        match node.serving_dhts().await {
            Ok(dhts) if !dhts.is_empty() => return Some(dhts),
            Ok(_) => {}
            Err(e) => tracing::warn!("asking the node for its DHTs failed: {e}"),
        }
        if !wait_for_dht_peers(node, stop).await {
            return None;
        }
    }
}

/// Every key the strategy provides, sorted by place in the keyspace; `None` if stopped first.
/// A page that cannot be read is read again 5 s later.
async fn keys_to_provide(service: &Service, stop: &watch::Receiver<bool>) -> Option<Vec<Key>> {
    let mut multihashes = Vec::new();
    let mut after_root = String::new();
    let mut after_block = Vec::new();
    loop {
        let page: Result<Vec<Vec<u8>>, StoreError> =
            match service.config.provide_strategy {
                ProvideStrategy::Roots => service
                    .store
                    .distinct_roots(&after_root, PAGE)
                    .await
                    .map(|roots| {
                        after_root = roots.last().cloned().unwrap_or_default();
                        roots
                            .iter()
                            .filter_map(|root| match root.parse::<Cid>() {
                                Ok(cid) => Some(cid.hash().to_bytes()),
                                Err(e) => {
                                    tracing::warn!("not providing the stored root {root:?}: {e}");
                                    None
                                }
                            })
                            .collect()
                    }),
                ProvideStrategy::All => {
                    service
                        .store
                        .indexed_blocks(&after_block, PAGE)
                        .await
                        .map(|blocks| {
                            after_block = blocks
                                .last()
                                .map(|b| b.multihash.clone())
                                .unwrap_or_default();
                            blocks.into_iter().map(|b| b.multihash).collect()
                        })
                }
            };
        match page {
            Ok(page) if page.is_empty() => break,
            Ok(page) => multihashes.extend(page),
            Err(e) => {
                tracing::warn!("reading what to reprovide failed: {e}");
                if sleep_unless_stopped(stop, Duration::from_secs(5)).await {
                    return None;
                }
            }
        }
    }
    let mut keys: Vec<Key> = multihashes
        .into_iter()
        .map(|multihash| Key {
            point: Point::of_key(&multihash),
            multihash,
        })
        .collect();
    keys.sort_unstable_by_key(|key| key.point);
    keys.dedup_by_key(|key| key.point);
    Some(keys)
}

/// How many leading bits a region holding about [`K`] to 2[`K`] peers has, in the smallest
/// of the DHTs (a region longer than that would hold too few peers there); from lookups of
/// a few of the keys, spread along the keyspace.
async fn estimate_region_len(
    service: &Service,
    node: &NodeHandle,
    dhts: &[Dht],
    keys: &[Key],
) -> usize {
    if keys.len() <= FEW {
        return 0;
    }
    let mut shortest = None;
    for dht in dhts {
        let mut lookups = Vec::new();
        for i in 0..ESTIMATES {
            let key = &keys[i * keys.len() / ESTIMATES];
            service.provides.lookups.fetch_add(1, Ordering::Relaxed);
            if let Ok(peers) = node.closest_peers(*dht, key.multihash.clone()).await {
                let points = peers.iter().map(|(peer, _)| Point::of_peer(peer)).collect();
                lookups.push((key.point, points));
            }
        }
        let len = keyspace::region_len(&lookups);
        shortest = Some(shortest.map_or(len, |shortest: usize| shortest.min(len)));
    }
    shortest.unwrap_or(0)
}

/// Provide the keys of one region in every DHT; `false` if stopped first.
async fn reprovide_region(
    service: &Service,
    node: &NodeHandle,
    dhts: &[Dht],
    region: Prefix,
    keys: &[Key],
    stop: &watch::Receiver<bool>,
) -> bool {
    if keys.len() <= FEW {
        return one_by_one(service, node, keys, stop).await;
    }
    for dht in dhts {
        let swept = match learn_region(service, node, *dht, region).await {
            Ok(peers) => send_records(service, node, *dht, &peers, keys).await,
            Err(why) => Err(why),
        };
        if let Err(why) = swept {
            tracing::warn!(
                ?dht,
                region = ?region,
                keys = keys.len(),
                "sweeping a region failed ({why}); its keys are provided one by one"
            );
            return one_by_one(service, node, keys, stop).await;
        }
    }
    service
        .provides
        .provided
        .fetch_add(keys.len() as u64, Ordering::Relaxed);
    true
}

/// Provide each key with a lookup of its own; `false` if stopped first.
async fn one_by_one(
    service: &Service,
    node: &NodeHandle,
    keys: &[Key],
    stop: &watch::Receiver<bool>,
) -> bool {
    let cids = keys.iter().filter_map(|key| block_cid(&key.multihash));
    provide_all(service, node, cids.collect(), stop).await
}

/// A DHT peer, where it lies, and where to dial it.
#[derive(Clone)]
struct Peer {
    id: PeerId,
    addrs: Vec<Multiaddr>,
}

/// Every peer of `dht` in `region`, or, when the region holds fewer than [`K`], in the
/// shortest region around it that holds [`K`] (the [`K`] closest peers to any key of the
/// region are then among them). Looked up until the coverage says none is missing.
async fn learn_region(
    service: &Service,
    node: &NodeHandle,
    dht: Dht,
    region: Prefix,
) -> Result<Vec<(Point, Peer)>, String> {
    let mut coverage = Coverage::default();
    let mut known: HashMap<PeerId, (Point, Vec<Multiaddr>)> = HashMap::new();
    let mut scope = region;
    let mut lookups = 0;
    loop {
        while let Some(gap) = coverage.next_gap(&scope) {
            if lookups == LOOKUPS_PER_REGION {
                return Err(format!("{lookups} lookups did not learn every peer"));
            }
            let (target, at) = gap.target(TARGET_BITS);
            lookups += 1;
            service.provides.lookups.fetch_add(1, Ordering::Relaxed);
            let found = node
                .closest_peers(dht, target)
                .await
                .map_err(|e| e.to_string())?;
            let points: Vec<Point> = found.iter().map(|(peer, _)| Point::of_peer(peer)).collect();
            coverage.add(covered_by(&at, &points));
            for ((peer, addrs), point) in found.into_iter().zip(points) {
                known.entry(peer).or_insert((point, addrs));
            }
        }
        let inside = known
            .values()
            .filter(|(point, _)| scope.contains(point))
            .count();
        match scope.parent() {
            Some(parent) if inside < K => scope = parent,
            _ => break,
        }
    }
    Ok(known
        .into_iter()
        .filter(|(_, (point, _))| scope.contains(point))
        .map(|(id, (point, addrs))| (point, Peer { id, addrs }))
        .collect())
}

/// Send each key's record to its [`K`] closest `peers`, each peer all of its records on one
/// stream. An error when fewer than half the peers took theirs.
async fn send_records(
    service: &Service,
    node: &NodeHandle,
    dht: Dht,
    peers: &[(Point, Peer)],
    keys: &[Key],
) -> Result<(), String> {
    // Each key's record is the same for every peer: made once, copied into the batches of
    // the peers it goes to.
    let mut batches: HashMap<usize, Batch> = HashMap::new();
    for key in keys {
        let record = node.provider_record(&key.multihash);
        for index in keyspace::closest(&key.point, peers, K) {
            let batch = batches.entry(index).or_default();
            batch.records += 1;
            batch.bytes.extend_from_slice(&record);
        }
    }
    let sends = batches.len();
    // Futures that own what they use: a stream mapping with a closure that borrows trips
    // the compiler's `Send` check of the spawned task.
    let sending: Vec<_> = batches
        .into_iter()
        .map(|(index, batch)| send_to(node.clone(), dht, peers[index].1.clone(), batch))
        .collect();
    let sent: Vec<Result<usize, String>> = futures_util::stream::iter(sending)
        .buffer_unordered(PEERS_AT_ONCE)
        .collect()
        .await;
    let mut failed = Vec::new();
    for result in sent {
        match result {
            Ok(records) => {
                service
                    .provides
                    .records_sent
                    .fetch_add(records as u64, Ordering::Relaxed);
            }
            Err(why) => failed.push(why),
        }
    }
    if !failed.is_empty() {
        tracing::debug!(?failed, "some peers did not take their provider records");
    }
    if failed.len() * 2 > sends {
        return Err(format!(
            "{} of {sends} peers did not take their records (first: {})",
            failed.len(),
            failed[0]
        ));
    }
    Ok(())
}

/// The records one peer is sent, one after another.
#[derive(Default)]
struct Batch {
    records: usize,
    bytes: Vec<u8>,
}

/// Send `peer` its batch: how many records it took, or why not.
async fn send_to(node: NodeHandle, dht: Dht, peer: Peer, batch: Batch) -> Result<usize, String> {
    let sent = node.send_provider_records(dht, peer.id, peer.addrs, &batch.bytes);
    match tokio::time::timeout(SEND_TIMEOUT, sent).await {
        Ok(Ok(())) => Ok(batch.records),
        Ok(Err(why)) => Err(format!("{}: {why}", peer.id)),
        Err(_) => Err(format!("{}: timed out", peer.id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000;

    #[test]
    fn a_pass_goes_on_where_it_stopped_unless_it_is_an_interval_late() {
        let interval = 22 * HOUR;
        let now = 1_000 * HOUR;
        // Never swept: everything is due at once.
        let fresh = pass_to_go_on(None, now, interval);
        assert_eq!(fresh.began_at_ms, now - interval);
        assert_eq!(fresh.reached, 0);
        // Stopped half-way through a pass that began 3 hours ago: on from there.
        let half_way = SweepPass {
            began_at_ms: now - 3 * HOUR,
            reached: 1 << 63,
        };
        assert_eq!(pass_to_go_on(Some(half_way), now, interval), half_way);
        // A pass that begins later (after a pass ended early) waits for its time.
        let next = SweepPass {
            began_at_ms: now + HOUR,
            reached: 0,
        };
        assert_eq!(pass_to_go_on(Some(next), now, interval), next);
        // Stopped for two days: from the start, at once.
        let stale = SweepPass {
            began_at_ms: now - 48 * HOUR,
            reached: 1 << 63,
        };
        assert_eq!(pass_to_go_on(Some(stale), now, interval), fresh);
    }
}
