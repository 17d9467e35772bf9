//! Account host: `POST /api/keys` (a key limited to scopes, an expiry, a number of uploads,
//! browser origins and an upload size; its secret shown once), `GET /api/keys` and
//! `DELETE /api/keys/{id}`. A key can only make keys that can do no more than it can.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use cairn_store::access::{ApiKey, NewKey, Scope, Scopes};
use cairn_store::{now_ms, tokens};
use serde::{Deserialize, Serialize};

use super::{parse_rfc3339, rfc3339, Object};
use crate::auth::{need, Caller};
use crate::error::ApiError;
use crate::rate_limit::Endpoint;
use crate::state::AppState;

/// Keys an account may hold at once: each is a row every request could look up.
const MAX_KEYS: usize = 100;
const MAX_NAME_CHARS: usize = 128;
const MAX_ORIGINS: usize = 20;
/// A hundred years: longer is "never", which is no expiry at all.
const MAX_EXPIRES_IN: u64 = 100 * 365 * 24 * 3600;
/// What the store keeps a count or size in (a signed 64-bit integer).
const MAX_NUMBER: u64 = i64::MAX as u64;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KeyRequest {
    #[serde(default)]
    name: String,
    scopes: Vec<String>,
    expires_in: Option<u64>,
    expires_at: Option<String>,
    max_uses: Option<u64>,
    #[serde(default)]
    origins: Vec<String>,
    max_upload_bytes: Option<u64>,
}

/// A key as the API shows it; `key`, its secret, only in the answer that made it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyRecord {
    id: i64,
    name: String,
    prefix: String,
    scopes: Vec<&'static str>,
    created_at: String,
    expires_at: Option<String>,
    max_uses: Option<u64>,
    uses: u64,
    last_used_at: Option<String>,
    origins: Vec<String>,
    max_upload_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<String>,
}

impl From<ApiKey> for KeyRecord {
    fn from(key: ApiKey) -> Self {
        Self {
            id: key.id,
            name: key.name,
            prefix: key.prefix,
            scopes: key.scopes.iter().map(Scope::as_str).collect(),
            created_at: rfc3339(key.created_at_ms),
            expires_at: key.expires_at_ms.map(rfc3339),
            max_uses: key.max_uses,
            uses: key.uses,
            last_used_at: key.last_used_at_ms.map(rfc3339),
            origins: key.origins,
            max_upload_bytes: key.max_upload_bytes,
            key: None,
        }
    }
}

pub async fn create(
    State(state): State<AppState>,
    Caller(account, creator, _): Caller<need::Keys>,
    request: Result<Json<Object<KeyRequest>>, JsonRejection>,
) -> Result<(StatusCode, Json<KeyRecord>), ApiError> {
    state.limiter.check(account.id, Endpoint::Account).await?;
    let Json(Object(request)) = request.map_err(ApiError::from)?;
    let new = new_key(account.id, request, now_ms())?;
    if !creator.scopes.cover(new.scopes) {
        return Err(ApiError::Forbidden(format!(
            "a key can only give the scopes it has ({}), not {}",
            creator.scopes.to_text(),
            new.scopes.to_text()
        )));
    }
    if let Some(limit) = creator.expires_at_ms {
        if new.expires_at_ms.is_none_or(|at| at > limit) {
            return Err(ApiError::Forbidden(format!(
                "a key cannot outlive the key that makes it (which expires at {})",
                rfc3339(limit)
            )));
        }
    }
    let store = &state.service.store;
    if store.list_keys(account.id).await?.len() >= MAX_KEYS {
        return Err(ApiError::Conflict(format!(
            "the account has {MAX_KEYS} keys, the most it may hold; revoke one first"
        )));
    }
    let secret = tokens::generate();
    let key = store.create_key(&new, &secret.hash, &secret.prefix).await?;
    tracing::info!(account = %account.name, key = key.id, scopes = %key.scopes.to_text(), "key created");
    let record = KeyRecord {
        key: Some(secret.secret),
        ..key.into()
    };
    Ok((StatusCode::CREATED, Json(record)))
}

