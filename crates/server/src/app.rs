//! The two hosts as routers: `upload_app` (`{base_url}`; requests to a content origin,
//! `{cid}.ipfs.{domain}`, are gateway requests whatever their path) and `account_app`
//! (`{account_url}`, with the web page).
//! Both answer unknown routes and wrong methods with the JSON error shape.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use cairn_p2p::ipns::MAX_RECORD_BYTES;
use serde_json::json;
use tower::service_fn;
use tower::ServiceExt;
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

use crate::auth::KeyOrigins;
use crate::error::{rewrite_error_body, ApiError};
use crate::gateway;
use crate::hosts;
use crate::routes::{
    account, events, ipni, keys, links, names, node, operations, pins, routing, upload, uploads,
    usage, webhooks,
};
use crate::state::AppState;
use crate::tus;
use crate::unread::Unread;

pub fn upload_app(state: AppState) -> Router {
    let routes = Router::new()
        .route(
            "/api/upload",
            // Upload size is enforced by the handler against the account's limit.
            post(upload::upload).layer(DefaultBodyLimit::disable()),
        )
        .route(
            "/api/upload/link/{secret}",
            post(upload::upload_through_link).layer(DefaultBodyLimit::disable()),
        )
        .route("/api/upload-links", get(links::list).post(links::create))
        .route("/api/upload-links/{id}", delete(links::revoke))
        .route("/api/names", get(names::list).post(names::create))
        .route(
            "/api/names/{name}",
            get(names::get).put(names::point).delete(names::delete),
        )
        .merge(operation_routes())
        .merge(tus::routes())
        .merge(pins::routes())
        // The read path is public: content addressing needs no token.
        .route("/ipfs/", get(gateway::uri_router))
        .route("/ipns/", get(gateway::uri_router))
        .route("/ipfs/{cid}", get(gateway::get))
        .route("/ipfs/{cid}/", get(gateway::get))
        .route("/ipfs/{cid}/{*path}", get(gateway::get))
        .route("/ipns/{name}", get(gateway::ipns::get))
        .route("/ipns/{name}/", get(gateway::ipns::get))
        .route("/ipns/{name}/{*path}", get(gateway::ipns::get))
        .route("/routing/v1/providers/{cid}", get(routing::providers))
        .route("/routing/v1/peers/{peer}", get(routing::peers))
        .route(
            "/routing/v1/ipns/{name}",
            get(names::routing_get)
                .put(names::routing_put)
                .layer(DefaultBodyLimit::max(MAX_RECORD_BYTES)),
        )
        .route("/ipni/v1/ad/{name}", get(ipni::chain_block))
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/metrics", get(metrics))
        .merge(crate::docs::routes())
        .with_state(state.clone())
        .fallback(not_found_on_upload_host)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            count_response,
        ));
    let routes = gateway::subdomain::with_content_origins(routes, &state);
    with_cors(routes, state.config.clone())
        .layer(middleware::from_fn(key_origins))
        .layer(middleware::from_fn(no_nul))
        .layer(middleware::from_fn(json_errors))
}

/// A key limited to origins is answered, cross-origin, for those origins alone: the CORS
/// layer allows any origin (the request's key is not known to it), so once the key is read
/// (see `auth::KeyOrigins`) the answer names the request's origin if the key allows it, and
/// none otherwise, so that a page elsewhere cannot read it.
async fn key_origins(mut request: Request, next: Next) -> Response {
    let slot = KeyOrigins::default();
    request.extensions_mut().insert(slot.clone());
    let origin = request.headers().get(header::ORIGIN).cloned();
    let mut response = next.run(request).await;
    if let Some(allowed) = slot.0.get() {
        let headers = response.headers_mut();
        headers.remove(header::ACCESS_CONTROL_ALLOW_ORIGIN);
        match origin.filter(|o| allowed.iter().any(|a| a.as_bytes() == o.as_bytes())) {
            Some(origin) => {
                headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            }
            None => {
                headers.remove(header::ACCESS_CONTROL_EXPOSE_HEADERS);
            }
        }
        headers.append(header::VARY, HeaderValue::from_static("origin"));
    }
    response
}

