//! Pins by CID: a worker fetches the DAG over Bitswap, from the pin's `origins` first (dialled
//! before anything else) and then from every peer this node is connected to: clients such as
//! Kubo connect to the pin's `delegates` to offer what they hold, and the providers the DHTs
//! name are looked up and connected to (every 30 s while nothing arrives). Every block is verified
//! against its CID as it arrives and followed as UnixFS; blocks stored already are read
//! locally; new ones go to a pack, written on a blocking thread; the root is then kept as an
//! upload's is. A pin that receives nothing for `pin_timeout` fails as not found.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use cairn_p2p::bitswap::fetch::{FetchError, Found};
use cairn_p2p::{Blockstore, Multiaddr, PeerId};
use cairn_store::blocks::StoredBlocks;

use crate::node_blocks::NodeBlocks;
use cairn_store::model::{ErrorCode, Operation, OperationError, StoredDag};
use cairn_store::packs::PackWriter;
use cairn_unixfs::{BlockBytes, BlockSink, Cid};

use crate::outcome::Outcome;
use crate::Service;

/// How long one peer may take to answer for one block before the next is asked.
const PER_PEER: Duration = Duration::from_secs(15);
/// How long dialling one origin may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(10);
/// Between attempts, while no peer has the content.
const RETRY_EVERY: Duration = Duration::from_secs(2);
/// Between provider lookups in the DHTs, while no peer has the content.
const LOOKUP_EVERY: Duration = Duration::from_secs(30);
/// How long one lookup (and the dials to what it finds) may take.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(75);
/// Blocks waiting for the pack writer before the fetch waits for it.
const WRITE_QUEUE: usize = 64;
/// How often progress is reported (which renews the worker's claim).
const REPORT_EVERY: Duration = Duration::from_millis(500);

pub(crate) async fn fetch(
    service: &Service,
    worker: &str,
    op: &Operation,
    remaining_quota: Option<u64>,
    abandon: &AtomicBool,
) -> Outcome {
    let refuse = |code, message: String| Outcome::Refused(OperationError::new(code, message));
    let Some(node) = service.node.clone() else {
        return refuse(
            ErrorCode::Unavailable,
            "this server runs without an IPFS node, so it cannot fetch content it does not \
             store"
                .into(),
        );
    };
    let Some(root) = op.cid.as_deref().and_then(|cid| Cid::try_from(cid).ok()) else {
        return refuse(ErrorCode::BadRequest, "the pin has no valid CID".into());
    };
    let mut origins: Vec<PeerId> = Vec::new();
    for origin in &op.origins {
        let Ok(addr) = origin.parse::<Multiaddr>() else {
            continue;
        };
        match tokio::time::timeout(DIAL_TIMEOUT, node.dial(addr)).await {
            Ok(Ok(peer)) => origins.push(peer),
            Ok(Err(e)) => {
                tracing::info!(pin = %op.upload_id, %origin, error = %e, "origin unreachable")
            }
            Err(_) => tracing::info!(pin = %op.upload_id, %origin, "origin did not answer"),
        }
    }
    let mut limits = service.config.read_limits;
    // As for archives (`worker.rs`): when the quota binds before the limit, going over it is
    // the quota's refusal, not the DAG's.
    let quota_binds = remaining_quota.is_some_and(|r| r < limits.max_bytes);
    if let Some(remaining) = remaining_quota {
        limits.max_bytes = limits.max_bytes.min(remaining);
    }
    let local: Arc<dyn Blockstore> = Arc::new(NodeBlocks(StoredBlocks::new(
        service.store.clone(),
        service.packs.clone(),
    )));
    let received = Arc::new(AtomicU64::new(0));
    let mut last_progress = Instant::now();
    let mut last_received = 0;
    let mut last_lookup: Option<Instant> = None;
    loop {
        if abandon.load(Ordering::Relaxed) {
            return Outcome::Abandoned;
        }
        // Providers the DHTs name, connected to (they then count as connected peers).
        if last_lookup.is_none_or(|at| at.elapsed() >= LOOKUP_EVERY) {
            last_lookup = Some(Instant::now());
            match tokio::time::timeout(LOOKUP_TIMEOUT, node.connect_providers(root)).await {
                Ok(Ok(providers)) if !providers.is_empty() => {
                    tracing::info!(pin = %op.upload_id, ?providers, "connected to providers the DHT named");
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    tracing::warn!(pin = %op.upload_id, error = %e, "provider lookup failed")
                }
                Err(_) => tracing::info!(pin = %op.upload_id, "provider lookup timed out"),
            }
        }
        let mut peers = origins.clone();
        for peer in node.connected_peers().await.unwrap_or_default() {
            if !peers.contains(&peer) {
                peers.push(peer);
            }
        }
        let attempt = async {
            if peers.is_empty() {
                return Err(FetchError::NoPeers);
            }
            let (blocks, to_pack) = mpsc::sync_channel::<ToPack>(WRITE_QUEUE);
            let pack = write_pack(service, to_pack);
            let received = received.clone();
            // A sync callback: when the pack writer falls `WRITE_QUEUE` blocks behind, the
            // fetch waits for the disk here, which is the back-pressure wanted.
            let mut on_block = move |cid: &Cid, block: &[u8], found: Found| {
                let message = match found {
                    Found::Fetched => {
                        received.fetch_add(block.len() as u64, Ordering::Relaxed);
                        ToPack::Write(*cid, block.to_vec())
                    }
                    Found::AlreadyHere => ToPack::Reuse(*cid, block.len() as u64),
                };
                blocks
                    .send(message)
                    .map_err(|_| std::io::Error::other("the pack writer stopped"))
            };
            let fetched = node
                .bitswap()
                .fetch_dag(
                    &root,
                    &peers,
                    limits,
                    Some(local.clone()),
                    PER_PEER,
                    &mut on_block,
                )
                .await;
            drop(on_block);
            let pack = pack.await.map_err(std::io::Error::other)??;
            Ok((fetched?, pack))
        };
        let outcome = tokio::select! {
            outcome = attempt => outcome,
            lost = keep_claim(service, worker, op, &received) => return lost,
        };
        match outcome {
            Ok((_, pack)) => {
                let dag = StoredDag {
                    cid: op.cid.clone().unwrap_or_default(),
                    size: pack.dag_bytes(),
                };
                return match pack.seal() {
                    Ok(sealed) => Outcome::Done(dag, sealed, None),
                    Err(e) => Outcome::Failed(e),
                };
            }
            Err(FetchError::TooLarge {
                what: "bytes",
                limit,
            }) if quota_binds => {
                return Outcome::OverQuota(format!(
                    "the DAG is larger than the {limit} bytes left in the account's quota"
                ))
            }
            Err(e @ FetchError::TooLarge { .. }) => {
                return refuse(ErrorCode::DagTooLarge, e.to_string())
            }
            Err(e @ FetchError::Invalid { .. }) => {
                return refuse(ErrorCode::InvalidDag, e.to_string())
            }
            Err(FetchError::Io(e)) => return Outcome::Failed(e),
            // Nobody had it (yet): providers may connect, so try again until the timeout.
            Err(e @ (FetchError::NotFound { .. } | FetchError::NoPeers)) => {
                tracing::debug!(pin = %op.upload_id, error = %e, ?peers, "not found; trying again");
                let now = received.load(Ordering::Relaxed);
                if now > last_received {
                    (last_received, last_progress) = (now, Instant::now());
                }
                if last_progress.elapsed() >= service.config.pin_timeout {
                    return refuse(
                        ErrorCode::NotFound,
                        format!(
                            "{e}; nothing arrived for {}",
                            humantime::format_duration(service.config.pin_timeout)
                        ),
                    );
                }
                tokio::time::sleep(RETRY_EVERY).await;
            }
        }
    }
}

