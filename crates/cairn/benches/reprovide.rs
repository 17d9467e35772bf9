//! Issue 37's DHT simulation: a full reprovide of [`CIDS`] CIDs by `cairn serve` to a DHT of
//! [`DHT_NODES`] `cairn_p2p` server nodes (LAN DHT, loopback TCP, inside a network namespace
//! with only loopback: the bench re-executes itself under `unshare -n`). The nodes end up
//! connected to nearly all the others, two open files a connection: they run in
//! [`DHT_HOSTS`] processes (the bench again, as hosts), each within the open-files limit.
//!
//! 1. `cairn serve` with its node off stores [`CIDS`] small distinct files, as tar archives of
//!    [`FILES_PER_ARCHIVE`] extracted on upload; with `--provide-strategy all` every block is
//!    a CID to provide (the files' and their directories').
//! 2. At least 31 s later (a node that has never provided reads its provide log from 30 s
//!    back: older uploads are the reprovide cycle's alone), `cairn serve` starts on the same
//!    data with its node, bootstrapped from three DHT nodes. Never having swept, it makes a
//!    pass of the reprovide cycle at once: the full reprovide measured, from the start until
//!    `/metrics` counts the pass: DHT lookups, provider records sent, regions, wall time and
//!    the server's CPU time (`/proc/PID/stat`).
//! 3. Today's other path in the same run, one lookup per CID: [`ONE_BY_ONE`] files uploaded
//!    one after another, each provided as it is stored (the provide log), until all are.
//! 4. A node that joins the DHT afterwards looks up the providers of every CID of step 1
//!    ([`FINDERS`] lookups at a time): how many name Cairn (all must).
//!
//! Then the projection of a 1,000,000-CID reprovide on the public DHT, with its assumptions.
//!
//! Run: `cargo bench -p cairn --bench reprovide` (about 10 minutes). `REPROVIDE_BENCH_CIDS=N`
//! stores about N CIDs instead. Needs `unshare` and `ip`; installs nothing.

use cairn_harness::dht;
use cairn_harness::server;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cairn_p2p::{Multiaddr, NodeHandle, PeerId};
use dht::{addr_of, dht_node, start_cairn, wait_for_dht_peers, Provides};
use futures_util::StreamExt;
use server::{admin, start, stored_upload, tar_of, terminate};

const DHT_NODES: usize = 200;
const DHT_HOSTS: usize = 5;
/// Set in a host process: its first node's number among all.
const HOST_VARIABLE: &str = "CAIRN_REPROVIDE_BENCH_HOST";
/// Each node dials the nodes this far ahead of it on a ring.
const NEIGHBOURS: [usize; 6] = [1, 3, 7, 15, 31, 63];
/// About this many CIDs are stored (files, and their directories' blocks).
const CIDS: usize = 100_000;
/// Files per archive (an archive may hold 100,000 entries), in directories of
/// [`FILES_PER_DIRECTORY`].
const FILES_PER_ARCHIVE: usize = 50_000;
const FILES_PER_DIRECTORY: usize = 1_000;
/// Files provided one by one, for today's other path.
const ONE_BY_ONE: usize = 500;
/// Provider lookups the finding node runs at once.
const FINDERS: usize = 32;
const LOG_LOOK_BACK: Duration = Duration::from_secs(31);

fn main() {
    if let Ok(first) = std::env::var(HOST_VARIABLE) {
        return host(first.parse().unwrap());
    }
    cairn_test_support::netns::in_loopback_namespace(|| {}, measure);
}

