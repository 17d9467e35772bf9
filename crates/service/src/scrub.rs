//! Scrubbing (`--scrub-interval`): every indexed block read again, in index order, at a
//! bounded rate, and checked against its CID, so that rot on the disk or in the bucket is
//! found before a reader meets it. A damaged block is reported (log, `/metrics`,
//! `GET /api/node`) and, when the node's peers have it, fetched again over Bitswap, verified
//! and written to a new pack its index entry then points at (one transaction; the damaged
//! bytes stay behind in the old pack as garbage). Readers never get the damaged copy
//! meanwhile: every stored block is verified when read (`cairn_store::blocks`).
//!
//! A pass's place is kept in `scrub.json` in the data directory after each page of the index,
//! so a restart resumes the pass. Nodes sharing a database each scrub the whole store when
//! given the flag: turn it on for one of them.

use std::io;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use cairn_p2p::PeerId;
use cairn_store::model::Compaction;
use cairn_store::now_ms;
use cairn_unixfs::block::verify_block;
use cairn_unixfs::{BlockBytes, BlockSink, Cid};
use tokio::sync::watch;

use crate::gc::fsck::{batches, verify_blocks, DamagedBlock};
use crate::gc::GcError;
use crate::progress::DamagedEntry;
use crate::stop::sleep_unless_stopped;
use crate::Service;

/// Index entries read per query.
const PAGE: u32 = 1000;
/// How long a repair may look for a good copy, over all peers asked.
const REPAIR_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one peer is given to answer a want.
const PER_PEER: Duration = Duration::from_secs(5);
const POSITION_FILE: &str = "scrub.json";

/// Where a pass is, kept across restarts.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Position {
    /// The last multihash checked; empty at a pass's start.
    after: Vec<u8>,
    /// When the last complete pass ended (0: never).
    last_pass_finished_at_ms: i64,
}

