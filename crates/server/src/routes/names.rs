//! IPNS names, upload host.
//!
//! Scope `names`: `POST /api/names` `{"cid", "label"?}` makes a name (an Ed25519 key Cairn
//! keeps sealed) pointing at `cid` and answers its `k51...` form; `PUT /api/names/{name}`
//! `{"cid"}` points it at new content (sequence + 1); `DELETE /api/names/{name}` stops
//! republishing it. `GET /api/names` and `GET /api/names/{name}` (also with `read`).
//! `{name}` is the name or its label. Signing, the DHT and republishing are
//! `cairn_service::names`.
//!
//! Public, as delegated routing (`/routing/v1/ipns/{name}`): `GET` answers the newest valid
//! record Cairn knows (its own names', pushed ones, the DHT's), `PUT` takes a record signed
//! by the name's key.

use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use cairn_p2p::ipns::Name;
use cairn_service::names::{self as service_names, Resolved};
use cairn_store::names::KeptName;
use cairn_unixfs::Cid;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{rfc3339, Object};
use crate::auth::{need, Caller};
use crate::error::ApiError;
use crate::rate_limit::Endpoint;
use crate::state::AppState;

pub const IPNS_RECORD: &str = "application/vnd.ipfs.ipns-record";
/// How long "no record" may be cached (the routing spec's example).
const NO_RECORD_MAX_AGE: u64 = 15;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateRequest {
    cid: String,
    /// What the account calls the name (`name` in the words is accepted too).
    #[serde(alias = "name")]
    label: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointRequest {
    cid: String,
}

/// A name as the API shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NameRecord {
    /// The IPNS name (`k51...`): `/ipns/{name}` on any gateway.
    name: String,
    label: Option<String>,
    /// The CID it points at.
    cid: Option<String>,
    /// Its record's value (`/ipfs/{cid}`).
    value: String,
    sequence: u64,
    /// When its current record stops being valid (it is republished well before).
    expires_at: String,
    created_at: String,
    updated_at: String,
}

impl From<KeptName> for NameRecord {
    fn from(kept: KeptName) -> Self {
        Self {
            cid: kept.value.strip_prefix("/ipfs/").map(str::to_owned),
            name: kept.name,
            label: kept.label,
            value: kept.value,
            sequence: kept.sequence,
            expires_at: rfc3339(kept.expires_at_ms),
            created_at: rfc3339(kept.created_at_ms),
            updated_at: rfc3339(kept.updated_at_ms),
        }
    }
}

fn target(cid: &str) -> Result<Cid, ApiError> {
    cid.parse()
        .map_err(|e| ApiError::BadRequest(format!("cid: {cid:?} is not a CID: {e}")))
}

pub async fn create(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Names>,
    request: Result<Json<Object<CreateRequest>>, JsonRejection>,
) -> Result<(StatusCode, Json<NameRecord>), ApiError> {
    state.limiter.check(account.id, Endpoint::Account).await?;
    let Json(Object(request)) = request.map_err(ApiError::from)?;
    let cid = target(&request.cid)?;
    let kept = service_names::create(&state.service, account.id, &cid, request.label).await?;
    tracing::info!(account = %account.name, name = %kept.name, value = %kept.value, "name created");
    Ok((StatusCode::CREATED, Json(kept.into())))
}

pub async fn point(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Names>,
    Path(name): Path<String>,
    request: Result<Json<Object<PointRequest>>, JsonRejection>,
) -> Result<Json<NameRecord>, ApiError> {
    state.limiter.check(account.id, Endpoint::Account).await?;
    let Json(Object(request)) = request.map_err(ApiError::from)?;
    let cid = target(&request.cid)?;
    let kept = service_names::find(&state.service, account.id, &name).await?;
    let next = service_names::point(&state.service, kept, &cid).await?;
    tracing::info!(account = %account.name, name = %next.name, value = %next.value, sequence = next.sequence, "name pointed");
    Ok(Json(next.into()))
}

