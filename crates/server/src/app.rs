//! The two hosts as routers: `upload_app` (`{base_url}`) and `account_app` (`{account_url}`).
//! Both answer unknown routes and wrong methods with the JSON error shape.

use axum::extract::DefaultBodyLimit;
use axum::http::{Method, Uri};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

use crate::error::ApiError;
use crate::routes::{account, operations, upload};
use crate::state::AppState;

pub fn upload_app(state: AppState) -> Router {
    Router::new()
        .route(
            "/api/upload",
            // Upload size is enforced by the handler against the account's limit.
            post(upload::upload).layer(DefaultBodyLimit::disable()),
        )
        .merge(operation_routes())
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .with_state(state)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
}

pub fn account_app(state: AppState) -> Router {
    Router::new()
        .route("/api/upload-limit", get(account::upload_limit))
        .merge(operation_routes())
        .with_state(state)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
}

/// Operations are readable on both hosts.
fn operation_routes() -> Router<AppState> {
    Router::new()
        .route("/api/operations", get(operations::list_operations))
        .route("/api/operations/{id}", get(operations::get_operation))
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::NotFound(format!("no route for {}", uri.path()))
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::MethodNotAllowed(format!("{method} is not allowed on {}", uri.path()))
}