/// A request read into a key, each field checked, naming what is wrong.
pub fn new_key(account_id: i64, request: KeyRequest, now_ms: i64) -> Result<NewKey, ApiError> {
    let bad = |message: String| Err(ApiError::BadRequest(message));
    if request.name.chars().count() > MAX_NAME_CHARS {
        return bad(format!("name is longer than {MAX_NAME_CHARS} characters"));
    }
    let scopes: Scopes = request
        .scopes
        .join(",")
        .parse()
        .map_err(ApiError::BadRequest)?;
    let expires_at_ms = match (request.expires_in, request.expires_at.as_deref()) {
        (Some(_), Some(_)) => return bad("send expiresIn or expiresAt, not both".into()),
        (Some(seconds), None) if !(1..=MAX_EXPIRES_IN).contains(&seconds) => {
            return bad(format!(
                "expiresIn must be from 1 to {MAX_EXPIRES_IN} seconds (100 years); \
                 leave it out for a key that does not expire"
            ))
        }
        (Some(seconds), None) => Some(now_ms.saturating_add(seconds.saturating_mul(1000) as i64)),
        (None, Some(text)) => match parse_rfc3339(text) {
            Some(at) if at > now_ms.saturating_add(MAX_EXPIRES_IN as i64 * 1000) => {
                return bad(format!("expiresAt {text:?} is more than 100 years away"))
            }
            Some(at) if at > now_ms => Some(at),
            Some(_) => return bad(format!("expiresAt {text:?} is in the past")),
            None => return bad(format!("expiresAt {text:?} is not an RFC 3339 time")),
        },
        (None, None) => None,
    };
    for (name, value) in [
        ("maxUses", request.max_uses),
        ("maxUploadBytes", request.max_upload_bytes),
    ] {
        if value.is_some_and(|n| !(1..=MAX_NUMBER).contains(&n)) {
            return bad(format!("{name} must be from 1 to {MAX_NUMBER}"));
        }
    }
    if request.origins.len() > MAX_ORIGINS {
        return bad(format!("at most {MAX_ORIGINS} origins are accepted"));
    }
    for origin in &request.origins {
        if !is_origin(origin) {
            return bad(format!(
                "origin {origin:?} is not a browser origin (scheme://host[:port], no path)"
            ));
        }
    }
    Ok(NewKey {
        account_id,
        name: request.name,
        scopes,
        expires_at_ms,
        max_uses: request.max_uses,
        origins: request.origins,
        max_upload_bytes: request.max_upload_bytes,
    })
}

/// An origin as browsers send it in `Origin`: `http(s)://host[:port]`, nothing after.
fn is_origin(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once("://") else {
        return false;
    };
    matches!(scheme, "http" | "https") && crate::origin::is_plain_host(rest)
}

#[derive(Serialize)]
pub struct KeyList {
    keys: Vec<KeyRecord>,
}

pub async fn list(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Keys>,
) -> Result<Json<KeyList>, ApiError> {
    state.limiter.check(account.id, Endpoint::Account).await?;
    let keys = state.service.store.list_keys(account.id).await?;
    Ok(Json(KeyList {
        keys: keys.into_iter().map(Into::into).collect(),
    }))
}

/// `204`; `404` for a key the account does not have (or no longer has).
pub async fn revoke(
    State(state): State<AppState>,
    Caller(account, ..): Caller<need::Keys>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.limiter.check(account.id, Endpoint::Account).await?;
    let not_found = || ApiError::NotFound(format!("key {id} not found"));
    let id_number = id.parse::<i64>().map_err(|_| not_found())?;
    let revoked = state
        .service
        .store
        .revoke_key(account.id, id_number)
        .await?
        .ok_or_else(not_found)?;
    tracing::info!(account = %account.name, key = revoked.id, "key revoked");
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: serde_json::Value) -> Result<NewKey, String> {
        let request: KeyRequest = serde_json::from_value(json).map_err(|e| e.to_string())?;
        new_key(1, request, 1_000_000).map_err(|e| e.to_string())
    }

    #[test]
    fn a_key_request_is_read_with_every_limit_checked() {
        let key = request(serde_json::json!({
            "name": "ci", "scopes": ["upload", "read"], "expiresIn": 60, "maxUses": 3,
            "origins": ["https://app.example", "http://127.0.0.1:5173"], "maxUploadBytes": 10
        }))
        .unwrap();
        assert_eq!(key.scopes.to_text(), "upload,read");
        assert_eq!(key.expires_at_ms, Some(1_060_000));
        assert_eq!((key.max_uses, key.max_upload_bytes), (Some(3), Some(10)));
        for (bad, says) in [
            (serde_json::json!({"scopes": []}), "at least one scope"),
            (serde_json::json!({"scopes": ["admin"]}), "admin"),
            (
                serde_json::json!({"scopes": ["read"], "expiresIn": 0}),
                "expiresIn",
            ),
            (
                serde_json::json!({"scopes": ["read"], "expiresIn": 5, "expiresAt": "2030-01-01T00:00:00Z"}),
                "not both",
            ),
            (
                serde_json::json!({"scopes": ["read"], "expiresAt": "1970-01-01T00:00:00Z"}),
                "past",
            ),
            (
                serde_json::json!({"scopes": ["read"], "maxUses": 0}),
                "maxUses",
            ),
            (
                serde_json::json!({"scopes": ["read"], "maxUses": u64::MAX}),
                "maxUses",
            ),
            (
                serde_json::json!({"scopes": ["read"], "expiresIn": u64::MAX}),
                "100 years",
            ),
            (
                serde_json::json!({"scopes": ["read"], "expiresAt": "9999-12-31T00:00:00Z"}),
                "100 years",
            ),
            (
                serde_json::json!({"scopes": ["read"], "origins": ["https://a.example/path"]}),
                "origin",
            ),
            (
                serde_json::json!({"scopes": ["read"], "origins": ["*"]}),
                "origin",
            ),
            (
                serde_json::json!({"scopes": ["read"], "colour": "blue"}),
                "colour",
            ),
        ] {
            let error = request(bad.clone()).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }
}
