//! Garbage collection: blocks no live upload or pin reaches are removed from the block index,
//! and their bytes from storage.
//!
//! Blocks live in packs shared by every account (deduplication), so a delete frees nothing by
//! itself. A collection:
//! 1. takes the collector's lease (one collector at a time, over every node and `cairn gc`),
//!    and deletes the blobs of packs an interrupted collection already removed from the index;
//! 2. marks: walks every live root's DAG ([`walk`]), reading only blocks with links;
//! 3. plans: from the block index, packs with no live block are deleted, and packs mostly dead
//!    are compacted: their live blocks are copied into one new pack (durable before it is
//!    referenced, like any pack);
//! 4. applies the plan in one transaction ([`MetadataStore::apply_collection`]), which first
//!    checks that no root was kept since the walk began that it has not walked (then it walks
//!    those and plans again). A commit that reused a block this removes fails instead, and its
//!    upload is processed again;
//! 5. deletes the blobs of the packs the index no longer references.
//!
//! A crash at any step leaves every live block indexed and readable: nothing is deleted before
//! the transaction that stops referencing it, and what is left over (a compacted pack never
//! referenced, a blob not yet deleted) is cleaned up later by the orphan sweep or the next
//! collection. A reader that looked a block up before a compaction moved it finds the old
//! pack gone and looks it up again (`Packs::read_relocating`).

pub mod fsck;
pub mod report;
pub mod walk;

pub use report::GcReport;

use cairn_store::GarbageCollection;
use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_store::model::{BlockLocation, Collected, Collection, Compaction};
use cairn_store::packs::Packs;
use cairn_store::{now_ms, MetadataStore, StoreError};
use cairn_unixfs::block::RAW;
use cairn_unixfs::{BlockBytes, BlockSink, Cid};

use cairn_store::blocks::StoredBlockReader;
use walk::{walk, Damage};

/// A pack whose live blocks are less than this share of its bytes is compacted.
const COMPACT_BELOW_LIVE: f64 = 0.5;
/// Roots kept this long before the walk began are checked again when the plan is applied:
/// more than any clock difference between nodes.
const CLOCK_SKEW: Duration = Duration::from_secs(600);
/// Roots and index entries read per query.
const PAGE: u32 = 1000;
/// Attempts to apply a plan while new roots keep arriving.
const APPLY_ATTEMPTS: usize = 20;

#[derive(Debug, thiserror::Error)]
pub enum GcError {
    #[error("another collector is running")]
    Busy,
    #[error("a live block is damaged, so what it links to is unknown; run `cairn fsck`: {0}")]
    Damaged(String),
    #[error("roots kept faster than the collector can walk them; try again later")]
    Overrun,
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A compaction could not write the live blocks it copies; the pack it was compacting is
    /// left as it was.
    #[error("the disk is full: no room to copy a pack's live blocks out of it, so it was left as it was; free some space and collect again")]
    StorageFull,
    #[error("storage I/O: {0}")]
    Io(io::Error),
}

impl From<io::Error> for GcError {
    fn from(e: io::Error) -> Self {
        if cairn_store::is_storage_full(&e) {
            Self::StorageFull
        } else {
            Self::Io(e)
        }
    }
}

/// One index entry, by pack.
struct Entry {
    multihash: Vec<u8>,
    offset: u64,
    length: u64,
}

/// The block index, by pack, with each pack's size.
#[derive(Default)]
struct Index {
    packs: HashMap<String, (u64, Vec<Entry>)>,
}

