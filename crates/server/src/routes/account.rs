//! Account host: `GET /api/upload-limit`.

use axum::Json;
use serde_json::{json, Value};

use crate::auth::Caller;

/// The largest single POST the caller may send; clients use it to choose POST or TUS.
pub async fn upload_limit(Caller(account): Caller) -> Json<Value> {
    Json(json!({"limit": account.upload_limit}))
}
