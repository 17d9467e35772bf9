//! [`Nodes`] on [`SqlStore`].

use super::*;

#[async_trait]
impl<B: Backend> Nodes for SqlStore<B> {
    async fn announce_node(&self, node: &NodeRecord) -> Result<(), StoreError> {
        let addrs = node.addrs.join("\n");
        B::query(
            "INSERT INTO nodes (peer_id, addrs, gateway, seen_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (peer_id) DO UPDATE SET
                addrs = excluded.addrs, gateway = excluded.gateway, seen_at = excluded.seen_at",
        )
        .bind(&node.peer_id)
        .bind(&addrs)
        .bind(node.gateway.as_deref())
        .bind(node.seen_at_ms)
        .execute(&mut self.write_conn(Line::Requests).await?)
        .await?;
        Ok(())
    }

    async fn live_nodes(&self, seen_since_ms: i64) -> Result<Vec<NodeRecord>, StoreError> {
        let rows = B::query("SELECT * FROM nodes WHERE seen_at >= $1 ORDER BY peer_id")
            .bind(seen_since_ms)
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.iter().map(node_from).collect())
    }

    async fn forget_node(&self, peer_id: &str) -> Result<(), StoreError> {
        B::query("DELETE FROM nodes WHERE peer_id = $1")
            .bind(peer_id)
            .execute(&mut self.write_conn(Line::Requests).await?)
            .await?;
        Ok(())
    }
}
