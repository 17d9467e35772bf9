//! Account host: `GET /api/upload-limit`, with what the account stores and may store.

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use crate::auth::{need, Caller};
use crate::error::ApiError;
use crate::rate_limit::Endpoint;
use crate::state::AppState;

/// The largest single POST the caller may send (clients use it to choose POST or TUS), and
/// the bytes stored against the quota.
pub async fn upload_limit(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::UploadOrRead>,
) -> Result<Json<Value>, ApiError> {
    state.limiter.check(account.id, Endpoint::Account).await?;
    // `account` is the account's name; `storedBytes` counts each root the account keeps once,
    // at its DAG's size; `quota` is `null` when unlimited.
    Ok(Json(json!({
        "account": account.name,
        "limit": account.upload_limit,
        "storedBytes": account.stored_bytes,
        "quota": account.quota,
    })))
}
