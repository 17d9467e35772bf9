//! `cairn serve`: both hosts on their listeners, over the embedded store or PostgreSQL and S3, with
//! the background work and the IPFS node.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use cairn_p2p::NodeError;
use cairn_server::{account_app, listen, upload_app, AppState, ServerConfig};
use cairn_service::names::NamesKey;
use cairn_service::{Service, ServiceConfig};
use cairn_store::access::NewKey;
use cairn_store::packs::Packs;
use cairn_store::postgres::PostgresStore;
use cairn_store::s3::{S3Blobs, S3TusBytes};
use cairn_store::sqlite::SqliteStore;
use cairn_store::staging::Staging;
use cairn_store::tus_bytes::{FileTusBytes, TusBytes};
use cairn_store::{tokens, AccountLimits, MetadataStore};
use tokio::net::TcpListener;

use crate::config::{P2pConfig, ServeConfig};

/// The metadata store: `database_url` (`postgres://...`, `sqlite://PATH`), or else the
/// embedded SQLite database in `data_dir`.
pub async fn open_store(
    database_url: Option<&str>,
    data_dir: &Path,
) -> Result<Arc<dyn MetadataStore>> {
    let Some(url) = database_url else {
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("data directory {} is not writable", data_dir.display()))?;
        let store = SqliteStore::open(&data_dir.join("cairn.db"))
            .await
            .with_context(|| format!("opening the database in {}", data_dir.display()))?;
        return Ok(Arc::new(store));
    };
    if let Some(path) = url.strip_prefix("sqlite://") {
        let store = SqliteStore::open(Path::new(path))
            .await
            .with_context(|| format!("opening the database {path}"))?;
        return Ok(Arc::new(store));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        // The URL may carry a password: name only the host in errors.
        let host = url.rsplit('@').next().unwrap_or_default();
        let store = PostgresStore::open(url)
            .await
            .with_context(|| format!("connecting to PostgreSQL at {host}"))?;
        return Ok(Arc::new(store));
    }
    bail!("unsupported database URL {url:?}: use postgres://... or sqlite://PATH")
}

/// The content stores: packs, staged uploads and TUS bytes, in the S3-compatible bucket
/// `store_url`, or else under `data_dir`.
pub fn open_content(
    store_url: Option<&str>,
    data_dir: &Path,
) -> Result<(Packs, Staging, Arc<dyn TusBytes>)> {
    let writable = || format!("data directory {} is not writable", data_dir.display());
    Ok(match store_url {
        Some(url) => {
            let named = || format!("content store {}", url.split('?').next().unwrap_or(url));
            let blobs = |sub: &str| -> Result<Arc<S3Blobs>> {
                Ok(Arc::new(S3Blobs::open(url, sub).with_context(named)?))
            };
            let packs = blobs("packs")?;
            // Before anything else touches it, so that a wrong bucket is one clear line.
            packs.check().with_context(named)?;
            let tus_bytes = S3TusBytes::open(url).with_context(named)?;
            (
                Packs::new(packs),
                Staging::new(blobs("staging")?),
                Arc::new(tus_bytes),
            )
        }
        None => (
            Packs::open(data_dir.join("packs")).with_context(writable)?,
            Staging::open(data_dir.join("staging")).with_context(writable)?,
            Arc::new(FileTusBytes::open(data_dir.join("tus")).with_context(writable)?),
        ),
    })
}

