//! This node's IPNI advertisement chain over HTTP, as go-libipni's `ipnisync` publisher serves
//! it, on the upload host (public, like the gateway: it names what is stored, as the DHT does):
//!
//! - `GET /ipni/v1/ad/head`: the head, signed by the node's key (`204` before the first
//!   advertisement);
//! - `GET /ipni/v1/ad/{cid}`: an advertisement or entry chunk, exactly the bytes its CID names
//!   (indexers hash what they fetch).

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use cairn_p2p::ipni_format::signed_head;
use cairn_unixfs::Cid;

use crate::error::ApiError;
use crate::state::AppState;

/// `GET /ipni/v1/ad/{cid}`, and `head`.
pub async fn chain_block(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let Some(node) = &state.service.node else {
        return Err(ApiError::NotFound(
            "this server runs without its IPFS node, so it publishes no IPNI chain".into(),
        ));
    };
    let peer_id = node.peer_id().to_string();
    if name == "head" {
        let head = state
            .service
            .store
            .ipni_chain(&peer_id)
            .await?
            .and_then(|chain| chain.head);
        let Some(head) = head else {
            return Ok(StatusCode::NO_CONTENT.into_response());
        };
        let head: Cid = head.parse().map_err(ApiError::internal)?;
        let signed = signed_head(&head, node.key()).map_err(ApiError::internal)?;
        return Ok(dag_json(signed));
    }
    let cid: Cid = name
        .parse()
        .map_err(|e| ApiError::BadRequest(format!("{name:?} is not a CID: {e}")))?;
    match state
        .service
        .store
        .ipni_block(&peer_id, &cid.to_string())
        .await?
    {
        Some(bytes) => Ok(dag_json(bytes)),
        None => Err(ApiError::NotFound(format!(
            "{cid} is not a block of this node's IPNI chain"
        ))),
    }
}

fn dag_json(bytes: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], bytes).into_response()
}
