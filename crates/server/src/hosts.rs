//! Which host serves which paths, for the answers to a path asked of the wrong one: the
//! routers' fallbacks (`app.rs`) and the page's file route (`web.rs`), which answers from the
//! same paths on the account host.

use crate::error::ApiError;

/// The paths only the account host serves (`account_app`), and only the upload host
/// (`upload_app`): asked of the other host, the answer says where they are. Operations,
/// uploads, events, the upload limit, the docs and the node are on both. `tests/authorization.rs` checks each route's host
/// against the running server.
const ACCOUNT_HOST_ONLY: &[&str] = &["/api/keys", "/api/webhooks", "/api/usage"];
const UPLOAD_HOST_ONLY: &[&str] = &[
    "/api/upload",
    "/api/upload-links",
    "/api/names",
    "/pins",
    "/ipfs",
    "/ipns",
    "/routing/v1",
    "/ipni",
];

const ACCOUNT_HOST: &str = "the account host (`--account-listen`, 127.0.0.1:8081 by default)";
const UPLOAD_HOST: &str = "the upload host (`--listen`, 127.0.0.1:8080 by default)";

/// The account host's answer for a path only the upload host serves (the page's files answer
/// from the same paths, `web.rs`).
pub(crate) fn served_by_the_upload_host(path: &str) -> Option<ApiError> {
    elsewhere(path, UPLOAD_HOST_ONLY, UPLOAD_HOST)
}

/// The upload host's answer for a path only the account host serves.
pub(crate) fn served_by_the_account_host(path: &str) -> Option<ApiError> {
    elsewhere(path, ACCOUNT_HOST_ONLY, ACCOUNT_HOST)
}

/// `404` saying which host serves `path`, when it is one of `other_routes`.
fn elsewhere(path: &str, other_routes: &[&str], other_host: &str) -> Option<ApiError> {
    let served = (other_routes.iter()).any(|route| {
        path.strip_prefix(route)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    });
    served.then(|| ApiError::NotFound(format!("{path} is served by {other_host}, not by this one")))
}

pub(crate) fn no_route(path: &str) -> ApiError {
    ApiError::NotFound(format!("no route for {path}"))
}
