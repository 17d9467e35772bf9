//! One module per resource; `app.rs` merges their routers.

pub mod account;
pub mod node;
pub mod operations;
pub mod routing;
pub mod upload;
