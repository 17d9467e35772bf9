//! Today's Kubo (the Go implementation of IPFS) as a real daemon: built once from the Go
//! module proxy into `target/tmp/kubo-<release>/`, then started as `ipfs daemon` with a
//! repository of its own and driven with its own command line, as users drive it.
//!
//! # Building it
//!
//! `go install github.com/ipfs/kubo/cmd/ipfs@v0.43.1` is refused: Kubo's `go.mod` replaces
//! go-libp2p with a fork (`github.com/lidel/go-libp2p`, a commit of 2026-09-14 that lets
//! go-libp2p 0.49 use quic-go 0.62 and webtransport-go 0.13), and `go install pkg@version`
//! refuses any module with a `replace`. The fork's commit is not on the module proxy either
//! (403), so a checkout of Kubo's module cannot build as released. The `go.mod`'s own comment
//! says the replacement goes once a go-libp2p release requires those versions: go-libp2p
//! 0.50.0 (2026-09-21) is that release. So [`binary`] takes Kubo's module source from the
//! proxy (`go mod download`), drops the `replace`, requires go-libp2p 0.50.0 and builds
//! `./cmd/ipfs`: Kubo 0.43.1's code with go-libp2p's release a week after the fork.
//! About four minutes on two cores the first time (the module downloads included, into caches
//! of the build's own, removed after it); the binary is kept after that, and rebuilt only
//! when [`RELEASE`] changes (the directory is named after it).
//!
//! # The daemon
//!
//! `ipfs init --profile test` (loopback addresses on ports the system picks, no bootstrap
//! peers, MDNS off, AutoConf off, no delegated routers, loopback addresses admitted to the LAN
//! DHT), plus a QUIC v1 listener. Run it inside `crate::netns::isolated`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::{on_path, run, target_tmp};

/// The Kubo release built.
pub const RELEASE: &str = "v0.43.1";

/// The go-libp2p release that stands in for the fork Kubo's `go.mod` names (module docs).
const GO_LIBP2P: &str = "v0.50.0";

/// The `ipfs` binary of [`RELEASE`], built by the first caller of any test process (the others
/// wait for it, across processes too).
pub fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(build)
}

