//! Reading UnixFS back: paths through directories and HAMT shards, directory listings, byte
//! ranges of files, and depth-first walks of whole DAGs.
//!
//! DAGs come from strangers, so a [`Reader`] never recurses (every walk keeps an explicit stack,
//! and refuses to go deeper than [`ReadLimits::max_depth`]), charges every block it reads to
//! a budget ([`ReadLimits`]: blocks and bytes, repeated visits included, so a DAG that
//! reuses subtrees cannot make one request do unbounded work), and checks every node it
//! reads against the UnixFS rules ([`crate::node`]) before using it: it stops with an error
//! rather than hand out bytes a node lied about.
//!
//! Blocks come from a [`BlockSource`]; verifying them against their CIDs is the source's job
//! (the gateway's source does, and so does a CAR reader).

use std::collections::HashSet;
use std::io;
use std::ops::Range;

use bytes::Bytes;
use cid::Cid;

use crate::block::BlockSource;
use crate::hamt::name_hash;
pub use crate::node::{ChildRule, Node, NodeError, NodeKind, NodeLink};

/// How much work one read may do. The defaults are far above what real DAGs need (Kubo's
/// deepest are a few dozen levels; a site of a million blocks is a very large site), and far
/// below what a hostile DAG of a few kilobytes could otherwise demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadLimits {
    /// Deepest level a walk descends to (the root is level 0; a path step is a level).
    pub max_depth: usize,
    /// Blocks read, each repeated visit counted again.
    pub max_blocks: u64,
    /// Bytes of blocks read, each repeated visit counted again.
    pub max_bytes: u64,
}

impl ReadLimits {
    /// For DAGs the caller built itself (`cairn car` of a local tree): nothing to defend from.
    pub const UNLIMITED: Self = Self {
        max_depth: usize::MAX,
        max_blocks: u64::MAX,
        max_bytes: u64::MAX,
    };
}

impl Default for ReadLimits {
    fn default() -> Self {
        Self {
            max_depth: crate::dir::MAX_PATH_DEPTH,
            max_blocks: 1_000_000,
            max_bytes: 1 << 40,
        }
    }
}

/// Most links a walk holds waiting to be visited. Real DAGs need depth x links per node, a
/// few thousand; this bounds the memory of a walk through nodes that are both wide and deep.
pub const MAX_PENDING_LINKS: usize = 1 << 18;

/// Why content cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("block {0} is not available")]
    Missing(Cid),
    #[error("{path:?} does not exist")]
    NotFound { path: String },
    #[error("{path:?} is not a directory")]
    NotADirectory { path: String },
    /// The path ends inside a block of another codec, at a value that is not a link.
    #[error(
        "{path:?} leads inside block {cid} to a value that is not a link; in a block of its \
         codec only links are followed"
    )]
    InsideBlock { path: String, cid: Cid },
    /// What only UnixFS has (a file's bytes, a directory's entries) was asked of a block of
    /// another codec.
    #[error("block {cid} is {codec}, not UnixFS: {asked} are UnixFS's only")]
    NotUnixFs {
        cid: String,
        codec: &'static str,
        asked: &'static str,
    },
    /// The DAG breaks a UnixFS rule, or a block is not UnixFS at all. (Boxed: a CID and a
    /// message would make every `Result` of the reader large.)
    #[error(transparent)]
    Node(Box<NodeError>),
    #[error("the DAG is deeper than {limit} levels")]
    TooDeep { limit: usize },
    #[error("reading it takes more than {limit} {what}")]
    OverBudget { what: &'static str, limit: u64 },
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl ReadError {
    /// `asked` (what only UnixFS has, plural) of block `cid`, which is in `codec`.
    pub fn not_unixfs(cid: &Cid, codec: u64, asked: &'static str) -> Self {
        Self::NotUnixFs {
            cid: cid.to_string(),
            codec: crate::ipld::codec_name(codec).unwrap_or("another codec"),
            asked,
        }
    }

    /// True when the content (not storage, nor the client) is at fault: a broken or hostile
    /// DAG, or one too large to read within the limits.
    pub fn is_dag_fault(&self) -> bool {
        matches!(
            self,
            Self::Node(_) | Self::TooDeep { .. } | Self::OverBudget { .. }
        )
    }
}

impl From<NodeError> for ReadError {
    fn from(e: NodeError) -> Self {
        Self::Node(Box::new(e))
    }
}

impl From<crate::ipld::IpldError> for ReadError {
    fn from(e: crate::ipld::IpldError) -> Self {
        NodeError::from(e).into()
    }
}

/// Where a path leads, and every block read on the way (root first, the target's last).
#[derive(Clone, Debug)]
pub struct Resolved {
    pub cid: Cid,
    pub node: Node,
    pub path_blocks: Vec<Cid>,
}

/// Whether a walk visits a block again each time another link leads to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repeats {
    /// Each distinct block once (a CAR without duplicates).
    Skip,
    /// Every time the walk meets it (`dups=y`; charged to the budget every time).
    Visit,
}

