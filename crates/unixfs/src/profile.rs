//! CID profiles: every parameter that changes a CID, bundled as one value.
//!
//! A profile is passed to the importer explicitly; there is no global default to mutate
//! (boxo's mutable globals are the thing we avoid). The three named profiles and their exact
//! parameters come from IPIP-0499, boxo `ipld/unixfs/io/profile.go` and Kubo's default config;
//! `shared/vectors/README.md` section 3 is the table we test against.

use std::fmt;
use std::str::FromStr;

/// CID version of every block the importer makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CidVersion {
    /// `Qm…`: base58btc, implicitly dag-pb and sha2-256.
    V0,
    /// `b…`: base32, with an explicit codec.
    V1,
}

/// How a chunk of file bytes is stored as a leaf block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafKind {
    /// The chunk bytes themselves, codec raw (0x55).
    Raw,
    /// A dag-pb node wrapping the chunk in UnixFS `Data{Type=File}` (the 2015 format).
    DagPb,
}

/// How the size of a basic directory is estimated when deciding whether it becomes a HAMT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirSizeEstimate {
    /// Σ (name bytes + CID bytes) over the links (boxo `productionLinkSize`).
    LinksBytes,
    /// The exact serialized size of the basic directory block (boxo `linkSerializedSize`).
    BlockBytes,
}

/// Every CID-affecting import parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// The name users select it by (`unixfs-v1-2025`, ...); free-form for custom profiles.
    pub name: &'static str,
    pub cid_version: CidVersion,
    pub leaves: LeafKind,
    /// Fixed chunk size in bytes.
    pub chunk_size: usize,
    /// Maximum links per internal file node (balanced layout width).
    pub max_links: usize,
    /// A basic directory becomes a HAMT when its estimate is strictly greater than this.
    pub hamt_threshold: u64,
    pub dir_size_estimate: DirSizeEstimate,
    /// HAMT fanout; 256 in every named profile (one byte of the hash per level).
    pub hamt_fanout: u16,
}

impl Profile {
    /// IPIP-0499 `unixfs-v1-2025`: CIDv1, raw leaves, 1 MiB chunks, 1024 links, block-bytes HAMT rule.
    pub const UNIXFS_V1_2025: Profile = Profile {
        name: "unixfs-v1-2025",
        cid_version: CidVersion::V1,
        leaves: LeafKind::Raw,
        chunk_size: 1 << 20,
        max_links: 1024,
        hamt_threshold: 256 * 1024,
        dir_size_estimate: DirSizeEstimate::BlockBytes,
        hamt_fanout: 256,
    };

    /// `ipfs add --cid-version=1` on Kubo's default config: 256 KiB chunks, 174 links, raw leaves.
    pub const KUBO_CIDV1_LEGACY: Profile = Profile {
        name: "kubo-cidv1-legacy",
        cid_version: CidVersion::V1,
        leaves: LeafKind::Raw,
        chunk_size: 256 * 1024,
        max_links: 174,
        hamt_threshold: 256 * 1024,
        dir_size_estimate: DirSizeEstimate::LinksBytes,
        hamt_fanout: 256,
    };

    /// IPIP-0499 `unixfs-v0-2015` (Kubo's historical default): CIDv0, dag-pb leaves.
    pub const UNIXFS_V0_2015: Profile = Profile {
        name: "unixfs-v0-2015",
        cid_version: CidVersion::V0,
        leaves: LeafKind::DagPb,
        chunk_size: 256 * 1024,
        max_links: 174,
        hamt_threshold: 256 * 1024,
        dir_size_estimate: DirSizeEstimate::LinksBytes,
        hamt_fanout: 256,
    };

    /// The named profiles, default first.
    pub const ALL: [Profile; 3] = [
        Self::UNIXFS_V1_2025,
        Self::KUBO_CIDV1_LEGACY,
        Self::UNIXFS_V0_2015,
    ];

    /// The names accepted by [`Profile::from_str`], for help texts and error messages.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Self::ALL.iter().map(|p| p.name)
    }
}

impl Default for Profile {
    fn default() -> Self {
        Self::UNIXFS_V1_2025
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// The profile name was not one of [`Profile::names`].
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown CID profile {given:?} (expected one of: unixfs-v1-2025, kubo-cidv1-legacy, unixfs-v0-2015)")]
pub struct UnknownProfile {
    pub given: String,
}

impl FromStr for Profile {
    type Err = UnknownProfile;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|p| p.name == s)
            .ok_or_else(|| UnknownProfile {
                given: s.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_profile_parses_back_from_its_name() {
        for p in Profile::ALL {
            assert_eq!(p.name.parse::<Profile>().unwrap(), p);
        }
        assert_eq!(Profile::default().name, "unixfs-v1-2025");
    }

    #[test]
    fn unknown_profile_error_lists_the_valid_names() {
        let err = "v1".parse::<Profile>().unwrap_err().to_string();
        for name in Profile::names() {
            assert!(err.contains(name), "{err}");
        }
    }
}
