//! Bitswap (`/ipfs/bitswap/1.2.0`, `1.1.0` and `1.0.0`): the block exchange every IPFS node
//! speaks. <https://specs.ipfs.tech/bitswap-protocol/>
//!
//! Bitswap is not request-response: each side opens its own stream to send messages, and
//! reads the other's. So a peer's wants arrive on streams it opened, and the blocks, `HAVE`s
//! and `DONT_HAVE`s that answer them go out on a stream this node opens to it (a [`link`],
//! kept open and reused). The same two directions carry this node's own wants and their
//! answers when it fetches.
//!
//! - [`message`]: the messages and their framing.
//! - [`ledger`]: the server side: one task per peer with wants, answering in order from the
//!   [`Blockstore`](crate::blocks::Blockstore), bounded in what a peer can make it do.
//! - [`fetch`]: the client side: want a block from given peers, and fetch whole DAGs.
//!
//! Limits ([`BitswapLimits`]) bound every peer: the size of a message, the wants it may have
//! queued, the blocks it may ask for that are not here (a flood of wants for missing blocks is
//! cut off), and the bytes of one answer. A peer over a limit is disconnected and refused for
//! a while; the others are served as before.

pub mod fetch;
mod ledger;
mod link;
pub mod message;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use libp2p::{PeerId, StreamProtocol};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use crate::blocks::Blockstore;
use cairn_unixfs::Cid;
use message::{Message, MessageError, Presence, Version};

/// The protocols served, newest first, with the message version each speaks.
pub const PROTOCOLS: [(StreamProtocol, Version); 3] = [
    (StreamProtocol::new("/ipfs/bitswap/1.2.0"), Version::V120),
    (StreamProtocol::new("/ipfs/bitswap/1.1.0"), Version::V110),
    (StreamProtocol::new("/ipfs/bitswap/1.0.0"), Version::V100),
];

/// What one peer may make this node do.
#[derive(Clone, Debug)]
pub struct BitswapLimits {
    /// Largest message read (Kubo's is 4 MiB); a larger one cuts the peer off.
    pub max_message_bytes: usize,
    /// Wants one peer may have waiting; more cut it off.
    pub max_wants_per_peer: usize,
    /// Wants for blocks that are not here, per peer per minute, before it is cut off.
    pub max_misses_per_minute: u32,
    /// Bytes of blocks in one answer (one message).
    pub max_answer_bytes: usize,
    /// Blocks read from storage at once, over all peers.
    pub max_concurrent_reads: usize,
    /// Bytes of answers being built or waiting to be sent, over all peers: what serving many
    /// peers at once may hold in memory.
    pub max_queued_answer_bytes: usize,
}

impl Default for BitswapLimits {
    fn default() -> Self {
        Self {
            max_message_bytes: 4 << 20,
            max_wants_per_peer: 8192,
            max_misses_per_minute: 10_000,
            max_answer_bytes: 2 << 20,
            max_concurrent_reads: 32,
            max_queued_answer_bytes: 64 << 20,
        }
    }
}

/// Counters for `/metrics`.
#[derive(Debug, Default)]
pub struct BitswapMetrics {
    pub blocks_sent: AtomicU64,
    pub bytes_sent: AtomicU64,
    pub blocks_received: AtomicU64,
    pub bytes_received: AtomicU64,
    pub peers_cut_off: AtomicU64,
}

/// What went to one peer since [`Bitswap::take_sent`] last took it: the first blocks (a DAG is
/// asked for from its root down, so its root is among them) and the bytes of all of them.
/// Cairn credits those bytes to the accounts keeping the root (their usage).
#[derive(Debug, PartialEq)]
pub struct SentToPeer {
    pub peer: PeerId,
    pub first_blocks: Vec<Cid>,
    pub bytes: u64,
}

/// Blocks kept per peer in [`SentToPeer::first_blocks`].
const FIRST_BLOCKS: usize = 16;
/// Peers whose blocks are kept between takes; blocks sent to more are not counted (the log
/// must not grow with every peer that asks).
const SENT_PEERS: usize = 10_000;

