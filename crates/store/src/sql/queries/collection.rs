//! [`GarbageCollection`] on [`SqlStore`].

use super::*;

#[async_trait]
impl<B: Backend> GarbageCollection for SqlStore<B> {
    async fn lock_collector(&self) -> Result<Option<CollectorLock>, StoreError> {
        B::lock_collector(&self.pool).await
    }

    async fn indexed_blocks(
        &self,
        after: &[u8],
        limit: u32,
    ) -> Result<Vec<IndexedBlock>, StoreError> {
        let rows = B::query(
            "SELECT b.multihash, p.name, b.\"offset\", b.length, b.without_links, p.size
               FROM blocks b
               JOIN packs p ON p.id = b.pack_id
              WHERE b.multihash > $1 ORDER BY b.multihash LIMIT $2",
        )
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(&mut self.conn().await?)
        .await?;
        Ok(rows
            .iter()
            .map(|row| IndexedBlock {
                multihash: row.blob("multihash"),
                location: location(row),
                pack_size: row.int("size") as u64,
            })
            .collect())
    }

    async fn apply_collection(
        &self,
        collection: &Collection,
        since_ms: i64,
        walked: &HashSet<String>,
    ) -> Result<Collected, StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        let sql = format!(
            "SELECT id FROM collector WHERE id = 1{}",
            B::DIALECT.for_update()
        );
        B::query(&sql).fetch_one(&mut tx).await?;
        let kept_since = B::query(
            "SELECT DISTINCT cid FROM operations
              WHERE status = 'completed' AND cid IS NOT NULL AND deleted_at IS NULL
                AND completed_at >= $1",
        )
        .bind(since_ms)
        .fetch_all(&mut tx)
        .await?;
        let new_roots: Vec<String> = kept_since
            .iter()
            .map(|row| row.text("cid"))
            .filter(|cid| !walked.contains(cid))
            .collect();
        if !new_roots.is_empty() {
            return Ok(Collected::NewRoots(new_roots));
        }
        if let Some(compaction) = &collection.compacted {
            Self::move_blocks(&mut tx, compaction).await?;
        }
        for multihash in &collection.dead {
            B::query("DELETE FROM blocks WHERE multihash = $1")
                .bind(multihash)
                .execute(&mut tx)
                .await?;
        }
        let mut packs_removed: Vec<String> = Vec::new();
        for name in &collection.emptied {
            let still_used = B::query(
                "SELECT 1 AS used FROM blocks
                  WHERE pack_id = (SELECT id FROM packs WHERE name = $1) LIMIT 1",
            )
            .bind(name)
            .fetch_optional(&mut tx)
            .await?
            .is_some();
            if still_used {
                continue;
            }
            let removed = B::query("DELETE FROM packs WHERE name = $1")
                .bind(name)
                .execute(&mut tx)
                .await?;
            if removed == 1 {
                B::query("INSERT INTO dead_packs (name) VALUES ($1)")
                    .bind(name)
                    .execute(&mut tx)
                    .await?;
                packs_removed.push(name.clone());
            }
        }
        tx.commit().await?;
        Ok(Collected::Applied { packs_removed })
    }

    async fn relocate_blocks(&self, moved: &Compaction) -> Result<u64, StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        let count = Self::move_blocks(&mut tx, moved).await?;
        // Dropping the transaction rolls the pack's row back with it.
        if count > 0 {
            tx.commit().await?;
        }
        Ok(count)
    }

    async fn dead_packs(&self) -> Result<Vec<String>, StoreError> {
        let rows = B::query("SELECT name FROM dead_packs ORDER BY name")
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.iter().map(|row| row.text("name")).collect())
    }

    async fn forget_dead_packs(&self, names: &[String]) -> Result<(), StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        for name in names {
            B::query("DELETE FROM dead_packs WHERE name = $1")
                .bind(name)
                .execute(&mut tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
