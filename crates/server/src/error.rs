//! The API's errors: one enum, mapped to status and code in exactly one `match`.
//!
//! Every error body is `{"error": code, "message": text}` (`docs/contract.md` "Errors"). Internal causes
//! are logged, never sent.

use axum::extract::multipart::MultipartRejection;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use cairn_service::names::NameError;
use cairn_store::model::ErrorCode;
use cairn_store::{Spent, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("an Authorization: Bearer token is required")]
    Unauthorized,
    #[error("the token is not valid or has been revoked")]
    InvalidToken,
    /// An `Authorization` header holding no Bearer token: a bare token, or another scheme.
    #[error(
        "the Authorization header must be `Bearer <token>`: the word Bearer, a space, then the \
         token"
    )]
    NotBearer,
    #[error("the key has expired")]
    TokenExpired,
    /// A key limited to browser origins, used from another (or from none).
    #[error("{0}")]
    OriginNotAllowed(String),
    /// A key limited to a number of uploads has begun them all.
    #[error("{0}")]
    UsesExhausted(String),
    #[error("the upload link is not valid or has been revoked")]
    InvalidLink,
    #[error("the upload link has expired")]
    LinkExpired,
    #[error("{0}")]
    LinkUsed(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    /// A format the content is not in, which the gateway does not convert to (IPIP-0524).
    #[error("{0}")]
    NotAcceptable(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Gone(String),
    #[error("{0}")]
    PreconditionFailed(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("{0}")]
    Locked(String),
    #[error("{0}")]
    ChecksumMismatch(String),
    #[error("the requested range is outside the {0} bytes of the file")]
    RangeNotSatisfiable(u64),
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error("{0}")]
    UriTooLong(String),
    #[error("{0}")]
    HeadersTooLarge(String),
    #[error("{0}")]
    InvalidArchive(String),
    #[error("{0}")]
    QuotaExceeded(String),
    /// Stored content breaks a UnixFS rule (found while reading it).
    #[error("{0}")]
    InvalidDag(String),
    /// Reading the content would take more than one request may (depth, blocks, bytes).
    #[error("{0}")]
    DagTooLarge(String),
    /// The disk (or another store) is full; what was stored before is intact.
    #[error("{0}")]
    InsufficientStorage(String),
    #[error("too many {} requests: at most {} per {} s; retry after {} s", .0.endpoint, .0.quota, .0.window_secs, .0.retry_after_secs)]
    RateLimited(RateLimitExceeded),
    #[error("internal error")]
    Internal(String),
    #[error("{0}")]
    Unavailable(String),
    /// What the request asks for is well formed, but this server does not do it.
    #[error("{0}")]
    NotImplemented(String),
    /// What another party published cannot be followed (a name pointing where the gateway
    /// does not go).
    #[error("{0}")]
    BadGateway(String),
}

/// The details a 429 response carries (`rate_limit.rs` decides them).
#[derive(Debug, Clone)]
pub struct RateLimitExceeded {
    pub endpoint: &'static str,
    pub quota: u32,
    pub window_secs: u64,
    pub retry_after_secs: u64,
}

