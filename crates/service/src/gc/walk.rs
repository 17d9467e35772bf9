//! Walking a stored DAG by its links, the one way the collector (what is live), `fsck` (is
//! every live DAG whole) and the announcements of a DAG's blocks (IPNI, DHT) see it.

use std::collections::HashSet;
use std::io;
use std::sync::Arc;

use cairn_store::packs::Packs;
use cairn_store::MetadataStore;
use cairn_unixfs::block::{BlockError, IDENTITY, RAW};
use cairn_unixfs::node::Node;
use cairn_unixfs::{BlockSource, Cid};

use cairn_store::blocks::StoredBlockReader;

/// What a walk found wrong with a block of a live DAG.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Damage {
    /// Not in the block index.
    Missing,
    /// In the index, but storage cannot find its bytes (its pack is gone).
    Lost(String),
    /// Stored, but its bytes do not hash to its CID, or it is not the UnixFS its parent says.
    Corrupt(String),
}

/// Walk the DAG under `root` depth-first, adding each block's multihash to `visited` and not
/// going below a block visited before (DAGs share blocks). Raw leaves have no links: they are
/// read only when `read_leaves` (fsck checks them; the collector needs only their names, so
/// its I/O grows with the DAG's interior, not its bytes). Blocks inlined in their CID
/// (identity hashes) are stored nowhere and skipped. Dag-pb blocks the source knows to have no
/// links (CIDv0 leaves) are skipped like raw leaves. Each damaged block goes to `damaged`,
/// which says whether the walk goes on; the damage that stopped it is returned.
pub fn walk(
    blocks: &mut dyn BlockSource,
    root: &Cid,
    visited: &mut HashSet<Vec<u8>>,
    read_leaves: bool,
    damaged: &mut dyn FnMut(&Cid, &Damage) -> bool,
) -> io::Result<Option<(Cid, Damage)>> {
    let mut stack = vec![*root];
    while let Some(cid) = stack.pop() {
        if cid.hash().code() == IDENTITY || !visited.insert(cid.hash().to_bytes()) {
            continue;
        }
        // Leaves are known by their names: raw ones by their codec, dag-pb ones (CIDv0 files)
        // by what the index recorded of them.
        if !read_leaves && (cid.codec() == RAW || blocks.known_without_links(&cid)?) {
            continue;
        }
        let damage = match blocks.get_block(&cid) {
            Ok(Some(block)) => match Node::decode(&cid, block) {
                Ok(node) => {
                    stack.extend(node.links().into_iter().map(|(link, _)| link));
                    continue;
                }
                Err(e) => Damage::Corrupt(e.to_string()),
            },
            Ok(None) => Damage::Missing,
            // The source verifies every block against its CID (`StoredBlockReader`).
            Err(e) if is_block_error(&e) => Damage::Corrupt(e.to_string()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Damage::Lost(e.to_string()),
            Err(e) => return Err(e),
        };
        if !damaged(&cid, &damage) {
            return Ok(Some((cid, damage)));
        }
    }
    Ok(None)
}

/// The multihash of every block of the stored DAG under `root` that can be read, sorted (the
/// same DAG gives the same list), walked on a blocking thread; `None` if the root block itself
/// is not stored (deleted and collected since). What an announcement of the DAG lists (IPNI
/// entries, DHT provides of every block): a block that cannot be read is left out, and logged.
pub async fn dag_multihashes(
    store: &Arc<dyn MetadataStore>,
    packs: &Packs,
    root: &Cid,
) -> io::Result<Option<Vec<Vec<u8>>>> {
    let (store, packs, root) = (store.clone(), packs.clone(), *root);
    let (visited, damaged) = tokio::task::spawn_blocking(move || {
        let mut blocks = StoredBlockReader::new(store, packs);
        let mut visited = HashSet::new();
        let mut damaged = Vec::new();
        let mut go_on = |cid: &Cid, damage: &Damage| {
            damaged.push((*cid, damage.clone()));
            true
        };
        walk(&mut blocks, &root, &mut visited, false, &mut go_on)?;
        Ok::<_, io::Error>((visited, damaged))
    })
    .await
    .map_err(io::Error::other)??;
    if damaged.iter().any(|(block, _)| *block == root) {
        return Ok(None);
    }
    let unreadable: HashSet<Vec<u8>> = damaged
        .iter()
        .map(|(block, damage)| {
            tracing::warn!("block {block} of {root} is left out: {damage:?}");
            block.hash().to_bytes()
        })
        .collect();
    let mut multihashes: Vec<Vec<u8>> = visited.difference(&unreadable).cloned().collect();
    multihashes.sort();
    Ok(Some(multihashes))
}

/// The block's bytes are wrong, as opposed to storage failing to read them.
fn is_block_error(e: &io::Error) -> bool {
    e.get_ref()
        .is_some_and(|inner| inner.downcast_ref::<BlockError>().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_store::model::{NewUpload, OperationKind, StoredDag};
    use cairn_store::sqlite::SqliteStore;
    use cairn_store::AccountLimits;
    use cairn_unixfs::{FileImporter, Profile};

    /// Counts the blocks a walk reads.
    struct Counted<'a> {
        inner: &'a mut StoredBlockReader,
        reads: usize,
    }

    impl BlockSource for Counted<'_> {
        fn get_block(&mut self, cid: &Cid) -> io::Result<Option<Vec<u8>>> {
            self.reads += 1;
            self.inner.get_block(cid)
        }

        fn known_without_links(&mut self, cid: &Cid) -> io::Result<bool> {
            self.inner.known_without_links(cid)
        }
    }

    /// A CIDv0 file's leaves are dag-pb: the index records that they link to nothing, so a walk
    /// for names reads the interior only, and fsck's walk still reads every block.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_walk_for_names_reads_no_cidv0_leaf() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn MetadataStore> = Arc::new(
            SqliteStore::open(&dir.path().join("cairn.db"))
                .await
                .unwrap(),
        );
        let packs = Packs::open(dir.path().join("packs")).unwrap();
        let account = store
            .create_account("walker", AccountLimits::default())
            .await
            .unwrap();
        let profile = Profile {
            chunk_size: 1024,
            ..Profile::UNIXFS_V0_2015
        };
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut pack = packs.writer(cairn_store::packs::nothing_known()).unwrap();
        let mut importer = FileImporter::new(&profile, &mut pack);
        importer.push(&bytes).unwrap();
        let root = importer.finish().unwrap().cid;
        let dag = StoredDag {
            cid: root.to_string(),
            size: pack.dag_bytes(),
        };
        let upload = NewUpload {
            upload_id: "v0".into(),
            account_id: account.id,
            kind: OperationKind::Upload,
            name: "v0.bin".into(),
            size: bytes.len() as u64,
            mime_type: "application/octet-stream".into(),
            archive_mode: None,
            profile: profile.name.into(),
            keyvalues: Default::default(),
            key_id: None,
            link_id: None,
            file_name: None,
            content: None,
        };
        store
            .commit_completed_upload(upload, pack.seal().unwrap(), &dag)
            .await
            .unwrap();

        tokio::task::spawn_blocking(move || {
            let mut stored = StoredBlockReader::new(store, packs);
            let mut walk_reading = |read_leaves: bool| {
                let mut counted = Counted {
                    inner: &mut stored,
                    reads: 0,
                };
                let mut visited = HashSet::new();
                let damage = walk(
                    &mut counted,
                    &root,
                    &mut visited,
                    read_leaves,
                    &mut |_, _| false,
                )
                .unwrap();
                assert_eq!(damage, None);
                (visited.len(), counted.reads)
            };
            // Ten leaves of 1 KiB under one root.
            assert_eq!(
                walk_reading(false),
                (11, 1),
                "names: the root alone is read"
            );
            assert_eq!(walk_reading(true), (11, 11), "fsck: every block is read");
        })
        .await
        .unwrap();
    }
}
