//! Account host: `GET /api/upload-limit`.

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::rate_limit::Endpoint;
use crate::state::AppState;

/// The largest single POST the caller may send; clients use it to choose POST or TUS.
pub async fn upload_limit(
    State(state): State<AppState>,
    Caller(account): Caller,
) -> Result<Json<Value>, ApiError> {
    state.limiter.check(account.id, Endpoint::Account).await?;
    Ok(Json(json!({"limit": account.upload_limit})))
}
