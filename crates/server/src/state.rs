//! What every handler shares: the stores and the configuration.

use std::sync::Arc;

use cairn_archive::Limits;
use cairn_p2p::{Multiaddr, NodeHandle};
use cairn_store::model::OperationKind;
use cairn_store::packs::Packs;
use cairn_store::staging::Staging;
use cairn_store::tus_bytes::TusBytes;
use cairn_store::MetadataStore;
use cairn_unixfs::read::ReadLimits;
use cairn_unixfs::Profile;
use tokio::sync::{watch, Notify};

use crate::ipni::IpniStats;
use crate::metrics::Metrics;
use crate::nodes::NodeDirectory;
use crate::provide::{ProvideStats, ProvideStrategy};
use crate::rate_limit::{RateLimiter, RateLimits};
use crate::tus::lock::Locks;

#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn MetadataStore>,
    pub packs: Packs,
    pub config: Arc<ServerConfig>,
    pub limiter: Arc<RateLimiter>,
    pub metrics: Arc<Metrics>,
    pub staging: Staging,
    /// Wakes an idle worker when an operation is queued.
    pub queue: Arc<Notify>,
    pub tus_bytes: Arc<dyn TusBytes>,
    pub tus_locks: Arc<Locks>,
    /// This process's IPFS node, unless it runs without one.
    pub node: Option<NodeHandle>,
    /// The service's live nodes, which delegated routing names as providers.
    pub nodes: Arc<NodeDirectory>,
    /// How far this node has provided what is stored to the DHT.
    pub provides: Arc<ProvideStats>,
    /// What this node has published to IPNI.
    pub ipni: Arc<IpniStats>,
    /// Set once the process is asked to stop: background tasks end at a safe point, and a
    /// TUS body still arriving ends early with its bytes kept.
    pub stop: Arc<watch::Sender<bool>>,
}

impl AppState {
    pub fn new(
        store: Arc<dyn MetadataStore>,
        packs: Packs,
        staging: Staging,
        tus_bytes: Arc<dyn TusBytes>,
        config: ServerConfig,
    ) -> Self {
        let tus_locks = if config.shared_store {
            Locks::leased(store.clone(), config.upload_lease)
        } else {
            Locks::in_process()
        };
        Self {
            staging,
            tus_bytes,
            tus_locks: Arc::new(tus_locks),
            queue: Arc::new(Notify::new()),
            limiter: Arc::new(if config.shared_store {
                RateLimiter::shared(config.rate_limits.clone(), store.clone())
            } else {
                RateLimiter::new(config.rate_limits.clone())
            }),
            metrics: Arc::new(Metrics::default()),
            store,
            packs,
            config: Arc::new(config),
            node: None,
            nodes: Arc::default(),
            provides: Arc::default(),
            ipni: Arc::default(),
            stop: Arc::new(watch::channel(false).0),
        }
    }
}

impl AppState {
    /// The state of a server that runs `node`, whose counters `/metrics` shows.
    pub fn with_node(mut self, node: Option<NodeHandle>) -> Self {
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

/// Sleep for `duration`, as a background task does between rounds; `true` if `stop` came
/// first.
pub async fn sleep_unless_stopped(
    stop: &watch::Receiver<bool>,
    duration: std::time::Duration,
) -> bool {
    let mut stop = stop.clone();
    let stopped = tokio::select! {
        _ = stop.wait_for(|stop| *stop) => true,
        () = tokio::time::sleep(duration) => false,
    };
    stopped || *stop.borrow()
}

/// Service settings that handlers read.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The profile used when an upload names none.
    pub default_profile: Profile,
    /// Bytes of multipart framing tolerated above the upload limit in `Content-Length`.
    pub multipart_overhead: u64,
    pub rate_limits: RateLimits,
    /// Limits on what an archive may expand to (the total is also capped by the quota).
    pub archive_limits: Limits,
    /// How much one gateway request may read: depth, blocks and bytes (repeats counted).
    pub read_limits: ReadLimits,
    /// How long a worker's claim holds without a progress report; after a crash, the
    /// operation waits this long before another worker takes it.
    pub worker_lease: std::time::Duration,
    /// How long a pin by CID may go without receiving a block before it fails.
    pub pin_timeout: std::time::Duration,
    /// Largest TUS upload accepted (`Tus-Max-Size`).
    pub tus_max_size: u64,
    /// How long an incomplete TUS upload lives after creation.
    pub tus_expiry: std::time::Duration,
    /// A request body that sends nothing for this long is closed (its bytes are kept); a
    /// slow but steady body is never cut.
    pub idle_timeout: std::time::Duration,
    /// Believe `X-Forwarded-Proto`/`X-Forwarded-Host` (only behind a proxy that sets them).
    pub trust_forwarded_headers: bool,
    /// A connection that does not deliver its request headers in this time is closed.
    pub header_timeout: std::time::Duration,
    /// Other nodes share the metadata and content stores: TUS uploads are locked with leases,
    /// and rate limits counted, in the metadata store rather than in this process.
    pub shared_store: bool,
    /// The gateway's address as a multiaddr (`/ip4/.../tcp/.../http`), for provider records.
    pub gateway_addr: Option<Multiaddr>,
    /// What this node provides to the DHT: roots, or every block.
    pub provide_strategy: ProvideStrategy,
    /// IPNI indexers told of each new advertisement (`PUT`, `--ipni-announce`).
    pub ipni_announce: Vec<reqwest::Url>,
    /// How long a TUS upload's lease outlives its holder's last renewal (shared store only):
    /// after a node dies, its uploads can be resumed elsewhere this much later.
    pub upload_lease: std::time::Duration,
    /// The upload host's public URL (`--public-url`), for the page's API calls and links;
    /// `None`: the host the page was loaded from, on `upload_port`.
    pub public_url: Option<axum::http::Uri>,
    /// The port the upload host listens on.
    pub upload_port: u16,
    /// Content is served as its own origin, `{cid}.ipfs.{domain}`, to which browsers
    /// reading `/ipfs/{cid}` are redirected; `None`: the path gateway only.
    pub gateway_domain: Option<String>,
    /// Plain responses of the path gateway carry a `Content-Security-Policy` sandbox, so
    /// that content read there cannot use the gateway's origin (its storage, cookies).
    pub path_gateway_sandbox: bool,
    /// Read the page's files from this directory on every request instead of the copies
    /// built into the binary (for working on the page).
    pub web_dir: Option<std::path::PathBuf>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            default_profile: Profile::default(),
            multipart_overhead: 64 * 1024,
            rate_limits: RateLimits::default(),
            archive_limits: Limits::default(),
            read_limits: ReadLimits::default(),
            worker_lease: std::time::Duration::from_secs(30),
            pin_timeout: std::time::Duration::from_secs(3600),
            tus_max_size: 1 << 40,
            shared_store: false,
            upload_lease: std::time::Duration::from_secs(6),
            tus_expiry: std::time::Duration::from_secs(24 * 3600),
            idle_timeout: std::time::Duration::from_secs(60),
            trust_forwarded_headers: false,
            header_timeout: std::time::Duration::from_secs(10),
            gateway_addr: None,
            provide_strategy: ProvideStrategy::default(),
            ipni_announce: Vec::new(),
            public_url: None,
            upload_port: 8080,
            gateway_domain: Some("localhost".into()),
            path_gateway_sandbox: true,
            web_dir: None,
        }
    }
}
