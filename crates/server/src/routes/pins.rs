//! The IPFS Pinning Service API 1.0.0 (`ipfs/pinning-services-api-spec`) at `/pins` on the
//! upload host, with the same bearer tokens: what `ipfs pin remote`, Helia and the pinning
//! SDKs speak. A pin is an operation of kind `pin` (queued, fetched by a worker over Bitswap,
//! see `pin.rs`); every upload with a root is listed as a pin too, and deleting either deletes
//! the one record. Errors here use the spec's shape, `{"error": {"reason", "details"}}`.

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use cairn_p2p::Multiaddr;
use cairn_store::model::{KeptFilter, NewPin, Operation, OperationRef, OperationStatus, StoredDag};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::query;
use crate::auth::{need, Caller};
use crate::error::{rewrite_error_body, ApiError};
use crate::rate_limit::Endpoint;
use crate::state::AppState;
use cairn_service::records::{pin_status, PinStatus};
use cairn_store::model::KeyValues;

/// The spec's bounds.
const MAX_NAME_CHARS: usize = 255;
const MAX_ORIGINS: usize = 20;
const MAX_DELEGATES: usize = 20;
const MAX_CID_FILTER: usize = 10;
const DEFAULT_LIMIT: u32 = 10;
const MAX_BODY_BYTES: usize = 64 * 1024;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/pins", get(list).post(add))
        .route(
            "/pins/{requestid}",
            get(status).post(replace).delete(remove),
        )
        .layer(middleware::from_fn(spec_errors))
}

fn operation_status(status: &str) -> Result<OperationStatus, ApiError> {
    Ok(match status {
        "queued" => OperationStatus::Pending,
        "pinning" => OperationStatus::Processing,
        "pinned" => OperationStatus::Completed,
        "failed" => OperationStatus::Failed,
        other => {
            return Err(ApiError::BadRequest(format!(
                "unknown status {other:?}: one of queued, pinning, pinned, failed"
            )))
        }
    })
}

/// This node's addresses with `/p2p/`: clients such as Kubo connect to them, so that the
/// content they hold is one hop away.
fn delegates(state: &AppState) -> Vec<String> {
    let Some(node) = &state.service.node else {
        return Vec::new();
    };
    let peer = node.peer_id();
    node.announced_addrs()
        .iter()
        .take(MAX_DELEGATES)
        .map(|addr| format!("{addr}/p2p/{peer}"))
        .collect()
}

#[derive(Deserialize)]
pub struct ListParams {
    cid: Option<String>,
    name: Option<String>,
    #[serde(rename = "match")]
    name_match: Option<String>,
    status: Option<String>,
    before: Option<String>,
    after: Option<String>,
    limit: Option<String>,
    meta: Option<String>,
}

#[derive(Serialize)]
pub struct PinResults {
    count: u64,
    results: Vec<PinStatus>,
}

async fn list(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Read>,
    params: Result<Query<ListParams>, QueryRejection>,
) -> Result<Json<PinResults>, ApiError> {
    state
        .limiter
        .check(account.id, Endpoint::Operations)
        .await?;
    let Query(params) = params.map_err(ApiError::from)?;
    let filter = list_filter(params)?;
    let (page, count) = state
        .service
        .store
        .list_kept_counted(account.id, &filter)
        .await?;
    let delegates = delegates(&state);
    Ok(Json(PinResults {
        count,
        results: page
            .into_iter()
            .map(|op| pin_status(op, &delegates))
            .collect(),
    }))
}

/// What a list's query asks for, checked.
pub fn list_filter(params: ListParams) -> Result<KeptFilter, ApiError> {
    let limit = query::limit(params.limit.as_deref(), DEFAULT_LIMIT)?;
    let cids = query::list(params.cid.as_deref(), query::cid)?;
    if cids.len() > MAX_CID_FILTER {
        return Err(ApiError::BadRequest(format!(
            "at most {MAX_CID_FILTER} CIDs may be asked for at once, not {}",
            cids.len()
        )));
    }
    let statuses = query::list(params.status.as_deref(), operation_status)?;
    let keyvalues = match params.meta.as_deref() {
        None => Vec::new(),
        Some(text) => meta(
            serde_json::from_str(text)
                .map_err(|e| ApiError::BadRequest(format!("meta is not JSON: {e}")))?,
        )?
        .iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect(),
    };
    Ok(KeptFilter {
        cids,
        name: query::name(params.name, params.name_match.as_deref())?,
        statuses,
        created_before_ms: query::time("before", params.before.as_deref())?,
        created_after_ms: query::time("after", params.after.as_deref())?,
        keyvalues,
        with_cid: true,
        limit,
        ..KeptFilter::default()
    })
}

async fn add(
    State(state): State<AppState>,
    Caller(account, key, _): Caller<need::Pins>,
    body: Bytes,
) -> Result<(StatusCode, Json<PinStatus>), ApiError> {
    state.limiter.check(account.id, Endpoint::Upload).await?;
    let (pin, stored) = new_pin(&state, account.id, key.id, &body).await?;
    let op = state.service.store.create_pin(pin, stored.as_ref()).await?;
    queued(&state, &op);
    Ok((
        StatusCode::ACCEPTED,
        Json(pin_status(op, &delegates(&state))),
    ))
}