impl ApiError {
    /// Status and stable code, decided here and nowhere else.
    pub fn status_and_code(&self) -> (StatusCode, ErrorCode) {
        match self {
            Self::BadRequest(_) => (StatusCode::BAD_REQUEST, ErrorCode::BadRequest),
            Self::Unauthorized => (StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized),
            Self::InvalidToken => (StatusCode::UNAUTHORIZED, ErrorCode::InvalidToken),
            Self::NotBearer => (StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized),
            Self::TokenExpired => (StatusCode::UNAUTHORIZED, ErrorCode::TokenExpired),
            Self::OriginNotAllowed(_) => (StatusCode::FORBIDDEN, ErrorCode::OriginNotAllowed),
            Self::UsesExhausted(_) => (StatusCode::FORBIDDEN, ErrorCode::UsesExhausted),
            Self::InvalidLink => (StatusCode::UNAUTHORIZED, ErrorCode::InvalidLink),
            Self::LinkExpired => (StatusCode::UNAUTHORIZED, ErrorCode::LinkExpired),
            Self::LinkUsed(_) => (StatusCode::FORBIDDEN, ErrorCode::LinkUsed),
            Self::NotFound(_) => (StatusCode::NOT_FOUND, ErrorCode::NotFound),
            Self::MethodNotAllowed(_) => {
                (StatusCode::METHOD_NOT_ALLOWED, ErrorCode::MethodNotAllowed)
            }
            Self::NotAcceptable(_) => (StatusCode::NOT_ACCEPTABLE, ErrorCode::NotAcceptable),
            // TUS: PATCH on a final concatenated upload (not in `docs/contract.md`'s table, which predates it).
            Self::Forbidden(_) => (StatusCode::FORBIDDEN, ErrorCode::Forbidden),
            Self::Conflict(_) => (StatusCode::CONFLICT, ErrorCode::Conflict),
            Self::Gone(_) => (StatusCode::GONE, ErrorCode::Gone),
            Self::PreconditionFailed(_) => (
                StatusCode::PRECONDITION_FAILED,
                ErrorCode::PreconditionFailed,
            ),
            Self::UnsupportedMediaType(_) => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                ErrorCode::UnsupportedMediaType,
            ),
            Self::Locked(_) => (StatusCode::LOCKED, ErrorCode::Locked),
            Self::ChecksumMismatch(_) => (checksum_mismatch_status(), ErrorCode::ChecksumMismatch),
            Self::RangeNotSatisfiable(_) => (
                StatusCode::RANGE_NOT_SATISFIABLE,
                ErrorCode::RangeNotSatisfiable,
            ),
            Self::PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, ErrorCode::PayloadTooLarge),
            Self::UriTooLong(_) => (StatusCode::URI_TOO_LONG, ErrorCode::UriTooLong),
            Self::HeadersTooLarge(_) => (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                ErrorCode::HeadersTooLarge,
            ),
            Self::InvalidArchive(_) => {
                (StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::InvalidArchive)
            }
            Self::QuotaExceeded(_) => (StatusCode::FORBIDDEN, ErrorCode::QuotaExceeded),
            Self::InvalidDag(_) => (StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::InvalidDag),
            Self::DagTooLarge(_) => (StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::DagTooLarge),
            Self::InsufficientStorage(_) => (
                StatusCode::INSUFFICIENT_STORAGE,
                ErrorCode::InsufficientStorage,
            ),
            Self::RateLimited(_) => (StatusCode::TOO_MANY_REQUESTS, ErrorCode::RateLimited),
            Self::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal),
            Self::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, ErrorCode::Unavailable),
            Self::BadGateway(_) => (StatusCode::BAD_GATEWAY, ErrorCode::BadGateway),
            Self::NotImplemented(_) => (StatusCode::NOT_IMPLEMENTED, ErrorCode::NotImplemented),
        }
    }

    pub fn internal(cause: impl std::fmt::Display) -> Self {
        Self::Internal(cause.to_string())
    }

    /// A failure of our own storage: a full disk (or quota), or a store that cannot be reached
    /// right now, is worth telling the client, which may retry; anything else is internal.
    pub fn storage(e: std::io::Error) -> Self {
        if cairn_store::is_storage_full(&e) {
            tracing::error!(error = %e, "storage is full");
            Self::InsufficientStorage(STORAGE_FULL.into())
        } else if cairn_store::is_unavailable(&e) {
            tracing::error!(error = %e, "a store is unavailable");
            Self::Unavailable(STORAGE_UNAVAILABLE.into())
        } else {
            Self::internal(e)
        }
    }

    /// The error for a status answered before or outside our handlers (by hyper's parser, an
    /// extractor's rejection, a layer), so that its body is the contract's JSON too.
    pub fn for_status(status: StatusCode, message: String) -> Self {
        let message = if message.trim().is_empty() {
            status
                .canonical_reason()
                .unwrap_or("the request failed")
                .to_owned()
        } else {
            message
        };
        match status {
            StatusCode::UNAUTHORIZED => Self::Unauthorized,
            StatusCode::NOT_FOUND => Self::NotFound(message),
            StatusCode::METHOD_NOT_ALLOWED => Self::MethodNotAllowed(message),
            StatusCode::PAYLOAD_TOO_LARGE => Self::PayloadTooLarge(message),
            StatusCode::URI_TOO_LONG => Self::UriTooLong(message),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => Self::UnsupportedMediaType(message),
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => Self::HeadersTooLarge(message),
            StatusCode::SERVICE_UNAVAILABLE => Self::Unavailable(message),
            status if status.is_client_error() => Self::BadRequest(message),
            _ => Self::Internal(message),
        }
    }
}

/// An error `response` with its body made anew by `body` from its status and old body, its
/// status and other headers (`WWW-Authenticate`, `Retry-After`) kept: how the layers that give
/// every error one JSON shape rewrite the answers they did not write themselves.
pub async fn rewrite_error_body(
    response: Response,
    body: impl FnOnce(StatusCode, &[u8]) -> Response,
) -> Response {
    let status = response.status();
    let (parts, old_body) = response.into_parts();
    let old = axum::body::to_bytes(old_body, 64 * 1024)
        .await
        .unwrap_or_default();
    let mut fixed = body(status, &old);
    *fixed.status_mut() = status;
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            fixed.headers_mut().insert(name, value.clone());
        }
    }
    fixed
}

const STORAGE_FULL: &str =
    "the server's storage is full; nothing more was stored. Retry once space is freed";

const STORAGE_UNAVAILABLE: &str = "the server's storage is unavailable; retry shortly";

/// 460, the status TUS's checksum extension uses for a mismatch (not an IANA status).
fn checksum_mismatch_status() -> StatusCode {
    StatusCode::from_u16(460).unwrap_or(StatusCode::BAD_REQUEST)
}

