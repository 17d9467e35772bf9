//! Cairn providing to a DHT of [`DHT_NODES`] `cairn_p2p` nodes in this process (LAN DHT, on
//! loopback), in one run inside a network namespace with only loopback (the bench re-executes
//! itself under `unshare -n`, as `bitswap.rs` does; Cairn's bootstrap list names only these
//! nodes, so nothing is dialled beyond the machine):
//!
//! 1. **Provide throughput**: `cairn serve` bootstrapped from three of the nodes, then
//!    [`FILES`] files of 1 MiB uploaded one after another (`POST /api/upload`, profile
//!    [`PROFILE`]: 256 KiB chunks, so a file is 4 leaves and a root), timed from the first
//!    upload until `cairn_dht_provides_total` has grown by every CID expected (a root per file
//!    with `--provide-strategy roots`; every block with `all`) and the provide queue is empty.
//!    The provides overlap the uploads, as they do in service.
//! 2. **Upload to findable**: after the roots run, [`FINDS`] times: a fresh node joins the
//!    DHT through three nodes that are not Cairn's bootstrap peers (the 20 are all connected to
//!    Cairn by then: its provide queries reach every one), with a key farther from the CID than
//!    all 20 so that the record is not stored on it; a 1 KiB file is uploaded (the uploads
//!    spread over Cairn's 1 s poll of its log), and from the moment the upload returns that
//!    node calls `connect_providers` (a lookup in both DHTs, then a dial of each provider)
//!    until Cairn is among the answers.
//! 3. **Reprovide sweep**: the 22 h sweep cannot be triggered, so its cost is given two ways:
//!    derived (the CIDs stored divided by the rate of 1), and measured on the same code path:
//!    Cairn restarted on the same data with a new node key is a node that has never swept, and
//!    sweeps every stored root (or, with `all`, every indexed block) at once.
//!
//! Run: `cargo bench -p cairn --bench provide`. Needs `unshare` and `ip`; nothing else is
//! installed. `CAIRN_TEST_SERVE_LOG=FILE` keeps the servers' logs (with `RUST_LOG`).

use cairn_harness::dht;
use cairn_harness::server;
use cairn_test_support::noise;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cairn_p2p::key::Keypair;
use cairn_p2p::keyspace::Point;
use cairn_p2p::{NodeHandle, PeerId};
use cairn_unixfs::{Cid, FileImporter, MemoryBlocks, Profile};
use dht::{addr_of, dht_node_with, start_cairn, start_dht, wait_for_dht_peers, Provides};
use noise::noise;
use server::{admin, terminate, Running};

/// In-process DHT nodes.
const DHT_NODES: usize = 20;
/// Each node dials the nodes this far ahead of it on a ring, so that every routing table
/// starts with about six peers and lookups have to walk.
const NEIGHBOURS: [usize; 3] = [1, 3, 7];
/// The nodes Cairn bootstraps from, and those the finding nodes join through (not Cairn's).
const CAIRN_BOOTSTRAP: [usize; 3] = [0, 7, 14];
const SEEKER_ENTRY: [usize; 3] = [3, 10, 17];
/// Files uploaded in each throughput run, their size and their profile.
const FILES: usize = 200;
const FILE: usize = 1 << 20;
const PROFILE: &str = "unixfs-v0-2015";
/// Uploads timed to findable, and their size.
const FINDS: usize = 10;
const SMALL: usize = 1024;
/// How often the finding node looks up again, and the bench reads Cairn's `/metrics` (often:
/// a sweep of a few hundred CIDs takes well under a second).
const POLL: Duration = Duration::from_millis(50);
const METRICS_POLL: Duration = Duration::from_millis(10);
/// Provides that have not grown for this long have stopped: the run reports what it got.
const STALLED: Duration = Duration::from_secs(30);
/// How long a finding node keeps looking before the find counts as failed.
const FIND_TIMEOUT: Duration = Duration::from_secs(30);
/// A node that has never provided follows the provide log from its start, its first read
/// looking 30 s back (`LOOK_BACK_MS`): the sweep is measured once the last upload is older
/// than that, so that the log's provides do not run beside it.
const LOOK_BACK: Duration = Duration::from_secs(31);

