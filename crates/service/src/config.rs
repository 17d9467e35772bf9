//! What the work behind the hosts is told, parsed: how to import, what to read, how long work
//! may hold, and what to announce.

use std::time::Duration;

use cairn_archive::Limits;
use cairn_p2p::Multiaddr;
use cairn_unixfs::read::ReadLimits;
use cairn_unixfs::Profile;

/// The default `--scrub-rate`: 50 MiB/s reads 4 TiB a day, a full pass of a large node's disk
/// daily, while leaving most of a disk's (150 to 500 MB/s) or a bucket link's bandwidth to
/// serving.
pub const DEFAULT_SCRUB_RATE: u64 = 50 << 20;

/// The default `--reprovide-interval`: Kubo's, well inside the 48 hours peers keep records.
pub const DEFAULT_REPROVIDE_INTERVAL: Duration = Duration::from_secs(22 * 3600);

/// What the work behind the hosts is told: how to import, what to read, how long work may
/// hold, and what to announce.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    /// The profile used when an upload names none.
    pub default_profile: Profile,
    /// Limits on what an archive may expand to (the total is also capped by the quota).
    pub archive_limits: Limits,
    /// How much one walk of a DAG may read (a gateway request, a pin's fetch): depth,
    /// blocks and bytes (repeats counted).
    pub read_limits: ReadLimits,
    /// How long a worker's claim holds without a progress report; after a crash, the
    /// operation waits this long before another worker takes it.
    pub worker_lease: Duration,
    /// How long a pin by CID may go without receiving a block before it fails.
    pub pin_timeout: Duration,
    /// Other nodes share the metadata and content stores: TUS uploads are locked with leases,
    /// and rate limits counted, in the metadata store rather than in this process.
    pub shared_store: bool,
    /// The gateway's address as a multiaddr (`/ip4/.../tcp/.../http`), for provider records.
    pub gateway_addr: Option<Multiaddr>,
    /// What this node provides to the DHT: roots, or every block.
    pub provide_strategy: ProvideStrategy,
    /// How often everything is provided again (`provide.rs`).
    pub reprovide_interval: Duration,
    /// IPNI indexers told of each new advertisement (`PUT`, `--ipni-announce`).
    pub ipni_announce: Vec<reqwest::Url>,
    /// How long after a scrub pass ends the next begins; zero: no scrubbing.
    pub scrub_interval: Duration,
    /// Bytes a second scrubbing may read, at most.
    pub scrub_rate: u64,
    /// Webhook endpoints may be on private and loopback addresses (`--webhook-allow-private`;
    /// tests and trusted networks): otherwise a webhook could reach what only this machine
    /// can.
    pub webhook_allow_private: bool,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            default_profile: Profile::default(),
            archive_limits: Limits::default(),
            read_limits: ReadLimits::default(),
            worker_lease: Duration::from_secs(30),
            pin_timeout: Duration::from_secs(3600),
            shared_store: false,
            gateway_addr: None,
            provide_strategy: ProvideStrategy::default(),
            reprovide_interval: DEFAULT_REPROVIDE_INTERVAL,
            ipni_announce: Vec::new(),
            scrub_interval: Duration::ZERO,
            scrub_rate: DEFAULT_SCRUB_RATE,
            webhook_allow_private: false,
        }
    }
}

/// What a node provides to the DHT (`--provide-strategy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProvideStrategy {
    /// The root CID of every upload and pin (Kubo's `roots`): few records, and a client that
    /// starts from the root finds the node.
    #[default]
    Roots,
    /// Every stored block (Kubo's `all`): a client that asks for an inner block alone (a file
    /// inside a directory, by its own CID) finds the node too, at one record per block.
    All,
}

impl std::str::FromStr for ProvideStrategy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "roots" => Ok(Self::Roots),
            "all" => Ok(Self::All),
            other => Err(format!("{other:?} is neither `roots` nor `all`")),
        }
    }
}