/// Reads UnixFS from a block source within a budget. One reader serves one request: its
/// budget counts everything read through it.
pub struct Reader<S> {
    source: S,
    limits: ReadLimits,
    blocks_read: u64,
    bytes_read: u64,
}

impl<S: BlockSource> Reader<S> {
    pub fn new(source: S, limits: ReadLimits) -> Self {
        Self {
            source,
            limits,
            blocks_read: 0,
            bytes_read: 0,
        }
    }

    pub fn limits(&self) -> &ReadLimits {
        &self.limits
    }

    /// A block, charged to the budget.
    pub fn block(&mut self, cid: &Cid) -> Result<Bytes, ReadError> {
        self.blocks_read += 1;
        if self.blocks_read > self.limits.max_blocks {
            return Err(ReadError::OverBudget {
                what: "blocks",
                limit: self.limits.max_blocks,
            });
        }
        // An identity CID is its own block: inline data, stored nowhere.
        let block = if cid.hash().code() == crate::block::IDENTITY {
            cid.hash().digest().to_vec()
        } else {
            self.source
                .get_block(cid)?
                .ok_or(ReadError::Missing(*cid))?
        };
        self.bytes_read += block.len() as u64;
        if self.bytes_read > self.limits.max_bytes {
            return Err(ReadError::OverBudget {
                what: "bytes",
                limit: self.limits.max_bytes,
            });
        }
        Ok(Bytes::from(block))
    }

    /// A block and what it is, checked against the UnixFS rules.
    pub fn node(&mut self, cid: &Cid) -> Result<(Bytes, Node), ReadError> {
        let block = self.block(cid)?;
        let node = Node::decode(cid, block.clone())?;
        Ok((block, node))
    }

    /// Say which blocks are wanted next, so the source can look them up together.
    pub fn prefetch(&mut self, cids: &[Cid]) -> Result<(), ReadError> {
        Ok(self.source.prefetch(cids)?)
    }

    /// Follow `path` (names, already split and decoded) from `root`.
    pub fn resolve(&mut self, root: &Cid, path: &[&str]) -> Result<Resolved, ReadError> {
        if path.len() > self.limits.max_depth {
            return Err(ReadError::TooDeep {
                limit: self.limits.max_depth,
            });
        }
        let (_, mut node) = self.node(root)?;
        let mut cid = *root;
        let mut path_blocks = vec![cid];
        for (depth, name) in path.iter().enumerate() {
            let next = match &node {
                Node::Directory { links } => links.iter().find(|l| l.name == *name).map(|l| l.cid),
                Node::HamtShard { .. } => self.hamt_find(&cid, &node, name, &mut path_blocks)?,
                _ => {
                    return Err(ReadError::NotADirectory {
                        path: path[..depth].join("/"),
                    })
                }
            };
            cid = next.ok_or_else(|| ReadError::NotFound {
                path: path[..=depth].join("/"),
            })?;
            node = self.node(&cid)?.1;
            path_blocks.push(cid);
        }
        Ok(Resolved {
            cid,
            node,
            path_blocks,
        })
    }

