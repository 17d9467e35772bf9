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
        let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
            return Err(ApiError::Unauthorized);
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| tokens::well_formed(t))
            .ok_or(ApiError::InvalidToken)?;
        let account = state
            .store
            .account_for_token(&tokens::hash(token))
            .await?
            .ok_or(ApiError::InvalidToken)?;
        Ok(Self(account))
    }
}
