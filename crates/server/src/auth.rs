//! Who is calling and what they may do, decided before any body is read: a key (its scopes,
//! expiry, browser origins, uses and upload size, see `cairn_store::access`) or an upload
//! link (a capability for a few uploads).
//!
//! A handler names the scope it needs in its extractor's type, `Caller<need::Read>`, so a
//! route cannot reach an account without saying what it needs; README "Scopes" is the table,
//! and `tests/authorization.rs` checks every route against every scope.

use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use cairn_store::access::{ApiKey, UploadLink};
use cairn_store::access::{Scope, KEY_USE_RESOLUTION_MS};
use cairn_store::model::{Account, TusUpload};
use cairn_store::{now_ms, tokens};

use crate::error::ApiError;
use crate::state::AppState;

/// The scopes a route accepts (any one of them).
pub trait Need: Send + Sync {
    const SCOPES: &'static [Scope];
}

/// The needs routes have, as types.
pub mod need {
    use super::{Need, Scope};

    macro_rules! needs {
        ($($(#[$doc:meta])* $name:ident: $($scope:ident)|*;)*) => {$(
            $(#[$doc])*
            pub struct $name;
            impl Need for $name {
                const SCOPES: &'static [Scope] = &[$(Scope::$scope),*];
            }
        )*};
    }

    needs! {
        Upload: Upload;
        Read: Read;
        Delete: Delete;
        Pins: Pins;
        Keys: Keys;
        Names: Names;
        /// Names are read with either.
        NamesOrRead: Names | Read;
        /// The upload limit and the operations: an upload-only key reads those it began.
        UploadOrRead: Upload | Read;
        /// Upload links: an upload-only key lists and revokes those it made.
        UploadOrKeys: Upload | Keys;
        /// Any live key (what the node is, which holds nothing of the account's).
        AnyScope: Upload | Read | Delete | Pins | Keys | Names;
    }
}

/// A caller whose key allows `N`: its account and its key.
pub struct Caller<N: Need>(pub Account, pub ApiKey, pub PhantomData<N>);

impl<N: Need> Caller<N> {
    pub fn allows(&self, scope: Scope) -> bool {
        self.1.scopes.allow(scope)
    }
}

impl<N: Need> FromRequestParts<AppState> for Caller<N> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        Bearer::from_request_parts(parts, state)
            .await?
            .caller(state)
            .await
    }
}

/// A request's well-formed token, not looked up yet: for a handler that looks it up while it
/// reads what the request is about (a TUS PATCH, where each read is a share of every chunk).
pub struct Bearer {
    hash: [u8; 32],
    origin: Option<String>,
    cors: Option<KeyOrigins>,
}

impl Bearer {
    /// The account and key, if the key is live, unexpired, used from an origin it allows and
    /// has a scope `N` accepts.
    pub async fn caller<N: Need>(&self, state: &AppState) -> Result<Caller<N>, ApiError> {
        let (account, key) = state
            .service
            .store
            .key_for_token(&self.hash)
            .await?
            .ok_or(ApiError::InvalidToken)?;
        let now = now_ms();
        if key.expired(now) {
            return Err(ApiError::TokenExpired);
        }
        if !key.origins.is_empty() {
            if let Some(cors) = &self.cors {
                let _ = cors.0.set(key.origins.clone());
            }
            let allowed = (self.origin.as_ref()).is_some_and(|origin| key.origins.contains(origin));
            if !allowed {
                return Err(ApiError::OriginNotAllowed(format!(
                    "this key may only be used from {}; the request came from {}",
                    key.origins.join(", "),
                    self.origin.as_deref().unwrap_or("no Origin")
                )));
            }
        }
        if !N::SCOPES.iter().any(|scope| key.scopes.allow(*scope)) {
            let names: Vec<&str> = N::SCOPES.iter().map(|s| s.as_str()).collect();
            return Err(ApiError::Forbidden(format!(
                "this key's scopes ({}) do not include {}",
                key.scopes.to_text(),
                names.join(" or ")
            )));
        }
        if key
            .last_used_at_ms
            .is_none_or(|at| at < now - KEY_USE_RESOLUTION_MS)
        {
            // Written off the request's path: the answer does not wait on it.
            let (store, id) = (state.service.store.clone(), key.id);
            tokio::spawn(async move {
                if let Err(e) = store.key_seen(id, now).await {
                    tracing::warn!(error = %e, key = id, "recording a key's use failed");
                }
            });
        }
        Ok(Caller(account, key, PhantomData))
    }
}

