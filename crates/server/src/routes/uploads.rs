//! What an account keeps, as uploads: `GET /api/uploads` (newest first, filtered, paged),
//! `GET /api/uploads/{id}`, `PATCH /api/uploads/{id}` (its name and key-values) and
//! `DELETE /api/uploads/{id}`, on both hosts. Pins by CID are listed by the Pinning Service
//! API (`pins.rs`); deleting either deletes the same record.

use std::collections::BTreeMap;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use cairn_store::model::{
    KeptFilter, KeptKey, Operation, OperationKind, OperationRef, OperationStatus,
};
use serde::{Deserialize, Serialize};

use super::{query, Object};
use crate::auth::{need, Caller};
use crate::error::ApiError;
use crate::rate_limit::Endpoint;
use crate::state::AppState;
use cairn_service::records::UploadRecord;

#[derive(Deserialize)]
pub struct ListParams {
    limit: Option<String>,
    cursor: Option<String>,
    cid: Option<String>,
    name: Option<String>,
    #[serde(rename = "match")]
    name_match: Option<String>,
    status: Option<String>,
    before: Option<String>,
    after: Option<String>,
    /// Only the uploads sent through this upload link.
    link: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UploadPage {
    uploads: Vec<UploadRecord>,
    /// Pass as `cursor` to get the next page; `null` on the last page.
    next_cursor: Option<String>,
}

pub async fn list(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Read>,
    params: Result<Query<ListParams>, QueryRejection>,
    pairs: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Json<UploadPage>, ApiError> {
    state
        .limiter
        .check(account.id, Endpoint::Operations)
        .await?;
    let Query(params) = params.map_err(ApiError::from)?;
    let Query(pairs) = pairs.map_err(ApiError::from)?;
    let limit = query::limit(params.limit.as_deref(), 50)?;
    let statuses = query::list(params.status.as_deref(), |status| {
        status
            .parse::<OperationStatus>()
            .map_err(ApiError::BadRequest)
    })?;
    let filter = KeptFilter {
        cids: params
            .cid
            .as_deref()
            .map(query::cid)
            .transpose()?
            .into_iter()
            .collect(),
        name: query::name(params.name, params.name_match.as_deref())?,
        statuses,
        created_before_ms: query::time("before", params.before.as_deref())?,
        created_after_ms: query::time("after", params.after.as_deref())?,
        keyvalues: query::keyvalues(&pairs)?,
        uploads_only: true,
        link_id: params.link,
        cursor: params.cursor.as_deref().map(parse_cursor).transpose()?,
        limit,
        ..KeptFilter::default()
    };
    let uploads = state.service.store.list_kept(account.id, &filter).await?;
    let next_cursor = (uploads.len() == limit as usize)
        .then(|| {
            uploads
                .last()
                .map(|op| format!("{}.{}", op.created_at_ms, op.id))
        })
        .flatten();
    Ok(Json(UploadPage {
        uploads: uploads.into_iter().map(Into::into).collect(),
        next_cursor,
    }))
}

/// The cursor is the last upload of the previous page, as `created.id`; opaque to clients.
fn parse_cursor(cursor: &str) -> Result<KeptKey, ApiError> {
    cursor
        .split_once('.')
        .and_then(|(created, id)| {
            Some(KeptKey {
                created_at_ms: query::cursor_number(created)?,
                id: query::cursor_number(id)?,
            })
        })
        .ok_or_else(|| ApiError::BadRequest("cursor is not one this server issued".into()))
}

pub async fn get(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Read>,
    Path(id): Path<String>,
) -> Result<Json<UploadRecord>, ApiError> {
    state
        .limiter
        .check(account.id, Endpoint::Operations)
        .await?;
    let upload = state
        .service
        .store
        .operation(account.id, &OperationRef::UploadId(id.clone()))
        .await?
        .filter(|op| op.deleted_at_ms.is_none() && op.kind != OperationKind::Pin)
        .ok_or_else(|| ApiError::NotFound(format!("upload {id} not found")))?;
    Ok(Json(upload.into()))
}

/// `204` whether it was deleted now or before; `404` for an upload the account never had.
pub async fn delete(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Delete>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.limiter.check(account.id, Endpoint::Upload).await?;
    delete_kept(&state, account.id, &id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("upload {id} not found")))?;
    Ok(StatusCode::NO_CONTENT)
}

/// What `PATCH /api/uploads/{id}` may change.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Changes {
    name: Option<String>,
    /// Merged into the upload's: a string sets a key, `null` removes it.
    keyvalues: Option<BTreeMap<String, Option<String>>>,
}

/// Rename an upload, or change its key-values; answers the upload as it is now.
pub async fn change(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Upload>,
    Path(id): Path<String>,
    changes: Result<Json<Object<Changes>>, JsonRejection>,
) -> Result<Json<UploadRecord>, ApiError> {
    state.limiter.check(account.id, Endpoint::Upload).await?;
    let Json(Object(changes)) = changes.map_err(ApiError::from)?;
    if let Some(name) = &changes.name {
        super::upload::check_name(name)?;
    }
    let keyvalues = changes.keyvalues.unwrap_or_default();
    let upload = (state.service.store)
        .change_upload(account.id, &id, changes.name, keyvalues)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("upload {id} not found")))?;
    Ok(Json(upload.into()))
}

/// Delete an upload or pin of the account (the store gives its quota back in the same
/// transaction), then release the bytes of work it stopped: a TUS upload's, or an archive's
/// waiting in staging. `None` when the account has no such upload.
pub async fn delete_kept(
    state: &AppState,
    account_id: i64,
    upload_id: &str,
) -> Result<Option<Operation>, ApiError> {
    let Some(deleted) = state
        .service
        .store
        .delete_kept(account_id, upload_id)
        .await?
    else {
        return Ok(None);
    };
    tracing::info!(
        upload = upload_id,
        cid = deleted.cid.as_deref().unwrap_or(""),
        "deleted"
    );
    // The record as it was before the delete: unfinished then, its bytes are no one's now.
    if !deleted.status.is_terminal() && deleted.deleted_at_ms.is_none() {
        state
            .service
            .release_upload_bytes(deleted.kind, upload_id)
            .await;
    }
    Ok(Some(deleted))
}
