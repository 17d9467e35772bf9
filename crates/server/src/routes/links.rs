//! Upload host: `POST /api/upload-links` (scope `upload`) makes a link whose URLs take a few
//! uploads with no other credential (a multipart POST at `url`, a TUS upload at
//! `tusEndpoint`); `GET /api/upload-links` and `DELETE /api/upload-links/{id}` (scope
//! `keys`) list and revoke them. The link's secret is in its URLs only, stored hashed.

use std::collections::BTreeMap;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use cairn_store::access::{NewLink, Scope, UploadLink};
use cairn_store::model::ArchiveMode;
use cairn_store::model::KeyValues;
use cairn_store::{now_ms, random_name, tokens};
use serde::{Deserialize, Serialize};

use super::{rfc3339, Object};
use crate::auth::{need, Caller};
use crate::error::ApiError;
use crate::origin::RequestOrigin;
use crate::rate_limit::Endpoint;
use crate::state::AppState;

const DEFAULT_EXPIRY_SECS: u64 = 3600;
const MAX_EXPIRY_SECS: u64 = 7 * 24 * 3600;
const MAX_UPLOADS: u64 = 10_000;
const MAX_MIME_TYPES: usize = 32;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LinkRequest {
    expires_in: Option<u64>,
    max_bytes: Option<u64>,
    #[serde(default)]
    mime_types: Vec<String>,
    name: Option<String>,
    keyvalues: Option<BTreeMap<String, String>>,
    archive_mode: Option<String>,
    uploads: Option<u64>,
}

/// A link as the API shows it; its URLs only in the answer that made it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LinkRecord {
    id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tus_endpoint: Option<String>,
    created_at: String,
    expires_at: String,
    max_bytes: Option<u64>,
    mime_types: Vec<String>,
    name: Option<String>,
    keyvalues: serde_json::Value,
    archive_mode: Option<&'static str>,
    uploads: u64,
    uses: u64,
}

impl From<UploadLink> for LinkRecord {
    fn from(link: UploadLink) -> Self {
        Self {
            url: None,
            tus_endpoint: None,
            created_at: rfc3339(link.created_at_ms),
            expires_at: rfc3339(link.expires_at_ms),
            keyvalues: (&link.keyvalues).into(),
            archive_mode: link.archive_mode.map(ArchiveMode::as_str),
            id: link.id,
            max_bytes: link.max_bytes,
            mime_types: link.mime_types,
            name: link.name,
            uploads: link.uploads,
            uses: link.uses,
        }
    }
}

pub async fn create(
    State(state): State<AppState>,
    Caller(account, key, _): Caller<need::Upload>,
    headers: HeaderMap,
    request: Result<Json<Object<LinkRequest>>, JsonRejection>,
) -> Result<(StatusCode, Json<LinkRecord>), ApiError> {
    state.limiter.check(account.id, Endpoint::Upload).await?;
    let Json(Object(request)) = request.map_err(ApiError::from)?;
    let secret = tokens::generate_link();
    let mut link = new_link(request, now_ms(), account.id, key.id, secret.hash)?;
    // A link can send no more than the key that makes it.
    match (key.max_upload_bytes, link.max_bytes) {
        (Some(max), Some(asked)) if asked > max => {
            return Err(ApiError::Forbidden(format!(
                "maxBytes {asked} is more than this key may upload ({max} bytes)"
            )))
        }
        (Some(max), None) => link.max_bytes = Some(max),
        _ => {}
    }
    let origin = RequestOrigin::of(&state.config, &headers)?;
    let url = format!(
        "{}://{}/api/upload/link/{}",
        origin.scheme, origin.host, secret.secret
    );
    let made = state.service.store.create_link(&link).await?;
    tracing::info!(account = %account.name, link = %made.id, "upload link created");
    let record = LinkRecord {
        tus_endpoint: Some(format!("{url}/tus")),
        url: Some(url),
        ..made.into()
    };
    Ok((StatusCode::CREATED, Json(record)))
}

/// A request read into the link `created_by` makes for its account, its secret's `hash`
/// given; each field checked, naming what is wrong.
pub fn new_link(
    request: LinkRequest,
    now_ms: i64,
    account_id: i64,
    created_by: i64,
    hash: [u8; 32],
) -> Result<NewLink, ApiError> {
    let bad = |message: String| Err(ApiError::BadRequest(message));
    let expires_in = request.expires_in.unwrap_or(DEFAULT_EXPIRY_SECS);
    if !(1..=MAX_EXPIRY_SECS).contains(&expires_in) {
        return bad(format!(
            "expiresIn must be from 1 to {MAX_EXPIRY_SECS} seconds (7 days)"
        ));
    }
    let uploads = request.uploads.unwrap_or(1);
    if !(1..=MAX_UPLOADS).contains(&uploads) {
        return bad(format!("uploads must be from 1 to {MAX_UPLOADS}"));
    }
    if request
        .max_bytes
        .is_some_and(|n| n == 0 || n > i64::MAX as u64)
    {
        return bad(format!("maxBytes must be from 1 to {}", i64::MAX));
    }
    if request.mime_types.len() > MAX_MIME_TYPES {
        return bad(format!("at most {MAX_MIME_TYPES} mimeTypes are accepted"));
    }
    for mime_type in &request.mime_types {
        if !is_media_range(mime_type) {
            return bad(format!(
                "mimeTypes: {mime_type:?} is not a media type such as image/png or image/*"
            ));
        }
    }
    if let Some(name) = &request.name {
        super::upload::check_name(name)?;
    }
    let keyvalues = KeyValues::new(request.keyvalues.unwrap_or_default())
        .map_err(|e| ApiError::BadRequest(format!("keyvalues: {e}")))?;
    let archive_mode = request
        .archive_mode
        .as_deref()
        .map(str::parse::<ArchiveMode>)
        .transpose()
        .map_err(ApiError::BadRequest)?;
    Ok(NewLink {
        id: random_name(),
        hash,
        account_id,
        created_by,
        expires_at_ms: now_ms + expires_in as i64 * 1000,
        max_bytes: request.max_bytes,
        mime_types: request.mime_types,
        name: request.name,
        keyvalues,
        archive_mode,
        uploads,
    })
}

