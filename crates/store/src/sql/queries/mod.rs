//! The metadata store's capabilities (`crate::metadata`) on [`SqlStore`], written once for both
//! databases: one file per trait, each an `impl` block, sharing the imports and helpers here.
//! Statements use `$1` parameters (which SQLite takes too); the few words that differ come from
//! [`Backend`]. What commits write is in `commit.rs`.

use std::collections::HashSet;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;

use super::backend::Backend;
use super::commit::{self, Starts};
use super::dialect::parameters;
use super::rows::{
    account_from, node_from, now_ms, operation_from, tus_from, unique_violation, ModelRow,
};
use super::write_queue::Line;
use super::writer::WriteTx;
use super::SqlStore;
use crate::events::Usage;
use crate::model::{
    Account, BlockLocation, Collected, Collection, Compaction, IndexedBlock, KeptFilter,
    LeaseAttempt, NewPin, NewTusUpload, NewUpload, NodeRecord, Operation, OperationError,
    OperationFilter, OperationRef, OperationStatus, ProvideProgress, StoredDag, SweepPass,
    TusConcat, TusState, TusUpload,
};
use crate::model::{Content, Packed};
use crate::{
    Access, Accounts, BlockIndex, EventLog, GarbageCollection, Names, Nodes, OperationQueue,
    Providing, TusRecords, Uploads,
};
use crate::{AccountLimits, CollectorLock, StoreError};
use std::collections::BTreeMap;

mod access;
mod accounts;
mod blocks;
mod collection;
mod events;
mod names;
mod nodes;
mod providing;
mod queue;
mod tus;
mod uploads;

impl<B: Backend> crate::MetadataStore for SqlStore<B> {}

impl<B: Backend> SqlStore<B> {
    async fn account_where<'q>(
        &self,
        sql: &'q str,
        key: impl super::backend::Param<'q> + Send,
    ) -> Result<Option<Account>, StoreError> {
        let row = B::query(sql)
            .bind(key)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        Ok(row.as_ref().map(account_from))
    }

    pub(super) async fn operation_by_id(&self, id: i64) -> Result<Operation, StoreError> {
        let row = B::query("SELECT * FROM operations WHERE id = $1")
            .bind(id)
            .fetch_one(&mut self.conn().await?)
            .await?;
        operation_from(&row)
    }
}

impl<B: Backend> SqlStore<B> {
    /// Record `moved.pack` and point each of its blocks at it, where the block's entry still
    /// names its source pack; how many moved.
    async fn move_blocks(tx: &mut WriteTx<B>, moved: &Compaction) -> Result<u64, StoreError> {
        let pack = &moved.pack;
        let pack_id =
            B::query("INSERT INTO packs (name, size, created_at) VALUES ($1, $2, $3) RETURNING id")
                .bind(&pack.name)
                .bind(pack.size as i64)
                .bind(now_ms())
                .fetch_one(&mut *tx)
                .await?
                .int("id");
        let mut count = 0;
        for (block, source) in pack.blocks.iter().zip(&moved.sources) {
            count += B::query(
                "UPDATE blocks SET pack_id = $1, \"offset\" = $2, length = $3
                  WHERE multihash = $4 AND pack_id = (SELECT id FROM packs WHERE name = $5)",
            )
            .bind(pack_id)
            .bind(block.offset as i64)
            .bind(block.length as i64)
            .bind(&block.multihash)
            .bind(source)
            .execute(&mut *tx)
            .await?;
        }
        Ok(count)
    }
}

/// The location columns of `blocks JOIN packs`, as `SELECT`ed by the block lookups.
fn location(row: &impl ModelRow) -> BlockLocation {
    BlockLocation {
        pack: row.text("name"),
        offset: row.int("offset") as u64,
        length: row.int("length") as u64,
        without_links: row.maybe_int("without_links") == Some(1),
    }
}

const LOCATION: &str = "SELECT blocks.multihash, packs.name, blocks.\"offset\", blocks.length,
        blocks.without_links
    FROM blocks JOIN packs ON packs.id = blocks.pack_id WHERE multihash";
