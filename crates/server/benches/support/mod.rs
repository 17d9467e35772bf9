//! What the server's benches share: the upload host in the bench's own process (`host.rs`),
//! and files stored as an upload would store them, without HTTP (`stored.rs`).
#![allow(dead_code)] // each bench uses a different part

pub mod host;
pub mod stored;