/// `type/subtype` or `type/*`, in the characters media types use.
fn is_media_range(text: &str) -> bool {
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    text.split_once('/')
        .is_some_and(|(kind, sub)| token(kind) && (sub == "*" || token(sub)))
}

#[derive(Serialize)]
pub struct LinkList {
    links: Vec<LinkRecord>,
}

/// The account's links to a `keys` key; to an upload-only key, the links it made (an app's
/// backend manages its own links with the key it makes them with).
pub async fn list(
    State(state): State<AppState>,
    caller: Caller<need::UploadOrKeys>,
) -> Result<Json<LinkList>, ApiError> {
    let Caller(account, ..) = &caller;
    state.limiter.check(account.id, Endpoint::Account).await?;
    let links = state.service.store.list_links(account.id).await?;
    Ok(Json(LinkList {
        links: (links.into_iter())
            .filter(|link| manages(&caller, link))
            .map(Into::into)
            .collect(),
    }))
}

/// `204`; `404` for a link the account does not have (or no longer has), or, to an
/// upload-only key, one it did not make.
pub async fn revoke(
    State(state): State<AppState>,
    caller: Caller<need::UploadOrKeys>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let Caller(account, ..) = &caller;
    state.limiter.check(account.id, Endpoint::Account).await?;
    let not_found = || ApiError::NotFound(format!("upload link {id} not found"));
    let store = &state.service.store;
    if !caller.allows(Scope::Keys) {
        let link = store.link(&id).await?.ok_or_else(not_found)?;
        if link.account_id != account.id || !manages(&caller, &link) {
            return Err(not_found());
        }
    }
    store
        .revoke_link(account.id, &id)
        .await?
        .ok_or_else(not_found)?;
    tracing::info!(account = %account.name, link = %id, "upload link revoked");
    Ok(StatusCode::NO_CONTENT)
}

/// Whether the caller's key may see and revoke `link`: any of the account's with `keys`, the
/// ones it made with `upload` alone.
fn manages(caller: &Caller<need::UploadOrKeys>, link: &UploadLink) -> bool {
    caller.allows(Scope::Keys) || link.created_by == caller.1.id
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: serde_json::Value) -> Result<NewLink, String> {
        let request: LinkRequest = serde_json::from_value(json).map_err(|e| e.to_string())?;
        new_link(request, 1_000_000, 1, 1, [0; 32]).map_err(|e| e.to_string())
    }

    #[test]
    fn a_link_request_is_read_with_every_limit_checked() {
        let link = request(serde_json::json!({})).unwrap();
        assert_eq!(
            (link.expires_at_ms, link.uploads),
            (1_000_000 + 3_600_000, 1)
        );
        let link = request(serde_json::json!({
            "expiresIn": 60, "maxBytes": 9, "mimeTypes": ["image/*", "application/pdf"],
            "name": "avatar", "keyvalues": {"user": "7"}, "archiveMode": "preserve", "uploads": 2
        }))
        .unwrap();
        assert_eq!(link.archive_mode, Some(ArchiveMode::Preserve));
        assert_eq!(link.keyvalues.to_json(), r#"{"user":"7"}"#);
        for (bad, says) in [
            (serde_json::json!({"expiresIn": 604_801}), "7 days"),
            (serde_json::json!({"expiresIn": 0}), "expiresIn"),
            (serde_json::json!({"uploads": 0}), "uploads"),
            (serde_json::json!({"maxBytes": 0}), "maxBytes"),
            (serde_json::json!({"maxBytes": u64::MAX}), "maxBytes"),
            (serde_json::json!({"mimeTypes": ["images"]}), "media type"),
            (serde_json::json!({"mimeTypes": ["*/*;q=1"]}), "media type"),
            (
                serde_json::json!({"archiveMode": "explode"}),
                "archive_mode",
            ),
            (
                serde_json::json!({"keyvalues": {"k": "v".repeat(257)}}),
                "256",
            ),
            (
                serde_json::json!({"keyvalues": {"k": 1}}),
                "expected a string",
            ),
            (serde_json::json!({"url": "x"}), "url"),
        ] {
            let error = request(bad.clone()).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }
}
