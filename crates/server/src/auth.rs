//! Bearer-token authentication as an extractor: it runs before any body is read.

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;
use cairn_store::model::Account;
use cairn_store::tokens;

use crate::error::ApiError;
use crate::state::AppState;

/// The account a request's token belongs to.
pub struct Caller(pub Account);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let bearer = Bearer::from_request_parts(parts, state).await?;
        Ok(Self(bearer.account(state).await?))
    }
}

/// A request's well-formed token, not looked up yet: for a handler that looks it up while it
/// reads what the request is about (a TUS PATCH, where each read is a share of every chunk).
pub struct Bearer([u8; 32]);

impl Bearer {
    /// The account the token belongs to; `InvalidToken` for an unknown or revoked one.
    pub async fn account(&self, state: &AppState) -> Result<Account, ApiError> {
        state
            .service
            .store
            .account_for_token(&self.0)
            .await?
            .ok_or(ApiError::InvalidToken)
    }
}

impl FromRequestParts<AppState> for Bearer {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, ApiError> {
        let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
            return Err(ApiError::Unauthorized);
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.split_once(' '))
            // Authentication schemes are case-insensitive (RFC 9110 §11.1): `bearer` is Bearer.
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|t| tokens::well_formed(t))
            .ok_or(ApiError::InvalidToken)?;
        Ok(Self(tokens::hash(token)))
    }
}
