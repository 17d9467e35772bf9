//! `GET /api/operations/{id}` (by integer id or upload id) and `GET /api/operations`.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::Json;
use cairn_store::model::{Operation, OperationFilter, OperationRef, OperationStatus};
use serde::{Deserialize, Serialize};

use super::query;
use crate::auth::{need, Caller};
use crate::error::ApiError;
use crate::rate_limit::Endpoint;
use crate::state::AppState;
use cairn_service::records::OperationRecord;
use cairn_store::access::Scope;

pub async fn get_operation(
    State(state): State<AppState>,
    caller: Caller<need::UploadOrRead>,
    Path(id): Path<String>,
) -> Result<Json<OperationRecord>, ApiError> {
    Ok(Json(readable_operation(&state, &caller, &id).await?.into()))
}

/// The operation `id` (its integer id or its upload's id), if the caller may read it: a key
/// that may only upload reads the operations it began, and no others (`404`, like another
/// account's). Counted against the operations rate limit.
pub async fn readable_operation(
    state: &AppState,
    caller: &Caller<need::UploadOrRead>,
    id: &str,
) -> Result<Operation, ApiError> {
    let only_key = (!caller.allows(Scope::Read)).then_some(caller.1.id);
    let account = &caller.0;
    state
        .limiter
        .check(account.id, Endpoint::Operations)
        .await?;
    state
        .service
        .store
        .operation(account.id, &OperationRef::parse(id))
        .await?
        .filter(|op| only_key.is_none() || op.key_id == only_key)
        .ok_or_else(|| ApiError::NotFound(format!("operation {id} not found")))
}

#[derive(Deserialize)]
pub struct ListParams {
    limit: Option<String>,
    cursor: Option<String>,
    status: Option<String>,
    cid: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationPage {
    operations: Vec<OperationRecord>,
    /// Pass as `cursor` to get the next page; `null` on the last page.
    next_cursor: Option<String>,
}

pub async fn list_operations(
    State(state): State<AppState>,
    caller: Caller<need::UploadOrRead>,
    params: Result<Query<ListParams>, QueryRejection>,
) -> Result<Json<OperationPage>, ApiError> {
    let only_key = (!caller.allows(Scope::Read)).then_some(caller.1.id);
    let account = caller.0;
    state
        .limiter
        .check(account.id, Endpoint::Operations)
        .await?;
    let Query(params) = params.map_err(ApiError::from)?;
    let limit = query::limit(params.limit.as_deref(), 50)?;
    let status = params
        .status
        .map(|s| s.parse::<OperationStatus>())
        .transpose()
        .map_err(ApiError::BadRequest)?;
    // The cursor is the last id of the previous page (`op` and its digits); opaque to clients.
    let before_id = params
        .cursor
        .map(|c| c.strip_prefix("op").and_then(query::cursor_number))
        .map(|c| {
            c.ok_or_else(|| ApiError::BadRequest("cursor is not one this server issued".into()))
        })
        .transpose()?;
    let filter = OperationFilter {
        status,
        cid: params.cid,
        before_id,
        key_id: only_key,
        limit,
    };
    let operations = state
        .service
        .store
        .list_operations(account.id, &filter)
        .await?;
    let next_cursor = (operations.len() == limit as usize)
        .then(|| operations.last().map(|op| format!("op{}", op.id)))
        .flatten();
    Ok(Json(OperationPage {
        operations: operations.into_iter().map(Into::into).collect(),
        next_cursor,
    }))
}
