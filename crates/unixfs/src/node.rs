//! What a block is, as UnixFS sees it, and the rules a well-formed DAG keeps.
//!
//! DAGs come from strangers (CAR uploads today; pins and Bitswap later), and every block of
//! them hashes correctly whatever it claims. So a node is checked when it is decoded (its own
//! fields agree with each other: [`Node::decode`]), and every link is checked against what
//! its parent says of it ([`ChildRule`]: a file's `blocksizes`, a HAMT's sub-shards). The
//! importer of CARs checks both for a whole DAG before it is stored, and the reader checks
//! them again for every block it reads, so no reader ever serves bytes a node lied about.
//!
//! UnixFS spec: <https://specs.ipfs.tech/unixfs/>.

use bytes::Bytes;
use cid::Cid;

use crate::block::{DAG_PB, RAW};
use crate::hamt::MURMUR3_X64_64;
use crate::ipld;
use crate::pb::{self, DataType, DecodeError, UnixFsData};

/// A link out of a directory or HAMT shard.
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
    /// each holds (from `blocksizes`). A raw block is a file of inline bytes only. `size` is
    /// always the inline bytes plus the children's: decoding refuses a node that says otherwise.
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
    /// A block of another IPLD codec (dag-cbor, dag-json, dag-jose, json, cbor), known as
    /// far as its links: no UnixFS rule applies to it ([`crate::ipld`]).
    Ipld {
        codec: u64,
        links: Vec<Cid>,
    },
}

/// Why a block is not a well-formed node (UnixFS, or of another codec), or does not fit where
/// its parent put it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeError {
    /// A block of another codec: unknown, or not well formed in its codec.
    #[error(transparent)]
    Ipld(#[from] ipld::IpldError),
    #[error("block {cid}: {source}")]
    Decode { cid: Cid, source: DecodeError },
    #[error("block {cid} breaks a UnixFS rule: {reason}")]
    Invalid { cid: Cid, reason: String },
}

/// Smallest and largest HAMT fanout read: boxo writes powers of two that are multiples of 8
/// (256 by default); a larger one would make a shard's prefixes longer than boxo can address.
pub const MIN_HAMT_FANOUT: u64 = 8;
pub const MAX_HAMT_FANOUT: u64 = 1024;

impl Node {
    /// Decode a block and check that its own fields agree: a file's `filesize` equals its inline
    /// bytes plus its `blocksizes`, with one size per link; a HAMT shard uses murmur3 with a
    /// supported fanout, has as many links as its bitfield has bits set, and names every link
    /// with a hex slot prefix; a symlink has a target. A block of another codec is decoded as
    /// far as its links, and must be well formed in its codec.
    pub fn decode(cid: &Cid, block: impl Into<Bytes>) -> Result<Self, NodeError> {
        let block = block.into();
        match cid.codec() {
            RAW => Ok(Node::File {
                size: block.len() as u64,
                data: block,
                children: Vec::new(),
            }),
            DAG_PB => decode_dag_pb(cid, block),
            codec => Ok(Node::Ipld {
                codec,
                links: ipld::links(cid, &block)?,
            }),
        }
    }

    /// Whether the block is UnixFS's (dag-pb or raw), not another codec's.
    pub fn is_unixfs(&self) -> bool {
        !matches!(self, Node::Ipld { .. })
    }

    pub fn is_directory(&self) -> bool {
        matches!(self, Node::Directory { .. } | Node::HamtShard { .. })
    }

    /// The blocks this node links to, in link order, each with what this node says it must
    /// be where that is constrained (every part of a file; the sub-shards of a HAMT).
    pub fn links(&self) -> Vec<(Cid, Option<ChildRule>)> {
        match self {
            Node::File { children, .. } => children
                .iter()
                .map(|(cid, size)| (*cid, Some(ChildRule::FileOfSize(*size))))
                .collect(),
            Node::HamtShard { links, fanout } => {
                let width = hamt_prefix_width(*fanout);
                let sub_shard = Some(ChildRule::Shard { fanout: *fanout });
                links
                    .iter()
                    .map(|l| (l.cid, sub_shard.filter(|_| l.name.len() == width)))
                    .collect()
            }
            Node::Directory { links } => links.iter().map(|l| (l.cid, None)).collect(),
            Node::Symlink { .. } => Vec::new(),
            Node::Ipld { links, .. } => links.iter().map(|cid| (*cid, None)).collect(),
        }
    }