/// A host process: start its nodes and print their addresses; read every node's addresses
/// (one line, comma-separated); dial each node's ring neighbours; print `ready` once they are
/// in the routing tables; run until standard input closes.
fn host(first: usize) {
    use std::io::BufRead;
    dht::raise_open_files_limit();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let count = DHT_NODES / DHT_HOSTS;
    let nodes: Vec<NodeHandle> = runtime.block_on(async {
        let mut nodes = Vec::new();
        for _ in 0..count {
            nodes.push(dht_node().await);
        }
        nodes
    });
    for node in &nodes {
        println!("{}", addr_of(node));
    }
    let mut stdin = std::io::stdin().lock();
    let mut all = String::new();
    stdin.read_line(&mut all).unwrap();
    let all: Vec<Multiaddr> = all.trim().split(',').map(|a| a.parse().unwrap()).collect();
    runtime.block_on(async {
        for (i, node) in nodes.iter().enumerate() {
            for step in NEIGHBOURS {
                node.dial(all[(first + i + step) % all.len()].clone())
                    .await
                    .unwrap();
            }
        }
        for node in &nodes {
            wait_for_dht_peers(node, NEIGHBOURS.len()).await;
        }
    });
    println!("ready");
    // Until the bench closes the pipe.
    let mut rest = String::new();
    while stdin.read_line(&mut rest).is_ok_and(|read| read > 0) {}
}

/// The DHT: [`DHT_HOSTS`] host processes; every node's address, and the hosts (whose
/// nodes stop when they are killed).
fn start_hosts() -> (Vec<Multiaddr>, Vec<Child>) {
    use std::io::{BufRead, BufReader, Write};
    let count = DHT_NODES / DHT_HOSTS;
    let mut hosts = Vec::new();
    let mut outputs = Vec::new();
    let mut all = Vec::new();
    for h in 0..DHT_HOSTS {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(HOST_VARIABLE, (h * count).to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        for _ in 0..count {
            all.push(lines.next().unwrap().unwrap().parse::<Multiaddr>().unwrap());
        }
        hosts.push(child);
        outputs.push(lines);
    }
    let line: Vec<String> = all.iter().map(ToString::to_string).collect();
    for host in &mut hosts {
        writeln!(host.stdin.as_mut().unwrap(), "{}", line.join(",")).unwrap();
    }
    for lines in &mut outputs {
        assert_eq!(lines.next().unwrap().unwrap(), "ready");
    }
    (all, hosts)
}

/// User and system CPU time of process `pid` so far (`/proc/PID/stat`, fields 14 and 15).
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The command name may hold spaces: fields are counted after its closing parenthesis.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_millis(ticks * 1000 / per_second)
}

/// The archives holding `files` small distinct files.
fn archives(files: usize) -> Vec<Vec<u8>> {
    let contents: Vec<(String, Vec<u8>)> = (0..files)
        .map(|n| {
            let name = format!(
                "{:03}/{n}.txt",
                (n % FILES_PER_ARCHIVE) / FILES_PER_DIRECTORY
            );
            (
                name,
                format!("file {n} of the reprovide bench\n").into_bytes(),
            )
        })
        .collect();
    contents
        .chunks(FILES_PER_ARCHIVE)
        .map(|chunk| {
            let files: Vec<(&str, &[u8])> = chunk
                .iter()
                .map(|(name, bytes)| (name.as_str(), bytes.as_slice()))
                .collect();
            tar_of(&files)
        })
        .collect()
}

/// The full reprovide.
struct Pass {
    cids: u64,
    provides: Provides,
    wall: Duration,
    cpu: Duration,
}

/// Today's other path.
struct OneByOne {
    cids: u64,
    lookups: u64,
    wall: Duration,
}

