//! The service's live nodes, as they announce themselves.

use crate::model::NodeRecord;
use crate::StoreError;
use async_trait::async_trait;

/// The service's live nodes, as they announce themselves.
#[async_trait]
pub trait Nodes: Send + Sync {
    /// Record (or refresh) a running node's addresses; nodes do this every few seconds.
    async fn announce_node(&self, node: &NodeRecord) -> Result<(), StoreError>;

    /// The nodes seen alive since `seen_since_ms`, by peer id.
    async fn live_nodes(&self, seen_since_ms: i64) -> Result<Vec<NodeRecord>, StoreError>;

    /// A node that stops cleanly is no longer named at once.
    async fn forget_node(&self, peer_id: &str) -> Result<(), StoreError>;
}
