//! A DHT of `cairn_p2p` nodes in the test's own process, on loopback TCP (run it inside a
//! network namespace with only loopback: `cairn_test_support::netns`), and Cairn's providing
//! as its `/metrics` shows it.

use std::sync::Arc;
use std::time::Duration;

use cairn_p2p::key::Keypair;
use cairn_p2p::{MemoryBlockstore, Multiaddr, NodeConfig, NodeHandle};

/// A DHT node in this process, on loopback TCP, holding nothing.
pub async fn dht_node() -> NodeHandle {
    dht_node_with(Keypair::generate_ed25519()).await
}

pub async fn dht_node_with(key: Keypair) -> NodeHandle {
    let config = NodeConfig {
        listen: vec!["/ip4/127.0.0.1/tcp/0".parse().unwrap()],
        ..NodeConfig::default()
    };
    let blocks = Arc::new(MemoryBlockstore::default());
    cairn_p2p::start(key, config, blocks).await.unwrap()
}

/// A node's address with its `/p2p/` id, as `--p2p-bootstrap` and `dial` take it.
pub fn addr_of(node: &NodeHandle) -> Multiaddr {
    format!("{}/p2p/{}", node.listen_addrs()[0], node.peer_id())
        .parse()
        .unwrap()
}

/// Wait until `node` has at least `peers` peers in its routing tables (they enter them only
/// once identified).
pub async fn wait_for_dht_peers(node: &NodeHandle, peers: usize) {
    let mut known = node.dht_peers();
    tokio::time::timeout(Duration::from_secs(30), known.wait_for(|n| *n >= peers))
        .await
        .expect("the routing table fills")
        .unwrap();
}

/// `count` nodes, each connected to the nodes `neighbours` ahead of it on a ring, so that
/// every routing table starts with about twice as many peers and lookups have to walk.
pub async fn start_dht(count: usize, neighbours: &[usize]) -> Vec<NodeHandle> {
    raise_open_files_limit();
    let mut nodes = Vec::new();
    for _ in 0..count {
        nodes.push(dht_node().await);
    }
    for (i, node) in nodes.iter().enumerate() {
        for step in neighbours {
            node.dial(addr_of(&nodes[(i + step) % count]))
                .await
                .unwrap();
        }
    }
    for node in &nodes {
        wait_for_dht_peers(node, 2 * neighbours.len()).await;
    }
    nodes
}

/// Every connection between two of the nodes is two sockets in this one process, and the
/// nodes end up connected to nearly all the others (their lookups dial whom they learn of):
/// `n` nodes take about `n * n` open files. The soft limit is raised to the hard one (20,000
/// here: a process holds about 140 nodes; `benches/reprovide.rs` spreads 200 over several).
pub fn raise_open_files_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: both calls only read or write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// `cairn serve` with its node on loopback TCP, bootstrapped from `bootstrap` (addresses,
/// comma-separated), with `extra` flags; and its peer id. Uploads are not throttled: the
/// default (120 a minute) would hold up the uploads, not what is measured.
pub fn start_cairn(
    data: &std::path::Path,
    bootstrap: &str,
    extra: &[&str],
) -> (crate::server::Running, cairn_p2p::PeerId) {
    let mut flags = vec![
        "--p2p-listen",
        "/ip4/127.0.0.1/tcp/0",
        "--p2p-bootstrap",
        bootstrap,
        "--uploads-per-minute",
        "1000000",
    ];
    flags.extend_from_slice(extra);
    let mut running = crate::server::start(data, &flags);
    let peer_id = running.printed("p2p peer id ").parse().unwrap();
    (running, peer_id)
}

/// What Cairn's `/metrics` shows of providing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Provides {
    /// `cairn_dht_provides_total`: CIDs that reached at least one DHT peer.
    pub provided: u64,
    /// `cairn_dht_provide_queue`: completed uploads not provided yet (what `GET /api/node`
    /// calls `provideQueue`; both come from `provide::queued`).
    pub queue: u64,
    /// `cairn_dht_provides_waiting_for_peers`: provides that found no DHT peer, done again
    /// 2 s after one appears.
    pub waiting: u64,
    /// Passes of the reprovide cycle ended, and the regions of the keyspace swept.
    pub sweeps: u64,
    pub regions: u64,
    /// DHT lookups made to provide, and provider records the region sweeps sent.
    pub lookups: u64,
    pub records_sent: u64,
    /// `cairn_dht_last_reprovide_duration_seconds` (whole seconds, as the node keeps it).
    pub last_sweep_seconds: u64,
}

impl Provides {
    /// Read from `running`'s `/metrics`.
    pub async fn of(http: &reqwest::Client, running: &crate::server::Running) -> Self {
        Self::from_metrics(&crate::server::metrics_text(http, running).await)
    }

    /// Read again every 20 ms until `done` says so; panics after `limit`.
    pub async fn when(
        http: &reqwest::Client,
        running: &crate::server::Running,
        limit: Duration,
        done: impl Fn(&Provides) -> bool,
    ) -> Self {
        let started = std::time::Instant::now();
        loop {
            let now = Self::of(http, running).await;
            if done(&now) {
                return now;
            }
            assert!(
                started.elapsed() < limit,
                "still waiting on the provides: {now:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Read from the text of `/metrics`.
    fn from_metrics(text: &str) -> Self {
        let sample = |name: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
                .unwrap_or_else(|| panic!("no {name} in /metrics"))
                .parse::<f64>()
                .unwrap() as u64
        };
        Provides {
            provided: sample("cairn_dht_provides_total"),
            queue: sample("cairn_dht_provide_queue"),
            waiting: sample("cairn_dht_provides_waiting_for_peers"),
            sweeps: sample("cairn_dht_reprovide_sweeps_total"),
            regions: sample("cairn_dht_reprovide_regions_total"),
            lookups: sample("cairn_dht_provide_lookups_total"),
            records_sent: sample("cairn_dht_provider_records_sent_total"),
            last_sweep_seconds: sample("cairn_dht_last_reprovide_duration_seconds"),
        }
    }
}
