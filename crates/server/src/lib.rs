//! Cairn's HTTP hosts: the upload host and the account host. They speak HTTP and nothing
//! else: what takes longer than a request, or runs on its own, is `cairn-service`'s.
//!
//! - [`app`]: the two routers, with JSON fallbacks for unknown routes and wrong methods.
//! - [`routes`]: one module per resource (upload, operations, account, pins, routing, ...).
//! - [`gateway`]: the read path `/ipfs/{cid}[/{path}]`: trustless (raw, CAR) and plain.
//! - [`tus`]: TUS 1.0.0 resumable uploads (protocol, header parsing, per-upload locks).
//! - [`web`]: the web page on the account host, and what it needs to know.
//! - `docs`: the guides, the API reference and the OpenAPI document, on both hosts.
//! - `hosts`: which host serves which paths, for the answer on the other one.
//! - [`auth`]: the bearer-token extractor.
//! - [`origin`]: the scheme and host a request was sent to.
//! - [`error`]: the one place statuses and error codes are decided.
//! - [`listen`]: serving a router with a header-read timeout and a graceful shutdown.
//! - [`rate_limit`]: per-account, per-endpoint token buckets.
//! - [`state`]: what handlers share: the service, and what only HTTP needs.
//! - `unread`: the rest of a request body, read after an early error so the client sees it.
//!
//! Handlers never touch SQL or files directly: they go through `cairn-store`'s traits, and run
//! the synchronous engine (`cairn-unixfs`) on blocking threads.

pub mod app;
pub mod auth;
mod docs;
pub mod error;
/// The bodies of the fuzz targets that feed this crate untrusted bytes (`fuzz/`), shared with
/// the stable replay of their corpus (`tests/fuzz_corpus.rs`); only with the `fuzz` feature.
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod gateway;
mod hosts;
pub mod listen;
pub mod origin;
pub mod rate_limit;
pub mod routes;
pub mod state;
pub mod tls;
pub mod tus;
mod unread;
pub mod web;

pub use app::{account_app, upload_app};
pub use state::{AppState, ServerConfig};
