//! Account host, scope `keys`: webhook endpoints. `POST /api/webhooks` makes one (its signing
//! secret is in that answer only), `GET /api/webhooks` lists them, `DELETE
//! /api/webhooks/{id}` removes one (its pending deliveries fail with it), `GET
//! /api/webhooks/{id}/deliveries` shows each delivery and its attempts, and `POST
//! /api/webhooks/{id}/deliveries/{delivery}/retry` sends one again now. Sending is
//! `cairn_service::webhooks`.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use cairn_service::webhooks::{check_url, new_secret};
use cairn_store::events::{Attempt, Delivery, EventType, Webhook};
use cairn_store::{now_ms, random_name};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{rfc3339, Object};
use crate::auth::{need, Caller};
use crate::error::ApiError;
use crate::rate_limit::Endpoint;
use crate::state::AppState;

const MAX_URL: usize = 2048;
const MAX_DESCRIPTION: usize = 256;
const DELIVERIES_PAGE: u32 = 50;
const MAX_DELIVERIES_PAGE: u32 = 200;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookRequest {
    url: String,
    events: Vec<String>,
    description: Option<String>,
}

/// An endpoint as the API shows it; its secret only in the answer that made it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookRecord {
    id: String,
    url: String,
    events: Vec<&'static str>,
    description: String,
    created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<String>,
}

impl From<Webhook> for WebhookRecord {
    fn from(hook: Webhook) -> Self {
        Self {
            events: hook.events.iter().map(|t| t.as_str()).collect(),
            created_at: rfc3339(hook.created_at_ms),
            id: hook.id,
            url: hook.url,
            description: hook.description,
            secret: None,
        }
    }
}

pub async fn create(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Keys>,
    request: Result<Json<Object<WebhookRequest>>, JsonRejection>,
) -> Result<(StatusCode, Json<WebhookRecord>), ApiError> {
    state.limiter.check(account.id, Endpoint::Account).await?;
    let Json(Object(request)) = request.map_err(ApiError::from)?;
    if request.url.len() > MAX_URL {
        return Err(ApiError::BadRequest(format!(
            "url: at most {MAX_URL} bytes"
        )));
    }
    let description = request.description.unwrap_or_default();
    if description.len() > MAX_DESCRIPTION || description.chars().any(char::is_control) {
        return Err(ApiError::BadRequest(format!(
            "description: at most {MAX_DESCRIPTION} bytes, no control characters"
        )));
    }
    let mut events = Vec::new();
    for name in &request.events {
        let kind: EventType = name
            .parse()
            .map_err(|e| ApiError::BadRequest(format!("events: {e}")))?;
        if !events.contains(&kind) {
            events.push(kind);
        }
    }
    if events.is_empty() {
        let known: Vec<&str> = EventType::ALL.iter().map(|t| t.as_str()).collect();
        return Err(ApiError::BadRequest(format!(
            "events: name at least one event type: {}",
            known.join(", ")
        )));
    }
    let url = check_url(&request.url, state.service.config.webhook_allow_private)
        .await
        .map_err(ApiError::BadRequest)?;
    let secret = new_secret();
    let hook = Webhook {
        id: format!("wh_{}", random_name()),
        account_id: account.id,
        url: url.to_string(),
        events,
        description,
        secret: secret.clone(),
        created_at_ms: now_ms(),
    };
    let made = state.service.store.create_webhook(&hook).await?;
    tracing::info!(account = %account.name, webhook = %made.id, url = %made.url, "webhook created");
    let record = WebhookRecord {
        secret: Some(secret),
        ..made.into()
    };
    Ok((StatusCode::CREATED, Json(record)))
}

pub async fn list(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Keys>,
) -> Result<Json<Value>, ApiError> {
    state.limiter.check(account.id, Endpoint::Account).await?;
    let hooks = state.service.store.list_webhooks(account.id).await?;
    let hooks: Vec<WebhookRecord> = hooks.into_iter().map(Into::into).collect();
    Ok(Json(json!({ "webhooks": hooks })))
}

pub async fn delete(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Keys>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.limiter.check(account.id, Endpoint::Account).await?;
    match state.service.store.delete_webhook(account.id, &id).await? {
        Some(_) => Ok(StatusCode::NO_CONTENT),
        None => Err(not_found(&id)),
    }
}

fn not_found(id: &str) -> ApiError {
    ApiError::NotFound(format!("webhook {id} not found"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveriesParams {
    limit: Option<u32>,
    before: Option<i64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryRecord {
    id: i64,
    event_id: i64,
    #[serde(rename = "type")]
    kind: &'static str,
    status: &'static str,
    created_at: String,
    next_attempt_at: Option<String>,
    attempts: Vec<AttemptRecord>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptRecord {
    at: String,
    duration_ms: i64,
    response_status: Option<u16>,
    error: Option<String>,
}

impl From<Delivery> for DeliveryRecord {
    fn from(delivery: Delivery) -> Self {
        Self {
            id: delivery.id,
            event_id: delivery.event.id,
            kind: delivery.event.kind.as_str(),
            status: delivery.status.as_str(),
            created_at: rfc3339(delivery.created_at_ms),
            next_attempt_at: delivery.next_attempt_at_ms.map(rfc3339),
            attempts: delivery.attempts.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<Attempt> for AttemptRecord {
    fn from(attempt: Attempt) -> Self {
        Self {
            at: rfc3339(attempt.at_ms),
            duration_ms: attempt.duration_ms,
            response_status: attempt.response_status,
            error: attempt.error,
        }
    }
}

/// Newest first; `before` (a delivery's id) pages back.
pub async fn deliveries(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Keys>,
    Path(id): Path<String>,
    params: Result<Query<DeliveriesParams>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    state.limiter.check(account.id, Endpoint::Account).await?;
    let Query(params) = params.map_err(ApiError::from)?;
    let limit = params.limit.unwrap_or(DELIVERIES_PAGE);
    if !(1..=MAX_DELIVERIES_PAGE).contains(&limit) {
        return Err(ApiError::BadRequest(format!(
            "limit must be from 1 to {MAX_DELIVERIES_PAGE}"
        )));
    }
    let deliveries = state
        .service
        .store
        .webhook_deliveries(account.id, &id, params.before, limit)
        .await?
        .ok_or_else(|| not_found(&id))?;
    let records: Vec<DeliveryRecord> = deliveries.into_iter().map(Into::into).collect();
    Ok(Json(json!({ "deliveries": records })))
}

pub async fn retry(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Keys>,
    Path((id, delivery)): Path<(String, String)>,
) -> Result<(StatusCode, Json<DeliveryRecord>), ApiError> {
    state.limiter.check(account.id, Endpoint::Account).await?;
    let missing = || ApiError::NotFound(format!("delivery {delivery} of webhook {id} not found"));
    let delivery_id: i64 = delivery.parse().map_err(|_| missing())?;
    let queued = state
        .service
        .store
        .retry_delivery(account.id, &id, delivery_id)
        .await?
        .ok_or_else(missing)?;
    Ok((StatusCode::ACCEPTED, Json(queued.into())))
}