/// The response headers a page must be allowed to read from the API: TUS clients' (the
/// gateway's are `gateway::cors`).
const EXPOSED: [&str; 15] = [
    "location",
    "upload-offset",
    "upload-length",
    "upload-expires",
    "upload-metadata",
    "upload-defer-length",
    "upload-concat",
    "tus-resumable",
    "tus-version",
    "tus-extension",
    "tus-max-size",
    "tus-checksum-algorithm",
    "cairn-operation-id",
    "cairn-operation-status",
    "upload-cid",
];

/// CORS for browsers (tus-js-client, Uppy upload cross-origin), by tower-http's `CorsLayer`.
/// The layer takes every OPTIONS for a preflight, but TUS has an OPTIONS of its own (one without
/// `Access-Control-Request-Method`): that one goes around the layer, to the routes. Content
/// (`/ipfs/`, `/ipns/`, content origins) has CORS of its own, `gateway::cors`, OPTIONS and all.
fn with_cors(routes: Router, config: std::sync::Arc<crate::state::ServerConfig>) -> Router {
    let layer = CorsLayer::new()
        .allow_origin(AllowOrigin::any())
        .allow_methods([
            Method::GET,
            Method::HEAD,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
            Method::OPTIONS,
        ])
        .allow_headers(AllowHeaders::mirror_request())
        .expose_headers(EXPOSED.map(HeaderName::from_static))
        .max_age(Duration::from_secs(86400));
    let cors = routes.clone().layer(layer);
    // Header names are ASCII: the joined list is a valid value.
    let exposed = HeaderValue::from_str(&EXPOSED.join(", ")).expect("ASCII header names");
    Router::new().fallback_service(service_fn(move |request: Request| {
        let options = request.method() == Method::OPTIONS;
        let content = gateway::cors::is_gateway_request(&config, &request);
        let asks_cors = request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
        let (preflight, tus_options) = (options && asks_cors, options && !asks_cors);
        let cross_origin = request.headers().contains_key(header::ORIGIN);
        let service = if tus_options {
            routes.clone()
        } else {
            cors.clone()
        };
        let exposed = exposed.clone();
        let routes = routes.clone();
        async move {
            if content {
                if options {
                    return Ok(gateway::cors::options());
                }
                let headers = request.headers().clone();
                let response = routes.oneshot(request).await?;
                let mut response = gateway::cors::error_body(&headers, response).await;
                gateway::cors::apply(response.headers_mut());
                return Ok(response);
            }
            let mut response = service.oneshot(request).await?;
            if preflight {
                // A preflight has no body: 204, as before the layer (which answers 200).
                *response.status_mut() = StatusCode::NO_CONTENT;
            } else if tus_options && cross_origin {
                // What the layer adds to any other request a browser makes.
                let headers = response.headers_mut();
                let any = HeaderValue::from_static("*");
                headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, any);
                headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, exposed);
            }
            Ok::<_, Infallible>(response)
        }
    }))
}

pub fn account_app(state: AppState) -> Router {
    Router::new()
        .route("/api/keys", get(keys::list).post(keys::create))
        .route("/api/keys/{id}", delete(keys::revoke))
        .route("/api/webhooks", get(webhooks::list).post(webhooks::create))
        .route("/api/webhooks/{id}", delete(webhooks::delete))
        .route("/api/webhooks/{id}/deliveries", get(webhooks::deliveries))
        .route(
            "/api/webhooks/{id}/deliveries/{delivery}/retry",
            post(webhooks::retry),
        )
        .route("/api/usage", get(usage::usage))
        .merge(operation_routes())
        .merge(crate::web::routes())
        .merge(crate::docs::routes())
        .with_state(state.clone())
        .fallback(not_found_on_account_host)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(state, count_response))
        .layer(middleware::from_fn(no_nul))
        .layer(middleware::from_fn(json_errors))
}

