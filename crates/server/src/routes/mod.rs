//! One module per resource; `app.rs` merges their routers.

pub mod account;
pub mod node;
pub mod operations;
pub mod routing;
pub mod upload;

/// A timestamp (milliseconds since the epoch) as the API writes them: RFC 3339, UTC.
pub fn rfc3339(ms: i64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_millis(time).to_string()
}