fn main() {
    cairn_test_support::netns::in_loopback_namespace(|| {}, measure);
}

/// `len` incompressible bytes, different for every `n` (odd seeds: the bytes these figures
/// were first measured with, when `noise` still gave seeds 2k and 2k + 1 the same bytes).
fn bytes(len: usize, n: u64) -> Vec<u8> {
    noise(len, 2 * n + 1)
}

/// A key for a finding node farther from `cid`'s provider key than every node of `dht`. A
/// provide stores its record on the 20 peers closest to the key, so with any other key the
/// finding node (the 21st) would most often get the record itself and find it in its own
/// store, without a lookup.
fn far_key(cid: &Cid, dht: &[NodeHandle]) -> Keypair {
    let target = Point::of_key(&cairn_p2p::dht::provider_key(cid).to_vec());
    let distance = |peer: PeerId| Point::of_peer(&peer).distance(&target);
    let farthest = dht.iter().map(|n| distance(n.peer_id())).max().unwrap();
    loop {
        let key = Keypair::generate_ed25519();
        if distance(key.public().to_peer_id()) > farthest {
            return key;
        }
    }
}

async fn node_status(http: &reqwest::Client, running: &Running, token: &str) -> serde_json::Value {
    http.get(format!("{}/api/node", running.upload))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// `POST /api/upload` of `bytes` (stored and completed when it returns); its CID.
async fn upload(
    http: &reqwest::Client,
    running: &Running,
    token: &str,
    bytes: Vec<u8>,
    profile: &str,
) -> String {
    let part = reqwest::multipart::Part::bytes(bytes).file_name("file.bin");
    let response = http
        .post(format!("{}/api/upload", running.upload))
        .query(&[("cid_profile", profile)])
        .bearer_auth(token)
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["status"], "completed", "{body}");
    body["cid"].as_str().unwrap().to_owned()
}

/// The CID of `bytes` under `profile`, and how many blocks its DAG has.
fn dag_of(bytes: &[u8], profile: &Profile) -> (String, usize) {
    let mut blocks = MemoryBlocks::default();
    let mut importer = FileImporter::new(profile, &mut blocks);
    importer.push(bytes).unwrap();
    let cid = importer.finish().unwrap().cid.to_string();
    (cid, blocks.len())
}

/// Poll until `done` says so or the provides stop growing for [`STALLED`]; the provides
/// last read, and the read that saw them last grow. (`/metrics` counts provides when a batch
/// of them has ended, so a growth is the end of a batch.)
async fn follow_provides(
    http: &reqwest::Client,
    running: &Running,
    before: u64,
    done: impl Fn(&Provides) -> bool,
) -> (Provides, Instant) {
    let mut last_growth = Instant::now();
    let mut seen = before;
    loop {
        let read = Instant::now();
        let now = Provides::of(http, running).await;
        if now.provided > seen {
            seen = now.provided;
            last_growth = read;
        }
        if done(&now) || last_growth.elapsed() > STALLED {
            return (now, last_growth);
        }
        tokio::time::sleep(METRICS_POLL).await;
    }
}

/// One throughput run.
struct Throughput {
    strategy: &'static str,
    expected: u64,
    provided: u64,
    uploads: Duration,
    /// From the first upload to the last provide (or to the stall).
    all_provided: Duration,
    queue_left: u64,
    cairn_peers: u64,
}

impl Throughput {
    fn rate(&self) -> f64 {
        self.provided as f64 / self.all_provided.as_secs_f64()
    }
}