async fn status(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Read>,
    Path(request_id): Path<String>,
) -> Result<Json<PinStatus>, ApiError> {
    state
        .limiter
        .check(account.id, Endpoint::Operations)
        .await?;
    let op = state
        .service
        .store
        .operation(account.id, &OperationRef::UploadId(request_id.clone()))
        .await?
        .filter(|op| op.deleted_at_ms.is_none() && op.cid.is_some())
        .ok_or_else(|| not_found(&request_id))?;
    Ok(Json(pin_status(op, &delegates(&state))))
}

async fn replace(
    State(state): State<AppState>,
    Caller(account, key, _): Caller<need::Pins>,
    Path(request_id): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<PinStatus>), ApiError> {
    state.limiter.check(account.id, Endpoint::Upload).await?;
    let (pin, stored) = new_pin(&state, account.id, key.id, &body).await?;
    let op = state
        .service
        .store
        .replace_pin(account.id, &request_id, pin, stored.as_ref())
        .await?
        .ok_or_else(|| not_found(&request_id))?;
    queued(&state, &op);
    Ok((
        StatusCode::ACCEPTED,
        Json(pin_status(op, &delegates(&state))),
    ))
}

async fn remove(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Delete>,
    Path(request_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.limiter.check(account.id, Endpoint::Upload).await?;
    super::uploads::delete_kept(&state, account.id, &request_id)
        .await?
        .ok_or_else(|| not_found(&request_id))?;
    Ok(StatusCode::ACCEPTED)
}

fn not_found(request_id: &str) -> ApiError {
    ApiError::NotFound(format!("no pin with requestid {request_id:?}"))
}

/// A worker fetches what is not stored yet.
fn queued(state: &AppState, op: &Operation) {
    if op.status == OperationStatus::Pending {
        state.service.queue.notify_one();
    }
    tracing::info!(pin = %op.upload_id, cid = op.cid.as_deref().unwrap_or(""), status = %op.status, "pin recorded");
}

/// A `Pin` from a request body, checked; and its DAG when it is stored already.
async fn new_pin(
    state: &AppState,
    account_id: i64,
    key_id: i64,
    body: &[u8],
) -> Result<(NewPin, Option<StoredDag>), ApiError> {
    let pin = NewPin {
        key_id: Some(key_id),
        ..parse_pin(account_id, body)?
    };
    let stored = state
        .service
        .store
        .kept_dag_size(&pin.cid)
        .await?
        .map(|size| StoredDag {
            cid: pin.cid.clone(),
            size,
        });
    Ok((pin, stored))
}

/// A `Pin` from a request body, checked.
pub fn parse_pin(account_id: i64, body: &[u8]) -> Result<NewPin, ApiError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError::BadRequest(format!(
            "the pin is {} bytes; at most {MAX_BODY_BYTES} are accepted",
            body.len()
        )));
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::BadRequest(format!("the body is not a JSON Pin: {e}")))?;
    let Value::Object(mut fields) = value else {
        return Err(ApiError::BadRequest("the body is not a JSON object".into()));
    };
    let cid = match fields.remove("cid") {
        Some(Value::String(cid)) => query::cid(&cid)?,
        Some(_) => return Err(ApiError::BadRequest("cid must be a string".into())),
        None => return Err(ApiError::BadRequest("cid is required".into())),
    };
    let name = match fields.remove("name") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(name)) if name.chars().count() <= MAX_NAME_CHARS => name,
        Some(Value::String(_)) => {
            return Err(ApiError::BadRequest(format!(
                "name is longer than {MAX_NAME_CHARS} characters"
            )))
        }
        Some(_) => return Err(ApiError::BadRequest("name must be a string".into())),
    };
    let origins = match fields.remove("origins") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) if list.len() <= MAX_ORIGINS => list
            .into_iter()
            .map(|origin| match origin {
                Value::String(addr) if addr.parse::<Multiaddr>().is_ok() => Ok(addr),
                other => Err(ApiError::BadRequest(format!(
                    "origin {other} is not a multiaddr"
                ))),
            })
            .collect::<Result<_, _>>()?,
        Some(Value::Array(_)) => {
            return Err(ApiError::BadRequest(format!(
                "at most {MAX_ORIGINS} origins are accepted"
            )))
        }
        Some(_) => return Err(ApiError::BadRequest("origins must be an array".into())),
    };
    let keyvalues = match fields.remove("meta") {
        None | Some(Value::Null) => KeyValues::default(),
        Some(value) => meta(value)?,
    };
    Ok(NewPin {
        request_id: cairn_store::random_name(),
        account_id,
        cid,
        name,
        origins,
        keyvalues,
        key_id: None,
    })
}

/// A pin's `meta`: its key-values, within their limits.
fn meta(value: Value) -> Result<KeyValues, ApiError> {
    KeyValues::from_value(value).map_err(|e| ApiError::BadRequest(format!("meta: {e}")))
}

/// Every error under `/pins` in the spec's shape, whoever made it (a handler, the token
/// check, the rate limiter, an extractor or the router): `{"error": {"reason", "details"}}`,
/// with the status and headers (`WWW-Authenticate`, `Retry-After`) kept.
async fn spec_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    rewrite_error_body(response, |status, body| {
        let (reason, details) = match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(error)) => (
                error["error"].as_str().unwrap_or("error").to_owned(),
                error["message"].as_str().unwrap_or_default().to_owned(),
            ),
            _ => {
                let text = String::from_utf8_lossy(body).into_owned();
                let error = ApiError::for_status(status, text);
                (
                    error.status_and_code().1.as_str().to_owned(),
                    error.to_string(),
                )
            }
        };
        let body = json!({"error": {"reason": reason.to_uppercase(), "details": details}});
        Json(body).into_response()
    })
    .await
}
