//! Service configuration: defaults, then a TOML file, then environment variables and flags
//! (clap reads both), each overriding the one before.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use cairn_p2p::Multiaddr;
use cairn_service::ProvideStrategy;
use cairn_unixfs::read::ReadLimits;
use cairn_unixfs::Profile;
use serde::Deserialize;

pub const DEFAULT_DATA_DIR: &str = "./cairn-data";
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
pub const DEFAULT_ACCOUNT_LISTEN: &str = "127.0.0.1:8081";

/// Every `serve` setting, declared once: as flags with their environment variables (clap),
/// and as the keys of the TOML file (serde; unknown keys are an error, so typos don't pass
/// silently). Every field is optional at both layers; defaults come last.
#[derive(Debug, Default, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Settings {
    /// Where the database and pack files live [default: ./cairn-data].
    #[arg(long, env = "CAIRN_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Metadata database: `postgres://...` or `sqlite://PATH` [default: DATA_DIR/cairn.db].
    #[arg(long, env = "CAIRN_DATABASE_URL")]
    pub database_url: Option<String>,
    /// Content store shared by several nodes: `s3://BUCKET[/PREFIX]?endpoint=URL&region=R`,
    /// credentials from `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY` [default: DATA_DIR].
    #[arg(long, env = "CAIRN_STORE")]
    pub store: Option<String>,
    /// Upload host address [default: 127.0.0.1:8080].
    #[arg(long, env = "CAIRN_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Account host address [default: 127.0.0.1:8081].
    #[arg(long, env = "CAIRN_ACCOUNT_LISTEN")]
    pub account_listen: Option<SocketAddr>,
    /// CID profile for uploads that name none [default: unixfs-v1-2025].
    #[arg(long, env = "CAIRN_PROFILE")]
    #[serde(default, deserialize_with = "parsed")]
    pub profile: Option<Profile>,
    /// Operation workers (archives to extract, completed TUS uploads, pins) [default: twice
    /// the cores].
    #[arg(long, env = "CAIRN_WORKERS")]
    pub workers: Option<usize>,
    /// Seconds a worker's claim holds without progress; after a crash, the time before another
    /// worker resumes the operation [default: 30].
    #[arg(long, env = "CAIRN_WORKER_LEASE_SECONDS")]
    pub worker_lease_seconds: Option<u64>,
    /// How long a pin by CID may go without receiving a block before it fails as not found
    /// (`30s`, `1h`) [default: 1h].
    #[arg(long, env = "CAIRN_PIN_TIMEOUT")]
    #[serde(default, deserialize_with = "parsed")]
    pub pin_timeout: Option<humantime::Duration>,
    /// How often this node collects garbage (blocks no upload or pin keeps); `0s` never
    /// (`cairn gc` still does) [default: 1h].
    #[arg(long, env = "CAIRN_GC_INTERVAL")]
    #[serde(default, deserialize_with = "parsed")]
    pub gc_interval: Option<humantime::Duration>,
    /// How often this node reads every stored block again and checks it against its CID,
    /// repairing a damaged one from peers (`24h`, `30m`; a pass begins that long after the
    /// last one ended); `0s` never (`cairn fsck --deep` checks once) [default: 0s].
    #[arg(long, env = "CAIRN_SCRUB_INTERVAL")]
    #[serde(default, deserialize_with = "parsed")]
    pub scrub_interval: Option<humantime::Duration>,
    /// Bytes a second scrubbing reads at most [default: 52428800, 50 MiB].
    #[arg(long, env = "CAIRN_SCRUB_RATE")]
    pub scrub_rate: Option<u64>,
    /// Build TUS `Location` URLs from `X-Forwarded-Proto`/`X-Forwarded-Host`; only behind a
    /// proxy that sets them [default: false].
    #[arg(long, env = "CAIRN_TRUST_FORWARDED_HEADERS")]
    pub trust_forwarded_headers: Option<bool>,
    /// Uploads (POSTs and TUS creations) each account may start per minute, counted across
    /// nodes on a shared store [default: 120].
    #[arg(long, env = "CAIRN_UPLOADS_PER_MINUTE")]
    pub uploads_per_minute: Option<u32>,
    /// Largest TUS upload accepted, in bytes (`Tus-Max-Size`) [default: 1099511627776, 1 TiB].
    #[arg(long, env = "CAIRN_TUS_MAX_SIZE")]
    pub tus_max_size: Option<u64>,
    /// Deepest a gateway request may walk into a DAG (path steps and nesting) [default: 1024].
    #[arg(long, env = "CAIRN_GATEWAY_MAX_DEPTH")]
    pub gateway_max_depth: Option<usize>,
    /// Blocks one gateway request may read, repeated visits counted [default: 1000000].
    #[arg(long, env = "CAIRN_GATEWAY_MAX_BLOCKS")]
    pub gateway_max_blocks: Option<u64>,
    /// Bytes one gateway request may read, repeated visits counted [default: 1099511627776,
    /// 1 TiB].
    #[arg(long, env = "CAIRN_GATEWAY_MAX_BYTES")]
    pub gateway_max_bytes: Option<u64>,
    /// The IPFS node's listen addresses, comma-separated, or `none` to run without it
    /// [default: /ip4/127.0.0.1/tcp/4001,/ip4/127.0.0.1/udp/4001/quic-v1].
    #[arg(long, env = "CAIRN_P2P_LISTEN")]
    pub p2p_listen: Option<String>,
    /// Public addresses to announce instead of the listen ones, comma-separated.
    #[arg(long, env = "CAIRN_P2P_ANNOUNCE")]
    pub p2p_announce: Option<String>,
    /// Peers to join at start: `none`, `public` (the IPFS network's bootstrap peers) or
    /// multiaddrs with `/p2p/`, comma-separated [default: none].
    #[arg(long, env = "CAIRN_P2P_BOOTSTRAP")]
    pub p2p_bootstrap: Option<String>,
    /// What the IPFS node provides to the DHT: `roots` (each upload's and pin's root CID) or
    /// `all` (every stored block) [default: roots].
    #[arg(long, env = "CAIRN_PROVIDE_STRATEGY")]
    #[serde(default, deserialize_with = "parsed")]
    pub provide_strategy: Option<ProvideStrategy>,
    /// How often everything is provided to the DHT again, region by region of its keyspace
    /// spread over the interval (`22h`, `12h`); at most `48h`, when peers drop the records
    /// [default: 22h].
    #[arg(long, env = "CAIRN_REPROVIDE_INTERVAL")]
    #[serde(default, deserialize_with = "parsed")]
    pub reprovide_interval: Option<humantime::Duration>,
    /// IPNI indexers to announce this node's advertisement chain to, comma-separated URLs
    /// (`https://cid.contact` is sent `PUT /announce`; a URL with a path is used as it is)
    /// [default: none; the chain is served at `/ipni/v1/ad/` either way].
    #[arg(long, env = "CAIRN_IPNI_ANNOUNCE")]
    pub ipni_announce: Option<String>,
    /// The upload host's public URL, for HTTP provider records and the web page [default:
    /// its listen address].
    #[arg(long, env = "CAIRN_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Serve content as its own origin at `{cid}.ipfs.DOMAIN` (a wildcard DNS name for the
    /// upload host), redirecting browsers there from `/ipfs/{cid}`; `none` for the path
    /// gateway only [default: localhost].
    #[arg(long, env = "CAIRN_GATEWAY_DOMAIN")]
    pub gateway_domain: Option<String>,
    /// Sandbox what the path gateway serves (a `Content-Security-Policy` that gives it an
    /// origin of its own) [default: true].
    #[arg(long, env = "CAIRN_PATH_GATEWAY_SANDBOX")]
    pub path_gateway_sandbox: Option<bool>,
    /// Serve the web page's files from this directory instead of the built-in copies, read
    /// on every request (for working on the page).
    #[arg(long, env = "CAIRN_WEB_DIR")]
    pub web_dir: Option<PathBuf>,
    /// Let webhook endpoints be loopback, private or link-local addresses (receivers on this
    /// machine or its network) [default: false: public addresses only].
    #[arg(long, env = "CAIRN_WEBHOOK_ALLOW_PRIVATE")]
    pub webhook_allow_private: Option<bool>,
    /// PEM certificate chain: both hosts serve HTTPS, HTTP/2 or HTTP/1.1 as the client
    /// chooses (with --tls-key) [default: cleartext, HTTP/1.1 or h2c].
    #[arg(long, env = "CAIRN_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "CAIRN_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// File holding the key (32 bytes, base64) that seals the keys of IPNS names in the
    /// database; every node sharing a database needs the same one [default:
    /// {data-dir}/names.key, made on first start; on a shared database (--database-url) none,
    /// and names are off].
    #[arg(long, env = "CAIRN_NAMES_KEY")]
    pub names_key: Option<PathBuf>,
}

