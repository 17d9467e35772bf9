//! What this node announces: the provide log and sweep progress, and its IPNI chain.

use crate::model::{IpniChain, IpniPublication, LogPlace, ProvideProgress};
use crate::StoreError;
use async_trait::async_trait;

/// What this node announces: the provide log and sweep progress, and its IPNI chain.
#[async_trait]
pub trait Providing: Send + Sync {
    /// The provide log: root CIDs of completed uploads after `after`, in completion order.
    async fn completed_roots(
        &self,
        after: LogPlace,
        limit: u32,
    ) -> Result<Vec<(LogPlace, String)>, StoreError>;

    /// How many completed uploads the provide log holds after `after`.
    async fn count_completed_roots(&self, after: LogPlace) -> Result<u64, StoreError>;

    /// Every distinct root CID greater than `after`, in CID order: a reprovide sweep's pages.
    async fn distinct_roots(&self, after: &str, limit: u32) -> Result<Vec<String>, StoreError>;

    async fn provide_progress(&self, peer_id: &str) -> Result<Option<ProvideProgress>, StoreError>;

    async fn save_provide_progress(
        &self,
        peer_id: &str,
        progress: &ProvideProgress,
    ) -> Result<(), StoreError>;

    /// Deleted uploads and pins after `after` (their `deleted_at` and id), in deletion order,
    /// with their roots: the log removal advertisements follow.
    async fn deleted_roots(
        &self,
        after: LogPlace,
        limit: u32,
    ) -> Result<Vec<(LogPlace, String)>, StoreError>;

    /// Node `peer_id`'s IPNI chain; `None` before its first publication.
    async fn ipni_chain(&self, peer_id: &str) -> Result<Option<IpniChain>, StoreError>;

    /// A block (advertisement or entry chunk) of node `peer_id`'s chain.
    async fn ipni_block(&self, peer_id: &str, cid: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Of `roots`, those node `peer_id` has not advertised, in their order.
    async fn ipni_not_advertised(
        &self,
        peer_id: &str,
        roots: &[String],
    ) -> Result<Vec<String>, StoreError>;

    /// Of `roots`, those node `peer_id` advertised that no live upload or pin keeps any more.
    async fn ipni_withdrawn(
        &self,
        peer_id: &str,
        roots: &[String],
    ) -> Result<Vec<String>, StoreError>;

    /// Write a publication of node `peer_id`'s chain in one transaction: a crash leaves the
    /// head where it was or where the publication moves it, with every block it names.
    async fn publish_ipni(
        &self,
        peer_id: &str,
        publication: &IpniPublication,
    ) -> Result<(), StoreError>;
}