impl FromRequestParts<AppState> for Bearer {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, ApiError> {
        let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
            return Err(ApiError::Unauthorized);
        };
        // Authentication schemes are case-insensitive (RFC 9110 §11.1): `bearer` is Bearer. A
        // header without the scheme (the token alone, `Basic`) is told how to send one; with
        // it, a token that is not one is `invalid_token` like any other.
        let scheme = value
            .as_bytes()
            .split(|&b| b == b' ')
            .next()
            .unwrap_or_default();
        if !scheme.eq_ignore_ascii_case(b"bearer") {
            return Err(ApiError::NotBearer);
        }
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.split_once(' '))
            .map(|(_, token)| token.trim())
            .ok_or(ApiError::InvalidToken)?;
        Self::of(token, parts)
    }
}

impl Bearer {
    /// `token`, however the request carried it, if it is well formed.
    fn of(token: &str, parts: &Parts) -> Result<Self, ApiError> {
        if !tokens::well_formed(token) {
            return Err(ApiError::InvalidToken);
        }
        Ok(Self {
            hash: tokens::hash(token),
            origin: request_origin(&parts.headers),
            cors: parts.extensions.get::<KeyOrigins>().cloned(),
        })
    }
}

/// A caller of an event stream: by the `Authorization` header, or by an `access_token` query
/// parameter (RFC 6750 §2.3) where there is none, since a browser's `EventSource` cannot set
/// headers. Only the stream routes take a token in the URL, where it may be logged by
/// proxies; a short-lived `read` key is the one to put there.
pub struct StreamCaller<N: Need>(pub Caller<N>);

impl<N: Need> FromRequestParts<AppState> for StreamCaller<N> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if parts.headers.contains_key(header::AUTHORIZATION) {
            return Ok(Self(Caller::from_request_parts(parts, state).await?));
        }
        #[derive(serde::Deserialize)]
        struct AccessToken {
            access_token: Option<String>,
        }
        let token = Query::<AccessToken>::try_from_uri(&parts.uri)
            .ok()
            .and_then(|Query(query)| query.access_token)
            .ok_or(ApiError::Unauthorized)?;
        Ok(Self(Bearer::of(&token, parts)?.caller(state).await?))
    }
}

