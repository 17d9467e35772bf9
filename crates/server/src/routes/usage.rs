//! Account host: `GET /api/usage` (scope `read`), what the account stores and used in a
//! calendar month (UTC): the current one, or `?period=YYYY-MM`.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::Json;
use cairn_store::events::Month;
use cairn_store::now_ms;
use serde::Deserialize;
use serde_json::{json, Value};

use super::rfc3339;
use crate::auth::{need, Caller};
use crate::error::ApiError;
use crate::rate_limit::Endpoint;
use crate::state::AppState;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageParams {
    period: Option<String>,
}

pub async fn usage(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Read>,
    params: Result<Query<UsageParams>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    state.limiter.check(account.id, Endpoint::Account).await?;
    let Query(params) = params.map_err(ApiError::from)?;
    let month = match params.period {
        // Digits only: `Month::parse` would read a sign (`2026-+1`) too.
        Some(period) => (period.bytes().filter(|b| b.is_ascii_digit()).count() == 6)
            .then(|| Month::parse(&period))
            .flatten()
            .ok_or_else(|| {
                ApiError::BadRequest(format!(
                    "period {period:?} is not a month written YYYY-MM (such as 2026-11)"
                ))
            })?,
        None => Month::of(now_ms()),
    };
    let (start, end) = month.bounds_ms();
    let used = state
        .service
        .store
        .usage(account.id, start, end, &month.to_string())
        .await?;
    Ok(Json(json!({
        "storedBytes": account.stored_bytes,
        "quota": account.quota,
        "uploads": used.uploads,
        "pins": used.pins,
        "uploadedBytes": used.uploaded_bytes,
        "servedBytes": used.served_bytes,
        "period": {"month": month.to_string(), "start": rfc3339(start), "end": rfc3339(end)},
    })))
}