/// Operations, uploads, the upload limit and the node are on both hosts: a page that uploads
/// to the upload host learns there what it may POST (the account host answers no other origin).
fn operation_routes() -> Router<AppState> {
    Router::new()
        .route("/api/upload-limit", get(account::upload_limit))
        .route("/api/operations", get(operations::list_operations))
        .route("/api/operations/{id}", get(operations::get_operation))
        .route("/api/operations/{id}/events", get(events::operation_events))
        .route("/api/events", get(events::account_events))
        .route("/api/uploads", get(uploads::list))
        .route(
            "/api/uploads/{id}",
            get(uploads::get)
                .patch(uploads::change)
                .delete(uploads::delete),
        )
        .route("/api/node", get(node::node))
}

async fn not_found_on_upload_host(uri: Uri) -> ApiError {
    hosts::served_by_the_account_host(uri.path()).unwrap_or_else(|| hosts::no_route(uri.path()))
}

async fn not_found_on_account_host(uri: Uri) -> ApiError {
    hosts::served_by_the_upload_host(uri.path()).unwrap_or_else(|| hosts::no_route(uri.path()))
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::MethodNotAllowed(format!("{method} is not allowed on {}", uri.path()))
}

/// A URL whose path or query decodes to a NUL byte is refused before any route reads it: no
/// id, name, label or filter here holds one, and PostgreSQL refuses it in text (a `500`
/// instead of the answer the same request gets on SQLite). Percent-encoding is the only way
/// a NUL reaches a URL.
async fn no_nul(request: Request, next: Next) -> Response {
    let encoded_nul = |text: &str| text.as_bytes().windows(3).any(|w| w == b"%00");
    let uri = request.uri();
    if encoded_nul(uri.path()) || uri.query().is_some_and(encoded_nul) {
        return ApiError::BadRequest(
            "the URL holds a NUL byte (%00), which no id, name, path or filter here may contain"
                .into(),
        )
        .into_response();
    }
    next.run(request).await
}

/// Every error body is the contract's JSON, including the rejections of axum's extractors and
/// layers, which answer in plain text: their text becomes the message, and the status and
/// other headers stay.
///
/// An error answered to a request that sent a body comes after what is left of the body is
/// read (within bounds, `unread`), and says `Connection: close`: the body may not have been
/// read (a `401` or `429` comes before it, a `507` halfway), and a client still sending, or
/// reusing the connection, met a broken pipe instead of the answer.
async fn json_errors(request: Request, next: Next) -> Response {
    let sent_a_body = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .is_some_and(|v| v.as_bytes() != b"0")
        || request.headers().contains_key(header::TRANSFER_ENCODING);
    let unread = Unread::default();
    let request = if sent_a_body {
        let expects_continue = request
            .headers()
            .get(header::EXPECT)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        request.map(|body| unread.watch(body, expects_continue))
    } else {
        request
    };
    let mut response = next.run(request).await;
    let status = response.status();
    if sent_a_body && (status.is_client_error() || status.is_server_error()) {
        // Not when stopping: the shutdown would wait on a client's sending.
        if status != StatusCode::SERVICE_UNAVAILABLE {
            unread.drain().await;
        }
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let plain_on_purpose = response
        .extensions()
        .get::<gateway::cors::PlainTextError>()
        .is_some();
    if !(status.is_client_error() || status.is_server_error()) || is_json || plain_on_purpose {
        return response;
    }
    rewrite_error_body(response, |status, body| {
        let message = String::from_utf8_lossy(body).into_owned();
        ApiError::for_status(status, message).into_response()
    })
    .await
}

async fn count_response(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    state.service.metrics.response(response.status().as_u16());
    response
}

async fn metrics(State(state): State<AppState>) -> Result<Response, ApiError> {
    let counts = state.service.store.operation_counts().await?;
    let queue: Vec<(&'static str, u64)> = counts
        .iter()
        .filter(|(status, _)| !status.is_terminal())
        .map(|(status, n)| (status.as_str(), *n))
        .collect();
    if let Some(node) = &state.service.node {
        let connected = node.connected_peers().await.map_or(0, |peers| peers.len());
        let provide_queue = cairn_service::provide::queued(&state.service).await?;
        state.service.metrics.node_now(connected, provide_queue);
    }
    let body = state.service.metrics.render(&queue);
    Ok((
        [(header::CONTENT_TYPE, cairn_service::metrics::CONTENT_TYPE)],
        body,
    )
        .into_response())
}
