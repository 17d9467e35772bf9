//! Cairn's work behind the HTTP hosts: everything that runs on its own once a request has
//! been answered, or that no request asks for. The HTTP crate (`cairn-server`) hands work
//! over through the store's durable queue and reads what this crate keeps; `cairn gc` and
//! `cairn fsck` use it directly.
//!
//! - [`Service`]: the stores, the IPFS node and what the background tasks share;
//!   [`config`]: its settings, parsed.
//! - [`progress`]: how far providing and IPNI publishing have come.
//! - [`worker`]: the operation workers (uploads and archives from the durable queue).
//! - [`pin`]: pins by CID, fetched over Bitswap.
//! - [`gc`]: garbage collection (mark, plan, compact, apply) and `fsck`.
//! - [`provide`]: announcing stored roots to the DHT from the provide log, and reproviding.
//! - [`ipni_publisher`]: publishing this node's IPNI advertisement chain (what each root's DAG holds,
//!   and removals), and announcing it to indexers.
//! - [`node_blocks`]: the node's blockstore is the store's blocks (where p2p and store meet).
//! - [`nodes`]: the service's live IPFS nodes, announced to each other through the metadata
//!   store, which delegated routing names as providers.
//! - [`events`]: the event log followed for this node's streams.
//! - [`webhooks`]: webhook deliveries, signed and sent from the durable queue.
//! - [`names`]: IPNS names kept for accounts: keys sealed, records signed, put to the DHT and
//!   republished; names resolved.
//! - [`records`]: the records clients read as JSON (uploads, operations, pins, event bodies).
//! - [`scrub`]: every stored block read again at a bounded rate, checked, and repaired from
//!   peers when damaged.
//! - [`tus`]: a TUS upload's life after its bytes: settled, completed, expired, swept.
//! - [`served`]: bytes served of each account's content, for its usage.
//! - [`detect`]: what an upload is (a CAR, an archive to extract, or a file), decided once for
//!   every way in.
//! - [`ingest`]: an upload's bytes into stored blocks (the pack, the file and CAR imports).
//! - [`metrics`]: the process's counters and their Prometheus text.

pub mod config;
pub mod detect;
pub mod events;
pub mod gc;
pub mod ingest;
pub mod ipni_publisher;
pub mod metrics;
pub mod names;
mod names_key;
pub mod node_blocks;
pub mod nodes;
mod outcome;
pub mod pin;
pub mod progress;
pub mod provide;
pub mod records;
pub mod scrub;
pub mod served;
mod stop;
pub mod tus;
pub mod webhooks;
pub mod worker;

pub use config::{ProvideStrategy, ServiceConfig};
pub use stop::sleep_unless_stopped;

use std::path::Path;
use std::sync::Arc;

use cairn_p2p::NodeHandle;
use cairn_store::model::OperationKind;
use cairn_store::packs::Packs;
use cairn_store::sqlite::SqliteStore;
use cairn_store::staging::Staging;
use cairn_store::tus_bytes::{FileTusBytes, TusBytes};
use cairn_store::{MetadataStore, StoreError};
use tokio::sync::{watch, Notify};

use crate::events::EventBus;
use crate::metrics::Metrics;
use crate::names_key::NamesKey;
use crate::nodes::NodeDirectory;
use crate::progress::{IpniStats, ProvideStats, ScrubStats};
use crate::served::ServedBytes;

