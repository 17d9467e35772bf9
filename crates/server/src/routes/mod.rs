//! One module per resource; `app.rs` merges their routers.

pub mod account;
pub mod operations;
pub mod upload;