/// A TOML value parsed as its flag is: by the type's `FromStr`, so both say the same thing of
/// a bad value.
fn parsed<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    let text = String::deserialize(deserializer)?;
    text.parse().map(Some).map_err(serde::de::Error::custom)
}

impl Settings {
    pub fn load(path: Option<&Path>) -> Result<Self> {
        let Some(path) = path else {
            return Ok(Self::default());
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading config file {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("config file {}", path.display()))
    }
}

/// The resolved settings `cairn serve` runs with.
#[derive(Debug)]
pub struct ServeConfig {
    pub data_dir: PathBuf,
    pub database_url: Option<String>,
    pub store: Option<String>,
    pub listen: SocketAddr,
    pub account_listen: SocketAddr,
    pub profile: Profile,
    /// Operation workers (archive extraction) in this process.
    pub workers: usize,
    pub worker_lease: std::time::Duration,
    pub pin_timeout: std::time::Duration,
    /// Zero: no collection in the background.
    pub gc_interval: std::time::Duration,
    /// Zero: no scrubbing.
    pub scrub_interval: std::time::Duration,
    pub scrub_rate: u64,
    pub trust_forwarded_headers: bool,
    pub uploads_per_minute: u32,
    pub tus_max_size: u64,
    pub read_limits: ReadLimits,
    /// The IPFS node, unless it is turned off.
    pub p2p: Option<P2pConfig>,
    pub public_url: Option<reqwest::Url>,
    pub provide_strategy: ProvideStrategy,
    pub reprovide_interval: std::time::Duration,
    /// Where IPNI announces are sent.
    pub ipni_announce: Vec<reqwest::Url>,
    /// `None`: the path gateway only.
    pub gateway_domain: Option<String>,
    pub path_gateway_sandbox: bool,
    pub web_dir: Option<PathBuf>,
    pub webhook_allow_private: bool,
    /// The certificate chain and key both hosts serve TLS with.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// The file of the key that seals names' keys, when given (`--names-key`).
    pub names_key: Option<PathBuf>,
}

/// Where the IPFS node listens, what it announces, and whom it joins.
#[derive(Debug, Clone)]
pub struct P2pConfig {
    pub listen: Vec<Multiaddr>,
    /// Whether `listen` was chosen (`--p2p-listen`) rather than defaulted: a default port
    /// that is taken gives way to a free one.
    pub listen_chosen: bool,
    pub announce: Vec<Multiaddr>,
    pub bootstrap: Vec<Multiaddr>,
}

impl P2pConfig {
    fn resolve(
        listen: Option<String>,
        announce: Option<String>,
        bootstrap: Option<String>,
    ) -> Result<Option<Self>> {
        let listen_chosen = listen.as_deref().map(str::trim);
        let listen = match listen_chosen {
            Some("none") => return Ok(None),
            Some(list) => multiaddrs(list, "--p2p-listen")?,
            None => cairn_p2p::NodeConfig::default().listen,
        };
        let bootstrap = match bootstrap.as_deref().map(str::trim) {
            None | Some("none") | Some("") => Vec::new(),
            Some("public") => cairn_p2p::public_bootstrap(),
            Some(list) => multiaddrs(list, "--p2p-bootstrap")?,
        };
        Ok(Some(Self {
            listen,
            listen_chosen: listen_chosen.is_some(),
            announce: multiaddrs(announce.as_deref().unwrap_or_default(), "--p2p-announce")?,
            bootstrap,
        }))
    }
}

fn multiaddrs(list: &str, setting: &str) -> Result<Vec<Multiaddr>> {
    list.split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(|a| {
            a.parse()
                .with_context(|| format!("{setting}: {a:?} is not a multiaddr"))
        })
        .collect()
}

impl ServeConfig {
    /// Flags and environment first, then the config file at `config`, then the defaults.
    pub fn resolve(config: Option<&Path>, flags: Settings) -> Result<Self> {
        let file = Settings::load(config)?;
        let default_addr = |a: &str| a.parse::<SocketAddr>().expect("valid default address");
        let profile = flags.profile.or(file.profile);
        Ok(Self {
            data_dir: flags
                .data_dir
                .or(file.data_dir)
                .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR)),
            database_url: flags.database_url.or(file.database_url),
            store: flags.store.or(file.store),
            listen: flags
                .listen
                .or(file.listen)
                .unwrap_or_else(|| default_addr(DEFAULT_LISTEN)),
            account_listen: flags
                .account_listen
                .or(file.account_listen)
                .unwrap_or_else(|| default_addr(DEFAULT_ACCOUNT_LISTEN)),
            profile: profile.unwrap_or_default(),
            workers: flags
                .workers
                .or(file.workers)
                .unwrap_or_else(default_workers)
                .max(1),
            worker_lease: std::time::Duration::from_secs(
                flags
                    .worker_lease_seconds
                    .or(file.worker_lease_seconds)
                    .unwrap_or(30)
                    .max(1),
            ),
            pin_timeout: flags
                .pin_timeout
                .or(file.pin_timeout)
                .map_or(std::time::Duration::from_secs(3600), Into::into),
            gc_interval: flags
                .gc_interval
                .or(file.gc_interval)
                .map_or(std::time::Duration::from_secs(3600), Into::into),
            scrub_interval: flags
                .scrub_interval
                .or(file.scrub_interval)
                .map_or(std::time::Duration::ZERO, Into::into),
            scrub_rate: flags
                .scrub_rate
                .or(file.scrub_rate)
                .unwrap_or(cairn_service::config::DEFAULT_SCRUB_RATE)
                .max(1),
            trust_forwarded_headers: flags
                .trust_forwarded_headers
                .or(file.trust_forwarded_headers)
                .unwrap_or(false),
            uploads_per_minute: flags
                .uploads_per_minute
                .or(file.uploads_per_minute)
                .unwrap_or(120)
                .max(1),
            tus_max_size: flags.tus_max_size.or(file.tus_max_size).unwrap_or(1 << 40),
            p2p: P2pConfig::resolve(
                flags.p2p_listen.or(file.p2p_listen),
                flags.p2p_announce.or(file.p2p_announce),
                flags.p2p_bootstrap.or(file.p2p_bootstrap),
            )?,
            provide_strategy: flags
                .provide_strategy
                .or(file.provide_strategy)
                .unwrap_or_default(),
            reprovide_interval: reprovide_interval(
                flags.reprovide_interval.or(file.reprovide_interval),
            )?,
            ipni_announce: ipni_announce(flags.ipni_announce.or(file.ipni_announce))?,
            public_url: match flags.public_url.or(file.public_url) {
                Some(url) => Some(
                    url.parse()
                        .with_context(|| format!("--public-url: {url:?} is not a URL"))?,
                ),
                None => None,
            },
            gateway_domain: match flags.gateway_domain.or(file.gateway_domain) {
                Some(domain) if domain == "none" => None,
                Some(domain) => Some(gateway_domain(&domain)?),
                None => Some("localhost".to_owned()),
            },
            path_gateway_sandbox: (flags.path_gateway_sandbox.or(file.path_gateway_sandbox))
                .unwrap_or(true),
            web_dir: flags.web_dir.or(file.web_dir),
            webhook_allow_private: (flags.webhook_allow_private.or(file.webhook_allow_private))
                .unwrap_or(false),
            names_key: flags.names_key.or(file.names_key),
            tls: match (
                flags.tls_cert.or(file.tls_cert),
                flags.tls_key.or(file.tls_key),
            ) {
                (Some(cert), Some(key)) => Some((cert, key)),
                (None, None) => None,
                _ => bail!("--tls-cert and --tls-key go together: give both, or neither"),
            },
            read_limits: {
                let default = ReadLimits::default();
                ReadLimits {
                    max_depth: (flags.gateway_max_depth.or(file.gateway_max_depth))
                        .unwrap_or(default.max_depth),
                    max_blocks: (flags.gateway_max_blocks.or(file.gateway_max_blocks))
                        .unwrap_or(default.max_blocks),
                    max_bytes: (flags.gateway_max_bytes.or(file.gateway_max_bytes))
                        .unwrap_or(default.max_bytes),
                }
            },
        })
    }
}