/// The Bitswap service of the node; cheap to clone.
#[derive(Clone)]
pub struct Bitswap {
    inner: Arc<Inner>,
}

struct Inner {
    control: Mutex<libp2p_stream::Control>,
    blocks: Arc<dyn Blockstore>,
    limits: BitswapLimits,
    links: Mutex<HashMap<PeerId, link::Link>>,
    ledgers: Mutex<HashMap<PeerId, mpsc::Sender<ledger::Update>>>,
    wants: fetch::Wants,
    misses: Mutex<HashMap<PeerId, (Instant, u32)>>,
    reads: Semaphore,
    /// In KiB: each answer holds its share from when it is built until it is written.
    answer_budget: Arc<Semaphore>,
    metrics: BitswapMetrics,
    sent: Mutex<HashMap<PeerId, SentToPeer>>,
    cut_off: mpsc::UnboundedSender<PeerId>,
}

impl Bitswap {
    /// Accept the three protocols' streams and serve them.
    pub(crate) fn start(
        mut control: libp2p_stream::Control,
        blocks: Arc<dyn Blockstore>,
        limits: BitswapLimits,
        cut_off: mpsc::UnboundedSender<PeerId>,
    ) -> Self {
        let mut incoming = Vec::new();
        for (protocol, version) in PROTOCOLS {
            match control.accept(protocol.clone()) {
                Ok(streams) => incoming.push((streams, version)),
                Err(e) => tracing::error!(%protocol, error = %e, "cannot accept Bitswap"),
            }
        }
        let bitswap = Self {
            inner: Arc::new(Inner {
                control: Mutex::new(control),
                reads: Semaphore::new(limits.max_concurrent_reads),
                // At least one answer's share (see the ledger), or no answer could ever be built.
                answer_budget: Arc::new(Semaphore::new(
                    limits
                        .max_queued_answer_bytes
                        .max(limits.max_answer_bytes + (2 << 20))
                        >> 10,
                )),
                blocks,
                limits,
                links: Mutex::new(HashMap::new()),
                ledgers: Mutex::new(HashMap::new()),
                wants: fetch::Wants::default(),
                misses: Mutex::new(HashMap::new()),
                metrics: BitswapMetrics::default(),
                sent: Mutex::new(HashMap::new()),
                cut_off,
            }),
        };
        for (mut streams, version) in incoming {
            let bitswap = bitswap.clone();
            tokio::spawn(async move {
                while let Some((peer, stream)) = streams.next().await {
                    let bitswap = bitswap.clone();
                    tokio::spawn(async move { bitswap.read_stream(peer, version, stream).await });
                }
            });
        }
        bitswap
    }

    pub fn metrics(&self) -> &BitswapMetrics {
        &self.inner.metrics
    }

    /// What was sent to each peer since the last take.
    pub fn take_sent(&self) -> Vec<SentToPeer> {
        let Ok(mut sent) = self.inner.sent.lock() else {
            return Vec::new();
        };
        std::mem::take(&mut *sent).into_values().collect()
    }

    /// Blocks (`cids`, `bytes` in all) went to `peer`.
    fn log_sent(&self, peer: PeerId, cids: &[Cid], bytes: u64) {
        let Ok(mut sent) = self.inner.sent.lock() else {
            return;
        };
        if !sent.contains_key(&peer) && sent.len() >= SENT_PEERS {
            return;
        }
        let log = sent.entry(peer).or_insert_with(|| SentToPeer {
            peer,
            first_blocks: Vec::new(),
            bytes: 0,
        });
        let room = FIRST_BLOCKS - log.first_blocks.len();
        log.first_blocks.extend(cids.iter().take(room));
        log.bytes += bytes;
    }