pub async fn list(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::NamesOrRead>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let names: Vec<NameRecord> = state
        .service
        .store
        .list_names(account.id)
        .await?
        .into_iter()
        .map(NameRecord::from)
        .collect();
    Ok(Json(json!({ "count": names.len(), "results": names })))
}

pub async fn get(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::NamesOrRead>,
    Path(name): Path<String>,
) -> Result<Json<NameRecord>, ApiError> {
    let kept = service_names::find(&state.service, account.id, &name).await?;
    Ok(Json(kept.into()))
}

pub async fn delete(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Names>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    let kept = service_names::find(&state.service, account.id, &name).await?;
    state
        .service
        .store
        .delete_name(account.id, &kept.name)
        .await?;
    tracing::info!(account = %account.name, name = %kept.name, "name deleted");
    Ok(StatusCode::NO_CONTENT)
}

fn parse_name(name: &str) -> Result<Name, ApiError> {
    name.parse().map_err(ApiError::BadRequest)
}

fn accepts_record(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.split(';').next().is_some_and(|t| t.trim() == IPNS_RECORD))
}

/// `GET /routing/v1/ipns/{name}`.
pub async fn routing_get(
    State(state): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    state.service.metrics.routing_query("ipns");
    if !accepts_record(&headers) {
        return Err(ApiError::NotAcceptable(format!(
            "this route answers IPNS records only: retry with Accept: {IPNS_RECORD}"
        )));
    }
    let name = parse_name(&name)?;
    match service_names::resolve(&state.service, &name).await? {
        Some(resolved) => Ok(record_response(&name, &resolved)),
        // The spec asks for no `404`: a `200` in another type than a record's means none.
        None => Ok((
            [
                (
                    header::CACHE_CONTROL,
                    format!("public, max-age={NO_RECORD_MAX_AGE}"),
                ),
                (header::VARY, "Accept".to_owned()),
            ],
            Json(json!({
                "error": "not_found",
                "message": format!("no valid record of {name} is known"),
            })),
        )
            .into_response()),
    }
}

/// The record with the headers the routing spec gives it: cached for its TTL, stale for as
/// long as it stays valid.
pub fn record_response(name: &Name, resolved: &Resolved) -> Response {
    let ttl = match resolved.record.ttl.as_secs() {
        0 => 60,
        secs => secs,
    };
    let valid_for = resolved
        .record
        .validity
        .duration_since(SystemTime::now())
        .unwrap_or(Duration::ZERO)
        .as_secs();
    let digest = Sha256::digest(&resolved.bytes);
    let etag = format!(
        "\"{:x}\"",
        &digest[..8].iter().fold(0u64, |n, b| n << 8 | u64::from(*b))
    );
    let headers = [
        (header::CONTENT_TYPE, IPNS_RECORD.to_owned()),
        (
            header::CACHE_CONTROL,
            format!(
                "public, max-age={ttl}, stale-while-revalidate={valid_for}, stale-if-error={valid_for}"
            ),
        ),
        (header::EXPIRES, httpdate::fmt_http_date(resolved.record.validity)),
        (header::LAST_MODIFIED, httpdate::fmt_http_date(SystemTime::now())),
        (header::ETAG, etag),
        (header::VARY, "Accept".to_owned()),
        (
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{name}.ipns-record\""),
        ),
    ];
    (headers, resolved.bytes.clone()).into_response()
}

/// `PUT /routing/v1/ipns/{name}`.
pub async fn routing_put(
    State(state): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::trim);
    if content_type != Some(IPNS_RECORD) {
        return Err(ApiError::NotAcceptable(format!(
            "send the record with Content-Type: {IPNS_RECORD}"
        )));
    }
    let name = parse_name(&name)?;
    service_names::accept(&state.service, &name, body.to_vec()).await?;
    Ok(StatusCode::OK)
}