/// `--reprovide-interval`: more than zero, and short enough that the records are provided
/// again before peers drop them.
/// Twice the cores: a worker's operation is as much waiting (its pack's sync, the commit's) as
/// hashing. Two workers on two cores fell behind the 200-client load (acknowledgement to CID
/// 19 s at p50, 2,685 operations queued when it ended); four kept up (0.55 s, BENCHMARKS.md).
fn default_workers() -> usize {
    2 * std::thread::available_parallelism().map_or(1, |cores| cores.get())
}

fn reprovide_interval(
    interval: Option<humantime::Duration>,
) -> anyhow::Result<std::time::Duration> {
    let Some(interval) = interval else {
        return Ok(cairn_service::config::DEFAULT_REPROVIDE_INTERVAL);
    };
    let interval: std::time::Duration = interval.into();
    let ttl = cairn_p2p::dht::PROVIDER_RECORD_TTL;
    if interval.is_zero() || interval > ttl {
        anyhow::bail!(
            "--reprovide-interval: {} is not between 1s and {} (peers drop provider records \
             after that)",
            humantime::format_duration(interval),
            humantime::format_duration(ttl)
        );
    }
    Ok(interval)
}

/// `--ipni-announce`: HTTP(S) URLs, each sent to `/announce` when it names no path (as
/// go-libipni's sender does).
fn ipni_announce(list: Option<String>) -> Result<Vec<reqwest::Url>> {
    let Some(list) = list else {
        return Ok(Vec::new());
    };
    list.split(',')
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(|text| {
            let mut url: reqwest::Url = text
                .parse()
                .with_context(|| format!("--ipni-announce: {text:?} is not a URL"))?;
            if !matches!(url.scheme(), "http" | "https") {
                anyhow::bail!("--ipni-announce: {text:?} must be an http:// or https:// URL");
            }
            if url.path() == "/" {
                url.set_path("/announce");
            }
            Ok(url)
        })
        .collect()
}

/// A domain name for content origins: DNS labels of letters, digits and hyphens.
fn gateway_domain(domain: &str) -> Result<String> {
    let label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if domain.len() > 200 || !domain.split('.').all(label) {
        anyhow::bail!("--gateway-domain: {domain:?} is not a domain name (or `none`)");
    }
    Ok(domain.to_ascii_lowercase())
}
