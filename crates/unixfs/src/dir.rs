//! Directory builder: entries in any order, one canonical DAG out.
//!
//! Paths are added in any order; the tree is kept in memory (names and CIDs only, never
//! content) and written bottom-up by [`DirectoryBuilder::finish`]. Each directory becomes a
//! basic dag-pb directory, or a HAMT when its size estimate over **all** final links (files,
//! symlinks and subdirectories with their final CID and Tsize) is strictly above the profile's
//! threshold. Counting subdirectory links is boxo/Kubo's behaviour; the JS importer differs
//! (see `shared/vectors/README.md` section 4).

use std::collections::BTreeMap;
use std::io;

use crate::block::{cid_from_digest, BlockBytes, BlockSink, Link, DAG_PB};
use crate::hamt::{self, HashCollision, ShardEntry};
use crate::pb::{self, varint_len, DataType, UnixFsData};
use crate::profile::{DirSizeEstimate, Profile};

/// Paths deeper than this are refused, which also bounds recursion in `finish`.
pub const MAX_PATH_DEPTH: usize = 1024;

/// Why an entry cannot be added, or the tree cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath { path: String, reason: &'static str },
    #[error("duplicate entry {path:?}")]
    Duplicate { path: String },
    #[error("{path:?} is used both as a file and as a directory")]
    NotADirectory { path: String },
    #[error(transparent)]
    HashCollision(#[from] HashCollision),
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Check one path component: what UnixFS and every filesystem can represent.
pub fn validate_name(name: &str) -> Result<(), &'static str> {
    match name {
        "" => Err("empty name"),
        "." | ".." => Err("name is . or .."),
        _ if name.contains('/') => Err("name contains /"),
        _ if name.contains('\0') => Err("name contains NUL"),
        _ => Ok(()),
    }
}

#[derive(Debug, Default)]
struct Dir {
    entries: BTreeMap<String, Entry>,
    /// Added by name (not only implied by a child path); a second explicit add is a duplicate.
    explicit: bool,
}

#[derive(Debug)]
enum Entry {
    File(Link),
    Symlink(String),
    Dir(Dir),
}

/// Builds one directory tree. Names are kept byte for byte (no Unicode normalisation) and
/// links are ordered by name bytes, as dag-pb requires.
#[derive(Debug)]
pub struct DirectoryBuilder {
    profile: Profile,
    root: Dir,
    entries: u64,
}

/// The root of a written directory tree.
pub type ImportedDir = Link;

impl DirectoryBuilder {
    pub fn new(profile: &Profile) -> Self {
        Self {
            profile: profile.clone(),
            root: Dir::default(),
            entries: 0,
        }
    }

