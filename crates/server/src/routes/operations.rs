//! `GET /api/operations/{id}` (by integer id or upload id) and `GET /api/operations`.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::Json;
use cairn_store::model::{
    ArchiveMode, Operation, OperationFilter, OperationRef, OperationStatus, StoredAs,
};
use serde::{Deserialize, Serialize};

use super::{query, rfc3339};
use crate::auth::{need, Caller};
use crate::error::ApiError;
use crate::rate_limit::Endpoint;
use crate::state::AppState;
use cairn_store::access::Scope;

/// The operation record (`docs/contract.md` "Operation record").
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationRecord {
    id: i64,
    upload_id: String,
    operation: &'static str,
    status: &'static str,
    status_message: String,
    progress_percent: f64,
    cid: Option<String>,
    error: Option<serde_json::Value>,
    name: String,
    size: u64,
    mime_type: String,
    archive_mode: Option<&'static str>,
    /// What the bytes are stored as (`file`, `archive`, `car`); `null` until they were looked
    /// at (a TUS upload's until it is processed) and for pins.
    kind: Option<&'static str>,
    /// The archive format found (`zip`, `tar.gz`, ...), for an archive.
    archive_format: Option<String>,
    created_at: String,
    updated_at: String,
    completed_at: Option<String>,
}

impl From<Operation> for OperationRecord {
    fn from(op: Operation) -> Self {
        let error = error_object(&op);
        Self {
            id: op.id,
            upload_id: op.upload_id,
            operation: op.kind.as_str(),
            status: op.status.as_str(),
            status_message: op.status_message,
            progress_percent: op.progress_percent,
            cid: op.cid,
            error,
            name: op.name,
            size: op.size,
            mime_type: op.mime_type,
            archive_mode: op.archive_mode.map(ArchiveMode::as_str),
            kind: op.stored_as.map(StoredAs::as_str),
            archive_format: op.archive_format,
            created_at: rfc3339(op.created_at_ms),
            updated_at: rfc3339(op.updated_at_ms),
            completed_at: op.completed_at_ms.map(rfc3339),
        }
    }
}

/// The upload result of `POST /api/upload` (`docs/contract.md` "Upload result").
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UploadResult {
    id: String,
    cid: Option<String>,
    name: String,
    size: u64,
    mime_type: String,
    operation_id: i64,
    status: &'static str,
    /// What the bytes are stored as (`file`, `archive`, `car`), once looked at.
    kind: Option<&'static str>,
    /// The archive format found, for an archive.
    archive_format: Option<String>,
    created_at: String,
    /// What it is tagged with (`{}` when nothing).
    keyvalues: serde_json::Value,
    /// The upload link it was sent through, if any.
    link: Option<String>,
}

impl From<Operation> for UploadResult {
    fn from(op: Operation) -> Self {
        Self {
            id: op.upload_id,
            cid: op.cid,
            name: op.name,
            size: op.size,
            mime_type: op.mime_type,
            operation_id: op.id,
            status: op.status.as_str(),
            kind: op.stored_as.map(StoredAs::as_str),
            archive_format: op.archive_format,
            created_at: rfc3339(op.created_at_ms),
            keyvalues: (&op.keyvalues).into(),
            link: op.link_id,
        }
    }
}

/// A failed operation's error, in the shape of every error body.
pub fn error_object(op: &Operation) -> Option<serde_json::Value> {
    (op.error.as_ref()).map(|e| serde_json::json!({"error": e.code, "message": e.message}))
}

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
    let Query(params) = params.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let limit = query::limit(params.limit.as_deref(), 50)?;
    let status = params
        .status
        .map(|s| s.parse::<OperationStatus>())
        .transpose()
        .map_err(ApiError::BadRequest)?;
    // The cursor is the last id of the previous page; opaque to clients.
    let before_id = params
        .cursor
        .map(|c| c.strip_prefix("op").and_then(|n| n.parse::<i64>().ok()))
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