impl Position {
    /// A missing or unreadable file is a pass from the start.
    fn load(dir: &Path) -> Self {
        std::fs::read(dir.join(POSITION_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Written whole (temp file, rename); not synced: a position lost to a crash only
    /// checks a page again.
    fn save(&self, dir: &Path) -> io::Result<()> {
        let temp = dir.join(format!("{POSITION_FILE}.tmp"));
        std::fs::write(&temp, serde_json::to_vec(self).map_err(io::Error::other)?)?;
        std::fs::rename(temp, dir.join(POSITION_FILE))
    }
}

/// Keeps reads at most `rate` bytes a second on average. Time lost (a slow read, a repair)
/// is made up by at most a second's worth of reading at full speed, never by a longer burst.
#[derive(Debug)]
struct Pacer {
    rate: u64,
    since: Instant,
    bytes: u64,
}

impl Pacer {
    fn new(rate: u64, now: Instant) -> Self {
        Self {
            rate: rate.max(1),
            since: now,
            bytes: 0,
        }
    }

    /// How long to wait, once `bytes` more were read by `now`.
    fn wait_after(&mut self, bytes: u64, now: Instant) -> Duration {
        self.bytes += bytes;
        let due = self.since + Duration::from_secs_f64(self.bytes as f64 / self.rate as f64);
        if due > now {
            return due - now;
        }
        if now - due > Duration::from_secs(1) {
            (self.since, self.bytes) = (now, 0);
        }
        Duration::ZERO
    }
}

/// Blocks read between two waits: about a quarter of a second's worth, so the pace is even.
fn chunk_bytes(rate: u64) -> u64 {
    (rate / 4).clamp(1 << 20, 64 << 20)
}

/// Scrub every `interval` (a pass begins that long after the last one ended; at once at the
/// first start, and a pass interrupted by a stop resumes at the next start) until `stop`.
/// `state_dir` keeps the pass's place.
pub async fn keep_scrubbing(
    service: Service,
    state_dir: std::path::PathBuf,
    stop: watch::Receiver<bool>,
) {
    let interval = service.config.scrub_interval;
    if interval.is_zero() {
        return;
    }
    if let Err(e) = std::fs::create_dir_all(&state_dir) {
        tracing::warn!(error = %e, "the scrub's place cannot be kept; a restart begins a pass again");
    }
    let mut position = Position::load(&state_dir);
    if position.last_pass_finished_at_ms > 0 {
        service
            .scrub
            .last_pass_finished_at_ms
            .store(position.last_pass_finished_at_ms, Ordering::Relaxed);
    }
    loop {
        if position.after.is_empty() && position.last_pass_finished_at_ms > 0 {
            let since = now_ms() - position.last_pass_finished_at_ms;
            let wait = interval.saturating_sub(Duration::from_millis(since.max(0) as u64));
            if sleep_unless_stopped(&stop, wait).await {
                return;
            }
        }
        match pass(&service, &mut position, &state_dir, &stop).await {
            Ok(true) => tracing::info!(
                passes = service.scrub.passes_completed.load(Ordering::Relaxed),
                "scrub pass finished"
            ),
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(error = %e, "scrubbing failed; trying again in a minute");
                if sleep_unless_stopped(&stop, Duration::from_secs(60)).await {
                    return;
                }
            }
        }
    }
}

/// Go on with the pass from `position` to its end (`true`), or until `stop` (`false`).
async fn pass(
    service: &Service,
    position: &mut Position,
    state_dir: &Path,
    stop: &watch::Receiver<bool>,
) -> Result<bool, GcError> {
    let rate = service.config.scrub_rate;
    let mut pacer = Pacer::new(rate, Instant::now());
    let mut after = position.after.clone();
    loop {
        let page = service.store.indexed_blocks(&after, PAGE).await?;
        let Some(last) = page.last() else {
            let stats = &service.scrub;
            stats.passes_completed.fetch_add(1, Ordering::Relaxed);
            let finished = now_ms();
            stats
                .last_pass_finished_at_ms
                .store(finished, Ordering::Relaxed);
            *position = Position {
                after: Vec::new(),
                last_pass_finished_at_ms: finished,
            };
            save(position, state_dir);
            return Ok(true);
        };
        after = last.multihash.clone();
        for chunk in batches(&page, chunk_bytes(rate)) {
            let bytes: u64 = chunk.iter().map(|b| b.location.length).sum();
            let (packs, blocks) = (service.packs.clone(), chunk.to_vec());
            let damaged = tokio::task::spawn_blocking(move || verify_blocks(&packs, &blocks))
                .await
                .map_err(io::Error::other)??;
            service
                .scrub
                .blocks_checked
                .fetch_add(chunk.len() as u64, Ordering::Relaxed);
            service
                .scrub
                .bytes_checked
                .fetch_add(bytes, Ordering::Relaxed);
            for block in damaged {
                found_damaged(service, block).await;
            }
            let wait = pacer.wait_after(bytes, Instant::now());
            if sleep_unless_stopped(stop, wait).await {
                return Ok(false);
            }
        }
        position.after.clone_from(&after);
        save(position, state_dir);
    }
}

fn save(position: &Position, state_dir: &Path) {
    if let Err(e) = position.save(state_dir) {
        tracing::warn!(error = %e, "keeping the scrub's place failed; a restart begins the pass again");
    }
}

/// Report `block`, and repair it if a peer has a good copy.
async fn found_damaged(service: &Service, block: DamagedBlock) {
    tracing::warn!(
        cid = %block.cid,
        pack = %block.location.pack,
        error = %block.error,
        "scrub: damaged block"
    );
    let cid = block.cid.to_string();
    service.scrub.found_damaged(DamagedEntry {
        cid: cid.clone(),
        pack: block.location.pack.clone(),
        error: block.error.clone(),
        repaired: false,
    });
    match repair(service, &block).await {
        Ok(()) => {
            tracing::info!(cid = %block.cid, "scrub: damaged block repaired from a peer");
            service.scrub.repaired(&cid);
        }
        Err(why) => tracing::warn!(cid = %block.cid, why, "scrub: damaged block not repaired"),
    }
}

/// Fetch a good copy of `block` from peers (those connected first, then the DHT's
/// providers), write it to a new pack and point the index at it.
async fn repair(service: &Service, block: &DamagedBlock) -> Result<(), String> {
    let Some(node) = &service.node else {
        return Err("this node runs without its IPFS node, so no peer can be asked".into());
    };
    let cid = block.cid;
    let fetch = async {
        let connected = node.connected_peers().await.map_err(|e| e.to_string())?;
        let bitswap = node.bitswap();
        if let Ok(bytes) = bitswap.want_block(&cid, &connected, PER_PEER).await {
            return Ok(bytes);
        }
        let providers: Vec<PeerId> = (node.connect_providers(cid).await)
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|p| !connected.contains(p))
            .collect();
        (bitswap.want_block(&cid, &providers, PER_PEER).await).map_err(|e| e.to_string())
    };
    let bytes = tokio::time::timeout(REPAIR_TIMEOUT, fetch)
        .await
        .map_err(|_| format!("no peer sent it within {}s", REPAIR_TIMEOUT.as_secs()))??;
    verify_block(&cid, &bytes).map_err(|e| format!("a peer sent a wrong copy: {e}"))?;
    let packs = service.packs.clone();
    let written = tokio::task::spawn_blocking(move || write_one(&packs, &cid, &bytes))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("writing the good copy: {e}"))?;
    let name = written.name.clone();
    let moved = Compaction {
        pack: written,
        sources: vec![block.location.pack.clone()],
    };
    match service.store.relocate_blocks(&moved).await {
        Ok(1..) => Ok(()),
        outcome => {
            let packs = service.packs.clone();
            let _ = tokio::task::spawn_blocking(move || packs.delete(&name)).await;
            match outcome {
                Err(e) => Err(format!("pointing the index at the good copy: {e}")),
                Ok(_) => Err("collected or moved while it was fetched".into()),
            }
        }
    }
}