fn measure() {
    let cids_wanted: usize = std::env::var("REPROVIDE_BENCH_CIDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(CIDS);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let http = reqwest::Client::new();
    let base: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-tmp");
    std::fs::create_dir_all(&base).unwrap();
    let work = tempfile::tempdir_in(&base).unwrap();
    let data = work.path().join("cairn");

    // 1. Stored with the node off. Each directory adds a block, and so does each archive's
    // root: about one CID in a thousand.
    let files = cids_wanted - cids_wanted / FILES_PER_DIRECTORY;
    let running = start(&data, &["--uploads-per-minute", "1000000"]);
    let token = running.token.clone();
    admin(&["account", "set", "default", "--quota", "none"], &data);
    let roots: Vec<String> = runtime.block_on(async {
        let mut roots = Vec::new();
        for (n, archive) in archives(files).into_iter().enumerate() {
            let name = format!("part-{n}.tar");
            roots.push(
                stored_upload(&running, &running.token, &name, archive)
                    .await
                    .1,
            );
        }
        roots
    });
    let stored = Instant::now();
    let cids: Vec<cairn_unixfs::Cid> = runtime.block_on(async {
        let mut cids = Vec::new();
        for root in &roots {
            cids.extend(server::dag_cids(&running.upload, root).await);
        }
        cids.sort();
        cids.dedup();
        cids
    });
    assert!(terminate(running).0.success());
    eprintln!("{} CIDs stored under {} roots", cids.len(), roots.len());

    let (nodes, mut hosts) = start_hosts();
    eprintln!("{DHT_NODES} DHT nodes up in {DHT_HOSTS} processes");
    std::thread::sleep(LOG_LOOK_BACK.saturating_sub(stored.elapsed()));
    let bootstrap: Vec<String> = [0, DHT_NODES / 3, 2 * DHT_NODES / 3]
        .iter()
        .map(|&i| nodes[i].to_string())
        .collect();
    let bootstrap = bootstrap.join(",");

    // 2. The full reprovide.
    let started = Instant::now();
    let (running, cairn) = start_cairn(&data, &bootstrap, &["--provide-strategy", "all"]);
    let pid = running.child.id();
    let cpu_before = cpu_time(pid);
    let limit = Duration::from_secs(3600);
    let pass = runtime.block_on(async {
        let provides = Provides::when(&http, &running, limit, |p| p.sweeps >= 1).await;
        Pass {
            cids: cids.len() as u64,
            provides,
            wall: started.elapsed(),
            cpu: cpu_time(pid) - cpu_before,
        }
    });
    eprintln!(
        "the pass: {:?} in {:.1?}, CPU {:.1?}",
        pass.provides, pass.wall, pass.cpu
    );

    // 3. One by one. The next pass began as the first ended, and its first region fell due
    // at once: it is let end first.
    let one_by_one = runtime.block_on(async {
        let settled = Provides::when(&http, &running, limit, |p| {
            p.regions > pass.provides.regions
        })
        .await;
        let started = Instant::now();
        for n in 0..ONE_BY_ONE {
            let bytes = format!("a file provided alone, {n}").into_bytes();
            stored_upload(&running, &token, "alone.txt", bytes).await;
        }
        let target = settled.provided + ONE_BY_ONE as u64;
        let done = Provides::when(&http, &running, limit, |p| p.provided >= target).await;
        OneByOne {
            cids: done.provided - settled.provided,
            lookups: done.lookups - settled.lookups,
            wall: started.elapsed(),
        }
    });

    // 4. Found by a node that joins afterwards.
    let (found, finding) = runtime.block_on(async {
        let seeker = dht_node().await;
        for i in [DHT_NODES / 6, DHT_NODES / 2, 5 * DHT_NODES / 6] {
            seeker.dial(nodes[i].clone()).await.unwrap();
        }
        wait_for_dht_peers(&seeker, 3).await;
        let started = Instant::now();
        let found = find_all(&seeker, &cids, cairn).await;
        (found, started.elapsed())
    });
    assert!(terminate(running).0.success());
    for host in &mut hosts {
        host.kill().unwrap();
        host.wait().unwrap();
    }
    report(&pass, &one_by_one, found, finding);
}

/// How many of `cids` a lookup of their providers finds at `cairn`.
async fn find_all(seeker: &NodeHandle, cids: &[cairn_unixfs::Cid], cairn: PeerId) -> u64 {
    let lookups = futures_util::stream::iter(cids.iter().copied())
        .map(|cid| {
            let seeker = seeker.clone();
            async move { seeker.connect_providers(cid).await.unwrap_or_default() }
        })
        .buffer_unordered(FINDERS);
    lookups
        .fold(0u64, |found, providers| async move {
            found + u64::from(providers.contains(&cairn))
        })
        .await
}

fn report(pass: &Pass, one_by_one: &OneByOne, found: u64, finding: Duration) {
    let p = &pass.provides;
    let per_cid = |n: u64| n as f64 / pass.cids as f64;
    let sweep_lookups = per_cid(p.lookups);
    let alone_lookups = one_by_one.lookups as f64 / one_by_one.cids.max(1) as f64;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "`cargo bench -p cairn --bench reprovide`: {DHT_NODES} `cairn_p2p` DHT server nodes in \
         {DHT_HOSTS} processes, `cairn serve --provide-strategy all` bootstrapped from 3 of \
         them, loopback TCP in a network namespace, {} cores; load average at the end: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load.trim()
    );
    println!();
    println!("| | CIDs | DHT lookups | lookups per CID | provider records sent per CID | regions | wall s | Cairn CPU s | CIDs/s |");
    println!("|---|---|---|---|---|---|---|---|---|");
    println!(
        "| full reprovide, by region | {} | {} | {:.4} | {:.1} | {} | {:.1} | {:.1} | {:.0} |",
        pass.cids,
        p.lookups,
        sweep_lookups,
        per_cid(p.records_sent),
        p.regions,
        pass.wall.as_secs_f64(),
        pass.cpu.as_secs_f64(),
        pass.cids as f64 / pass.wall.as_secs_f64()
    );
    println!(
        "| one by one (new uploads, {ONE_BY_ONE} files) | {} | {} | {:.2} | | | {:.1} | | {:.0} |",
        one_by_one.cids,
        one_by_one.lookups,
        alone_lookups,
        one_by_one.wall.as_secs_f64(),
        one_by_one.cids as f64 / one_by_one.wall.as_secs_f64()
    );
    println!();
    println!(
        "Lookups per CID, by region against one by one: {:.5} ({:.0} times fewer). A node \
         that joined afterwards found Cairn for {found} of {} CIDs ({:.1} s, {FINDERS} \
         lookups at a time).",
        sweep_lookups / alone_lookups,
        alone_lookups / sweep_lookups.max(f64::MIN_POSITIVE),
        pass.cids,
        finding.as_secs_f64()
    );
    let lookups_per_region = p.lookups as f64 / p.regions.max(1) as f64;
    let peers_per_region = DHT_NODES as f64 / p.regions.max(1) as f64;
    // The public DHT, as the projection assumes it.
    const NETWORK: f64 = 10_000.0;
    const LOOKUP_S: f64 = 10.0;
    const SEND_S: f64 = 5.0;
    let regions = NETWORK / peers_per_region;
    let hours = regions * (lookups_per_region * LOOKUP_S + SEND_S) / 3600.0;
    println!();
    println!(
        "Projection, 1,000,000 CIDs on the public DHT: about {NETWORK:.0} DHT servers, so \
         with regions of {peers_per_region:.0} peers as here about {regions:.0} regions; \
         {lookups_per_region:.1} lookups a region as here, one after another, each \
         {LOOKUP_S:.0} s (a slow public-DHT lookup: dials over 100-300 ms round trips); then \
         {SEND_S:.0} s to send a region's records (20 peers at once, each about \
         1,000,000 x 20 / {NETWORK:.0} = 2,000 records of about 150 bytes). About \
         {:.0} lookups, {hours:.1} hours of work for the whole cycle, which runs spread over \
         22 hours; one lookup per CID would be 1,000,000 lookups, {:.0} hours at 8 at once.",
        regions * lookups_per_region,
        1_000_000.0 * LOOKUP_S / 8.0 / 3600.0
    );
}
