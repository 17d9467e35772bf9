//! Cairn's HTTP service: the upload host and the account host.
//!
//! - [`app`]: the two routers, with JSON fallbacks for unknown routes and wrong methods.
//! - [`routes`]: one module per resource (upload, operations, account).
//! - [`gateway`]: the read path `/ipfs/{cid}[/{path}]`: trustless (raw, CAR) and plain.
//! - [`web`]: the web page on the account host, and what it needs to know.
//! - [`auth`]: the bearer-token extractor.
//! - [`origin`]: the scheme and host a request was sent to.
//! - [`error`]: the one place statuses and error codes are decided.
//! - [`listen`]: serving a router with a header-read timeout and a graceful shutdown.
//! - [`detect`]: what an upload is, from its first bytes.
//! - [`rate_limit`]: per-account, per-endpoint token buckets.
//! - [`metrics`]: counters and the Prometheus text exposition.
//! - [`nodes`]: the service's live IPFS nodes, announced to each other through the metadata
//!   store, which delegated routing names as providers.
//! - [`provide`]: announcing stored roots to the DHT from the provide log, and reproviding.
//! - [`ipni`]: publishing this node's IPNI advertisement chain (what each root's DAG holds,
//!   and removals), and announcing it to indexers.
//! - [`state`]: what handlers share.
//! - [`tus`]: TUS 1.0.0 resumable uploads (protocol, header parsing, per-upload locks).
//! - [`worker`]: operation workers (archive extraction from the durable queue).
//!
//! Handlers never touch SQL or files directly: they go through `cairn-store`'s traits, and run
//! the synchronous engine (`cairn-unixfs`) on blocking threads.

pub mod app;
pub mod auth;
pub mod detect;
pub mod error;
/// The bodies of the fuzz targets that feed this crate untrusted bytes (`fuzz/`), shared with
/// the stable replay of their corpus (`tests/fuzz_corpus.rs`); only with the `fuzz` feature.
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod gateway;
pub mod gc;
pub mod ipni;
pub mod listen;
pub mod metrics;
pub mod nodes;
pub mod origin;
pub mod pin;
pub mod provide;
pub mod rate_limit;
pub mod routes;
pub mod state;
pub mod tus;
pub mod web;
pub mod worker;

pub use app::{account_app, upload_app};
pub use state::{AppState, ServerConfig};