/// A pack holding `bytes` alone, durable.
fn write_one(
    packs: &cairn_store::packs::Packs,
    cid: &Cid,
    bytes: &[u8],
) -> io::Result<cairn_store::model::SealedPack> {
    let mut writer = packs.writer(cairn_store::packs::nothing_known())?;
    writer.put_block(cid, BlockBytes::new(bytes))?;
    writer
        .seal()?
        .pack
        .ok_or_else(|| io::Error::other("the pack writer wrote nothing"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn reading_ahead_of_the_rate_waits_for_it() {
        let start = Instant::now();
        let mut pacer = Pacer::new(10 * MIB, start);
        assert_eq!(pacer.wait_after(20 * MIB, start), Duration::from_secs(2));
        // Half a second later, another second's worth: due at 3 s.
        let later = start + Duration::from_millis(500);
        assert_eq!(
            pacer.wait_after(10 * MIB, later),
            Duration::from_millis(2500)
        );
    }

    #[test]
    fn time_lost_is_made_up_by_at_most_a_second() {
        let start = Instant::now();
        let mut pacer = Pacer::new(10 * MIB, start);
        // A repair held the pass for a minute: what follows is paced again at once.
        let after_repair = start + Duration::from_secs(60);
        assert_eq!(pacer.wait_after(10 * MIB, after_repair), Duration::ZERO);
        assert_eq!(
            pacer.wait_after(20 * MIB, after_repair),
            Duration::from_secs(2)
        );
        // Half a second behind is made up without a wait.
        let mut pacer = Pacer::new(10 * MIB, start);
        let late = start + Duration::from_millis(1500);
        assert_eq!(pacer.wait_after(10 * MIB, late), Duration::ZERO);
        assert_eq!(pacer.wait_after(5 * MIB, late), Duration::ZERO);
        assert_eq!(
            pacer.wait_after(10 * MIB, late),
            Duration::from_millis(1000)
        );
    }
}
