//! Hostile DAGs, built block by block with our own encoder: what an attacker can upload as a
//! CAR (every block hashes correctly, whatever it claims). Shared by the CAR importer's,
//! the gateway's and `cairn get`'s tests; only with the `hostile` feature (tests only).

use crate::CarWriter;
use cairn_unixfs::block::{block_cid, DAG_PB, RAW};
use cairn_unixfs::pb::{encode_node, link, DataType, UnixFsData};
use cairn_unixfs::{BlockBytes, Cid, CidVersion};

/// A DAG as blocks in CAR order (root first).
pub struct Dag {
    pub root: Cid,
    pub blocks: Vec<(Cid, Vec<u8>)>,
}

impl Dag {
    /// The DAG as a CAR v1 naming its root.
    pub fn car(&self) -> Vec<u8> {
        let mut writer = CarWriter::new(Vec::new(), &[self.root]).unwrap();
        for (cid, block) in &self.blocks {
            writer.write_block(cid, BlockBytes::new(block)).unwrap();
        }
        writer.into_inner()
    }
}

/// Blocks are collected leaves first; a CAR lists them root first.
struct Builder(Vec<(Cid, Vec<u8>)>);

impl Builder {
    fn new() -> Self {
        Self(Vec::new())
    }

    fn raw(&mut self, bytes: &[u8]) -> Cid {
        let cid = block_cid(CidVersion::V1, RAW, bytes);
        self.0.push((cid, bytes.to_vec()));
        cid
    }

    fn pb(&mut self, block: Vec<u8>) -> Cid {
        let cid = block_cid(CidVersion::V1, DAG_PB, &block);
        self.0.push((cid, block));
        cid
    }

    /// A file node: `filesize` and `blocksizes` as given, true or not.
    fn file(&mut self, filesize: u64, children: &[(Cid, u64)]) -> Cid {
        let mut data = UnixFsData::new(DataType::File);
        data.filesize = Some(filesize);
        data.blocksizes = children.iter().map(|(_, s)| *s).collect();
        let links = children.iter().map(|(c, s)| link(*c, "", *s)).collect();
        self.pb(encode_node(links, data.encode()))
    }

    fn directory(&mut self, entries: &[(&str, Cid)]) -> Cid {
        let links = entries.iter().map(|(n, c)| link(*c, *n, 1)).collect();
        self.pb(encode_node(
            links,
            UnixFsData::new(DataType::Directory).encode(),
        ))
    }

    fn symlink(&mut self, target: &str) -> Cid {
        let mut data = UnixFsData::new(DataType::Symlink);
        data.data = Some(target.as_bytes());
        self.pb(encode_node(vec![], data.encode()))
    }

    fn done(mut self, root: Cid) -> Dag {
        self.0.reverse();
        Dag {
            root,
            blocks: self.0,
        }
    }
}

/// A file whose root is a chain of `depth` file nodes over one byte.
pub fn deep_file(depth: usize) -> Dag {
    let mut b = Builder::new();
    let mut node = b.raw(b"x");
    for _ in 0..depth {
        node = b.file(1, &[(node, 1)]);
    }
    b.done(node)
}

/// A chain of `depth` directories, each holding the next as `d`.
pub fn deep_directory(depth: usize) -> Dag {
    let mut b = Builder::new();
    let mut node = b.directory(&[]);
    for _ in 0..depth {
        node = b.directory(&[("d", node)]);
    }
    b.done(node)
}

/// "Billion laughs": `depth` levels of directories of `width` entries, all linking to the same
/// child; `depth + 1` distinct blocks, `width^depth` files to walk.
pub fn laughing_directory(width: usize, depth: usize) -> Dag {
    let mut b = Builder::new();
    let mut node = b.raw(b"lol");
    let names: Vec<String> = (0..width).map(|i| format!("e{i:02}")).collect();
    for _ in 0..depth {
        let entries: Vec<(&str, Cid)> = names.iter().map(|n| (n.as_str(), node)).collect();
        node = b.directory(&entries);
    }
    b.done(node)
}

