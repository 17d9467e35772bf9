//! `cairn fsck`: every live root's DAG is whole, and every indexed block hashes to its name.
//! It reads every stored byte once. `--deep` also holds the pack store against the index:
//! every pack the index names is there and long enough, and packs nobody names are listed.

use std::borrow::Borrow;
use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::Arc;

use cairn_store::model::{BlockLocation, IndexedBlock};
use cairn_store::packs::Packs;
use cairn_store::MetadataStore;
use cairn_unixfs::block::verify_block;
use cairn_unixfs::Cid;

use super::walk::{walk, Damage};
use super::{raw_cid, GcError, PAGE};
use cairn_store::blocks::StoredBlockReader;

/// What a check found.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FsckReport {
    pub live_roots: u64,
    pub blocks_checked: u64,
    /// One line per problem: which root or pack, which block, what is wrong.
    pub problems: Vec<String>,
    /// `--deep` only: stored packs no index entry names, with their lengths. Not a problem (a
    /// pack written after the database's snapshot, or being written now), but after a restore
    /// they say the pack store is newer than the database.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orphan_packs: Option<Vec<OrphanPack>>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OrphanPack {
    pub name: String,
    pub bytes: u64,
}

/// A stored block that cannot be read, or whose bytes are not what its CID names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DamagedBlock {
    pub cid: Cid,
    pub location: BlockLocation,
    pub error: String,
}

/// Every live DAG whole, and every indexed block's bytes right.
pub async fn check(store: Arc<dyn MetadataStore>, packs: Packs) -> Result<FsckReport, GcError> {
    run(store, packs, false).await
}

/// [`check`], and the pack store against the index (`cairn fsck --deep`): what a database and
/// a bucket restored from copies of different moments lack of each other.
pub async fn check_deep(
    store: Arc<dyn MetadataStore>,
    packs: Packs,
) -> Result<FsckReport, GcError> {
    run(store, packs, true).await
}

async fn run(
    store: Arc<dyn MetadataStore>,
    packs: Packs,
    deep: bool,
) -> Result<FsckReport, GcError> {
    let mut report = FsckReport::default();
    // Each indexed pack: its blocks and the furthest byte they reach.
    let mut indexed_packs: HashMap<String, (u64, u64)> = HashMap::new();
    let mut visited = HashSet::new();
    let mut after = String::new();
    loop {
        let roots = store.distinct_roots(&after, PAGE).await?;
        let Some(last) = roots.last() else { break };
        after = last.clone();
        report.live_roots += roots.len() as u64;
        let (store, packs) = (store.clone(), packs.clone());
        let mut problems = std::mem::take(&mut report.problems);
        (visited, problems) = tokio::task::spawn_blocking(move || -> io::Result<_> {
            let mut blocks = StoredBlockReader::new(store, packs);
            for text in roots {
                let Ok(root) = Cid::try_from(text.as_str()) else {
                    problems.push(format!("root {text}: not a CID"));
                    continue;
                };
                let mut note = |cid: &Cid, damage: &Damage| {
                    problems.push(match damage {
                        Damage::Missing => format!("root {root}: block {cid} is missing"),
                        Damage::Corrupt(why) | Damage::Lost(why) => {
                            format!("root {root}: block {cid}: {why}")
                        }
                    });
                    true
                };
                walk(&mut blocks, &root, &mut visited, true, &mut note)?;
            }
            Ok((visited, problems))
        })
        .await
        .map_err(io::Error::other)??;
        report.problems = problems;
    }
    report.blocks_checked = visited.len() as u64;
    // Blocks no live DAG reaches (waiting for the collector) are checked too.
    let mut after = Vec::new();
    loop {
        let page = store.indexed_blocks(&after, PAGE).await?;
        let Some(last) = page.last() else { break };
        after = last.multihash.clone();
        for block in &page {
            let reach = block.location.offset + block.location.length;
            let (count, furthest) = indexed_packs
                .entry(block.location.pack.clone())
                .or_default();
            *count += 1;
            *furthest = (*furthest).max(reach);
        }
        let unvisited: Vec<_> = page
            .into_iter()
            .filter(|b| !visited.contains(&b.multihash))
            .collect();
        report.blocks_checked += unvisited.len() as u64;
        let packs = packs.clone();
        let damaged = tokio::task::spawn_blocking(move || verify_blocks(&packs, &unvisited))
            .await
            .map_err(io::Error::other)??;
        report.problems.extend(
            damaged
                .iter()
                .map(|d| format!("pack {}: block {}: {}", d.location.pack, d.cid, d.error)),
        );
    }
    if deep {
        let packs = packs.clone();
        let named: HashSet<String> = store.pack_names().await?.into_iter().collect();
        let (problems, orphans) =
            tokio::task::spawn_blocking(move || check_packs(&packs, &indexed_packs, &named))
                .await
                .map_err(io::Error::other)??;
        report.problems.extend(problems);
        report.orphan_packs = Some(orphans);
    }
    Ok(report)
}

