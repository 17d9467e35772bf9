//! Reading UnixFS back: what a node is, paths through directories and HAMT shards, directory
//! listings, and byte ranges of files. Blocks come from a [`BlockSource`]; verifying them
//! against their CIDs is the source's job (the gateway's source does).

use std::io;
use std::ops::Range;

use bytes::Bytes;
use cid::Cid;

use crate::block::{BlockSource, DAG_PB, RAW};
use crate::hamt::name_hash;
use crate::pb::{self, DataType, DecodeError, UnixFsData};

/// Why content cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("block {0} is not available")]
    Missing(Cid),
    #[error("{path:?} does not exist")]
    NotFound { path: String },
    #[error("{path:?} is not a directory")]
    NotADirectory { path: String },
    #[error("block {cid} uses codec {codec:#x}, which is not UnixFS")]
    UnsupportedCodec { cid: Cid, codec: u64 },
    #[error("block {cid}: {source}")]
    Decode { cid: Cid, source: DecodeError },
    #[error("block {cid} is not a valid UnixFS node: {reason}")]
    Invalid { cid: Cid, reason: &'static str },
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// A link out of a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeLink {
    pub name: String,
    pub cid: Cid,
    pub tsize: u64,
}

/// What a block is, as UnixFS sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// A file (or a piece of one): its inline bytes, then its children with the content bytes
    /// each holds (from `blocksizes`). A raw block is a file of inline bytes only.
    File {
        size: u64,
        /// Shares the block's buffer: reading a file never copies its leaves.
        data: Bytes,
        children: Vec<(Cid, u64)>,
    },
    Directory {
        links: Vec<NodeLink>,
    },
    HamtShard {
        links: Vec<NodeLink>,
        fanout: u64,
    },
    Symlink {
        target: String,
    },
}

impl Node {
    pub fn decode(cid: &Cid, block: impl Into<Bytes>) -> Result<Self, ReadError> {
        let block = block.into();
        match cid.codec() {
            RAW => Ok(Node::File {
                size: block.len() as u64,
                data: block,
                children: Vec::new(),
            }),
            DAG_PB => decode_dag_pb(cid, block),
            codec => Err(ReadError::UnsupportedCodec { cid: *cid, codec }),
        }
    }

    pub fn is_directory(&self) -> bool {
        matches!(self, Node::Directory { .. } | Node::HamtShard { .. })
    }
}

fn decode_dag_pb(cid: &Cid, block: Bytes) -> Result<Node, ReadError> {
    let decode = |source| ReadError::Decode { cid: *cid, source };
    let node =
        pb::PbNode::from_bytes(block).map_err(|e| decode(DecodeError::DagPb(e.to_string())))?;
    let data = node.data.clone().unwrap_or_default();
    let unixfs = UnixFsData::decode(&data).map_err(decode)?;
    let links = || {
        node.links
            .iter()
            .map(|l| NodeLink {
                name: l.name.clone().unwrap_or_default(),
                cid: l.cid,
                tsize: l.size.unwrap_or(0),
            })
            .collect()
    };
    Ok(match unixfs.kind {
        DataType::File | DataType::Raw => {
            if unixfs.blocksizes.len() != node.links.len() {
                return Err(ReadError::Invalid {
                    cid: *cid,
                    reason: "blocksizes and links disagree",
                });
            }
            // The inline bytes, as a slice of the block's own buffer.
            let inline = unixfs.data.map_or_else(Bytes::new, |d| data.slice_ref(d));
            let size = unixfs
                .filesize
                .unwrap_or(inline.len() as u64 + unixfs.blocksizes.iter().sum::<u64>());
            Node::File {
                size,
                data: inline,
                children: node
                    .links
                    .iter()
                    .zip(&unixfs.blocksizes)
                    .map(|(l, s)| (l.cid, *s))
                    .collect(),
            }
        }
        DataType::Directory => Node::Directory { links: links() },
        DataType::HamtShard => Node::HamtShard {
            links: links(),
            fanout: unixfs.fanout.unwrap_or(256),
        },
        DataType::Symlink => Node::Symlink {
            target: String::from_utf8_lossy(unixfs.data.unwrap_or_default()).into_owned(),
        },
        DataType::Metadata => {
            return Err(ReadError::Invalid {
                cid: *cid,
                reason: "metadata nodes are not supported",
            })
        }
    })
}

/// Load and decode a block.
pub fn load(cid: &Cid, source: &mut dyn BlockSource) -> Result<Node, ReadError> {
    let block = source.get_block(cid)?.ok_or(ReadError::Missing(*cid))?;
    Node::decode(cid, block)
}

