//! The server side: one task per peer that has wants, answering them in the order they came
//! (boxo's engine keeps a per-peer task queue too), from the blockstore.
//!
//! - want-block: the block, or `DONT_HAVE` when the peer asked for one;
//! - want-have: `HAVE`, or `DONT_HAVE` when asked (both only in 1.2.0);
//! - cancel removes a want not yet answered; a full wantlist replaces the old one.
//!
//! One answer holds blocks up to `max_answer_bytes`; the next is read only once the link
//! took the previous one, so a slow peer holds at most a few answers in memory. Wants for
//! blocks that are not here are counted, and a peer that sends too many is cut off.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::time::Duration;

use cairn_unixfs::Cid;
use libp2p::PeerId;
use tokio::sync::mpsc;

use super::message::{Message, Presence, Version, WantEntry, WantType};
use super::Bitswap;

/// A ledger with no wants for this long ends (a new one starts with the next wants).
const IDLE: Duration = Duration::from_secs(60);

/// Most wants answered in one message.
const WANTS_PER_ANSWER: usize = 256;

pub(super) struct Update {
    pub entries: Vec<WantEntry>,
    pub full: bool,
    pub version: Version,
}

pub(super) fn spawn(bitswap: Bitswap, peer: PeerId) -> mpsc::Sender<Update> {
    let (updates, receiver) = mpsc::channel(8);
    tokio::spawn(run(bitswap, peer, receiver));
    updates
}

#[derive(Default)]
struct Wants {
    order: VecDeque<Cid>,
    entries: HashMap<Cid, WantEntry>,
    version: Option<Version>,
}

impl Wants {
    /// Apply an update; false if the peer now wants more than it may.
    fn apply(&mut self, update: Update, limit: usize) -> bool {
        self.version = Some(update.version);
        if update.full {
            self.order.clear();
            self.entries.clear();
        }
        for entry in update.entries {
            if entry.cancel {
                self.entries.remove(&entry.cid);
            } else if !self.entries.contains_key(&entry.cid) {
                self.order.push_back(entry.cid);
                self.entries.insert(entry.cid, entry);
            }
        }
        // Cancelled wants leave their place in `order`; drop them once they pile up.
        if self.order.len() > 2 * self.entries.len() + 64 {
            let entries = &self.entries;
            self.order.retain(|cid| entries.contains_key(cid));
        }
        self.entries.len() <= limit
    }

    /// The next `most` wants, in order.
    fn take(&mut self, most: usize) -> VecDeque<WantEntry> {
        std::iter::from_fn(|| self.next()).take(most).collect()
    }

    /// Wants taken and not answered, first in line again.
    fn put_back(&mut self, taken: VecDeque<WantEntry>) {
        for want in taken.into_iter().rev() {
            self.order.push_front(want.cid);
            self.entries.insert(want.cid, want);
        }
    }

    fn next(&mut self) -> Option<WantEntry> {
        while let Some(cid) = self.order.pop_front() {
            if let Some(entry) = self.entries.remove(&cid) {
                return Some(entry);
            }
        }
        None
    }
}

