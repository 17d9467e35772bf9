//! The `cairn` binary and the peers around it, for the binary's tests and benches (never
//! published, never in the release binary).
//!
//! - [`server`]: `cairn serve` started on port 0 and read as it prints, admin and client
//!   commands, and the HTTP calls most tests make (uploads, TUS, operations, keys, links).
//! - [`peers`]: real IPFS peers, Kubo (both releases) and Helia, as child processes.
//! - [`dht`]: a DHT of `cairn_p2p` nodes in the test's own process, and Cairn's providing as
//!   its `/metrics` shows it.
//! - [`upgrades`]: what an earlier release writes, for the upgrade tests' fixtures
//!   (`make-upgrade-fixture`, this crate's binary, writes them).
//!
//! It finds the binary beside the running test (see [`server::binary`]), so only the `cairn`
//! package's tests and benches, which Cargo builds the binary for, use it. What does not need
//! the binary or Cairn's crates is `cairn-test-support`'s.

pub mod dht;
pub mod peers;
pub mod server;
pub mod upgrades;
