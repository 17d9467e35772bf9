//! Each node's IPNI advertisement chain: its blocks, its head and marks, the roots it has
//! advertised; and the two logs of roots that providing and IPNI follow (completions, and
//! the deletions that removal advertisements follow).

use super::*;
use crate::model::{IpniChain, IpniPublication, LogPlace};
use crate::sql::backend::Backend;
use crate::sql::dialect::{parameters, values_rows, ROW_PARAMETERS};
use crate::sql::rows::ModelRow;
use crate::sql::write_queue::Line;
use crate::sql::SqlStore;
use crate::StoreError;

/// Bytes of chain blocks one `INSERT` carries: small advertisements go many to a statement, and
/// the entry chunks (up to about a MiB each) a few.
const BATCH_BYTES: usize = 4 << 20;

/// `blocks` cut into runs for one multi-row `INSERT` each, of at most [`BATCH_BYTES`] (or one
/// block) and within the parameters one statement may bind.
fn batches(blocks: &[(String, Vec<u8>)]) -> Vec<&[(String, Vec<u8>)]> {
    let mut runs = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, (_, block)) in blocks.iter().enumerate() {
        let full = i - start == ROW_PARAMETERS / 3 || bytes + block.len() > BATCH_BYTES;
        if i > start && full {
            runs.push(&blocks[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += block.len();
    }
    if start < blocks.len() {
        runs.push(&blocks[start..]);
    }
    runs
}

/// Which of a node's roots [`SqlStore::ipni_roots`] picks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum IpniRoots {
    /// Not advertised by the node.
    NotAdvertised,
    /// Advertised by the node, and no live upload or pin keeps them any more.
    Withdrawn,
}

impl<B: Backend> SqlStore<B> {
    /// A page of one of the logs of roots that providing and IPNI follow: the operations
    /// `which` selects, after `after` in the order of their `time` column and id. Each log
    /// has a partial index whose condition `which` includes.
    pub(super) async fn root_log(
        &self,
        time: &str,
        which: &str,
        after: LogPlace,
        limit: u32,
    ) -> Result<Vec<(LogPlace, String)>, StoreError> {
        let sql = format!(
            "SELECT {time} AS at, id, cid FROM operations
             WHERE {which} AND cid IS NOT NULL AND ({time}, id) > ($1, $2)
             ORDER BY {time}, id LIMIT $3"
        );
        let rows = B::query(&sql)
            .bind(after.at_ms)
            .bind(after.operation_id)
            .bind(i64::from(limit))
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows
            .iter()
            .map(|row| {
                let key = LogPlace {
                    at_ms: row.int("at"),
                    operation_id: row.int("id"),
                };
                (key, row.text("cid"))
            })
            .collect())
    }

    /// Those of `roots` that are `which`, each once, in their order.
    pub(super) async fn ipni_roots(
        &self,
        peer_id: &str,
        roots: &[String],
        which: IpniRoots,
    ) -> Result<Vec<String>, StoreError> {
        let advertised = which == IpniRoots::Withdrawn;
        if roots.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT cid FROM ipni_contexts WHERE peer_id = $1 AND cid IN ({})",
            parameters(2, roots.len())
        );
        let mut query = B::query(&sql).bind(peer_id);
        for root in roots {
            query = query.bind(root.as_str());
        }
        let rows = query.fetch_all(&mut self.conn().await?).await?;
        let known: std::collections::HashSet<String> =
            rows.iter().map(|row| row.text("cid")).collect();
        let mut chosen: Vec<String> = Vec::new();
        for root in roots {
            if known.contains(root) == advertised && !chosen.contains(root) {
                chosen.push(root.clone());
            }
        }
        if which == IpniRoots::NotAdvertised || chosen.is_empty() {
            return Ok(chosen);
        }
        let sql = format!(
            "SELECT DISTINCT cid FROM operations
             WHERE status = 'completed' AND deleted_at IS NULL AND cid IN ({})",
            parameters(1, chosen.len())
        );
        let mut query = B::query(&sql);
        for root in &chosen {
            query = query.bind(root.as_str());
        }
        let rows = query.fetch_all(&mut self.conn().await?).await?;
        let kept: std::collections::HashSet<String> =
            rows.iter().map(|row| row.text("cid")).collect();
        chosen.retain(|root| !kept.contains(root));
        Ok(chosen)
    }
}