    /// What the node is, without its contents: all a parent's rule needs to know.
    pub fn kind(&self) -> NodeKind {
        match self {
            Node::File { size, .. } => NodeKind::File { size: *size },
            Node::Directory { .. } => NodeKind::Directory,
            Node::HamtShard { fanout, .. } => NodeKind::HamtShard { fanout: *fanout },
            Node::Symlink { .. } => NodeKind::Symlink,
            Node::Ipld { .. } => NodeKind::Ipld,
        }
    }
}

/// A node's kind and the numbers its parent may constrain; small enough to keep for every
/// block of a large import.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    File {
        size: u64,
    },
    Directory,
    HamtShard {
        fanout: u64,
    },
    Symlink,
    /// A block of another codec than UnixFS's.
    Ipld,
}

impl NodeKind {
    fn describe(&self) -> &'static str {
        match self {
            NodeKind::File { .. } => "a file",
            NodeKind::Directory => "a directory",
            NodeKind::HamtShard { .. } => "a HAMT shard",
            NodeKind::Symlink => "a symlink",
            NodeKind::Ipld => "a block of another codec than UnixFS's",
        }
    }
}

/// What a parent says its child is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildRule {
    /// A piece of a file holding exactly this many content bytes (the parent's `blocksizes`).
    FileOfSize(u64),
    /// A sub-shard of a HAMT with the parent's fanout.
    Shard { fanout: u64 },
}

impl ChildRule {
    /// Check `child` (block `cid`) against what its parent said of it.
    pub fn check(&self, cid: &Cid, child: NodeKind) -> Result<(), NodeError> {
        let invalid = |reason: String| NodeError::Invalid { cid: *cid, reason };
        match (self, child) {
            (ChildRule::FileOfSize(expected), NodeKind::File { size }) if size != *expected => {
                Err(invalid(format!(
                    "it holds {size} bytes, but its parent's blocksizes say {expected}"
                )))
            }
            (ChildRule::FileOfSize(_), NodeKind::File { .. }) => Ok(()),
            (ChildRule::FileOfSize(_), other) => Err(invalid(format!(
                "it is {}, but its parent is a file that lists it as a part",
                other.describe()
            ))),
            (ChildRule::Shard { fanout }, NodeKind::HamtShard { fanout: got })
                if got != *fanout =>
            {
                Err(invalid(format!(
                    "it is a HAMT sub-shard with fanout {got}, not its parent's {fanout}"
                )))
            }
            (ChildRule::Shard { .. }, NodeKind::HamtShard { .. }) => Ok(()),
            (ChildRule::Shard { .. }, other) => Err(invalid(format!(
                "it is {}, but its parent links to it as a HAMT sub-shard",
                other.describe()
            ))),
        }
    }
}

/// Characters of the hex slot prefix on every link of a HAMT shard with `fanout` slots.
pub fn hamt_prefix_width(fanout: u64) -> usize {
    format!("{:X}", fanout.saturating_sub(1)).len()
}