    /// Entries added so far (files, symlinks and explicit directories).
    pub fn len(&self) -> u64 {
        self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Add an imported file at `path` (`/`-separated, relative to the root).
    pub fn add_file(&mut self, path: &str, file: impl Into<Link>) -> Result<(), DirError> {
        self.insert(path, Entry::File(file.into()))
    }

    /// Add a symlink. The target is stored as given; whether it may point outside the tree is
    /// the caller's policy (archives forbid it, `cairn cid` of a local tree allows it, as Kubo).
    pub fn add_symlink(&mut self, path: &str, target: &str) -> Result<(), DirError> {
        self.insert(path, Entry::Symlink(target.to_owned()))
    }

    /// Add a directory, which is kept even when nothing is ever added inside it.
    pub fn add_directory(&mut self, path: &str) -> Result<(), DirError> {
        self.insert(
            path,
            Entry::Dir(Dir {
                explicit: true,
                ..Dir::default()
            }),
        )
    }

    fn insert(&mut self, path: &str, entry: Entry) -> Result<(), DirError> {
        let invalid = |reason| DirError::InvalidPath {
            path: path.to_owned(),
            reason,
        };
        let names: Vec<&str> = path.split('/').collect();
        if names.len() > MAX_PATH_DEPTH {
            return Err(invalid("path is too deep"));
        }
        for name in &names {
            validate_name(name).map_err(invalid)?;
        }
        let (last, parents) = names.split_last().ok_or_else(|| invalid("empty path"))?;
        let mut dir = &mut self.root;
        for (depth, name) in parents.iter().enumerate() {
            let child = dir
                .entries
                .entry((*name).to_owned())
                .or_insert_with(|| Entry::Dir(Dir::default()));
            dir = match child {
                Entry::Dir(d) => d,
                _ => {
                    return Err(DirError::NotADirectory {
                        path: names[..=depth].join("/"),
                    })
                }
            };
        }
        match (dir.entries.get_mut(*last), entry) {
            (None, entry) => {
                dir.entries.insert((*last).to_owned(), entry);
            }
            // A directory first implied by a child path, now named explicitly.
            (Some(Entry::Dir(existing)), Entry::Dir(_)) if !existing.explicit => {
                existing.explicit = true;
            }
            (Some(Entry::Dir(_)), Entry::Dir(_))
            | (Some(Entry::File(_) | Entry::Symlink(_)), Entry::File(_) | Entry::Symlink(_)) => {
                return Err(DirError::Duplicate {
                    path: path.to_owned(),
                })
            }
            (Some(_), _) => {
                return Err(DirError::NotADirectory {
                    path: path.to_owned(),
                })
            }
        }
        self.entries += 1;
        Ok(())
    }

    /// Write every directory, symlink and shard block, children first, and return the root.
    pub fn finish(self, sink: &mut dyn BlockSink) -> Result<ImportedDir, DirError> {
        write_dir(&self.profile, self.root, sink)
    }
}

impl From<crate::file::ImportedFile> for Link {
    fn from(file: crate::file::ImportedFile) -> Self {
        Link {
            cid: file.cid,
            tsize: file.tsize,
        }
    }
}

fn write_dir(profile: &Profile, dir: Dir, sink: &mut dyn BlockSink) -> Result<Link, DirError> {
    let mut links = Vec::with_capacity(dir.entries.len());
    for (name, entry) in dir.entries {
        let link = match entry {
            Entry::File(link) => link,
            Entry::Symlink(target) => write_symlink(profile, &target, sink)?,
            Entry::Dir(child) => write_dir(profile, child, sink)?,
        };
        links.push((name, link));
    }
    if estimate(profile, &links) > profile.hamt_threshold {
        let entries = links
            .into_iter()
            .map(|(name, link)| ShardEntry::new(name, link))
            .collect();
        return Ok(hamt::build(profile, entries, sink)??);
    }
    let children_tsize: u64 = links.iter().map(|(_, l)| l.tsize).sum();
    let pb_links = links
        .into_iter()
        .map(|(name, link)| pb::link(link.cid, name, link.tsize))
        .collect();
    let block = pb::encode_node(pb_links, UnixFsData::new(DataType::Directory).encode());
    let link = put(profile, &block, sink)?;
    Ok(Link {
        cid: link.cid,
        tsize: link.tsize + children_tsize,
    })
}

/// Write a UnixFS symlink node (`Data{Type=Symlink, Data=target}`, no filesize) on its own.
pub fn write_symlink(
    profile: &Profile,
    target: &str,
    sink: &mut dyn BlockSink,
) -> io::Result<Link> {
    let mut data = UnixFsData::new(DataType::Symlink);
    data.data = Some(target.as_bytes());
    put(profile, &pb::encode_node(vec![], data.encode()), sink)
}

fn put(profile: &Profile, block: &[u8], sink: &mut dyn BlockSink) -> io::Result<Link> {
    let bytes = BlockBytes::new(block);
    let cid = cid_from_digest(profile.cid_version, DAG_PB, &bytes.sha256());
    sink.put_block(&cid, bytes)?;
    Ok(Link {
        cid,
        tsize: block.len() as u64,
    })
}

/// The size estimate that decides between a basic directory and a HAMT (vectors README §4).
fn estimate(profile: &Profile, links: &[(String, Link)]) -> u64 {
    match profile.dir_size_estimate {
        DirSizeEstimate::LinksBytes => links
            .iter()
            .map(|(name, link)| (name.len() + link.cid.encoded_len()) as u64)
            .sum(),
        DirSizeEstimate::BlockBytes => {
            // The Data field `0a 02 08 01`, plus each serialized link.
            let data_field = 4;
            data_field
                + links
                    .iter()
                    .map(|(name, link)| {
                        let cid_len = link.cid.encoded_len() as u64;
                        let name_len = name.len() as u64;
                        let inner = 1
                            + varint_len(cid_len)
                            + cid_len
                            + 1
                            + varint_len(name_len)
                            + name_len
                            + 1
                            + varint_len(link.tsize);
                        1 + varint_len(inner) + inner
                    })
                    .sum::<u64>()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::{block_cid, DiscardBlocks, MemoryBlocks, RAW};
    use crate::profile::CidVersion;

    fn file() -> Link {
        Link {
            cid: block_cid(CidVersion::V1, RAW, b"x"),
            tsize: 1,
        }
    }

    #[test]
    fn invalid_names_are_rejected_with_the_reason() {
        let mut dir = DirectoryBuilder::new(&Profile::default());
        for (path, reason) in [
            ("", "empty name"),
            ("a//b", "empty name"),
            ("/abs", "empty name"),
            ("a/", "empty name"),
            (".", "name is . or .."),
            ("a/../b", "name is . or .."),
            ("nul\0", "name contains NUL"),
        ] {
            match dir.add_file(path, file()) {
                Err(DirError::InvalidPath { reason: r, .. }) => assert_eq!(r, reason, "{path:?}"),
                other => panic!("{path:?}: {other:?}"),
            }
        }
        assert!(dir.is_empty());
    }

    #[test]
    fn duplicates_and_file_directory_clashes_are_rejected() {
        let mut dir = DirectoryBuilder::new(&Profile::default());
        dir.add_file("a/b", file()).unwrap();
        assert!(matches!(
            dir.add_file("a/b", file()),
            Err(DirError::Duplicate { .. })
        ));
        assert!(matches!(
            dir.add_symlink("a", "b"),
            Err(DirError::NotADirectory { .. })
        ));
        assert!(matches!(
            dir.add_file("a/b/c", file()),
            Err(DirError::NotADirectory { path }) if path == "a/b"
        ));
        // Naming an implied directory once is fine; twice is a duplicate.
        dir.add_directory("a").unwrap();
        assert!(matches!(
            dir.add_directory("a"),
            Err(DirError::Duplicate { .. })
        ));
        assert_eq!(dir.len(), 2);
    }

    #[test]
    fn empty_directory_has_the_well_known_cids() {
        for (profile, expected) in [
            (
                Profile::UNIXFS_V1_2025,
                "bafybeiczsscdsbs7ffqz55asqdf3smv6klcw3gofszvwlyarci47bgf354",
            ),
            (
                Profile::UNIXFS_V0_2015,
                "QmUNLLsPACCz1vLxQVkXqqLX5R1X345qqfHbsf67hvA3Nn",
            ),
        ] {
            let root = DirectoryBuilder::new(&profile)
                .finish(&mut DiscardBlocks)
                .unwrap();
            assert_eq!(root.cid.to_string(), expected);
            assert_eq!(root.tsize, 4);
        }
    }

    #[test]
    fn block_bytes_estimate_equals_the_encoded_block_size() {
        let profile = Profile::UNIXFS_V1_2025;
        let links: Vec<_> = ["a", "bb", "ccc"]
            .iter()
            .map(|n| (n.to_string(), file()))
            .collect();
        let mut blocks = MemoryBlocks::default();
        let mut dir = DirectoryBuilder::new(&profile);
        for (name, link) in &links {
            dir.add_file(name, *link).unwrap();
        }
        let root = dir.finish(&mut blocks).unwrap();
        let block = blocks.get(&root.cid).unwrap();
        assert_eq!(estimate(&profile, &links), block.len() as u64);
    }
}