/// The same as a file: every node's `width` parts are the same node below (each size true).
pub fn laughing_file(width: usize, depth: usize) -> Dag {
    let mut b = Builder::new();
    let mut node = b.raw(b"lol");
    let mut size = 3u64;
    for _ in 0..depth {
        node = b.file(size * width as u64, &vec![(node, size); width]);
        size *= width as u64;
    }
    b.done(node)
}

/// The content a well-formed reading of [`lying_blocksizes`] would give, if it had one.
pub const LEAVES: [&[u8]; 2] = [b"aaaaaaaaaa", b"bbbbbbbbbb"];

/// Two leaves of 10 bytes under a root whose `blocksizes` say 5 and 15 (their sum, and
/// `filesize`, are right: only the split lies).
pub fn lying_blocksizes() -> Dag {
    let mut b = Builder::new();
    let (a, c) = (b.raw(LEAVES[0]), b.raw(LEAVES[1]));
    let root = b.file(20, &[(a, 5), (c, 15)]);
    b.done(root)
}

/// Two leaves of 10 bytes under a root whose `filesize` says `filesize`.
pub fn lying_filesize(filesize: u64) -> Dag {
    let mut b = Builder::new();
    let (a, c) = (b.raw(LEAVES[0]), b.raw(LEAVES[1]));
    let root = b.file(filesize, &[(a, 10), (c, 10)]);
    b.done(root)
}

/// A HAMT directory with a fanout of 255 (not a power of two) holding one file.
pub fn hamt_with_bad_fanout() -> Dag {
    let mut b = Builder::new();
    let file = b.raw(b"inside");
    let mut data = UnixFsData::new(DataType::HamtShard);
    data.fanout = Some(255);
    data.hash_type = Some(0x22);
    data.data = Some(&[1]);
    let root = b.pb(encode_node(vec![link(file, "00a.txt", 6)], data.encode()));
    b.done(root)
}

/// A HAMT (fanout 256) whose sub-shard has fanout 16: each shard is fine alone.
pub fn hamt_with_mismatched_sub_shard() -> Dag {
    let mut b = Builder::new();
    let file = b.raw(b"inside");
    let shard = |fanout: u64, links, b: &mut Builder| {
        let mut data = UnixFsData::new(DataType::HamtShard);
        data.fanout = Some(fanout);
        data.hash_type = Some(0x22);
        data.data = Some(&[1]);
        b.pb(encode_node(links, data.encode()))
    };
    let sub = shard(16, vec![link(file, "0a.txt", 6)], &mut b);
    let root = shard(256, vec![link(sub, "00", 50)], &mut b);
    b.done(root)
}

/// A directory whose `loop` is a symlink to itself, beside a file `f`.
pub fn symlink_cycle() -> Dag {
    let mut b = Builder::new();
    let file = b.raw(b"file");
    let link = b.symlink("loop");
    let root = b.directory(&[("f", file), ("loop", link)]);
    b.done(root)
}

/// A directory whose entry links, as dag-pb, to bytes the CAR holds as a raw block: each
/// block hashes right, but read through the link they are not a dag-pb node.
pub fn raw_block_linked_as_dag_pb() -> Dag {
    let mut b = Builder::new();
    let raw = b.raw(b"not a dag-pb node");
    let as_pb = Cid::new_v1(DAG_PB, *raw.hash());
    let root = b.directory(&[("f", as_pb)]);
    b.done(root)
}

/// Entry names that climb (`..`) but stay inside the root, as the gateway conformance suite's
/// `path_gateway_tar/inside-root.car` has them: `foobar/directory/../file` is `foobar/file`.
pub fn climbing_names_inside_root() -> Dag {
    let mut b = Builder::new();
    let file = b.raw(b"Hello, world!\n");
    let directory = b.directory(&[("../file", file)]);
    let foobar = b.directory(&[("directory", directory)]);
    let root = b.directory(&[("foobar", foobar)]);
    b.done(root)
}

/// An entry name that climbs out of the root, as the suite's `outside-root.car` has it.
pub fn climbing_names_outside_root() -> Dag {
    let mut b = Builder::new();
    let climber = b.raw(b"foo");
    let bar = b.raw(b"bar");
    let root = b.directory(&[("../foo", climber), ("bar", bar)]);
    b.done(root)
}