    /// Read a peer's messages until it closes the stream or breaks a limit.
    async fn read_stream(&self, peer: PeerId, version: Version, mut stream: libp2p::Stream) {
        loop {
            let frame =
                match message::read_frame(&mut stream, self.inner.limits.max_message_bytes).await {
                    Ok(Some(frame)) => frame,
                    Ok(None) => return,
                    Err(MessageError::Io(e)) => {
                        tracing::debug!(%peer, error = %e, "a Bitswap stream ended");
                        return;
                    }
                    Err(e) => return self.cut_off(peer, &e.to_string()),
                };
            match Message::decode(&frame) {
                Ok(message) => {
                    if let Err(reason) = self.on_message(peer, version, message).await {
                        return self.cut_off(peer, &reason);
                    }
                }
                Err(e) => return self.cut_off(peer, &e.to_string()),
            }
        }
    }

    async fn on_message(
        &self,
        peer: PeerId,
        version: Version,
        message: Message,
    ) -> Result<(), String> {
        // Answers to this node's own wants.
        for (cid, data) in message.blocks {
            self.inner
                .metrics
                .blocks_received
                .fetch_add(1, Ordering::Relaxed);
            self.inner
                .metrics
                .bytes_received
                .fetch_add(data.len() as u64, Ordering::Relaxed);
            self.inner.wants.block_arrived(&cid, data, peer);
        }
        for (cid, presence) in message.presences {
            if presence == Presence::DontHave {
                self.inner.wants.dont_have(&cid, peer);
            }
        }
        // The peer's wants, for its ledger.
        if message.wantlist.is_empty() && !message.full_wantlist {
            return Ok(());
        }
        if message.wantlist.len() > self.inner.limits.max_wants_per_peer {
            return Err(format!(
                "a wantlist of {} entries (the limit is {})",
                message.wantlist.len(),
                self.inner.limits.max_wants_per_peer
            ));
        }
        let update = ledger::Update {
            entries: message.wantlist,
            full: message.full_wantlist,
            version,
        };
        let sender = {
            let mut ledgers = self.inner.ledgers.lock().map_err(|_| "poisoned")?;
            ledgers
                .entry(peer)
                .or_insert_with(|| ledger::spawn(self.clone(), peer))
                .clone()
        };
        // Waits while the peer's ledger is busy: the peer's own stream slows down, no one else's.
        sender
            .send(update)
            .await
            .map_err(|_| "the peer's ledger stopped".to_owned())
    }

    /// Count a want for a block that is not here; false once the peer has had too many.
    fn count_miss(&self, peer: PeerId) -> bool {
        let Ok(mut misses) = self.inner.misses.lock() else {
            return true;
        };
        let now = Instant::now();
        let (since, count) = misses.entry(peer).or_insert((now, 0));
        if now.duration_since(*since) > Duration::from_secs(60) {
            (*since, *count) = (now, 0);
        }
        *count += 1;
        *count <= self.inner.limits.max_misses_per_minute
    }

    fn cut_off(&self, peer: PeerId, reason: &str) {
        tracing::warn!(%peer, %reason, "Bitswap peer broke a limit");
        self.inner
            .metrics
            .peers_cut_off
            .fetch_add(1, Ordering::Relaxed);
        if let Ok(mut ledgers) = self.inner.ledgers.lock() {
            ledgers.remove(&peer);
        }
        if let Ok(mut links) = self.inner.links.lock() {
            links.remove(&peer);
        }
        let _ = self.inner.cut_off.send(peer);
    }

    /// Send `message` to `peer` on this node's stream to it (opened on first use).
    async fn send(
        &self,
        peer: PeerId,
        version: Option<Version>,
        message: Message,
        budget: Option<OwnedSemaphorePermit>,
    ) -> bool {
        let link = {
            let Ok(mut links) = self.inner.links.lock() else {
                return false;
            };
            links
                .entry(peer)
                .or_insert_with(|| link::Link::spawn(self.clone(), peer, version))
                .clone()
        };
        link.send(message, budget).await
    }

    fn control(&self) -> Option<libp2p_stream::Control> {
        self.inner.control.lock().ok().map(|c| c.clone())
    }
}