fn build() -> PathBuf {
    let dir = target_tmp().join(format!("kubo-{RELEASE}"));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    let lock = File::create(dir.join(".lock")).expect("create the build's lock file");
    lock.lock().expect("lock the Kubo build");
    // Renamed into place only once built whole.
    let binary = dir.join("ipfs");
    if binary.exists() {
        return binary;
    }
    let go = on_path("go")
        .or_else(|| Some(PathBuf::from("/usr/local/go/bin/go")).filter(|go| go.exists()))
        .unwrap_or_else(|| {
            panic!(
                "the tests build Kubo {RELEASE} with Go 1.26 or newer, which is not on this \
                 machine: install Go (https://go.dev/doc/install), or put its bin/ on PATH"
            )
        });
    let started = Instant::now();
    eprintln!(
        "building Kubo {RELEASE} from the Go module proxy into {} (once)",
        dir.display()
    );
    // Caches of the build's own, removed once it is built: 1.4 GB a finished build no longer
    // needs, on a disk the rest of the suite shares (and a user's own Go caches untouched).
    let caches = [dir.join("go-build-cache"), dir.join("go-mod-cache")];
    let go_command = |args: &[&str], at: &Path| {
        let mut command = Command::new(&go);
        command
            .args(args)
            .current_dir(at)
            .env("GOFLAGS", "-mod=mod -buildvcs=false")
            .env("GOCACHE", &caches[0])
            .env("GOMODCACHE", &caches[1]);
        command
    };
    let downloaded = go_with_retries(
        || {
            go_command(
                &[
                    "mod",
                    "download",
                    "-json",
                    &format!("github.com/ipfs/kubo@{RELEASE}"),
                ],
                &dir,
            )
        },
        "go mod download github.com/ipfs/kubo",
    );
    let module = json_string(&downloaded, "Dir")
        .unwrap_or_else(|| panic!("go mod download named no directory:\n{downloaded}"));
    let source = dir.join("src");
    let _ = std::fs::remove_dir_all(&source);
    run(
        Command::new("cp").arg("-r").arg(&module).arg(&source),
        "copy Kubo's module source",
    );
    // The module cache's files are read-only; go.mod and go.sum are about to change.
    run(
        Command::new("chmod").args(["-R", "u+w"]).arg(&source),
        "make Kubo's source writable",
    );
    run(
        &mut go_command(
            &[
                "mod",
                "edit",
                "-dropreplace",
                "github.com/libp2p/go-libp2p",
                "-require",
                &format!("github.com/libp2p/go-libp2p@{GO_LIBP2P}"),
            ],
            &source,
        ),
        "go mod edit (Kubo's go-libp2p)",
    );
    let partial = dir.join("ipfs.partial");
    go_with_retries(
        || {
            let mut command = go_command(&["build", "-trimpath", "-o"], &source);
            command.arg(&partial).arg("./cmd/ipfs");
            command
        },
        &format!("go build Kubo {RELEASE}"),
    );
    let version = run(Command::new(&partial).arg("version"), "ipfs version");
    assert!(
        version.trim() == format!("ipfs version {}", RELEASE.trim_start_matches('v')),
        "the Kubo built says {version:?}"
    );
    std::fs::rename(&partial, &binary).expect("put the Kubo binary in place");
    let _ = std::fs::remove_dir_all(&source);
    for cache in &caches {
        // The module cache's files and directories are read-only.
        let _ = Command::new("chmod")
            .args(["-R", "u+w"])
            .arg(cache)
            .status();
        let _ = std::fs::remove_dir_all(cache);
    }
    eprintln!(
        "built Kubo {RELEASE} in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    binary
}

/// Run the `go` command `make` builds until it succeeds, three times at most: a module
/// download that fails halfway (the proxy's answer cut short, a moment's refusal) fails the
/// whole command, and the next try resumes from the modules already in the cache. Go's
/// `go: downloading` lines (a hundred of them) are left out of what a failure shows, so its
/// error is what a reader sees.
fn go_with_retries(make: impl Fn() -> Command, what: &str) -> String {
    const TRIES: u32 = 3;
    for attempt in 1..=TRIES {
        let output = make().output().unwrap_or_else(|e| panic!("{what}: {e}"));
        if output.status.success() {
            return String::from_utf8_lossy(&output.stdout).into_owned();
        }
        let errors: String = String::from_utf8_lossy(&output.stderr)
            .lines()
            .filter(|line| !line.starts_with("go: downloading "))
            .map(|line| format!("{line}\n"))
            .collect();
        let failure = format!(
            "{what} failed ({}), try {attempt} of {TRIES}:\n{}{errors}",
            output.status,
            String::from_utf8_lossy(&output.stdout)
        );
        assert!(attempt < TRIES, "{failure}");
        eprintln!("{failure}");
        std::thread::sleep(Duration::from_secs(10));
    }
    unreachable!("the last try panics")
}

/// The string value of `"key": "..."` in `go`'s JSON (paths hold no escapes worth decoding).
fn json_string(json: &str, key: &str) -> Option<String> {
    let after = &json[json.find(&format!("\"{key}\""))? + key.len() + 2..];
    let value = after
        .trim_start()
        .strip_prefix(':')?
        .trim_start()
        .strip_prefix('"')?;
    Some(value[..value.find('"')?].to_owned())
}

/// How a [`Daemon`] is set up.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Swarm ports (0: chosen by the system).
    pub tcp_port: u16,
    pub quic_port: u16,
    /// `Routing.Type`, when not Kubo's default (`auto`: the DHTs, no delegated routers under
    /// the test profile); `dhtclient` makes a node that no DHT peer adds to its table.
    pub routing: Option<&'static str>,
}

/// A running `ipfs daemon`, killed on drop.
pub struct Daemon {
    pub peer_id: String,
    /// Swarm listen addresses (one TCP, one QUIC v1), without `/p2p/`.
    pub addrs: Vec<String>,
    /// Its gateway: `http://127.0.0.1:PORT`.
    pub gateway: String,
    /// Holds `repo/` and `daemon.log`.
    pub dir: PathBuf,
    child: Child,
}

