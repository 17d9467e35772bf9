//! The client side: want blocks from peers, and fetch whole DAGs.
//!
//! A want goes to one peer at a time (want-block, asking for `DONT_HAVE`), in the order given,
//! so a block is transferred once; a peer that says it does not have the block, or stays
//! silent for the per-peer timeout (Bitswap 1.0.0 and 1.1.0 peers cannot say), is passed
//! over. Every block is checked against what was wanted: wants are keyed by multihash, and a
//! block's multihash is computed from its bytes when it arrives, so a block that does not hash
//! to a want is never taken for it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cairn_unixfs::node::Node;
use cairn_unixfs::read::ReadLimits;
use cairn_unixfs::Cid;
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use libp2p::PeerId;
use tokio::sync::mpsc;

use super::message::{Message, WantEntry, WantType};
use super::Bitswap;
use crate::blocks::Blockstore;

/// Blocks wanted at once while fetching a DAG.
const WINDOW: usize = 32;

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("none of the {asked} peers asked has block {cid}")]
    NotFound { cid: Cid, asked: usize },
    #[error("no peers to fetch from")]
    NoPeers,
    #[error("block {cid} is not UnixFS the fetch can follow: {reason}")]
    Invalid { cid: Cid, reason: String },
    #[error("the DAG is larger than the fetch may be: more than {limit} {what}")]
    TooLarge { what: &'static str, limit: u64 },
    #[error(transparent)]
    Io(#[from] io::Error),
}

enum Answer {
    Block(Vec<u8>, PeerId),
    DontHave(PeerId),
}

/// Who waits for a block: a registration id and where its answers go.
type Waiter = (u64, mpsc::UnboundedSender<Answer>);

/// This node's wants waiting for answers, by multihash.
#[derive(Default)]
pub(super) struct Wants {
    waiting: Mutex<HashMap<Vec<u8>, Vec<Waiter>>>,
    next_id: AtomicU64,
}

impl Wants {
    fn register(&self, cid: &Cid) -> (u64, mpsc::UnboundedReceiver<Answer>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting
                .entry(cid.hash().to_bytes())
                .or_default()
                .push((id, tx));
        }
        (id, rx)
    }

    fn forget(&self, cid: &Cid, id: u64) {
        if let Ok(mut waiting) = self.waiting.lock() {
            let key = cid.hash().to_bytes();
            if let Some(list) = waiting.get_mut(&key) {
                list.retain(|(i, _)| *i != id);
                if list.is_empty() {
                    waiting.remove(&key);
                }
            }
        }
    }

    /// A block arrived (its CID computed from its bytes): hand it to whoever wanted it.
    pub(super) fn block_arrived(&self, cid: &Cid, data: Vec<u8>, from: PeerId) {
        let waiters = match self.waiting.lock() {
            Ok(mut waiting) => waiting.remove(&cid.hash().to_bytes()),
            Err(_) => None,
        };
        for (_, waiter) in waiters.unwrap_or_default() {
            let _ = waiter.send(Answer::Block(data.clone(), from));
        }
    }

    pub(super) fn dont_have(&self, cid: &Cid, peer: PeerId) {
        if let Ok(waiting) = self.waiting.lock() {
            for (_, waiter) in waiting.get(&cid.hash().to_bytes()).into_iter().flatten() {
                let _ = waiter.send(Answer::DontHave(peer));
            }
        }
    }
}

/// Where [`Bitswap::fetch_dag`] found a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// From a peer.
    Fetched,
    /// In the local blockstore.
    AlreadyHere,
}

/// Handed each block of a fetched DAG, and where it was found.
pub type OnBlock<'a> = dyn FnMut(&Cid, &[u8], Found) -> io::Result<()> + Send + 'a;

/// What a DAG fetch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FetchStats {
    pub blocks_fetched: u64,
    pub bytes_fetched: u64,
    pub blocks_already_here: u64,
    pub bytes_already_here: u64,
}

impl Bitswap {
    /// The block `cid` from the first of `peers` that has it.
    pub async fn want_block(
        &self,
        cid: &Cid,
        peers: &[PeerId],
        per_peer: Duration,
    ) -> Result<Vec<u8>, FetchError> {
        Ok(self.want_block_from(cid, peers, per_peer).await?.0)
    }

