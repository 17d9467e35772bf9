//! `cairn fsck`: every live root's DAG is whole, and every indexed block hashes to its name.
//! It reads every stored byte once.

use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::Arc;

use cairn_store::model::IndexedBlock;
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
}

pub async fn check(store: Arc<dyn MetadataStore>, packs: Packs) -> Result<FsckReport, GcError> {
    let mut report = FsckReport::default();
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
        let unvisited: Vec<_> = page
            .into_iter()
            .filter(|b| !visited.contains(&b.multihash))
            .collect();
        report.blocks_checked += unvisited.len() as u64;
        let packs = packs.clone();
        let found = tokio::task::spawn_blocking(move || -> io::Result<Vec<String>> {
            // A pack's neighbouring blocks in one read where that pays (one request on S3).
            let mut by_pack: HashMap<&str, Vec<&IndexedBlock>> = HashMap::new();
            for block in &unvisited {
                by_pack.entry(&block.location.pack).or_default().push(block);
            }
            let batch_bytes = packs.batch_bytes();
            let mut problems = Vec::new();
            for (name, blocks) in by_pack {
                for batch in batches(&blocks, batch_bytes) {
                    let locations: Vec<_> = batch.iter().map(|b| &b.location).collect();
                    let mut read = packs.read_many(name, &locations).map(Vec::into_iter);
                    for block in batch {
                        let cid = raw_cid(&block.multihash)?;
                        let bytes = match &mut read {
                            Ok(read) => read.next().ok_or_else(|| io::Error::other("short read")),
                            // Which block is unreadable: each on its own.
                            Err(_) => packs.read(&block.location),
                        };
                        let checked = bytes
                            .map_err(|e| e.to_string())
                            .and_then(|b| verify_block(&cid, &b).map_err(|e| e.to_string()));
                        if let Err(e) = checked {
                            problems.push(format!("pack {name}: block {cid}: {e}"));
                        }
                    }
                }
            }
            Ok(problems)
        })
        .await
        .map_err(io::Error::other)??;
        report.problems.extend(found);
    }
    Ok(report)
}

/// `blocks` in runs of at most `batch_bytes` (each block alone when it is 0, or larger).
fn batches<'a>(blocks: &'a [&'a IndexedBlock], batch_bytes: u64) -> Vec<&'a [&'a IndexedBlock]> {
    let mut runs = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, block) in blocks.iter().enumerate() {
        if i > start && bytes + block.location.length > batch_bytes {
            runs.push(&blocks[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += block.location.length;
    }
    if start < blocks.len() {
        runs.push(&blocks[start..]);
    }
    runs
}