/// Upload [`FILES`] files to a Cairn providing with `strategy` and time their providing.
async fn throughput(
    http: &reqwest::Client,
    running: &Running,
    token: &str,
    strategy: &'static str,
    seed: u64,
) -> Throughput {
    let profile: Profile = PROFILE.parse().unwrap();
    let files: Vec<Vec<u8>> = (0..FILES).map(|i| bytes(FILE, seed + i as u64)).collect();
    let mut expected = 0;
    let mut cids = Vec::new();
    for file in &files {
        let (cid, blocks) = dag_of(file, &profile);
        expected += if strategy == "all" { blocks as u64 } else { 1 };
        cids.push(cid);
    }
    let distinct: HashSet<&String> = cids.iter().collect();
    assert_eq!(distinct.len(), FILES, "every file is different");
    let before = Provides::of(http, running).await.provided;
    let started = Instant::now();
    for (file, cid) in files.into_iter().zip(&cids) {
        assert_eq!(&upload(http, running, token, file, PROFILE).await, cid);
    }
    let uploads = started.elapsed();
    eprintln!("{strategy}: {FILES} uploads in {uploads:.1?}");
    let (now, last_growth) = follow_provides(http, running, before, |now| {
        now.provided >= before + expected && now.queue == 0
    })
    .await;
    let status = node_status(http, running, token).await;
    let run = Throughput {
        strategy,
        expected,
        provided: now.provided - before,
        uploads,
        all_provided: last_growth.duration_since(started),
        queue_left: status["provideQueue"].as_u64().unwrap(),
        cairn_peers: status["connectedPeers"].as_u64().unwrap(),
    };
    eprintln!(
        "{strategy}: {} of {expected} CIDs provided {:.1?} after the first upload ({:.0}/s)",
        run.provided,
        run.all_provided,
        run.rate()
    );
    run
}

/// One upload timed to findable.
struct Find {
    /// From the upload's return to the end of the lookup that named Cairn; `None`: never.
    findable: Option<Duration>,
    /// That lookup alone.
    lookup: Duration,
    /// Lookups made, the last included.
    lookups: u32,
}

/// [`FINDS`] small uploads, each looked for by a fresh node that joined through
/// [`SEEKER_ENTRY`] and is farther from the CID than every other DHT node ([`far_key`]).
async fn finds(
    http: &reqwest::Client,
    running: &Running,
    token: &str,
    dht: &[NodeHandle],
    cairn: PeerId,
) -> Vec<Find> {
    let mut finds = Vec::new();
    let default_profile = Profile::default();
    for i in 0..FINDS {
        let bytes = bytes(SMALL, 10_000 + i as u64);
        let (cid, _) = dag_of(&bytes, &default_profile);
        let cid: Cid = cid.parse().unwrap();
        let seeker = dht_node_with(far_key(&cid, dht)).await;
        for entry in SEEKER_ENTRY {
            seeker.dial(addr_of(&dht[entry])).await.unwrap();
        }
        wait_for_dht_peers(&seeker, SEEKER_ENTRY.len()).await;
        assert!(!seeker.connected_peers().await.unwrap().contains(&cairn));
        // The finds would otherwise keep one phase against Cairn's 1 s poll of its log (each
        // upload right after the pass that provided the last): spread them over it.
        tokio::time::sleep(Duration::from_millis(1000 * i as u64 / FINDS as u64)).await;
        let uploaded = upload(http, running, token, bytes, default_profile.name).await;
        assert_eq!(uploaded, cid.to_string());
        let returned = Instant::now();
        let mut lookups = 0;
        let find = loop {
            lookups += 1;
            let started = Instant::now();
            let found = tokio::time::timeout(FIND_TIMEOUT, seeker.connect_providers(cid)).await;
            let lookup = started.elapsed();
            if found.is_ok_and(|found| found.unwrap().contains(&cairn)) {
                break Find {
                    findable: Some(returned.elapsed()),
                    lookup,
                    lookups,
                };
            }
            if returned.elapsed() > FIND_TIMEOUT {
                break Find {
                    findable: None,
                    lookup,
                    lookups,
                };
            }
            tokio::time::sleep(POLL).await;
        };
        eprintln!(
            "find {i}: findable after {:?} (lookup {:?}, lookups {})",
            find.findable, find.lookup, find.lookups
        );
        finds.push(find);
        seeker.shutdown().await;
    }
    finds
}

/// A measured sweep.
struct Sweep {
    strategy: &'static str,
    provided: u64,
    /// From the sweep's start to the read of `/metrics` that saw it counted (within
    /// [`METRICS_POLL`]).
    time: Duration,
    /// The sweep started only once the node had DHT peers (and 2 s more).
    waited_for_peers: bool,
    /// What the node itself records, in whole seconds (from the sweep's start, waiting for
    /// peers included).
    node_seconds: u64,
}