    /// The block and the peer that sent it.
    async fn want_block_from(
        &self,
        cid: &Cid,
        peers: &[PeerId],
        per_peer: Duration,
    ) -> Result<(Vec<u8>, PeerId), FetchError> {
        if peers.is_empty() {
            return Err(FetchError::NoPeers);
        }
        let (id, mut answers) = self.inner.wants.register(cid);
        let result = async {
            for &peer in peers {
                let want = |cancel: bool| Message {
                    wantlist: vec![WantEntry {
                        cid: *cid,
                        priority: 1,
                        cancel,
                        want_type: WantType::Block,
                        send_dont_have: true,
                    }],
                    ..Message::default()
                };
                if !self.send(peer, None, want(false), None).await {
                    continue;
                }
                let deadline = tokio::time::Instant::now() + per_peer;
                loop {
                    match tokio::time::timeout_at(deadline, answers.recv()).await {
                        Ok(Some(Answer::Block(data, from))) => return Ok((data, from)),
                        Ok(Some(Answer::DontHave(from))) if from == peer => break,
                        Ok(Some(Answer::DontHave(_))) => continue,
                        Ok(None) | Err(_) => {
                            self.send(peer, None, want(true), None).await;
                            break;
                        }
                    }
                }
            }
            Err(FetchError::NotFound {
                cid: *cid,
                asked: peers.len(),
            })
        }
        .await;
        self.inner.wants.forget(cid, id);
        result
    }

    /// Fetch the DAG under `root` from `peers`, handing every block of it to `on_block` (in no
    /// particular order), within `limits` (depth, blocks, bytes). Blocks `local` already holds
    /// are not fetched (`on_block` is told so); their links are followed from there.
    pub async fn fetch_dag(
        &self,
        root: &Cid,
        peers: &[PeerId],
        limits: ReadLimits,
        local: Option<Arc<dyn Blockstore>>,
        per_peer: Duration,
        on_block: &mut OnBlock<'_>,
    ) -> Result<FetchStats, FetchError> {
        let mut stats = FetchStats::default();
        let mut queue = VecDeque::from([(*root, 0usize)]);
        let mut seen = HashSet::from([*root]);
        let mut pending = FuturesUnordered::new();
        // The peer that delivered last is asked first: it likely has the rest.
        let mut order: Vec<PeerId> = peers.to_vec();
        while !queue.is_empty() || !pending.is_empty() {
            while pending.len() < WINDOW {
                let Some((cid, depth)) = queue.pop_front() else {
                    break;
                };
                if depth > limits.max_depth {
                    return Err(FetchError::TooLarge {
                        what: "levels",
                        limit: limits.max_depth as u64,
                    });
                }
                let here = match &local {
                    Some(local) => local.get(&cid).await?,
                    None => None,
                };
                let order = order.clone();
                pending.push(async move {
                    let fetched = match here {
                        Some(block) => Ok((block, None)),
                        None => self
                            .want_block_from(&cid, &order, per_peer)
                            .await
                            .map(|(block, from)| (block, Some(from))),
                    };
                    (cid, depth, fetched)
                });
            }
            let Some((cid, depth, fetched)) = pending.next().await else {
                break;
            };
            let (block, from) = fetched?;
            if let Some(from) = from {
                if let Some(at) = order.iter().position(|p| *p == from) {
                    order[..=at].rotate_right(1);
                }
                stats.blocks_fetched += 1;
                stats.bytes_fetched += block.len() as u64;
                on_block(&cid, &block, Found::Fetched)?;
            } else {
                stats.blocks_already_here += 1;
                stats.bytes_already_here += block.len() as u64;
                on_block(&cid, &block, Found::AlreadyHere)?;
            }
            if stats.blocks_fetched + stats.blocks_already_here > limits.max_blocks {
                return Err(FetchError::TooLarge {
                    what: "blocks",
                    limit: limits.max_blocks,
                });
            }
            if stats.bytes_fetched > limits.max_bytes {
                return Err(FetchError::TooLarge {
                    what: "bytes",
                    limit: limits.max_bytes,
                });
            }
            let node = Node::decode(&cid, block).map_err(|e| FetchError::Invalid {
                cid,
                reason: e.to_string(),
            })?;
            for (child, _) in node.links() {
                if seen.insert(child) {
                    queue.push_back((child, depth + 1));
                }
            }
        }
        Ok(stats)
    }
}
