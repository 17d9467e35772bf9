//! The UnixFS importer: bytes and trees in, content-addressed blocks and a root CID out.
//!
//! For the same bytes and [`Profile`], the CID is the one Kubo, Helia and ipfs-car compute.
//! The crate knows nothing of tokio, HTTP or SQL: blocks leave through a [`BlockSink`].
//!
//! - [`profile`]: every CID-affecting parameter as one value.
//! - [`file`]: streaming file importer (fixed-size chunker, balanced layout, parallel hashing).
//! - [`dir`]: directory builder (validation, byte-order links, HAMT switch).
//! - [`hamt`]: HAMT shard encoding.
//! - [`pb`]: UnixFS `Data` and dag-pb node encodings.
//! - [`block`]: blocks, CIDs, verification and sinks.
//! - [`node`]: what a block is as UnixFS, and the rules a well-formed DAG keeps.
//! - [`ipld`]: blocks of the other IPLD codecs (dag-cbor, dag-json, ...), by their links.
//! - [`read`]: reading UnixFS back within a budget: paths (through HAMTs), listings, byte
//!   ranges, depth-first walks; no recursion, every node checked.

pub mod block;
pub mod dir;
pub mod file;
/// The bodies of the fuzz targets that feed this crate untrusted bytes (`fuzz/`), shared with
/// the stable replay of their corpus (`tests/fuzz_corpus.rs`); only with the `fuzz` feature.
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod hamt;
pub mod ipld;
pub mod node;
pub mod pb;
pub mod profile;
pub mod read;

pub use block::{BlockBytes, BlockSink, BlockSource, DiscardBlocks, Link, MemoryBlocks, NoBlocks};
pub use cid::Cid;
pub use dir::{DirError, DirectoryBuilder, ImportedDir};
pub use file::{FileImporter, ImportedFile};
pub use profile::{CidVersion, Profile};