async fn run(bitswap: Bitswap, peer: PeerId, mut updates: mpsc::Receiver<Update>) {
    let limits = bitswap.inner.limits.clone();
    let mut wants = Wants::default();
    loop {
        // Wait for wants when there are none; take what has arrived when there are some.
        if wants.entries.is_empty() {
            match tokio::time::timeout(IDLE, updates.recv()).await {
                Ok(Some(update)) => {
                    if !wants.apply(update, limits.max_wants_per_peer) {
                        return too_many(&bitswap, peer, &limits);
                    }
                }
                _ => break,
            }
        }
        while let Ok(update) = updates.try_recv() {
            if !wants.apply(update, limits.max_wants_per_peer) {
                return too_many(&bitswap, peer, &limits);
            }
        }
        let version = wants.version.unwrap_or(Version::V120);
        // An answer may pass its limit by one block (up to 2 MiB): reserve both, so that
        // what all peers' answers hold stays within the budget.
        let share = ((limits.max_answer_bytes + (2 << 20)) >> 10) as u32;
        let Ok(budget) = bitswap
            .inner
            .answer_budget
            .clone()
            .acquire_many_owned(share)
            .await
        else {
            break;
        };
        let mut answer = Message::default();
        let mut bytes = 0;
        let mut answered = 0;
        while bytes < limits.max_answer_bytes && answered < WANTS_PER_ANSWER {
            let batch = wants.take(WANTS_PER_ANSWER - answered);
            if batch.is_empty() {
                break;
            }
            let room = (limits.max_answer_bytes - bytes) as u64;
            let found = match answer_wants(&bitswap, batch, room, &mut wants).await {
                Ok(found) => found,
                Err(e) => {
                    tracing::warn!(%peer, error = %e, "reading blocks failed");
                    continue;
                }
            };
            for (want, found) in found {
                answered += 1;
                match found {
                    Some(Found::Block(data)) => {
                        bytes += data.len();
                        answer.blocks.push((want.cid, data));
                    }
                    Some(Found::Have) => answer.presences.push((want.cid, Presence::Have)),
                    None => {
                        if !bitswap.count_miss(peer) {
                            return bitswap.cut_off(
                                peer,
                                &format!(
                                    "more than {} wants a minute for blocks not here",
                                    limits.max_misses_per_minute
                                ),
                            );
                        }
                        if want.send_dont_have && version == Version::V120 {
                            answer.presences.push((want.cid, Presence::DontHave));
                        }
                    }
                }
            }
        }
        if version != Version::V120 {
            answer.presences.clear();
        }
        if answer.is_empty() {
            continue;
        }
        let (blocks, sent_bytes) = (answer.blocks.len() as u64, bytes as u64);
        let cids: Vec<_> = answer.blocks.iter().map(|(cid, _)| *cid).collect();
        if !bitswap
            .send(peer, Some(version), answer, Some(budget))
            .await
        {
            break;
        }
        bitswap.log_sent(peer, &cids, sent_bytes);
        let metrics = &bitswap.inner.metrics;
        metrics.blocks_sent.fetch_add(blocks, Ordering::Relaxed);
        metrics.bytes_sent.fetch_add(sent_bytes, Ordering::Relaxed);
    }
    if let Ok(mut ledgers) = bitswap.inner.ledgers.lock() {
        ledgers.remove(&peer);
    }
}

fn too_many(bitswap: &Bitswap, peer: PeerId, limits: &super::BitswapLimits) {
    bitswap.cut_off(
        peer,
        &format!("more than {} wants waiting", limits.max_wants_per_peer),
    );
}

enum Found {
    Block(Vec<u8>),
    Have,
}

/// What the blockstore has for `batch`'s wants, in order: its want-blocks read together, as
/// far as `max_bytes` goes, and a lookup for each want-have. The wants past the bytes are given
/// back to `wants`, first in line for the next answer. `None` where it has nothing.
async fn answer_wants(
    bitswap: &Bitswap,
    mut batch: VecDeque<WantEntry>,
    max_bytes: u64,
    wants: &mut Wants,
) -> std::io::Result<Vec<(WantEntry, Option<Found>)>> {
    let _permit = bitswap
        .inner
        .reads
        .acquire()
        .await
        .map_err(std::io::Error::other)?;
    let blocks = &bitswap.inner.blocks;
    let wanted: Vec<Cid> = (batch.iter())
        .filter(|want| want.want_type == WantType::Block)
        .map(|want| want.cid)
        .collect();
    let mut read = blocks.get_many(&wanted, max_bytes).await?.into_iter();
    let mut found = Vec::with_capacity(batch.len());
    while let Some(want) = batch.pop_front() {
        match want.want_type {
            WantType::Block => match read.next() {
                Some(block) => found.push((want, block.map(Found::Block))),
                None => {
                    batch.push_front(want);
                    break;
                }
            },
            WantType::Have => {
                let has = blocks.has(&want.cid).await?;
                found.push((want, has.then_some(Found::Have)));
            }
        }
    }
    wants.put_back(batch);
    Ok(found)
}