    /// Find `name` in the HAMT rooted at `shard`, recording the sub-shards visited. The walk is
    /// bounded by the hash: each level consumes `log2(fanout)` of its 64 bits.
    fn hamt_find(
        &mut self,
        shard_cid: &Cid,
        shard: &Node,
        name: &str,
        visited: &mut Vec<Cid>,
    ) -> Result<Option<Cid>, ReadError> {
        let Node::HamtShard { fanout, .. } = shard else {
            return Ok(None);
        };
        let fanout = *fanout;
        let bits = fanout.trailing_zeros();
        let width = crate::node::hamt_prefix_width(fanout);
        let hash = name_hash(name.as_bytes());
        let mut current = shard.clone();
        let mut current_cid = *shard_cid;
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
                let (cid, next) = (link.cid, self.node(&link.cid)?.1);
                ChildRule::Shard { fanout }.check(&cid, next.kind())?;
                visited.push(cid);
                (current, current_cid) = (next, cid);
                continue;
            }
            return Ok((link.name[width..] == *name).then_some(link.cid));
        }
        Err(NodeError::Invalid {
            cid: current_cid,
            reason: "the HAMT nests deeper than its hash has bits".into(),
        }
        .into())
    }

    /// A directory's entries (a HAMT's are gathered from all its shards), ordered by name bytes.
    pub fn list(&mut self, node: &Node) -> Result<Vec<NodeLink>, ReadError> {
        let mut entries = Vec::new();
        match node {
            Node::Directory { links } => entries.extend(links.iter().cloned()),
            Node::HamtShard { .. } => self.shard_tree(node, &mut |_, _| Ok(()), &mut |entry| {
                entries.push(entry);
                Ok(())
            })?,
            _ => {}
        }
        entries.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Ok(entries)
    }

    /// Walk a HAMT's sub-shards depth-first in link order: `on_shard` sees each sub-shard's
    /// block (not the root's, which the caller has), `on_entry` each entry with its prefix
    /// removed. Depth is bounded by the hash's 64 bits.
    pub fn shard_tree(
        &mut self,
        root: &Node,
        on_shard: &mut dyn FnMut(&Cid, &Bytes) -> io::Result<()>,
        on_entry: &mut dyn FnMut(NodeLink) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        let Node::HamtShard { links, fanout } = root else {
            return Ok(());
        };
        let fanout = *fanout;
        let width = crate::node::hamt_prefix_width(fanout);
        let max_levels = (64 / fanout.trailing_zeros()) as usize + 1;
        // Links still to look at, last first, with their level.
        let mut stack: Vec<(NodeLink, usize)> =
            links.iter().rev().map(|l| (l.clone(), 1)).collect();
        while let Some((link, level)) = stack.pop() {
            if link.name.len() != width {
                on_entry(NodeLink {
                    name: link.name[width.min(link.name.len())..].to_owned(),
                    ..link
                })?;
                continue;
            }
            if level >= max_levels {
                return Err(NodeError::Invalid {
                    cid: link.cid,
                    reason: "the HAMT nests deeper than its hash has bits".into(),
                }
                .into());
            }
            let (block, node) = self.node(&link.cid)?;
            ChildRule::Shard { fanout }.check(&link.cid, node.kind())?;
            on_shard(&link.cid, &block)?;
            if let Node::HamtShard { links, .. } = node {
                if stack.len() + links.len() > MAX_PENDING_LINKS {
                    return Err(too_wide());
                }
                stack.extend(links.into_iter().rev().map(|l| (l, level + 1)));
            }
        }
        Ok(())
    }

    /// Hand the bytes `range` of the file rooted at `cid` to `on_bytes`, in order, as slices of
    /// the blocks read (no copies), reading only the blocks that hold them; `on_block` sees
    /// each block read, in order (for CAR responses). Every node is checked against the size
    /// its parent gave it, so the bytes handed out are the file's, or the read fails.
    pub fn read_range(
        &mut self,
        cid: &Cid,
        range: Range<u64>,
        on_block: &mut dyn FnMut(&Cid, &Bytes) -> io::Result<()>,
        on_bytes: &mut dyn FnMut(Bytes) -> io::Result<()>,
    ) -> Result<(), ReadError> {
        struct Part {
            cid: Cid,
            /// The range wanted, in this node's own content.
            range: Range<u64>,
            /// What the parent's `blocksizes` say this node holds.
            size: Option<u64>,
            depth: usize,
        }
        let mut stack = vec![Part {
            cid: *cid,
            range,
            size: None,
            depth: 0,
        }];
        while let Some(part) = stack.pop() {
            if part.depth > self.limits.max_depth {
                return Err(ReadError::TooDeep {
                    limit: self.limits.max_depth,
                });
            }
            let (block, node) = self.node(&part.cid)?;
            if let Some(size) = part.size {
                ChildRule::FileOfSize(size).check(&part.cid, node.kind())?;
            }
            let Node::File { data, children, .. } = node else {
                return Err(NodeError::Invalid {
                    cid: part.cid,
                    reason: "it is not a file".into(),
                }
                .into());
            };
            on_block(&part.cid, &block)?;
            // Inline bytes come first, then each child's share of the content.
            let range = part.range;
            let inline_end = data.len() as u64;
            if range.start < inline_end {
                let end = range.end.min(inline_end);
                on_bytes(data.slice(range.start as usize..end as usize))?;
            }
            // Decoding checked that the sizes add up without overflow.
            let mut offset = inline_end;
            let mut wanted = Vec::new();
            for (child, size) in children {
                let span = offset..offset + size;
                offset += size;
                if span.start >= range.end {
                    break;
                }
                if span.end > range.start {
                    let start = range.start.max(span.start) - span.start;
                    let end = range.end.min(span.end) - span.start;
                    wanted.push(Part {
                        cid: child,
                        range: start..end,
                        size: Some(size),
                        depth: part.depth + 1,
                    });
                }
            }
            if stack.len() + wanted.len() > MAX_PENDING_LINKS {
                return Err(too_wide());
            }
            // Say which children are wanted before reading them one by one.
            let cids: Vec<Cid> = wanted.iter().map(|p| p.cid).collect();
            self.prefetch(&cids)?;
            stack.extend(wanted.into_iter().rev());
        }
        Ok(())
    }

    /// Visit every block of the DAG under `root` depth-first in link order, root first,
    /// checking each against the UnixFS rules and what its parent said of it.
    pub fn walk(
        &mut self,
        root: &Cid,
        repeats: Repeats,
        visit: &mut dyn FnMut(&Cid, &Bytes) -> io::Result<()>,
    ) -> Result<(), ReadError> {
        let mut seen = HashSet::new();
        let mut stack: Vec<(Cid, usize, Option<ChildRule>)> = vec![(*root, 0, None)];
        while let Some((cid, depth, rule)) = stack.pop() {
            if repeats == Repeats::Skip && !seen.insert(cid) {
                continue;
            }
            if depth > self.limits.max_depth {
                return Err(ReadError::TooDeep {
                    limit: self.limits.max_depth,
                });
            }
            let (block, node) = self.node(&cid)?;
            if let Some(rule) = rule {
                rule.check(&cid, node.kind())?;
            }
            visit(&cid, &block)?;
            let links = node.links();
            if stack.len() + links.len() > MAX_PENDING_LINKS {
                return Err(too_wide());
            }
            // A node's children are visited next, in order: look them up together.
            if links.len() > 1 {
                let cids: Vec<Cid> = links.iter().map(|(cid, _)| *cid).collect();
                self.prefetch(&cids)?;
            }
            let children = links.into_iter().map(|(cid, rule)| (cid, depth + 1, rule));
            stack.extend(children.rev());
        }
        Ok(())
    }
}

