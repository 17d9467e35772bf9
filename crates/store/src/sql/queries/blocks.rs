//! [`BlockIndex`] on [`SqlStore`].

use super::*;

#[async_trait]
impl<B: Backend> BlockIndex for SqlStore<B> {
    async fn has_block(&self, multihash: &[u8]) -> Result<bool, StoreError> {
        Ok(
            B::query("SELECT 1 AS found FROM blocks WHERE multihash = $1")
                .bind(multihash)
                .fetch_optional(&mut self.conn().await?)
                .await?
                .is_some(),
        )
    }

    async fn stored_blocks(&self, multihashes: &[Vec<u8>]) -> Result<HashSet<Vec<u8>>, StoreError> {
        let mut conn = self.conn().await?;
        let mut stored = HashSet::new();
        for batch in multihashes.chunks(B::DIALECT.lookup_batch()) {
            let sql = format!(
                "SELECT multihash FROM blocks WHERE multihash {}",
                B::DIALECT.multihash_in(batch.len())
            );
            let rows = B::query(&sql)
                .bind_multihashes(batch)
                .fetch_all(&mut conn)
                .await?;
            stored.extend(rows.iter().map(|row| row.blob("multihash")));
        }
        Ok(stored)
    }

    async fn block_location(&self, multihash: &[u8]) -> Result<Option<BlockLocation>, StoreError> {
        let sql = format!("{LOCATION} = $1");
        let row = B::query(&sql)
            .bind(multihash)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        Ok(row.as_ref().map(location))
    }

    async fn block_locations(
        &self,
        multihashes: &[Vec<u8>],
    ) -> Result<Vec<(Vec<u8>, BlockLocation)>, StoreError> {
        let mut conn = self.conn().await?;
        let mut found = Vec::with_capacity(multihashes.len());
        for batch in multihashes.chunks(B::DIALECT.lookup_batch()) {
            let sql = format!("{LOCATION} {}", B::DIALECT.multihash_in(batch.len()));
            let rows = B::query(&sql)
                .bind_multihashes(batch)
                .fetch_all(&mut conn)
                .await?;
            found.extend(
                rows.iter()
                    .map(|row| (row.blob("multihash"), location(row))),
            );
        }
        Ok(found)
    }

    async fn pack_names(&self) -> Result<Vec<String>, StoreError> {
        let rows = B::query("SELECT name FROM packs")
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.iter().map(|row| row.text("name")).collect())
    }
}