/// Restart Cairn on `data` with a new node key, and time the sweep such a node makes at once.
///
/// Its start: `serve` starts providing right after printing its node, so when that is read;
/// or, if the first provides found no DHT peer yet, when they stop waiting. `/metrics` counts
/// the provides a page (256) at a time, so only the sweep's end can be seen there.
fn sweep(
    runtime: &tokio::runtime::Runtime,
    http: &reqwest::Client,
    running: Running,
    data: &Path,
    strategy: &'static str,
    bootstrap: &str,
) -> Sweep {
    assert!(terminate(running).0.success());
    std::fs::remove_file(data.join("node.key")).unwrap();
    let (running, _) = start_cairn(data, bootstrap, &["--provide-strategy", strategy]);
    let mut started = Instant::now();
    let restarted = started;
    let mut waited_for_peers = false;
    let (now, ended) = runtime.block_on(async {
        loop {
            let read = Instant::now();
            let now = Provides::of(http, &running).await;
            if now.waiting > 0 && now.provided == 0 {
                started = read;
                waited_for_peers = true;
            }
            if now.sweeps >= 1 {
                return (now, read);
            }
            assert!(
                restarted.elapsed() < Duration::from_secs(600),
                "the sweep has not ended after {} provides",
                now.provided
            );
            tokio::time::sleep(METRICS_POLL).await;
        }
    });
    assert!(terminate(running).0.success());
    let sweep = Sweep {
        strategy,
        provided: now.provided,
        time: ended.duration_since(started),
        waited_for_peers,
        node_seconds: now.last_sweep_seconds,
    };
    eprintln!(
        "{strategy}: a new node swept {} CIDs in {:.2?} (waited for peers: {waited_for_peers})",
        sweep.provided, sweep.time
    );
    sweep
}

fn measure() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let http = reqwest::Client::new();
    let base: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-tmp");
    std::fs::create_dir_all(&base).unwrap();
    let work = tempfile::tempdir_in(&base).unwrap();
    let work = work.path();

    let dht = runtime.block_on(start_dht(DHT_NODES, &NEIGHBOURS));
    eprintln!("{DHT_NODES} DHT nodes up");
    let bootstrap: Vec<String> = CAIRN_BOOTSTRAP
        .iter()
        .map(|&i| addr_of(&dht[i]).to_string())
        .collect();
    let bootstrap = bootstrap.join(",");

    let mut runs = Vec::new();
    let mut found = Vec::new();
    let mut sweeps = Vec::new();
    for (n, strategy) in ["roots", "all"].into_iter().enumerate() {
        let data = work.join(format!("cairn-{strategy}"));
        let (running, peer_id) = start_cairn(&data, &bootstrap, &["--provide-strategy", strategy]);
        let token = running.token.clone();
        admin(&["account", "set", "default", "--quota", "none"], &data);
        runtime.block_on(async {
            // Ready: connected to its bootstrap peers, and its first sweep (of nothing) done.
            let ready = Instant::now();
            loop {
                let peers = node_status(&http, &running, &token).await["connectedPeers"]
                    .as_u64()
                    .unwrap();
                if peers >= CAIRN_BOOTSTRAP.len() as u64
                    && Provides::of(&http, &running).await.sweeps >= 1
                {
                    break;
                }
                assert!(ready.elapsed() < Duration::from_secs(30), "Cairn joins");
                tokio::time::sleep(POLL).await;
            }
            let seed = 1_000 * (n as u64 + 1);
            runs.push(throughput(&http, &running, &token, strategy, seed).await);
            if strategy == "roots" {
                found = finds(&http, &running, &token, &dht, peer_id).await;
            }
        });
        // Only the sweep provides after the restart: nothing is left in the log's look-back.
        std::thread::sleep(LOOK_BACK);
        sweeps.push(sweep(&runtime, &http, running, &data, strategy, &bootstrap));
    }
    runtime.block_on(async {
        for node in &dht {
            node.shutdown().await;
        }
    });

    report(&runs, &found, &sweeps);
}

fn secs(time: Duration) -> f64 {
    time.as_secs_f64()
}