fn too_wide() -> ReadError {
    ReadError::OverBudget {
        what: "links waiting to be walked",
        limit: MAX_PENDING_LINKS as u64,
    }
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

    fn read_all(
        reader: &mut Reader<&mut MemoryBlocks>,
        cid: &Cid,
        range: Range<u64>,
    ) -> Result<(Vec<u8>, usize), ReadError> {
        let (mut got, mut blocks) = (Vec::new(), 0);
        reader.read_range(
            cid,
            range,
            &mut |_, _| {
                blocks += 1;
                Ok(())
            },
            &mut |b| {
                got.extend_from_slice(&b);
                Ok(())
            },
        )?;
        Ok((got, blocks))
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
            let mut reader = Reader::new(&mut blocks, ReadLimits::default());
            for range in [
                0..10_000u64,
                0..1,
                99..101,
                250..7_777,
                9_999..10_000,
                5_000..5_000,
            ] {
                let (got, visited) = read_all(&mut reader, &root, range.clone()).unwrap();
                assert_eq!(
                    got,
                    content[range.start as usize..range.end as usize],
                    "{range:?}"
                );
                if range.end - range.start == 1 {
                    // Only the blocks on one path down the tree are read.
                    assert!(visited <= 7, "{visited} blocks for one byte");
                }
            }
        }
    }

    #[test]
    fn a_budget_stops_a_read_that_visits_too_many_blocks_or_bytes() {
        let profile = Profile {
            chunk_size: 100,
            max_links: 3,
            ..Profile::UNIXFS_V1_2025
        };
        let content = vec![7u8; 10_000];
        let mut blocks = MemoryBlocks::default();
        let root = import(&profile, &content, &mut blocks).cid;
        // The same leaf 100 times over: identical chunks are one block, read once per use.
        for (limits, what) in [
            (
                ReadLimits {
                    max_blocks: 50,
                    ..ReadLimits::default()
                },
                "blocks",
            ),
            (
                ReadLimits {
                    max_bytes: 5_000,
                    ..ReadLimits::default()
                },
                "bytes",
            ),
        ] {
            let mut reader = Reader::new(&mut blocks, limits);
            match read_all(&mut reader, &root, 0..10_000) {
                Err(ReadError::OverBudget { what: w, .. }) => assert_eq!(w, what),
                other => panic!("{other:?}"),
            }
        }
        let mut reader = Reader::new(&mut blocks, ReadLimits::default());
        assert_eq!(read_all(&mut reader, &root, 0..10_000).unwrap().0, content);
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
        let mut reader = Reader::new(&mut blocks, ReadLimits::default());

        // Every name resolves to its own content; some of them through sub-shards.
        let mut deepest = 0;
        for i in 0..300 {
            let name = format!("f{i:03}.txt");
            let found = reader.resolve(&root, &["big", &name]).unwrap();
            let (bytes, _) = read_all(&mut reader, &found.cid, 0..100).unwrap();
            assert_eq!(bytes, format!("file {i}").as_bytes());
            deepest = deepest.max(found.path_blocks.len());
        }
        assert!(deepest > 3, "some names sit in sub-shards");

        let big = reader.resolve(&root, &["big"]).unwrap();
        assert!(matches!(big.node, Node::HamtShard { .. }));
        let names: Vec<_> = reader
            .list(&big.node)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names.len(), 300);
        assert_eq!(names[0], "f000.txt");
        assert_eq!(names[299], "f299.txt");

        assert!(matches!(
            reader.resolve(&root, &["big", "nope.txt"]),
            Err(ReadError::NotFound { .. })
        ));
        assert!(matches!(
            reader.resolve(&root, &["docs", "readme.md", "x"]),
            Err(ReadError::NotADirectory { .. })
        ));
        let link = reader.resolve(&root, &["docs", "link"]).unwrap();
        assert_eq!(
            link.node,
            Node::Symlink {
                target: "readme.md".into()
            }
        );

        // A walk sees every block once, the root first.
        let mut seen = Vec::new();
        reader
            .walk(&root, Repeats::Skip, &mut |cid, _| {
                seen.push(*cid);
                Ok(())
            })
            .unwrap();
        assert_eq!(seen[0], root);
        assert_eq!(seen.len(), HashSet::<Cid>::from_iter(seen.clone()).len());
    }
}