fn request_origin(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Where a key limited to origins tells the CORS answer which origins to name: put in a
/// request's extensions by `app.rs`, filled by [`Bearer::caller`].
#[derive(Clone, Default)]
pub struct KeyOrigins(pub Arc<OnceLock<Vec<String>>>);

/// Whoever sends an upload: a key with the `upload` scope, or an upload link.
pub enum Uploader {
    Key(Account, ApiKey),
    Link(Account, UploadLink),
}

impl From<Caller<need::Upload>> for Uploader {
    fn from(Caller(account, key, _): Caller<need::Upload>) -> Self {
        Self::Key(account, key)
    }
}

impl Uploader {
    /// The link whose URL carries `secret`, if it may still begin an upload.
    pub async fn through_link(state: &AppState, secret: &str) -> Result<Self, ApiError> {
        if !tokens::well_formed_link(secret) {
            return Err(ApiError::InvalidLink);
        }
        let store = &state.service.store;
        let link = store
            .link_for_secret(&tokens::hash(secret))
            .await?
            .ok_or(ApiError::InvalidLink)?;
        if link.expired(now_ms()) {
            return Err(ApiError::LinkExpired);
        }
        let account = store
            .account_by_id(link.account_id)
            .await?
            .ok_or(ApiError::InvalidLink)?;
        Ok(Self::Link(account, link))
    }

    pub fn account(&self) -> &Account {
        match self {
            Self::Key(account, _) | Self::Link(account, _) => account,
        }
    }

    /// The largest upload this key or link may send, if it sets one.
    pub fn max_bytes(&self) -> Option<u64> {
        match self {
            Self::Key(_, key) => key.max_upload_bytes,
            Self::Link(_, link) => link.max_bytes,
        }
    }

    /// `413` when `length` (declared, or received so far) is over [`Self::max_bytes`].
    pub fn check_size(&self, length: u64) -> Result<(), ApiError> {
        match self.max_bytes() {
            Some(max) if length > max => Err(ApiError::PayloadTooLarge(format!(
                "the upload is larger than this {} allows ({max} bytes)",
                self.kind()
            ))),
            _ => Ok(()),
        }
    }

    /// `415` when a link does not take an upload: what its bytes are (`detected`, see
    /// `cairn_service::detect::media_type`), or what its uploader declared it is. A declared
    /// type may narrow what a link takes, never widen it: the bytes are always checked too.
    /// The generic `application/octet-stream` declares nothing.
    pub fn check_type(
        &self,
        detected: Option<&str>,
        declared: Option<&str>,
    ) -> Result<(), ApiError> {
        let Self::Link(_, link) = self else {
            return Ok(());
        };
        let takes = link.mime_types.join(", ");
        if let Some(detected) = detected.filter(|t| !link.accepts_type(t)) {
            return Err(ApiError::UnsupportedMediaType(format!(
                "this link takes {takes} uploads, and the bytes sent are {detected}"
            )));
        }
        let declared = declared.filter(|t| !t.is_empty() && *t != "application/octet-stream");
        if let Some(declared) = declared.filter(|t| !link.accepts_type(t)) {
            return Err(ApiError::UnsupportedMediaType(format!(
                "this link takes {takes} uploads, not {declared:?}"
            )));
        }
        Ok(())
    }

    /// Refuse at once a key or link whose uses are spent, as last read. The use itself is
    /// counted by the store with the upload's record, so that a try refused on the way (too
    /// large, cut off) uses nothing and two racing for a last use cannot both have it.
    pub fn check_uses(&self) -> Result<(), ApiError> {
        match self {
            Self::Key(_, key) if key.max_uses.is_some_and(|max| key.uses >= max) => {
                Err(uses_exhausted(key))
            }
            Self::Link(_, link) if link.uses >= link.uploads => Err(link_used(link)),
            _ => Ok(()),
        }
    }

    pub fn key_id(&self) -> Option<i64> {
        match self {
            Self::Key(_, key) => Some(key.id),
            Self::Link(_, link) => Some(link.created_by),
        }
    }

    pub fn link_id(&self) -> Option<String> {
        match self {
            Self::Key(..) => None,
            Self::Link(_, link) => Some(link.id.clone()),
        }
    }

    /// The link, whose name, key-values and archive mode its uploads take; `None` for a key,
    /// whose requests say.
    pub fn link(&self) -> Option<&UploadLink> {
        match self {
            Self::Link(_, link) => Some(link),
            Self::Key(..) => None,
        }
    }

    /// Whose limits these are, as messages name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Key(..) => "key",
            Self::Link(..) => "link",
        }
    }
}

fn uses_exhausted(key: &ApiKey) -> ApiError {
    ApiError::UsesExhausted(format!(
        "this key has begun the {} uploads it may",
        key.max_uses.unwrap_or_default()
    ))
}

fn link_used(link: &UploadLink) -> ApiError {
    ApiError::LinkUsed(format!(
        "this link has taken the {} upload(s) it allows",
        link.uploads
    ))
}

/// Who may touch an existing TUS upload: an `upload` key of its account (by its bearer
/// token), or, with no credential at all, anyone holding the URL of an upload made through a
/// link that is still live (as tus-js-client and Uppy follow `Location` with no headers).
pub enum UploadAccess {
    Key(Bearer),
    Link,
}

impl FromRequestParts<AppState> for UploadAccess {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if parts.headers.contains_key(header::AUTHORIZATION) {
            return Ok(Self::Key(Bearer::from_request_parts(parts, state).await?));
        }
        Ok(Self::Link)
    }
}

impl UploadAccess {
    /// The caller's account and the upload's record, read at once where they can be: each
    /// read is a round trip that every PATCH of an upload waits for. Whether the record is
    /// the account's is the caller's to check (another account's is a `404`).
    pub async fn account_and_upload(
        &self,
        state: &AppState,
        id: &str,
    ) -> Result<(Account, Option<TusUpload>), ApiError> {
        let store = &state.service.store;
        match self {
            Self::Key(bearer) => {
                let (caller, record) =
                    tokio::join!(bearer.caller::<need::Upload>(state), store.tus_upload(id));
                Ok((caller?.0, record?))
            }
            Self::Link => {
                let record = store.tus_upload(id).await?;
                let Some(link_id) = record.as_ref().and_then(|r| r.link_id.as_deref()) else {
                    return Err(ApiError::Unauthorized);
                };
                let link = store.link(link_id).await?.ok_or(ApiError::InvalidLink)?;
                let account = store
                    .account_by_id(link.account_id)
                    .await?
                    .ok_or(ApiError::InvalidLink)?;
                Ok((account, record))
            }
        }
    }
}
