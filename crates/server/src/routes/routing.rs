//! Delegated routing (IPFS HTTP Routing V1, IPIP-337/IPIP-417) on the upload host, so a client
//! that knows only Cairn's URL finds where to fetch what Cairn stores:
//!
//! - `GET /routing/v1/providers/{cid}`: for any block Cairn stores (roots and inner blocks
//!   alike, from the block index: Helia asks about each block), every live node of the
//!   service as a provider (they share the content store; see [`cairn_service::nodes`]), with its
//!   libp2p addresses (`transport-bitswap`) and its gateway's `/http` address
//!   (`transport-ipfs-gateway-http`); none (`200`, IPIP-0513) for a block it does not store. JSON, or
//!   `application/x-ndjson` when asked; `filter-addrs` and `filter-protocols` (IPIP-484).
//! - `GET /routing/v1/peers/{peer-id}`: the record of any of the service's nodes.

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use cairn_p2p::{Multiaddr, PeerId};
use cairn_unixfs::Cid;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::state::AppState;

const BITSWAP: &str = "transport-bitswap";
const GATEWAY_HTTP: &str = "transport-ipfs-gateway-http";

#[derive(Deserialize, Default)]
pub struct Filters {
    #[serde(rename = "filter-addrs")]
    filter_addrs: Option<String>,
    #[serde(rename = "filter-protocols")]
    filter_protocols: Option<String>,
}

/// `GET /routing/v1/providers/{cid}`.
pub async fn providers(
    State(state): State<AppState>,
    Path(cid): Path<String>,
    Query(filters): Query<Filters>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    state.service.metrics.routing_query("providers");
    let cid: Cid = cid
        .parse()
        .map_err(|e| ApiError::BadRequest(format!("{cid:?} is not a CID: {e}")))?;
    let stored = state
        .service
        .store
        .has_block(&cid.hash().to_bytes())
        .await?;
    let records: Vec<Value> = node_records(&state)
        .into_iter()
        .filter(|_| stored)
        .filter_map(|record| record.filtered(&filters))
        .map(|record| record.to_json())
        .collect();
    Ok(answer("Providers", records, &headers))
}

/// `GET /routing/v1/peers/{peer-id}`.
pub async fn peers(
    State(state): State<AppState>,
    Path(peer): Path<String>,
    Query(filters): Query<Filters>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    state.service.metrics.routing_query("peers");
    let peer: PeerId = peer
        .parse()
        .map_err(|e| ApiError::BadRequest(format!("{peer:?} is not a peer id: {e}")))?;
    let records: Vec<Value> = node_records(&state)
        .into_iter()
        .filter(|record| record.id == peer)
        .filter_map(|record| record.filtered(&filters))
        .map(|record| record.to_json())
        .collect();
    Ok(answer("Peers", records, &headers))
}

/// JSON `{"<key>": [...]}`, or one record per line for a client that asks for NDJSON; `200`
/// with none when there are none (IPIP-0513: no `404`, which browsers log as an error).
fn answer(key: &str, records: Vec<Value>, headers: &HeaderMap) -> Response {
    let ndjson = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/x-ndjson"));
    let mut response = if ndjson {
        let lines: String = records.iter().map(|r| format!("{r}\n")).collect();
        ([(header::CONTENT_TYPE, "application/x-ndjson")], lines).into_response()
    } else {
        axum::Json(json!({ key: records })).into_response()
    };
    // What a node stores changes only by uploads; a short cache spares repeated lookups, and
    // a shorter one for nothing found, which the next upload may change (IPIP-0513).
    let cache = if records.is_empty() {
        "public, max-age=15"
    } else {
        "public, max-age=60"
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}

/// A peer record (schema `peer`).
struct Record {
    id: PeerId,
    addrs: Vec<Multiaddr>,
    protocols: Vec<&'static str>,
}

/// Every live node of the service, each with its libp2p addresses and its gateway's.
fn node_records(state: &AppState) -> Vec<Record> {
    state
        .service
        .nodes
        .providers()
        .into_iter()
        .map(|provider| {
            let mut addrs = provider.addrs;
            let mut protocols = vec![BITSWAP];
            if let Some(gateway) = provider.gateway {
                addrs.push(gateway);
                protocols.push(GATEWAY_HTTP);
            }
            Record {
                id: provider.id,
                addrs,
                protocols,
            }
        })
        .collect()
}

impl Record {
    /// The record as IPIP-484's filters leave it, or `None` if they leave nothing of it.
    fn filtered(mut self, filters: &Filters) -> Option<Self> {
        if let Some(wanted) = &filters.filter_protocols {
            let wanted: Vec<&str> = wanted.split(',').map(str::trim).collect();
            let known = self.protocols.iter().any(|p| wanted.contains(p));
            let unknown = self.protocols.is_empty() && wanted.contains(&"unknown");
            if !known && !unknown {
                return None;
            }
        }
        if let Some(spec) = &filters.filter_addrs {
            let (negative, positive): (Vec<&str>, Vec<&str>) = spec
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .partition(|s| s.starts_with('!'));
            let has = |addr: &Multiaddr, name: &str| addr.iter().any(|p| p.tag() == name);
            self.addrs.retain(|addr| {
                let excluded = negative.iter().any(|n| has(addr, &n[1..]));
                let included = positive.is_empty() || positive.iter().any(|p| has(addr, p));
                included && !excluded
            });
            if self.addrs.is_empty() {
                return None;
            }
        }
        Some(self)
    }

    fn to_json(&self) -> Value {
        json!({
            "Schema": "peer",
            "ID": self.id.to_string(),
            "Addrs": self.addrs.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "Protocols": self.protocols,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record {
        Record {
            id: PeerId::random(),
            addrs: [
                "/ip4/127.0.0.1/tcp/4001",
                "/ip4/127.0.0.1/udp/4001/quic-v1",
                "/ip4/127.0.0.1/tcp/8080/http",
            ]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect(),
            protocols: vec![BITSWAP, GATEWAY_HTTP],
        }
    }

    fn filters(addrs: Option<&str>, protocols: Option<&str>) -> Filters {
        Filters {
            filter_addrs: addrs.map(str::to_owned),
            filter_protocols: protocols.map(str::to_owned),
        }
    }

    #[test]
    fn filters_keep_the_addresses_and_protocols_asked_for() {
        let quic = record().filtered(&filters(Some("quic-v1"), None)).unwrap();
        assert_eq!(quic.addrs.len(), 1);
        let no_http = record().filtered(&filters(Some("!http"), None)).unwrap();
        assert_eq!(no_http.addrs.len(), 2);
        assert!(record()
            .filtered(&filters(Some("webrtc-direct"), None))
            .is_none());
        assert!(record()
            .filtered(&filters(None, Some("transport-graphsync-filecoinv1")))
            .is_none());
        assert!(record()
            .filtered(&filters(None, Some("transport-bitswap,unknown")))
            .is_some());
    }
}