/// Where a path leads, and every block read on the way (root first, the target's last).
#[derive(Clone, Debug)]
pub struct Resolved {
    pub cid: Cid,
    pub node: Node,
    pub path_blocks: Vec<Cid>,
}

/// Follow `path` (names, already split and decoded) from `root`.
pub fn resolve(
    root: &Cid,
    path: &[&str],
    source: &mut dyn BlockSource,
) -> Result<Resolved, ReadError> {
    let mut node = load(root, source)?;
    let mut cid = *root;
    let mut path_blocks = vec![cid];
    for (depth, name) in path.iter().enumerate() {
        let here = path[..=depth].join("/");
        let next = match &node {
            Node::Directory { links } => links.iter().find(|l| l.name == *name).map(|l| l.cid),
            Node::HamtShard { fanout, .. } => {
                hamt_find(&cid, &node, *fanout, name, source, &mut path_blocks)?
            }
            _ => {
                return Err(ReadError::NotADirectory {
                    path: path[..depth].join("/"),
                })
            }
        };
        cid = next.ok_or(ReadError::NotFound { path: here })?;
        node = load(&cid, source)?;
        path_blocks.push(cid);
    }
    Ok(Resolved {
        cid,
        node,
        path_blocks,
    })
}

/// Find `name` in the HAMT rooted at `shard`, recording the sub-shards visited.
fn hamt_find(
    shard_cid: &Cid,
    shard: &Node,
    fanout: u64,
    name: &str,
    source: &mut dyn BlockSource,
    visited: &mut Vec<Cid>,
) -> Result<Option<Cid>, ReadError> {
    let bits = fanout.trailing_zeros();
    if !fanout.is_power_of_two() || bits == 0 || bits > 8 {
        return Err(ReadError::Invalid {
            cid: *shard_cid,
            reason: "unsupported HAMT fanout",
        });
    }
    let width = format!("{:X}", fanout - 1).len();
    let hash = name_hash(name.as_bytes());
    let mut current = shard.clone();
    for level in 0..(64 / bits) {
        let slot = (hash >> (64 - (level + 1) * bits)) & ((1 << bits) - 1);
        let prefix = format!("{slot:0width$X}");
        let Node::HamtShard { links, .. } = &current else {
            return Ok(None);
        };
        let Some(link) = links.iter().find(|l| l.name.starts_with(&prefix)) else {
            return Ok(None);
        };
        if link.name.len() == width {
            let next = load(&link.cid, source)?;
            visited.push(link.cid);
            current = next;
            continue;
        }
        return Ok((link.name[width..] == *name).then_some(link.cid));
    }
    Ok(None)
}

/// A directory's entries (a HAMT's are gathered from all its shards), ordered by name bytes.
pub fn list(node: &Node, source: &mut dyn BlockSource) -> Result<Vec<NodeLink>, ReadError> {
    let mut entries = Vec::new();
    match node {
        Node::Directory { links } => entries.extend(links.iter().cloned()),
        Node::HamtShard { fanout, .. } => {
            let width = format!("{:X}", fanout.saturating_sub(1)).len();
            collect_shard(node, width, source, &mut entries)?;
        }
        _ => {}
    }
    entries.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    Ok(entries)
}

fn collect_shard(
    shard: &Node,
    width: usize,
    source: &mut dyn BlockSource,
    out: &mut Vec<NodeLink>,
) -> Result<(), ReadError> {
    let Node::HamtShard { links, .. } = shard else {
        return Ok(());
    };
    for link in links {
        if link.name.len() == width {
            let child = load(&link.cid, source)?;
            collect_shard(&child, width, source, out)?;
        } else {
            out.push(NodeLink {
                name: link.name[width.min(link.name.len())..].to_owned(),
                ..link.clone()
            });
        }
    }
    Ok(())
}