/// The stores, the node and what the background tasks share. Cheap to clone.
#[derive(Clone)]
pub struct Service {
    pub store: Arc<dyn MetadataStore>,
    pub packs: Packs,
    pub staging: Staging,
    pub tus_bytes: Arc<dyn TusBytes>,
    pub config: Arc<ServiceConfig>,
    pub metrics: Arc<Metrics>,
    /// Wakes an idle worker when an operation is queued.
    pub queue: Arc<Notify>,
    /// This process's IPFS node, unless it runs without one.
    pub node: Option<NodeHandle>,
    /// The service's live nodes, which delegated routing names as providers.
    pub nodes: Arc<NodeDirectory>,
    /// How far this node has provided what is stored to the DHT.
    pub provides: Arc<ProvideStats>,
    /// What this node has published to IPNI.
    pub ipni: Arc<IpniStats>,
    /// New events, for this node's streams (`events::follow_events` fills it).
    pub events: Arc<EventBus>,
    /// What scrubbing found (`scrub::keep_scrubbing` fills it).
    pub scrub: Arc<ScrubStats>,
    /// Bytes the gateway served, not yet credited to accounts (`served::record_served`).
    pub served: Arc<ServedBytes>,
    /// Seals the keys of the names accounts keep; names are refused without it.
    pub names_key: Option<Arc<NamesKey>>,
    /// Set once the process is asked to stop: background tasks end at a safe point, and a
    /// TUS body still arriving ends early with its bytes kept.
    pub stop: Arc<watch::Sender<bool>>,
}

impl Service {
    /// A service on the embedded stores under `dir` (`cairn.db`, `packs/`, `staging/`,
    /// `tus/`, `names.key`), without an IPFS node: where tests and benches start. The SQLite
    /// store comes back too, for the caller to seed.
    pub async fn embedded(
        dir: &Path,
        config: ServiceConfig,
    ) -> Result<(Self, Arc<SqliteStore>), StoreError> {
        let store = Arc::new(SqliteStore::open(&dir.join("cairn.db")).await?);
        let service = Self::new(
            store.clone(),
            Packs::open(dir.join("packs"))?,
            Staging::open(dir.join("staging"))?,
            Arc::new(FileTusBytes::open(dir.join("tus"))?),
            config,
        )
        .with_names_key(NamesKey::load_or_create(&dir.join("names.key"))?);
        Ok((service, store))
    }

    pub fn new(
        store: Arc<dyn MetadataStore>,
        packs: Packs,
        staging: Staging,
        tus_bytes: Arc<dyn TusBytes>,
        config: ServiceConfig,
    ) -> Self {
        let (metrics, scrub) = (
            Arc::new(Metrics::default()),
            Arc::new(ScrubStats::default()),
        );
        metrics.watch_scrub(scrub.clone());
        Self {
            store,
            packs,
            staging,
            tus_bytes,
            config: Arc::new(config),
            metrics,
            queue: Arc::new(Notify::new()),
            node: None,
            nodes: Arc::default(),
            provides: Arc::default(),
            ipni: Arc::default(),
            events: Arc::default(),
            scrub,
            served: Arc::default(),
            names_key: None,
            stop: Arc::new(watch::channel(false).0),
        }
    }

    /// The service of a process that runs `node`, whose counters `/metrics` shows and which
    /// the node directory names.
    pub fn with_node(mut self, node: Option<NodeHandle>) -> Self {
        self.nodes = Arc::new(NodeDirectory::new(
            node.as_ref(),
            self.config.gateway_addr.clone(),
        ));
        if let Some(node) = &node {
            self.metrics.watch_node(
                node.bitswap().clone(),
                self.provides.clone(),
                self.ipni.clone(),
            );
        }
        self.node = node;
        self
    }

    /// The service of a process that keeps names, sealing their keys with `key`.
    pub fn with_names_key(mut self, key: NamesKey) -> Self {
        self.names_key = Some(Arc::new(key));
        self
    }

    /// Delete what an upload's bytes were kept in while waiting to be processed: its TUS
    /// bytes, or its staged file (a pin has none). On a blocking thread: on S3 that is a few
    /// requests. A failure is logged; the startup sweeps catch what is left.
    pub async fn release_upload_bytes(&self, kind: OperationKind, upload_id: &str) {
        let (tus_bytes, staging, id) = (
            self.tus_bytes.clone(),
            self.staging.clone(),
            upload_id.to_owned(),
        );
        let released = tokio::task::spawn_blocking(move || match kind {
            OperationKind::TusUpload => tus_bytes.remove(&id),
            OperationKind::Upload | OperationKind::CarImport => staging.remove(&id),
            OperationKind::Pin => Ok(()),
        })
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e)));
        if let Err(e) = released {
            tracing::warn!(upload = upload_id, error = %e, "releasing an upload's bytes failed");
        }
    }
}