/// Each pack the index names is stored and reaches its furthest block; each stored pack no
/// row names is an orphan. Empty files are packs made ahead for the next writers, not
/// orphans.
fn check_packs(
    packs: &Packs,
    indexed: &HashMap<String, (u64, u64)>,
    named: &HashSet<String>,
) -> io::Result<(Vec<String>, Vec<OrphanPack>)> {
    let mut problems = Vec::new();
    let mut names: Vec<&String> = indexed.keys().collect();
    names.sort();
    for name in names {
        let (blocks, furthest) = indexed[name];
        match packs.length(name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => problems.push(format!(
                "pack {name}: missing from the pack store ({blocks} indexed blocks in it)"
            )),
            Err(e) => problems.push(format!("pack {name}: unreadable: {e}")),
            Ok(length) if length < furthest => problems.push(format!(
                "pack {name}: {length} bytes, but its indexed blocks reach byte {furthest}"
            )),
            Ok(_) => {}
        }
    }
    let mut orphans = Vec::new();
    for name in packs.names()? {
        if named.contains(&name) {
            continue;
        }
        match packs.length(&name) {
            Ok(0) => {}
            Ok(bytes) => orphans.push(OrphanPack { name, bytes }),
            // Deleted since it was listed: a collection or a sweep.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    orphans.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((problems, orphans))
}

/// Read `blocks` and check each against its CID, on the calling (blocking) thread: the
/// damaged ones. A pack's neighbouring blocks are read together where that pays (one request
/// on S3); when such a read fails, each block is read alone to tell which is unreadable.
/// Used by `fsck` and by the scrubber.
pub fn verify_blocks(packs: &Packs, blocks: &[IndexedBlock]) -> io::Result<Vec<DamagedBlock>> {
    let mut by_pack: HashMap<&str, Vec<&IndexedBlock>> = HashMap::new();
    for block in blocks {
        by_pack.entry(&block.location.pack).or_default().push(block);
    }
    let batch_bytes = packs.batch_bytes();
    let mut damaged = Vec::new();
    for (name, blocks) in by_pack {
        for batch in batches(&blocks, batch_bytes) {
            let locations: Vec<_> = batch.iter().map(|b| &b.location).collect();
            let mut read = packs.read_many(name, &locations).map(Vec::into_iter);
            for block in batch {
                let cid = raw_cid(&block.multihash)?;
                let bytes = match &mut read {
                    Ok(read) => read.next().ok_or_else(|| io::Error::other("short read")),
                    Err(_) => packs.read(&block.location),
                };
                let checked = bytes
                    .map_err(|e| e.to_string())
                    .and_then(|b| verify_block(&cid, &b).map_err(|e| e.to_string()));
                if let Err(error) = checked {
                    damaged.push(DamagedBlock {
                        cid,
                        location: block.location.clone(),
                        error,
                    });
                }
            }
        }
    }
    Ok(damaged)
}

/// `blocks` in runs of at most `max_bytes` (a block that size or larger alone): what one read
/// of a pack takes (fsck), or what the scrubber reads between two waits.
pub(crate) fn batches<T: Borrow<IndexedBlock>>(blocks: &[T], max_bytes: u64) -> Vec<&[T]> {
    let mut runs = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, block) in blocks.iter().enumerate() {
        let length = block.borrow().location.length;
        if i > start && bytes + length > max_bytes {
            runs.push(&blocks[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += length;
    }
    if start < blocks.len() {
        runs.push(&blocks[start..]);
    }
    runs
}