/// Hand the bytes `range` of the file rooted at `cid` to `out`, in order, as slices of the
/// blocks read (no copies), reading only the blocks that hold them; `visited` receives each
/// block read, in order (for CAR responses).
pub fn read_range(
    cid: &Cid,
    range: Range<u64>,
    source: &mut dyn BlockSource,
    visited: &mut Vec<Cid>,
    out: &mut dyn FnMut(Bytes) -> io::Result<()>,
) -> Result<(), ReadError> {
    let node = load(cid, source)?;
    visited.push(*cid);
    let Node::File { data, children, .. } = node else {
        return Err(ReadError::Invalid {
            cid: *cid,
            reason: "not a file",
        });
    };
    // Inline bytes come first, then each child's share of the content.
    let inline_end = data.len() as u64;
    if range.start < inline_end {
        let end = range.end.min(inline_end);
        out(data.slice(range.start as usize..end as usize))?;
    }
    // Say which children are wanted before reading them one by one.
    let mut offset = inline_end;
    let wanted: Vec<Cid> = children
        .iter()
        .filter_map(|(child, size)| {
            let span = offset..offset + size;
            offset += size;
            (span.start < range.end && span.end > range.start).then_some(*child)
        })
        .collect();
    source.prefetch(&wanted)?;
    let mut offset = inline_end;
    for (child, size) in children {
        let child_range = offset..offset + size;
        if child_range.start >= range.end {
            break;
        }
        if child_range.end > range.start {
            let start = range.start.max(offset) - offset;
            let end = range.end.min(child_range.end) - offset;
            read_range(&child, start..end, source, visited, out)?;
        }
        offset += size;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DirectoryBuilder, FileImporter, MemoryBlocks, Profile};

    fn import(profile: &Profile, bytes: &[u8], blocks: &mut MemoryBlocks) -> crate::ImportedFile {
        let mut importer = FileImporter::new(profile, blocks);
        importer.push(bytes).unwrap();
        importer.finish().unwrap()
    }

    #[test]
    fn any_byte_range_of_a_deep_file_reads_back_exactly_for_both_leaf_kinds() {
        let content: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for base in [Profile::UNIXFS_V1_2025, Profile::UNIXFS_V0_2015] {
            let profile = Profile {
                chunk_size: 100,
                max_links: 3,
                ..base
            };
            let mut blocks = MemoryBlocks::default();
            let root = import(&profile, &content, &mut blocks).cid;
            for range in [
                0..10_000u64,
                0..1,
                99..101,
                250..7_777,
                9_999..10_000,
                5_000..5_000,
            ] {
                let mut got = Vec::new();
                let mut visited = Vec::new();
                read_range(&root, range.clone(), &mut blocks, &mut visited, &mut |b| {
                    got.extend_from_slice(&b);
                    Ok(())
                })
                .unwrap();
                assert_eq!(
                    got,
                    content[range.start as usize..range.end as usize],
                    "{range:?}"
                );
                if range.end - range.start == 1 {
                    // Only the blocks on one path down the tree are read.
                    assert!(visited.len() <= 7, "{} blocks for one byte", visited.len());
                }
            }
        }
    }

    #[test]
    fn paths_resolve_through_basic_directories_and_multi_level_hamts() {
        let profile = Profile {
            hamt_threshold: 200,
            ..Profile::UNIXFS_V1_2025
        };
        let mut blocks = MemoryBlocks::default();
        let mut dir = DirectoryBuilder::new(&profile);
        for i in 0..300 {
            let file = import(&profile, format!("file {i}").as_bytes(), &mut blocks);
            dir.add_file(&format!("big/f{i:03}.txt"), file).unwrap();
        }
        let small = import(&profile, b"hello", &mut blocks);
        dir.add_file("docs/readme.md", small).unwrap();
        dir.add_symlink("docs/link", "readme.md").unwrap();
        let root = dir.finish(&mut blocks).unwrap().cid;

        // Every name resolves to its own content; some of them through sub-shards.
        let mut deepest = 0;
        for i in 0..300 {
            let name = format!("f{i:03}.txt");
            let found = resolve(&root, &["big", &name], &mut blocks).unwrap();
            let mut bytes = Vec::new();
            read_range(&found.cid, 0..100, &mut blocks, &mut Vec::new(), &mut |b| {
                bytes.extend_from_slice(&b);
                Ok(())
            })
            .unwrap();
            assert_eq!(bytes, format!("file {i}").as_bytes());
            deepest = deepest.max(found.path_blocks.len());
        }
        assert!(deepest > 3, "some names sit in sub-shards");

        let big = resolve(&root, &["big"], &mut blocks).unwrap();
        assert!(matches!(big.node, Node::HamtShard { .. }));
        let names: Vec<_> = list(&big.node, &mut blocks)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names.len(), 300);
        assert_eq!(names[0], "f000.txt");
        assert_eq!(names[299], "f299.txt");

        assert!(matches!(
            resolve(&root, &["big", "nope.txt"], &mut blocks),
            Err(ReadError::NotFound { .. })
        ));
        assert!(matches!(
            resolve(&root, &["docs", "readme.md", "x"], &mut blocks),
            Err(ReadError::NotADirectory { .. })
        ));
        let link = resolve(&root, &["docs", "link"], &mut blocks).unwrap();
        assert_eq!(
            link.node,
            Node::Symlink {
                target: "readme.md".into()
            }
        );
    }
}