/// A command the daemon refused or did not finish in time.
#[derive(Debug)]
pub struct Refused {
    pub command: String,
    /// What `ipfs` printed on stderr, or that it timed out.
    pub message: String,
}

impl Daemon {
    /// Start a daemon with its repository in `dir/repo`, made on first use (a repository
    /// already there is reopened, with the same peer id).
    pub fn start(dir: &Path, options: Options) -> Self {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let repo = dir.join("repo");
        let ipfs = |args: &[&str]| {
            let mut command = Command::new(binary());
            command.args(args).env("IPFS_PATH", &repo);
            command
        };
        if !repo.join("config").exists() {
            run(&mut ipfs(&["init", "--profile", "test"]), "ipfs init");
        }
        let swarm = format!(
            r#"["/ip4/127.0.0.1/tcp/{}", "/ip4/127.0.0.1/udp/{}/quic-v1"]"#,
            options.tcp_port, options.quic_port
        );
        run(
            &mut ipfs(&["config", "--json", "Addresses.Swarm", &swarm]),
            "ipfs config Addresses.Swarm",
        );
        if let Some(routing) = options.routing {
            run(
                &mut ipfs(&["config", "Routing.Type", routing]),
                "ipfs config Routing.Type",
            );
        }
        let log_path = dir.join("daemon.log");
        let log = File::create(&log_path).expect("create the daemon's log");
        let mut child = ipfs(&["daemon"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log again"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start ipfs daemon: {e}"));
        let deadline = Instant::now() + Duration::from_secs(60);
        let printed = loop {
            let printed = std::fs::read_to_string(&log_path).unwrap_or_default();
            if printed.contains("Daemon is ready") {
                break printed;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("ipfs daemon ended at its start ({status}):\n{printed}");
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("ipfs daemon was not ready within a minute:\n{printed}");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let gateway = printed
            .lines()
            .find_map(|line| line.strip_prefix("Gateway server listening on /ip4/"))
            .and_then(|rest| {
                let (host, port) = rest.split_once("/tcp/")?;
                Some(format!("http://{host}:{}", port.trim()))
            })
            .unwrap_or_else(|| panic!("the daemon named no gateway:\n{printed}"));
        let mut daemon = Self {
            peer_id: String::new(),
            addrs: Vec::new(),
            gateway,
            dir: dir.to_owned(),
            child,
        };
        daemon.peer_id = daemon
            .ipfs(&["id", "-f", "<id>"], Duration::from_secs(10))
            .expect("ipfs id")
            .trim()
            .to_owned();
        daemon.addrs = daemon
            .ipfs(&["swarm", "addrs", "listen"], Duration::from_secs(10))
            .expect("ipfs swarm addrs listen")
            .lines()
            .map(str::to_owned)
            .collect();
        daemon
    }

    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Run `ipfs ARGS` against this daemon (through its RPC API), giving up after `timeout`;
    /// its stdout.
    pub fn ipfs(&self, args: &[&str], timeout: Duration) -> Result<String, Refused> {
        let mut child = Command::new(binary())
            .arg(format!("--timeout={}ms", timeout.as_millis()))
            .args(args)
            .env("IPFS_PATH", self.dir.join("repo"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("run ipfs {args:?}: {e}"));
        // Kubo's own --timeout ends the command; this one catches a client that hangs.
        let deadline = Instant::now() + timeout + Duration::from_secs(10);
        while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let refused = |message: String| Refused {
            command: args.join(" "),
            message,
        };
        if child.try_wait().ok().flatten().is_none() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(refused(format!("timed out after {timeout:?}")));
        }
        let output = child.wait_with_output().expect("ipfs's output");
        if output.status.success() {
            return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
        }
        let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        Err(refused(if stderr.contains("context deadline exceeded") {
            format!("timed out after {timeout:?}: {stderr}")
        } else {
            stderr
        }))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // Nothing of a test peer needs to be kept.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
