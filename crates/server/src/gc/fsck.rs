//! `cairn fsck`: every live root's DAG is whole, and every indexed block hashes to its name.
//! It reads every stored byte once.

use std::collections::HashSet;
use std::io;
use std::sync::Arc;

use cairn_store::packs::Packs;
use cairn_store::MetadataStore;
use cairn_unixfs::block::verify_block;
use cairn_unixfs::Cid;

use super::walk::{walk, Damage};
use super::{raw_cid, GcError, PAGE};
use crate::blocks::StoredBlocks;

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
            let mut blocks = StoredBlocks::new(store, packs);
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
            let mut problems = Vec::new();
            for block in unvisited {
                let cid = raw_cid(&block.multihash)?;
                let name = &block.location.pack;
                match packs.read(&block.location) {
                    Ok(bytes) => {
                        if let Err(e) = verify_block(&cid, &bytes) {
                            problems.push(format!("pack {name}: block {cid}: {e}"));
                        }
                    }
                    Err(e) => problems.push(format!("pack {name}: block {cid}: {e}")),
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