pub async fn run(config: ServeConfig) -> Result<()> {
    crate::memory::return_freed_memory_every_second();
    let store = open_store(config.database_url.as_deref(), &config.data_dir).await?;
    let mut service_config = ServiceConfig {
        default_profile: config.profile.clone(),
        worker_lease: config.worker_lease,
        pin_timeout: config.pin_timeout,
        shared_store: config.store.is_some(),
        read_limits: config.read_limits,
        ipni_announce: config.ipni_announce.clone(),
        provide_strategy: config.provide_strategy,
        reprovide_interval: config.reprovide_interval,
        scrub_interval: config.scrub_interval,
        scrub_rate: config.scrub_rate,
        webhook_allow_private: config.webhook_allow_private,
        ..ServiceConfig::default()
    };
    let mut server_config = ServerConfig {
        trust_forwarded_headers: config.trust_forwarded_headers,
        tus_max_size: config.tus_max_size,
        public_url: (config.public_url.as_ref())
            .map(|url| url.as_str().parse())
            .transpose()
            .context("--public-url")?,
        gateway_domain: config.gateway_domain.clone(),
        path_gateway_sandbox: config.path_gateway_sandbox,
        web_dir: config.web_dir.clone(),
        ..ServerConfig::default()
    };
    server_config.rate_limits.upload.quota = config.uploads_per_minute;
    let (packs, staging, tus_bytes) = open_content(config.store.as_deref(), &config.data_dir)?;
    // A lone node's leftovers are all from before this start; on a shared store another
    // node's write in progress looks like a leftover, so only old ones go.
    let orphan_age = if config.store.is_some() {
        SHARED_ORPHAN_AGE
    } else {
        Duration::ZERO
    };
    sweep_orphans(store.as_ref(), &packs, &staging, orphan_age).await?;
    let first_token = create_default_account(store.as_ref()).await?;

    let tls = match &config.tls {
        Some((cert, key)) => Some(cairn_server::tls::load(cert, key)?),
        None => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let upload_listener = bind(config.listen).await?;
    let account_listener = bind(config.account_listen).await?;
    server_config.upload_port = upload_listener.local_addr()?.port();
    service_config.gateway_addr = Some(gateway_addr(
        config.public_url.as_ref(),
        scheme,
        upload_listener.local_addr()?,
    )?);
    let node = match &config.p2p {
        Some(p2p) => Some(start_node(&config, p2p, store.clone(), packs.clone()).await?),
        None => None,
    };
    // Nodes sharing a database must share the names key: one made by a node alone would seal
    // names the others cannot open. Given none there, names are off, said in one line.
    let names_key = match (&config.names_key, config.database_url.is_some()) {
        (Some(path), _) => Some(path.clone()),
        (None, false) => Some(config.data_dir.join("names.key")),
        (None, true) => {
            tracing::warn!(
                "IPNS names are off: nodes sharing a database need the same names key; give \
                 each --names-key FILE (32 bytes in base64: `openssl rand -base64 32`)"
            );
            None
        }
    };
    let mut service =
        Service::new(store, packs, staging, tus_bytes, service_config).with_node(node.clone());
    if let Some(path) = names_key {
        let key = NamesKey::load_or_create(&path)
            .with_context(|| format!("the names key {}", path.display()))?;
        service = service.with_names_key(key);
    }
    service
        .nodes
        .refresh(service.store.as_ref())
        .await
        .context("announcing this node in the metadata store")?;
    // Before anything is printed: a signal sent as soon as the addresses appear must stop the
    // service gracefully, not kill it.
    let shutdown = shutdown_signal().context("installing signal handlers")?;
    println!(
        "upload host listening on {scheme}://{}",
        upload_listener.local_addr()?
    );
    println!(
        "account host listening on {scheme}://{}",
        account_listener.local_addr()?
    );
    let data_dir = config.data_dir.display();
    match first_token {
        Some(token) => println!(
            "created account \"default\"; its API token (shown only this once):\n  {token}"
        ),
        None => println!(
            "get an API token with: cairn token create --account default --data-dir {data_dir}"
        ),
    }
    println!(
        "web page at {scheme}://{}/ (sign in with an API token)",
        account_listener.local_addr()?
    );
    if let Some(node) = &node {
        println!("p2p peer id {}", node.peer_id());
        for addr in node.listen_addrs() {
            println!("p2p listening on {addr}/p2p/{}", node.peer_id());
        }
    }

    // One signal stops both hosts, the background tasks and the TUS bodies still arriving.
    let stop_rx = service.stop.subscribe();
    tokio::spawn({
        let stop = service.stop.clone();
        async move {
            shutdown.await;
            stop.send_replace(true);
        }
    });
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let workers = cairn_service::worker::spawn(service.clone(), config.workers, stop_rx.clone());
    let announcing = tokio::spawn(cairn_service::nodes::keep_announcing(
        service.nodes.clone(),
        service.store.clone(),
        stop_rx.clone(),
    ));
    tokio::spawn(cairn_service::provide::keep_providing(
        service.clone(),
        stop_rx.clone(),
    ));
    tokio::spawn(cairn_service::ipni_publisher::keep_publishing(
        service.clone(),
        stop_rx.clone(),
    ));
    // Other nodes, `cairn gc` and outdated compactions may leave packs behind while this one
    // runs.
    tokio::spawn(sweep_orphans_hourly(service.clone(), stop_rx.clone()));
    if !config.gc_interval.is_zero() {
        tokio::spawn(cairn_service::gc::keep_collecting(
            service.clone(),
            config.gc_interval,
            stop_rx.clone(),
        ));
    }
    tokio::spawn(cairn_service::scrub::keep_scrubbing(
        service.clone(),
        config.data_dir.clone(),
        stop_rx.clone(),
    ));
    tokio::spawn(cairn_service::events::follow_events(
        service.store.clone(),
        service.events.clone(),
        stop_rx.clone(),
    ));
    let recording_served = tokio::spawn(cairn_service::served::record_served(
        service.store.clone(),
        service.served.clone(),
        service.node.as_ref().map(|node| node.bitswap().clone()),
        stop_rx.clone(),
    ));
    tokio::spawn(cairn_service::webhooks::deliver_webhooks(service.clone()));
    tokio::spawn(cairn_service::tus::keep_sweeping_expired(
        service.clone(),
        stop_rx.clone(),
    ));
    let state = AppState::new(service, server_config);
    tokio::spawn(cairn_service::names::republish(state.service.clone()));
    let header_timeout = state.config.header_timeout;
    let upload = listen::serve(
        upload_listener,
        upload_app(state.clone()),
        header_timeout,
        tls.clone(),
        stopped(stop_rx.clone()),
    );
    let account = listen::serve(
        account_listener,
        account_app(state),
        header_timeout,
        tls,
        stopped(stop_rx),
    );
    // In-flight requests finish before each server returns.
    let (upload, account) = tokio::join!(upload, account);
    upload.context("upload host")?;
    account.context("account host")?;
    // Workers stop at a safe point; an abandoned extraction resumes on the next start.
    for worker in workers {
        let _ = worker.await;
    }
    // Withdrawn before it stops answering, so the others stop naming it.
    let _ = announcing.await;
    // What the gateway served until the end is credited.
    let _ = recording_served.await;
    if let Some(node) = node {
        node.shutdown().await;
    }
    println!("stopped");
    Ok(())
}

/// Start the IPFS node with its key from the data directory (made on first start), serving
/// the stored blocks.
async fn start_node(
    config: &ServeConfig,
    p2p: &P2pConfig,
    store: Arc<dyn MetadataStore>,
    packs: Packs,
) -> Result<cairn_p2p::NodeHandle> {
    std::fs::create_dir_all(&config.data_dir).with_context(|| {
        format!(
            "data directory {} is not writable",
            config.data_dir.display()
        )
    })?;
    let key_path = config.data_dir.join("node.key");
    let key = cairn_p2p::key::load_or_create(&key_path)
        .with_context(|| format!("the node key {}", key_path.display()))?;
    let node_config = cairn_p2p::NodeConfig {
        listen: p2p.listen.clone(),
        announce: p2p.announce.clone(),
        bootstrap: p2p.bootstrap.clone(),
        ..cairn_p2p::NodeConfig::default()
    };
    let blocks: Arc<dyn cairn_p2p::Blockstore> = Arc::new(cairn_service::node_blocks::NodeBlocks(
        cairn_store::blocks::StoredBlocks::new(store, packs),
    ));
    // Port 4001 is every IPFS node's: beside one (IPFS Desktop, Kubo, another Cairn) the
    // zero-configuration start takes free ports instead.
    let node_config = match taken(&node_config.listen) {
        Some(addr) if !p2p.listen_chosen => {
            println!(
                "p2p: {addr} is taken (another IPFS node?), so the node listens on free ports \
                 instead; --p2p-listen chooses them"
            );
            cairn_p2p::NodeConfig {
                listen: node_config.listen.iter().map(any_port).collect(),
                ..node_config
            }
        }
        _ => node_config,
    };
    cairn_p2p::start(key, node_config, blocks)
        .await
        .map_err(|e| match e {
            NodeError::Listen { .. } => anyhow!(
                "{e} (--p2p-listen chooses other addresses; --p2p-listen none runs without an \
                 IPFS node)"
            ),
            e => e.into(),
        })
}

/// The first of `addrs` that another process holds, found by binding it for a moment.
fn taken(addrs: &[cairn_p2p::Multiaddr]) -> Option<cairn_p2p::Multiaddr> {
    use cairn_p2p::Protocol;
    addrs
        .iter()
        .find(|addr| {
            let (mut ip, mut tcp, mut udp) = (None, None, None);
            for part in addr.iter() {
                match part {
                    Protocol::Ip4(a) => ip = Some(std::net::IpAddr::V4(a)),
                    Protocol::Ip6(a) => ip = Some(std::net::IpAddr::V6(a)),
                    Protocol::Tcp(port) => tcp = Some(port),
                    Protocol::Udp(port) => udp = Some(port),
                    _ => {}
                }
            }
            let bound = match (ip, tcp, udp) {
                (Some(ip), Some(port), _) => std::net::TcpListener::bind((ip, port)).map(drop),
                (Some(ip), None, Some(port)) => std::net::UdpSocket::bind((ip, port)).map(drop),
                _ => Ok(()),
            };
            bound.is_err_and(|e| e.kind() == std::io::ErrorKind::AddrInUse)
        })
        .cloned()
}

/// `addr` on port 0, which the system fills with a free port.
fn any_port(addr: &cairn_p2p::Multiaddr) -> cairn_p2p::Multiaddr {
    use cairn_p2p::Protocol;
    addr.iter()
        .map(|part| match part {
            Protocol::Tcp(_) => Protocol::Tcp(0),
            Protocol::Udp(_) => Protocol::Udp(0),
            other => other,
        })
        .collect()
}

/// The gateway as a multiaddr for provider records: the public URL's, else where the upload
/// host listens.
fn gateway_addr(
    public_url: Option<&reqwest::Url>,
    scheme: &str,
    listening: std::net::SocketAddr,
) -> Result<cairn_p2p::Multiaddr> {
    let text = match public_url {
        Some(url) => {
            let scheme = url.scheme();
            if scheme != "http" && scheme != "https" {
                bail!("--public-url must be http:// or https://, not {scheme}://");
            }
            let port = url
                .port_or_known_default()
                .context("--public-url has no port")?;
            let host = url.host_str().context("--public-url has no host")?;
            let host = match host.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
                Ok(std::net::IpAddr::V4(ip)) => format!("/ip4/{ip}"),
                Ok(std::net::IpAddr::V6(ip)) => format!("/ip6/{ip}"),
                Err(_) => format!("/dns/{host}"),
            };
            format!("{host}/tcp/{port}/{scheme}")
        }
        None => match listening {
            std::net::SocketAddr::V4(a) => format!("/ip4/{}/tcp/{}/{scheme}", a.ip(), a.port()),
            std::net::SocketAddr::V6(a) => format!("/ip6/{}/tcp/{}/{scheme}", a.ip(), a.port()),
        },
    };
    Ok(text.parse()?)
}