fn report(runs: &[Throughput], finds: &[Find], sweeps: &[Sweep]) {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "`cargo bench -p cairn --bench provide`: {DHT_NODES} `cairn_p2p` DHT nodes in the bench's \
         process, `cairn serve` bootstrapped from 3 of them, loopback TCP in a network \
         namespace, {} cores; load average before the report: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load.trim()
    );
    println!();
    println!(
        "| provide throughput, {FILES} files of {} MiB ({PROFILE}) uploaded one by one | CIDs expected | CIDs provided | uploads s | first upload to last provide s | last upload to last provide s | CIDs/s | provide queue after | peers Cairn is connected to |",
        FILE >> 20
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for run in runs {
        println!(
            "| `--provide-strategy {}` | {} | {} | {:.2} | {:.2} | {:.2} | {:.0} | {} | {} |",
            run.strategy,
            run.expected,
            run.provided,
            secs(run.uploads),
            secs(run.all_provided),
            secs(run.all_provided.saturating_sub(run.uploads)),
            run.rate(),
            run.queue_left,
            run.cairn_peers,
        );
    }
    println!();
    println!(
        "Providing overlaps the uploads: where the last provide follows the last upload by about \
         the log's 1 s poll, the CIDs/s are bounded by the uploads, not by the DHT (the measured \
         sweep below is not)."
    );
    println!();

    let mut times: Vec<Duration> = finds.iter().filter_map(|f| f.findable).collect();
    times.sort();
    let mut lookups: Vec<Duration> = finds.iter().map(|f| f.lookup).collect();
    lookups.sort();
    let mut lookups_made: Vec<u32> = finds.iter().map(|f| f.lookups).collect();
    lookups_made.sort();
    let shown =
        |time: Option<&Duration>| time.map_or("-".to_owned(), |t| format!("{:.2}", secs(*t)));
    println!(
        "| upload returned to findable ({SMALL} B file, `roots`), by a fresh node that joined through 3 DHT nodes and is farther from the CID than all {DHT_NODES} (so it does not hold the record), {} uploads | median s | max s | found | median of the finding lookup alone s | lookups per find, median |",
        finds.len()
    );
    println!("|---|---|---|---|---|---|");
    println!(
        "| `connect_providers` polled every {} ms | {} | {} | {} of {} | {} | {} |",
        POLL.as_millis(),
        shown(times.get(times.len() / 2)),
        shown(times.last()),
        times.len(),
        finds.len(),
        shown(lookups.get(lookups.len() / 2)),
        lookups_made[lookups_made.len() / 2],
    );
    println!();

    println!(
        "| reprovide sweep, DERIVED (not measured): CIDs stored / the CIDs/s above | CIDs stored | CIDs/s | estimated sweep s | estimated s per million CIDs |"
    );
    println!("|---|---|---|---|---|");
    for run in runs {
        // The roots run's store also holds the small files uploaded for the finds.
        let stored = match run.strategy {
            "roots" => run.expected + finds.len() as u64,
            _ => run.expected,
        };
        println!(
            "| `--provide-strategy {}` | {stored} | {:.0} | {:.1} | {:.0} |",
            run.strategy,
            run.rate(),
            stored as f64 / run.rate(),
            1e6 / run.rate(),
        );
    }
    println!();
    println!(
        "| reprovide sweep, MEASURED: the first sweep of Cairn restarted on the same data with a new node key (the same code as the 22 h sweep) | CIDs swept | sweep s (±{} ms) | CIDs/s | s per million CIDs at that rate (extrapolated) | the node's own `cairn_dht_last_reprovide_duration_seconds` (whole s, waits included) | started only once it had DHT peers, +2 s |",
        METRICS_POLL.as_millis()
    );
    println!("|---|---|---|---|---|---|---|");
    for sweep in sweeps {
        let rate = sweep.provided as f64 / secs(sweep.time);
        println!(
            "| `--provide-strategy {}` | {} | {:.2} | {rate:.0} | {:.0} | {} | {} |",
            sweep.strategy,
            sweep.provided,
            secs(sweep.time),
            1e6 / rate,
            sweep.node_seconds,
            if sweep.waited_for_peers { "yes" } else { "no" },
        );
    }
}
