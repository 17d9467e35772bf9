//! The service's IPFS nodes as delegated routing names them. Any node can serve any block
//! (they share the content store), so every node is a provider of everything stored. Each
//! node announces its own addresses in the metadata store every few seconds and reads the
//! others' back; a node that stops announcing drops out within a minute, and one that stops
//! cleanly at once.

use cairn_store::Nodes;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use cairn_p2p::{Multiaddr, NodeHandle, PeerId};
use cairn_store::model::NodeRecord;
use cairn_store::{now_ms, StoreError};
use tokio::sync::watch;

use crate::stop::sleep_unless_stopped;

/// How often a node refreshes its own row and its view of the others.
const ANNOUNCE_EVERY: Duration = Duration::from_secs(10);
/// A node not heard from for this long is taken for dead (six missed announcements).
const PRESUMED_DEAD_AFTER: Duration = Duration::from_secs(60);

/// One node as a provider: where to reach it over libp2p and over HTTP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provider {
    pub id: PeerId,
    pub addrs: Vec<Multiaddr>,
    pub gateway: Option<Multiaddr>,
}

/// The live nodes, as last read from the metadata store, and this one.
#[derive(Default)]
pub struct NodeDirectory {
    /// This node, when it runs an IPFS node.
    own: Option<Provider>,
    others: RwLock<Arc<Vec<Provider>>>,
}

impl NodeDirectory {
    /// The directory of a process that runs `node` (none: it names no one), whose gateway is
    /// at `gateway`.
    pub fn new(node: Option<&NodeHandle>, gateway: Option<Multiaddr>) -> Self {
        Self {
            own: node.map(|node| Provider {
                id: node.peer_id(),
                addrs: node.announced_addrs().to_vec(),
                gateway,
            }),
            others: RwLock::default(),
        }
    }

    /// Every live node, this one first. This node is always named, even while the metadata
    /// store cannot be read.
    pub fn providers(&self) -> Vec<Provider> {
        let Some(own) = &self.own else {
            return Vec::new();
        };
        let others = self.others.read().expect("node directory lock").clone();
        std::iter::once(own.clone())
            .chain(others.iter().filter(|p| p.id != own.id).cloned())
            .collect()
    }

    /// Announce this node and read the others back.
    pub async fn refresh(&self, store: &dyn Nodes) -> Result<(), StoreError> {
        let Some(own) = &self.own else {
            return Ok(());
        };
        let now = now_ms();
        store
            .announce_node(&NodeRecord {
                peer_id: own.id.to_string(),
                addrs: own.addrs.iter().map(ToString::to_string).collect(),
                gateway: own.gateway.as_ref().map(ToString::to_string),
                seen_at_ms: now,
            })
            .await?;
        let live = store
            .live_nodes(now - PRESUMED_DEAD_AFTER.as_millis() as i64)
            .await?;
        let others = live.iter().filter_map(parse).collect();
        *self.others.write().expect("node directory lock") = Arc::new(others);
        Ok(())
    }
}

/// Keep announcing this node in `store` until `stop`, then withdraw it.
pub async fn keep_announcing(
    nodes: Arc<NodeDirectory>,
    store: Arc<dyn Nodes>,
    stop: watch::Receiver<bool>,
) {
    let Some(own) = nodes.own.clone() else {
        return;
    };
    while !sleep_unless_stopped(&stop, ANNOUNCE_EVERY).await {
        if let Err(e) = nodes.refresh(store.as_ref()).await {
            tracing::warn!("announcing this node to the others failed: {e}");
        }
    }
    if let Err(e) = store.forget_node(&own.id.to_string()).await {
        tracing::warn!("withdrawing this node failed (it drops out within a minute): {e}");
    }
}

/// A stored row as a provider; rows another version wrote that this one cannot read are
/// skipped rather than failing every routing answer.
fn parse(record: &NodeRecord) -> Option<Provider> {
    let parsed = (|| {
        Some(Provider {
            id: record.peer_id.parse().ok()?,
            addrs: record
                .addrs
                .iter()
                .map(|a| a.parse())
                .collect::<Result<_, _>>()
                .ok()?,
            gateway: match &record.gateway {
                Some(gateway) => Some(gateway.parse().ok()?),
                None => None,
            },
        })
    })();
    if parsed.is_none() {
        tracing::warn!("skipping the unreadable node record {record:?}");
    }
    parsed
}