/// How old a leftover on a shared store must be before it is deleted: longer than any write
/// takes, from its start to its commit in the metadata store.
const SHARED_ORPHAN_AGE: Duration = Duration::from_secs(24 * 3600);

/// Delete what crashes left behind, written at least `older_than` ago: packs no metadata
/// references (a crash between the pack's fsync and the commit), staged uploads no unfinished
/// operation needs (a crash between staging and recording the operation), and interrupted
/// writes of either.
async fn sweep_orphans(
    store: &dyn MetadataStore,
    packs: &Packs,
    staging: &Staging,
    older_than: Duration,
) -> Result<()> {
    // A collector running elsewhere (`cairn gc` on this data directory) writes packs it has
    // not referenced yet: while it holds its lock, only old leftovers go. Holding the lock
    // meanwhile keeps one from starting.
    let lock = store.lock_collector().await?;
    let older_than = match lock {
        Some(_) => older_than,
        None => older_than.max(SHARED_ORPHAN_AGE),
    };
    sweep_unreferenced(store, packs, staging, older_than).await
}

async fn sweep_unreferenced(
    store: &dyn MetadataStore,
    packs: &Packs,
    staging: &Staging,
    older_than: Duration,
) -> Result<()> {
    let referenced: HashSet<String> = store.pack_names().await?.into_iter().collect();
    let needed: HashSet<String> = store.unfinished_upload_ids().await?.into_iter().collect();
    let (packs, staging) = (packs.clone(), staging.clone());
    let (packs_swept, staged_swept) = tokio::task::spawn_blocking(move || -> Result<_> {
        Ok((
            packs
                .sweep(&referenced, older_than)
                .context("sweeping unreferenced packs")?,
            staging
                .sweep(&needed, older_than)
                .context("sweeping unneeded staged uploads")?,
        ))
    })
    .await??;
    if packs_swept + staged_swept > 0 {
        tracing::info!(
            packs = packs_swept,
            staged = staged_swept,
            "removed what interrupted uploads left behind, and pack files made ahead but not used"
        );
    }
    Ok(())
}

async fn sweep_orphans_hourly(service: Service, mut stop: tokio::sync::watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(3600)) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let swept = sweep_orphans(
            service.store.as_ref(),
            &service.packs,
            &service.staging,
            SHARED_ORPHAN_AGE,
        );
        if let Err(e) = swept.await {
            tracing::warn!(error = %e, "sweeping leftovers failed");
        }
    }
}

async fn bind(addr: std::net::SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))
}

/// On the very first start, an account to use right away.
async fn create_default_account(store: &dyn MetadataStore) -> Result<Option<String>> {
    if !store.list_accounts().await?.is_empty() {
        return Ok(None);
    }
    let account = match store
        .create_account("default", AccountLimits::default())
        .await
    {
        Ok(account) => account,
        // Another node starting at the same moment created it first.
        Err(cairn_store::StoreError::Conflict(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let token = tokens::generate();
    store
        .create_key(&NewKey::all(account.id), &token.hash, &token.prefix)
        .await?;
    Ok(Some(token.secret))
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed by this call, not when the
/// future is first polled, so no signal after it is missed.
#[cfg(unix)]
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        tracing::info!("shutting down: finishing in-flight requests");
    })
}

#[cfg(not(unix))]
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down: finishing in-flight requests");
    })
}