fn decode_dag_pb(cid: &Cid, block: Bytes) -> Result<Node, NodeError> {
    let decode = |source| NodeError::Decode { cid: *cid, source };
    let invalid = |reason: String| NodeError::Invalid { cid: *cid, reason };
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
            .collect::<Vec<_>>()
    };
    Ok(match unixfs.kind {
        DataType::File | DataType::Raw => {
            if unixfs.blocksizes.len() != node.links.len() {
                return Err(invalid(format!(
                    "it has {} links but {} blocksizes",
                    node.links.len(),
                    unixfs.blocksizes.len()
                )));
            }
            // The inline bytes, as a slice of the block's own buffer.
            let inline = unixfs.data.map_or_else(Bytes::new, |d| data.slice_ref(d));
            let content = unixfs
                .blocksizes
                .iter()
                .try_fold(inline.len() as u64, |sum, s| sum.checked_add(*s))
                .ok_or_else(|| invalid("its blocksizes add up to more than 2^64 bytes".into()))?;
            if let Some(filesize) = unixfs.filesize {
                if filesize != content {
                    return Err(invalid(format!(
                        "filesize says {filesize} bytes, but its data and blocksizes hold {content}"
                    )));
                }
            }
            Node::File {
                size: content,
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
        DataType::HamtShard => {
            let fanout = unixfs
                .fanout
                .ok_or_else(|| invalid("the HAMT shard has no fanout".into()))?;
            if !fanout.is_power_of_two() || !(MIN_HAMT_FANOUT..=MAX_HAMT_FANOUT).contains(&fanout) {
                return Err(invalid(format!(
                    "HAMT fanout {fanout} is not a power of two from {MIN_HAMT_FANOUT} to {MAX_HAMT_FANOUT}"
                )));
            }
            if unixfs.hash_type != Some(MURMUR3_X64_64) {
                return Err(invalid(format!(
                    "HAMT hash function {:?} is not murmur3-x64-64 (0x22)",
                    unixfs.hash_type
                )));
            }
            let links = links();
            let bits_set: u32 = unixfs
                .data
                .unwrap_or_default()
                .iter()
                .map(|b| b.count_ones())
                .sum();
            if bits_set as usize != links.len() {
                return Err(invalid(format!(
                    "the HAMT bitfield has {bits_set} slots set but the shard has {} links",
                    links.len()
                )));
            }
            let width = hamt_prefix_width(fanout);
            for link in &links {
                let prefix = link.name.get(..width).unwrap_or_default();
                let slot = (prefix.len() == width && prefix.bytes().all(|b| b.is_ascii_hexdigit()))
                    .then(|| u64::from_str_radix(prefix, 16).ok())
                    .flatten();
                if slot.is_none_or(|slot| slot >= fanout) {
                    return Err(invalid(format!(
                        "HAMT link {:?} does not start with a {width}-digit hex slot below {fanout}",
                        link.name
                    )));
                }
            }
            Node::HamtShard { links, fanout }
        }
        DataType::Symlink => {
            let target = unixfs.data.unwrap_or_default();
            if target.is_empty() {
                return Err(invalid("the symlink has no target".into()));
            }
            let target = std::str::from_utf8(target)
                .map_err(|_| invalid("the symlink target is not UTF-8".into()))?;
            Node::Symlink {
                target: target.to_owned(),
            }
        }
        DataType::Metadata => return Err(invalid("metadata nodes are not supported".into())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::block_cid;
    use crate::pb::{encode_node, link};
    use crate::CidVersion;

    fn pb_cid(block: &[u8]) -> Cid {
        block_cid(CidVersion::V1, DAG_PB, block)
    }

    #[test]
    fn a_block_of_another_codec_is_a_node_of_its_links() {
        let leaf = block_cid(CidVersion::V1, RAW, b"a");
        // `[42(leaf)]` in dag-cbor: a list holding one link.
        let mut tagged = vec![0x81, 0xd8, 42, 0x58, leaf.to_bytes().len() as u8 + 1, 0];
        tagged.extend(leaf.to_bytes());
        let cid = Cid::new_v1(ipld::DAG_CBOR, *leaf.hash());
        let node = Node::decode(&cid, tagged).unwrap();
        assert_eq!(node.links(), [(leaf, None)]);
        assert!(!node.is_unixfs());
        assert_eq!(node.kind(), NodeKind::Ipld);
        let unknown = Cid::new_v1(0x300, *leaf.hash());
        assert!(matches!(
            Node::decode(&unknown, b"x".to_vec()),
            Err(NodeError::Ipld(ipld::IpldError::UnsupportedCodec { .. }))
        ));
    }

    fn raw_cid(block: &[u8]) -> Cid {
        block_cid(CidVersion::V1, RAW, block)
    }

    fn file_node(inline: &[u8], filesize: Option<u64>, children: &[(Cid, u64)]) -> Vec<u8> {
        let mut data = UnixFsData::new(DataType::File);
        data.data = (!inline.is_empty()).then_some(inline);
        data.filesize = filesize;
        data.blocksizes = children.iter().map(|(_, s)| *s).collect();
        let links = children.iter().map(|(c, s)| link(*c, "", *s)).collect();
        encode_node(links, data.encode())
    }

    #[test]
    fn a_file_whose_filesize_disagrees_with_its_parts_is_refused() {
        let leaf = raw_cid(b"0123456789");
        let honest = file_node(b"ab", Some(12), &[(leaf, 10)]);
        let node = Node::decode(&pb_cid(&honest), honest).unwrap();
        assert!(matches!(node, Node::File { size: 12, .. }));
        for lie in [Some(11), Some(13), Some(0)] {
            let block = file_node(b"ab", lie, &[(leaf, 10)]);
            let err = Node::decode(&pb_cid(&block), block).unwrap_err();
            assert!(err.to_string().contains("filesize says"), "{err}");
        }
        let overflow = file_node(b"", None, &[(leaf, u64::MAX), (leaf, 2)]);
        assert!(Node::decode(&pb_cid(&overflow), overflow).is_err());
    }

    #[test]
    fn a_child_that_is_not_the_size_its_parent_says_breaks_the_rule() {
        let leaf = b"0123456789";
        let child = raw_cid(leaf);
        let node = Node::decode(&child, leaf.to_vec()).unwrap();
        ChildRule::FileOfSize(10)
            .check(&child, node.kind())
            .unwrap();
        let err = ChildRule::FileOfSize(9)
            .check(&child, node.kind())
            .unwrap_err();
        assert!(err.to_string().contains("holds 10"), "{err}");
        assert!(ChildRule::FileOfSize(1)
            .check(&child, NodeKind::Symlink)
            .is_err());
    }

    #[test]
    fn hamt_shards_need_murmur3_a_supported_fanout_and_a_matching_bitfield() {
        let target = raw_cid(b"x");
        let shard = |fanout: Option<u64>, hash: Option<u64>, bitfield: &[u8], names: &[&str]| {
            let mut data = UnixFsData::new(DataType::HamtShard);
            data.fanout = fanout;
            data.hash_type = hash;
            data.data = Some(bitfield);
            let links = names.iter().map(|n| link(target, *n, 1)).collect();
            let block = encode_node(links, data.encode());
            Node::decode(&pb_cid(&block), block)
        };
        let good = shard(Some(256), Some(0x22), &[0b11], &["00a", "01b"]).unwrap();
        assert!(matches!(good, Node::HamtShard { fanout: 256, .. }));
        for (fanout, hash, bitfield, names) in [
            (Some(255), Some(0x22), &[0b1][..], &["00a"][..]),
            (Some(4096), Some(0x22), &[0b1], &["000a"]),
            (None, Some(0x22), &[0b1], &["00a"]),
            (Some(256), Some(0x12), &[0b1], &["00a"]),
            (Some(256), None, &[0b1], &["00a"]),
            (Some(256), Some(0x22), &[0b111], &["00a", "01b"]),
            (Some(256), Some(0x22), &[0b1], &["zza"]),
            (Some(16), Some(0x22), &[0b1], &["Fa"]),
        ] {
            let got = shard(fanout, hash, bitfield, names);
            // Fanout 16 has one-digit prefixes, and F is slot 15: that one is fine.
            if fanout == Some(16) {
                assert!(got.is_ok(), "{got:?}");
            } else {
                assert!(
                    matches!(got, Err(NodeError::Invalid { .. })),
                    "{fanout:?} {hash:?}: {got:?}"
                );
            }
        }
    }

    #[test]
    fn a_symlink_without_a_target_is_refused() {
        let data = UnixFsData::new(DataType::Symlink).encode();
        let block = encode_node(vec![], data);
        assert!(Node::decode(&pb_cid(&block), block).is_err());
    }
}
