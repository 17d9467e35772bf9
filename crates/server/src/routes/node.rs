//! `GET /api/node` (both hosts, token required): this node on the IPFS network, and what
//! scrubbing its stored blocks found.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use crate::auth::{need, Caller};
use crate::error::ApiError;
use crate::state::AppState;

pub async fn node(
    State(state): State<AppState>,
    _: Caller<need::AnyScope>,
) -> Result<Json<Value>, ApiError> {
    let Some(node) = &state.service.node else {
        return Err(ApiError::NotFound(
            "this server runs without its IPFS node (--p2p-listen none)".into(),
        ));
    };
    let with_id = |addrs: &[cairn_p2p::Multiaddr]| -> Vec<String> {
        addrs
            .iter()
            .map(|a| format!("{a}/p2p/{}", node.peer_id()))
            .collect()
    };
    let connected = node
        .connected_peers()
        .await
        .map_err(|e| ApiError::Unavailable(e.to_string()))?;
    let provide_queue = cairn_service::provide::queued(&state.service).await?;
    let last_reprovide_at = match state
        .service
        .provides
        .last_sweep_at_ms
        .load(Ordering::Relaxed)
    {
        0 => None,
        ms => Some(crate::routes::rfc3339(ms)),
    };
    let config = &state.service.config;
    let scrub = (state.service.scrub).report(config.scrub_interval, config.scrub_rate);
    let damaged: Vec<Value> = scrub
        .damaged
        .iter()
        .map(|d| json!({"cid": d.cid, "pack": d.pack, "error": d.error, "repaired": d.repaired}))
        .collect();
    Ok(Json(json!({
        "peerId": node.peer_id().to_string(),
        "addrs": with_id(node.listen_addrs()),
        "announced": with_id(node.announced_addrs()),
        "connectedPeers": connected.len(),
        "provideQueue": provide_queue,
        "lastReprovideAt": last_reprovide_at,
        "scrub": {
            "enabled": scrub.enabled,
            "rateBytesPerSecond": scrub.rate_bytes_per_second,
            "passesCompleted": scrub.passes_completed,
            "lastPassFinishedAt": scrub.last_pass_finished_at_ms.map(crate::routes::rfc3339),
            "blocksChecked": scrub.blocks_checked,
            "bytesChecked": scrub.bytes_checked,
            "damaged": damaged,
        },
    })))
}
