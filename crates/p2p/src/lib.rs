//! Cairn on the IPFS network: a libp2p node that serves everything Cairn stores to any peer
//! that asks, over Bitswap, and fetches DAGs from peers.
//!
//! - [`node`]: the node (transports, Identify, Ping, limits), one task owning the swarm,
//!   and the [`NodeHandle`] the rest of Cairn holds.
//! - [`bitswap`]: Bitswap 1.2.0/1.1.0/1.0.0, server and client.
//! - [`dht`]: the dual Kademlia DHT (WAN and LAN) and its record store.
//! - [`keyspace`]: Kademlia's keyspace, which a sweep of provides walks region by region.
//! - [`blocks`]: the [`Blockstore`] the node serves from: Cairn's verified stored blocks.
//! - [`key`]: the node's Ed25519 identity, kept in the data directory.
//! - [`ipns`]: IPNS names and records: signed for the names Cairn keeps, verified wherever one arrives.
//! - [`ipni_format`]: the formats of the IPNI advertisement chain (the publishing is `cairn-service`'s).
//!
//! This crate knows nothing of HTTP; the server crate answers routing queries with what the
//! handle reports.

pub mod bitswap;
pub mod blocks;
pub mod dht;
/// The bodies of the fuzz targets that feed this crate untrusted bytes (`fuzz/`), shared with
/// the stable replay of their corpus (`tests/fuzz_corpus.rs`); only with the `fuzz` feature.
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod ipni_format;
pub mod ipns;
pub mod key;
pub mod keyspace;
pub mod node;
mod protobuf;

pub use blocks::{Blockstore, MemoryBlockstore};
pub use libp2p::multiaddr::Protocol;
pub use libp2p::{Multiaddr, PeerId};
pub use node::{public_bootstrap, start, Dht, NodeConfig, NodeError, NodeHandle};