/// What axum's extractors refuse, in our words: which part of the request, and what it must
/// be. Their own texts name the framework ("Failed to deserialize the JSON body into the target
/// type: ..."); what follows it is serde's, which names the field, and is kept.
impl From<JsonRejection> for ApiError {
    fn from(e: JsonRejection) -> Self {
        let text = e.body_text();
        Self::BadRequest(match e {
            JsonRejection::MissingJsonContentType(_) => {
                "the body must be JSON, sent with `Content-Type: application/json`".to_owned()
            }
            JsonRejection::JsonSyntaxError(_) => {
                format!("the body is not valid JSON: {}", detail(&text))
            }
            JsonRejection::JsonDataError(_) => {
                format!(
                    "the body's JSON does not fit this request: {}",
                    detail(&text)
                )
            }
            _ => format!("the body could not be read: {}", detail(&text)),
        })
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> Self {
        let text = e.body_text();
        Self::BadRequest(format!(
            "the query string does not fit this request: {}",
            detail(&text)
        ))
    }
}

impl From<MultipartRejection> for ApiError {
    fn from(_: MultipartRejection) -> Self {
        Self::BadRequest(
            "the body must be multipart/form-data, with its boundary in the Content-Type \
             (`multipart/form-data; boundary=...`, which browsers' FormData and curl's -F set) \
             and the file in a part named `file`"
                .to_owned(),
        )
    }
}

/// What an extractor's text says after its own first words (`Failed to ...: `).
fn detail(text: &str) -> &str {
    text.split_once(": ").map_or(text, |(_, detail)| detail)
}

impl From<NameError> for ApiError {
    fn from(e: NameError) -> Self {
        match e {
            NameError::NotFound(why) => Self::NotFound(why),
            NameError::Invalid(why) => Self::BadRequest(why),
            NameError::Raced => Self::Conflict(e.to_string()),
            NameError::Disabled => Self::Unavailable(e.to_string()),
            NameError::Unsealable => Self::internal(e),
            NameError::Store(e) => e.into(),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => Self::NotFound(format!("{what} not found")),
            StoreError::QuotaExceeded { .. } => Self::QuotaExceeded(e.to_string()),
            StoreError::Conflict(what) => Self::Conflict(format!("{what} is already set")),
            StoreError::Invalid(why) => Self::BadRequest(why),
            StoreError::Spent(Spent::Key) => Self::UsesExhausted(e.to_string()),
            StoreError::Spent(Spent::Link) => Self::LinkUsed(e.to_string()),
            // The garbage collector won a race for blocks the upload reused: nothing was
            // recorded, and sending it again stores it whole.
            StoreError::BlocksCollected(_) => {
                Self::Unavailable(format!("{e}; send the upload again"))
            }
            ref e if e.is_storage_full() => {
                tracing::error!(error = %e, "the metadata store's disk is full");
                Self::InsufficientStorage(STORAGE_FULL.into())
            }
            // The database cannot be reached or is overloaded: worth retrying, not a bug.
            ref e if e.is_unavailable() => {
                tracing::error!(error = %e, "metadata store unavailable");
                Self::Unavailable(STORAGE_UNAVAILABLE.into())
            }
            other => Self::internal(other),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        if let Self::Internal(cause) = &self {
            tracing::error!(%cause, "internal error");
        }
        let body = serde_json::json!({"error": code.as_str(), "message": self.to_string()});
        let mut response = (status, axum::Json(body)).into_response();
        let headers = response.headers_mut();
        match self {
            // RFC 6750 §3.1: a request that tried another scheme lacks a token, and is answered
            // as one that sent none, without an error code; the body says what to send.
            Self::Unauthorized | Self::NotBearer => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"cairn\""),
                );
            }
            Self::InvalidToken => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer error=\"invalid_token\""),
                );
            }
            // RFC 6750 §3.1: an expired token is an `invalid_token` too; the body says which.
            Self::TokenExpired => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(
                        "Bearer error=\"invalid_token\", error_description=\"the key has expired\"",
                    ),
                );
            }
            Self::Unavailable(_) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            }
            Self::PreconditionFailed(_) => {
                headers.insert("tus-version", HeaderValue::from_static("1.0.0"));
            }
            Self::RangeNotSatisfiable(size) => {
                if let Ok(value) = HeaderValue::from_str(&format!("bytes */{size}")) {
                    headers.insert(header::CONTENT_RANGE, value);
                }
            }
            Self::RateLimited(e) => {
                let values = [
                    ("retry-after", e.retry_after_secs.to_string()),
                    (
                        "ratelimit-policy",
                        format!("\"{}\";q={};w={}", e.endpoint, e.quota, e.window_secs),
                    ),
                    (
                        "ratelimit",
                        format!("\"{}\";r=0;t={}", e.endpoint, e.retry_after_secs),
                    ),
                ];
                for (name, value) in values {
                    if let Ok(value) = HeaderValue::from_str(&value) {
                        headers.insert(name, value);
                    }
                }
            }
            _ => {}
        }
        response
    }
}