/// What the fetch hands the pack writer.
enum ToPack {
    /// A block fetched, to write.
    Write(Cid, Vec<u8>),
    /// A block of the DAG found stored, and its length: the commit checks it still is.
    Reuse(Cid, u64),
}

/// A pack writer on a blocking thread, fed through `blocks` until the sender is dropped.
/// Every block it is handed to write was just looked up in the block index and not found
/// (that is why it was fetched), so it does not ask the index again; one stored meanwhile by
/// another upload is indexed once all the same (the first copy wins).
fn write_pack(
    service: &Service,
    blocks: mpsc::Receiver<ToPack>,
) -> tokio::task::JoinHandle<std::io::Result<PackWriter>> {
    let packs = service.packs.clone();
    tokio::task::spawn_blocking(move || {
        let mut pack = packs.writer(cairn_store::packs::nothing_known())?;
        for message in blocks {
            match message {
                ToPack::Write(cid, block) => pack.put_block(&cid, BlockBytes::new(&block))?,
                ToPack::Reuse(cid, length) => pack.put_stored(&cid, length)?,
            }
        }
        Ok(pack)
    })
}

/// Report progress while the fetch runs; returns (ending the fetch) only when the claim is
/// lost, for instance because the pin was deleted.
async fn keep_claim(
    service: &Service,
    worker: &str,
    op: &Operation,
    received: &AtomicU64,
) -> Outcome {
    loop {
        tokio::time::sleep(REPORT_EVERY).await;
        let bytes = received.load(Ordering::Relaxed);
        let message = format!("fetching: {bytes} bytes received");
        match service
            .store
            .report_progress(op.id, worker, 0.0, &message, service.config.worker_lease)
            .await
        {
            Ok(true) => {}
            Ok(false) => return Outcome::Abandoned,
            Err(e) => tracing::warn!(pin = %op.upload_id, error = %e, "reporting progress failed"),
        }
    }
}
