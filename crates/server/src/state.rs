//! What every handler shares: the service (stores, node, background work) and what only HTTP
//! needs: its settings, the rate limiter and the TUS upload locks.

use std::sync::Arc;

use cairn_service::Service;

use crate::rate_limit::{RateLimiter, RateLimits};
use crate::tus::lock::Locks;

#[derive(Clone)]
pub struct AppState {
    pub service: Service,
    pub config: Arc<ServerConfig>,
    pub limiter: Arc<RateLimiter>,
    pub tus_locks: Arc<Locks>,
}

impl AppState {
    pub fn new(service: Service, config: ServerConfig) -> Self {
        let shared_store = service.config.shared_store;
        let store = &service.store;
        let tus_locks = if shared_store {
            Locks::leased(store.clone(), config.upload_lease)
        } else {
            Locks::in_process()
        };
        Self {
            tus_locks: Arc::new(tus_locks),
            limiter: Arc::new(if shared_store {
                RateLimiter::shared(config.rate_limits.clone(), store.clone())
            } else {
                RateLimiter::new(config.rate_limits.clone())
            }),
            config: Arc::new(config),
            service,
        }
    }
}

/// The HTTP hosts' settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Bytes of multipart framing tolerated above the upload limit in `Content-Length`.
    pub multipart_overhead: u64,
    pub rate_limits: RateLimits,
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
            multipart_overhead: 64 * 1024,
            rate_limits: RateLimits::default(),
            tus_max_size: 1 << 40,
            upload_lease: std::time::Duration::from_secs(6),
            tus_expiry: std::time::Duration::from_secs(24 * 3600),
            idle_timeout: std::time::Duration::from_secs(60),
            trust_forwarded_headers: false,
            header_timeout: std::time::Duration::from_secs(10),
            public_url: None,
            upload_port: 8080,
            gateway_domain: Some("localhost".into()),
            path_gateway_sandbox: true,
            web_dir: None,
        }
    }
}