/// Run one collection (`GcError::Busy` while another runs). `dry_run` reports what it would
/// remove and changes nothing.
pub async fn collect(
    store: Arc<dyn MetadataStore>,
    packs: Packs,
    dry_run: bool,
) -> Result<GcReport, GcError> {
    let started = Instant::now();
    let mut report = GcReport {
        dry_run,
        ..GcReport::default()
    };
    // Held to the end; dropping it (or dying) releases it.
    let _lock = if dry_run {
        None
    } else {
        let lock = store.lock_collector().await?.ok_or(GcError::Busy)?;
        delete_dead_packs(store.as_ref(), &packs).await?;
        Some(lock)
    };
    let since_ms = now_ms() - CLOCK_SKEW.as_millis() as i64;
    let mut marked = Marked::default();
    let mut after = String::new();
    loop {
        let roots = store.distinct_roots(&after, PAGE).await?;
        let Some(last) = roots.last() else { break };
        after = last.clone();
        marked = mark(&store, &packs, marked, roots).await?;
    }
    let index = read_index(store.as_ref()).await?;
    for attempt in 1.. {
        let mut plan = plan(&index, &marked.blocks);
        report.live_roots = marked.roots.len() as u64;
        report.live_blocks = marked.blocks.len() as u64;
        report.missing_blocks = marked.missing;
        report.dead_blocks = plan.dead.len() as u64;
        report.dead_bytes = plan.dead_bytes;
        report.packs_deleted = plan.dead_packs.len() as u64;
        report.packs_compacted = plan.compact.len() as u64;
        if dry_run {
            report.bytes_copied = plan.live_bytes_to_copy;
            report.bytes_reclaimed = plan.reclaimable(&index);
            report.seconds = started.elapsed().as_secs_f64();
            return Ok(report);
        }
        let collection = Collection {
            compacted: compact(&packs, &index, &plan).await?,
            dead: std::mem::take(&mut plan.dead),
            emptied: plan
                .dead_packs
                .iter()
                .chain(&plan.compact)
                .cloned()
                .collect(),
        };
        match store
            .apply_collection(&collection, since_ms, &marked.roots)
            .await?
        {
            Collected::Applied { packs_removed } => {
                let removed: u64 = packs_removed
                    .iter()
                    .filter_map(|name| index.packs.get(name).map(|(size, _)| *size))
                    .sum();
                let compacted = collection.compacted.as_ref();
                report.bytes_copied = compacted.map_or(0, |c| c.pack.stored_bytes());
                report.bytes_reclaimed =
                    removed.saturating_sub(compacted.map_or(0, |c| c.pack.size));
                report.packs_deleted = packs_removed
                    .iter()
                    .filter(|name| plan.dead_packs.contains(name))
                    .count() as u64;
                report.packs_compacted = packs_removed.len() as u64 - report.packs_deleted;
                break;
            }
            Collected::NewRoots(roots) => {
                // The copy (if any) was for the old plan, and nothing references it.
                if let Some(old) = &collection.compacted {
                    packs.delete(&old.pack.name)?;
                }
                if attempt == APPLY_ATTEMPTS {
                    return Err(GcError::Overrun);
                }
                marked = mark(&store, &packs, marked, roots).await?;
            }
        }
    }
    delete_dead_packs(store.as_ref(), &packs).await?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// What the walk found live so far.
#[derive(Default)]
struct Marked {
    roots: HashSet<String>,
    blocks: HashSet<Vec<u8>>,
    missing: u64,
}

/// Walk `roots` (on a blocking thread: reads block on the runtime), adding to `marked`.
async fn mark(
    store: &Arc<dyn MetadataStore>,
    packs: &Packs,
    mut marked: Marked,
    roots: Vec<String>,
) -> Result<Marked, GcError> {
    let (store, packs) = (store.clone(), packs.clone());
    tokio::task::spawn_blocking(move || {
        let mut blocks = StoredBlockReader::new(store, packs);
        for text in roots {
            if !marked.roots.insert(text.clone()) {
                continue;
            }
            let root = Cid::try_from(text.as_str())
                .map_err(|e| GcError::Damaged(format!("root {text:?} is not a CID: {e}")))?;
            let mut missing = 0;
            // A missing block is gone already: nothing below it can be found to keep. A
            // corrupt or unreadable one hides what it links to, which must not be collected.
            let mut go_on = |_: &Cid, damage: &Damage| {
                let gone = *damage == Damage::Missing;
                missing += u64::from(gone);
                gone
            };
            if let Some((cid, Damage::Corrupt(why) | Damage::Lost(why))) =
                walk(&mut blocks, &root, &mut marked.blocks, false, &mut go_on)?
            {
                return Err(GcError::Damaged(format!(
                    "block {cid} under root {root}: {why}"
                )));
            }
            marked.missing += missing;
        }
        Ok(marked)
    })
    .await
    .map_err(io::Error::other)?
}

async fn read_index(store: &dyn GarbageCollection) -> Result<Index, StoreError> {
    let mut index = Index::default();
    let mut after = Vec::new();
    loop {
        let page = store.indexed_blocks(&after, PAGE * 10).await?;
        let Some(last) = page.last() else {
            return Ok(index);
        };
        after = last.multihash.clone();
        for block in page {
            let BlockLocation {
                pack,
                offset,
                length,
                ..
            } = block.location;
            index
                .packs
                .entry(pack)
                .or_insert_with(|| (block.pack_size, Vec::new()))
                .1
                .push(Entry {
                    multihash: block.multihash,
                    offset,
                    length,
                });
        }
    }
}

/// What to remove and what to move.
#[derive(Default)]
struct Plan {
    dead: Vec<Vec<u8>>,
    dead_bytes: u64,
    /// Packs with no live block.
    dead_packs: Vec<String>,
    /// Packs to compact: mostly dead.
    compact: Vec<String>,
    live_bytes_to_copy: u64,
}

impl Plan {
    /// What deleting the planned packs would give back, less what compaction copies.
    fn reclaimable(&self, index: &Index) -> u64 {
        let deleted: u64 = self
            .dead_packs
            .iter()
            .chain(&self.compact)
            .filter_map(|name| index.packs.get(name).map(|(size, _)| *size))
            .sum();
        deleted.saturating_sub(self.live_bytes_to_copy)
    }
}

fn plan(index: &Index, live: &HashSet<Vec<u8>>) -> Plan {
    let mut plan = Plan::default();
    let mut names: Vec<&String> = index.packs.keys().collect();
    names.sort();
    for name in names {
        let (size, entries) = &index.packs[name];
        let (mut live_bytes, mut dead_bytes) = (0, 0);
        for entry in entries {
            if live.contains(&entry.multihash) {
                live_bytes += entry.length;
            } else {
                dead_bytes += entry.length;
                plan.dead.push(entry.multihash.clone());
            }
        }
        plan.dead_bytes += dead_bytes;
        if live_bytes == 0 {
            plan.dead_packs.push(name.clone());
        // Against the pack's size: bytes whose entries an earlier collection removed (while
        // the rest of their pack was live) count as dead too.
        } else if (live_bytes as f64) < COMPACT_BELOW_LIVE * *size as f64 {
            plan.compact.push(name.clone());
            plan.live_bytes_to_copy += live_bytes;
        }
    }
    plan
}

/// A pack's live blocks: multihash and location.
type LiveBlocks = Vec<(Vec<u8>, BlockLocation)>;

/// Copy the live blocks of the packs to compact into one new pack, verifying each on the way
/// (a damaged block is not copied into a new home: its pack is left as it is).
async fn compact(packs: &Packs, index: &Index, plan: &Plan) -> Result<Option<Compaction>, GcError> {
    if plan.compact.is_empty() {
        return Ok(None);
    }
    let live: HashSet<&Vec<u8>> = {
        let dead: HashSet<&Vec<u8>> = plan.dead.iter().collect();
        plan.compact
            .iter()
            .flat_map(|name| &index.packs[name].1)
            .map(|e| &e.multihash)
            .filter(|m| !dead.contains(m))
            .collect()
    };
    let sources: Vec<(String, LiveBlocks)> = plan
        .compact
        .iter()
        .map(|name| {
            let blocks = index.packs[name]
                .1
                .iter()
                .filter(|e| live.contains(&e.multihash))
                .map(|e| {
                    // Where to read it from; moving it keeps the rest of its index row.
                    let location = BlockLocation {
                        pack: name.clone(),
                        offset: e.offset,
                        length: e.length,
                        without_links: false,
                    };
                    (e.multihash.clone(), location)
                })
                .collect();
            (name.clone(), blocks)
        })
        .collect();
    let packs = packs.clone();
    tokio::task::spawn_blocking(move || -> Result<Option<Compaction>, GcError> {
        let mut writer = packs.writer(cairn_store::packs::nothing_known())?;
        let mut from = Vec::new();
        for (name, blocks) in sources {
            let locations: Vec<&BlockLocation> = blocks.iter().map(|(_, l)| l).collect();
            let read = packs.read_many(&name, &locations)?;
            let mut copied = Vec::with_capacity(blocks.len());
            for ((multihash, _), bytes) in blocks.iter().zip(&read) {
                let cid = raw_cid(multihash)?;
                if let Err(e) = cairn_unixfs::block::verify_block(&cid, bytes) {
                    tracing::error!(pack = %name, error = %e, "damaged block; pack left as it is");
                    copied.clear();
                    break;
                }
                copied.push((cid, bytes));
            }
            for (cid, bytes) in copied {
                writer.put_block(&cid, BlockBytes::new(bytes))?;
                from.push(name.clone());
            }
        }
        let Some(pack) = writer.seal()?.pack else {
            return Ok(None);
        };
        Ok(Some(Compaction {
            pack,
            sources: from,
        }))
    })
    .await
    .map_err(io::Error::other)?
}

/// A CID for a block known by its multihash alone. Blocks are found by multihash; the codec
/// a pack's CAR framing records is never read.
pub(crate) fn raw_cid(multihash: &[u8]) -> io::Result<Cid> {
    let bytes = [&[1, RAW as u8][..], multihash].concat();
    Cid::try_from(bytes.as_slice()).map_err(io::Error::other)
}

/// Delete the blobs of packs the index no longer references, then forget them.
async fn delete_dead_packs(store: &dyn GarbageCollection, packs: &Packs) -> Result<(), GcError> {
    let names = store.dead_packs().await?;
    if names.is_empty() {
        return Ok(());
    }
    let deleting = names.clone();
    let packs = packs.clone();
    tokio::task::spawn_blocking(move || deleting.iter().try_for_each(|name| packs.delete(name)))
        .await
        .map_err(io::Error::other)??;
    store.forget_dead_packs(&names).await?;
    Ok(())
}

/// Collect every `interval` until `stop`; a collection another node or `cairn gc` is running
/// is left to it.
pub async fn keep_collecting(
    service: crate::Service,
    interval: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        match collect(service.store.clone(), service.packs.clone(), false).await {
            Ok(report) => {
                service.metrics.gc_finished(&report);
                tracing::info!(
                    dead_blocks = report.dead_blocks,
                    packs_deleted = report.packs_deleted,
                    packs_compacted = report.packs_compacted,
                    bytes_reclaimed = report.bytes_reclaimed,
                    seconds = report.seconds,
                    "garbage collected"
                );
            }
            Err(GcError::Busy) => tracing::debug!("another collector is running"),
            Err(e) => tracing::warn!(error = %e, "garbage collection failed"),
        }
    }
}