#[async_trait]
impl<B: Backend> Providing for SqlStore<B> {
    async fn completed_roots(
        &self,
        after: LogPlace,
        limit: u32,
    ) -> Result<Vec<(LogPlace, String)>, StoreError> {
        let completed = "status = 'completed' AND deleted_at IS NULL";
        self.root_log("completed_at", completed, after, limit).await
    }

    async fn count_completed_roots(&self, after: LogPlace) -> Result<u64, StoreError> {
        let row = B::query(
            "SELECT COUNT(*) AS n FROM operations
             WHERE status = 'completed' AND cid IS NOT NULL AND deleted_at IS NULL
               AND (completed_at, id) > ($1, $2)",
        )
        .bind(after.at_ms)
        .bind(after.operation_id)
        .fetch_one(&mut self.conn().await?)
        .await?;
        Ok(row.int("n") as u64)
    }

    async fn distinct_roots(&self, after: &str, limit: u32) -> Result<Vec<String>, StoreError> {
        let rows = B::query(
            "SELECT DISTINCT cid FROM operations
             WHERE status = 'completed' AND deleted_at IS NULL AND cid > $1
             ORDER BY cid LIMIT $2",
        )
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(&mut self.conn().await?)
        .await?;
        Ok(rows.iter().map(|row| row.text("cid")).collect())
    }

    async fn provide_progress(&self, peer_id: &str) -> Result<Option<ProvideProgress>, StoreError> {
        let row = B::query(
            "SELECT completed_at, operation_id, pass_began_at, pass_reached FROM provide_progress
             WHERE peer_id = $1",
        )
        .bind(peer_id)
        .fetch_optional(&mut self.conn().await?)
        .await?;
        Ok(row.map(|row| ProvideProgress {
            through: LogPlace {
                at_ms: row.int("completed_at"),
                operation_id: row.int("operation_id"),
            },
            pass: row.maybe_int("pass_began_at").map(|began_at_ms| SweepPass {
                began_at_ms,
                // Stored as a signed integer: the same 64 bits.
                reached: row.int("pass_reached") as u64,
            }),
        }))
    }

    async fn save_provide_progress(
        &self,
        peer_id: &str,
        progress: &ProvideProgress,
    ) -> Result<(), StoreError> {
        B::query(
            "INSERT INTO provide_progress
                (peer_id, completed_at, operation_id, pass_began_at, pass_reached)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (peer_id) DO UPDATE SET completed_at = excluded.completed_at,
                operation_id = excluded.operation_id, pass_began_at = excluded.pass_began_at,
                pass_reached = excluded.pass_reached",
        )
        .bind(peer_id)
        .bind(progress.through.at_ms)
        .bind(progress.through.operation_id)
        .bind(progress.pass.map(|pass| pass.began_at_ms))
        .bind(progress.pass.map_or(0, |pass| pass.reached as i64))
        .execute(&mut self.write_conn(Line::Requests).await?)
        .await?;
        Ok(())
    }

    async fn deleted_roots(
        &self,
        after: LogPlace,
        limit: u32,
    ) -> Result<Vec<(LogPlace, String)>, StoreError> {
        self.root_log("deleted_at", "deleted_at IS NOT NULL", after, limit)
            .await
    }

    async fn ipni_chain(&self, peer_id: &str) -> Result<Option<IpniChain>, StoreError> {
        let row = B::query(
            "SELECT head, completed_at, completed_id, deleted_at, deleted_id FROM ipni_chains
             WHERE peer_id = $1",
        )
        .bind(peer_id)
        .fetch_optional(&mut self.conn().await?)
        .await?;
        Ok(row.map(|row| IpniChain {
            head: row.maybe_text("head"),
            completed_through: LogPlace {
                at_ms: row.int("completed_at"),
                operation_id: row.int("completed_id"),
            },
            deleted_through: LogPlace {
                at_ms: row.int("deleted_at"),
                operation_id: row.int("deleted_id"),
            },
        }))
    }

    async fn ipni_block(&self, peer_id: &str, cid: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let row = B::query("SELECT bytes FROM ipni_blocks WHERE peer_id = $1 AND cid = $2")
            .bind(peer_id)
            .bind(cid)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        Ok(row.map(|row| row.blob("bytes")))
    }

    async fn ipni_not_advertised(
        &self,
        peer_id: &str,
        roots: &[String],
    ) -> Result<Vec<String>, StoreError> {
        self.ipni_roots(peer_id, roots, IpniRoots::NotAdvertised)
            .await
    }

    async fn ipni_withdrawn(
        &self,
        peer_id: &str,
        roots: &[String],
    ) -> Result<Vec<String>, StoreError> {
        self.ipni_roots(peer_id, roots, IpniRoots::Withdrawn).await
    }

    async fn publish_ipni(
        &self,
        peer_id: &str,
        publication: &IpniPublication,
    ) -> Result<(), StoreError> {
        let mut tx = self.write(Line::Requests).await?;
        for batch in batches(&publication.blocks) {
            let sql = format!(
                "INSERT INTO ipni_blocks (peer_id, cid, bytes) VALUES {}
                 ON CONFLICT (peer_id, cid) DO NOTHING",
                values_rows(batch.len(), 3)
            );
            let mut insert = B::query(&sql);
            for (cid, bytes) in batch {
                insert = insert
                    .bind(peer_id)
                    .bind(cid.as_str())
                    .bind(bytes.as_slice());
            }
            insert.execute(&mut tx).await?;
        }
        for batch in publication.advertised.chunks(ROW_PARAMETERS / 2) {
            let sql = format!(
                "INSERT INTO ipni_contexts (peer_id, cid) VALUES {}
                 ON CONFLICT (peer_id, cid) DO NOTHING",
                values_rows(batch.len(), 2)
            );
            let mut insert = B::query(&sql);
            for root in batch {
                insert = insert.bind(peer_id).bind(root.as_str());
            }
            insert.execute(&mut tx).await?;
        }
        for root in &publication.withdrawn {
            B::query("DELETE FROM ipni_contexts WHERE peer_id = $1 AND cid = $2")
                .bind(peer_id)
                .bind(root.as_str())
                .execute(&mut tx)
                .await?;
        }
        let chain = &publication.chain;
        B::query(
            "INSERT INTO ipni_chains
                (peer_id, head, completed_at, completed_id, deleted_at, deleted_id)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (peer_id) DO UPDATE SET head = excluded.head,
                completed_at = excluded.completed_at, completed_id = excluded.completed_id,
                deleted_at = excluded.deleted_at, deleted_id = excluded.deleted_id",
        )
        .bind(peer_id)
        .bind(chain.head.as_deref())
        .bind(chain.completed_through.at_ms)
        .bind(chain.completed_through.operation_id)
        .bind(chain.deleted_through.at_ms)
        .bind(chain.deleted_through.operation_id)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_batched_by_bytes_and_by_parameters() {
        let block = |len: usize| (String::new(), vec![0; len]);
        let sizes = |runs: Vec<&[(String, Vec<u8>)]>| -> Vec<usize> {
            runs.iter().map(|run| run.len()).collect()
        };
        // Chunks of 1.5 MiB: two to a statement; one larger than the budget goes alone.
        let chunks: Vec<_> = [3 << 19, 3 << 19, 3 << 19, 9 << 20, 100]
            .into_iter()
            .map(block)
            .collect();
        assert_eq!(sizes(batches(&chunks)), [2, 1, 1, 1]);
        // Small advertisements: as many as the parameters allow.
        let ads: Vec<_> = (0..2000).map(|_| block(600)).collect();
        assert_eq!(
            sizes(batches(&ads)),
            [
                ROW_PARAMETERS / 3,
                ROW_PARAMETERS / 3,
                2000 - 2 * (ROW_PARAMETERS / 3)
            ]
        );
        assert!(batches(&[]).is_empty());
    }
}
