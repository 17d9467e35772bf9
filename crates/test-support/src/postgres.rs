//! The PostgreSQL server the tests use, and databases of their own on it.
//!
//! [`server`] is one server for the whole test process, the first that applies of:
//! 1. the one at `CAIRN_TEST_POSTGRES_URL`, when that is set (it must answer);
//! 2. the machine's, when one answers at [`DEFAULT_URL`];
//! 3. a throwaway [`Cluster`] of the tests' own, under `target/tmp/postgres/`.
//!
//! A [`Cluster`] is made with `initdb` (as the `postgres` user when the tests run as root,
//! since PostgreSQL refuses to run as root) from the machine's PostgreSQL binaries, installed
//! from Debian's `postgresql` when missing and the tests run as root. It listens on a free port
//! of 127.0.0.1 and on a socket in its own directory (which a test inside a network namespace,
//! with a loopback of its own, can still reach: see `crate::netns`). Its postmaster is told to
//! stop (a fast shutdown) when the test process ends, however it ends; the next run removes
//! what is left of it.

use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::{debian, is_root, on_path, run, target_tmp};

/// The variable naming the server to use instead of finding or starting one.
pub const URL_VARIABLE: &str = "CAIRN_TEST_POSTGRES_URL";

/// Where a PostgreSQL installed on the machine answers by default (Debian's, started as a
/// service).
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// A PostgreSQL server the tests can create databases on.
pub struct Server {
    /// Its `postgres` database, as the tests reach it.
    url: ConnectionUrl,
    /// The same over its Unix socket, when it has one on this machine.
    socket_url: Option<ConnectionUrl>,
    /// Kept running for the process's life.
    _own: Option<Cluster>,
}

/// The server every test of this process uses (see the module docs for which), found or
/// started by the first caller.
pub fn server() -> &'static Server {
    SERVER.get_or_init(|| {
        if let Ok(url) = std::env::var(URL_VARIABLE) {
            if let Err(why) = answers(&url) {
                panic!(
                    "no PostgreSQL answers at {URL_VARIABLE}={url}: {why}\n(unset it and the \
                     tests use the machine's server at {DEFAULT_URL}, or start one of their own)"
                );
            }
            return Server::external(&url);
        }
        let default_listens = TcpStream::connect_timeout(
            &"127.0.0.1:5432".parse().expect("an address"),
            Duration::from_secs(1),
        )
        .is_ok();
        if default_listens && answers(DEFAULT_URL).is_ok() {
            return Server::external(DEFAULT_URL);
        }
        let own = Cluster::start();
        Server {
            url: own.url(),
            socket_url: Some(own.socket_url()),
            _own: Some(own),
        }
    })
}

impl Server {
    fn external(url: &str) -> Self {
        let url = ConnectionUrl::parse(url);
        // A server on this machine names its own sockets; one elsewhere has none we can use.
        let admin = url.to_database("postgres");
        let socket_url = query(&admin, "SHOW unix_socket_directories")
            .ok()
            .zip(query(&admin, "SHOW port").ok())
            .and_then(|(directories, port)| {
                let directory = PathBuf::from(directories.split(',').next()?.trim());
                let port: u16 = port.parse().ok()?;
                let socket = directory.join(format!(".s.PGSQL.{port}"));
                socket
                    .exists()
                    .then(|| ConnectionUrl::socket(&directory, port))
            });
        Self {
            url,
            socket_url,
            _own: None,
        }
    }

    /// The URL of its database `name`.
    pub fn url(&self, name: &str) -> String {
        self.url.to_database(name)
    }

    /// The URL of its database `name` over the server's Unix socket, for a process in another
    /// network namespace. Panics where the server has no socket on this machine.
    pub fn socket_url(&self, name: &str) -> String {
        self.socket_url
            .as_ref()
            .unwrap_or_else(|| {
                panic!(
                    "the PostgreSQL at {} has no Unix socket on this machine, which a test in a \
                     network namespace needs: unset {URL_VARIABLE} to use one that has",
                    self.url.to_database("postgres")
                )
            })
            .to_database(name)
    }

    /// What a test process in another network namespace sets [`URL_VARIABLE`] to, to reach
    /// this server: `None` where it has no socket.
    pub(crate) fn for_namespace(&self) -> Option<String> {
        self.socket_url
            .as_ref()
            .map(|url| url.to_database("postgres"))
    }
}

static SERVER: OnceLock<Server> = OnceLock::new();

/// The server's URL for a test process in another network namespace, if [`server`] has been
/// asked for in this one (see `crate::netns`): never starts one, since a test that needs it
/// asks for it before entering its namespace.
pub(crate) fn url_for_namespace() -> Option<String> {
    SERVER.get().and_then(Server::for_namespace)
}

/// A database of its own for one test, on [`server`]; dropped (with its connections) on drop.
pub struct Database {
    /// Its URL over TCP.
    pub url: String,
    name: String,
}

impl Database {
    /// A new empty database, its name made of `tag`, the process id and a counter.
    pub fn create(tag: &str) -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let server = server();
        let name = format!(
            "cairn_test_{tag}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let admin = server.url("postgres");
        execute(&admin, &format!("DROP DATABASE IF EXISTS {name}"));
        execute(&admin, &format!("CREATE DATABASE {name}"));
        Self {
            url: server.url(&name),
            name,
        }
    }

    /// Its URL over the server's Unix socket (see [`Server::socket_url`]).
    pub fn socket_url(&self) -> String {
        server().socket_url(&self.name)
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        if let Err(why) = query(&server().url("postgres"), &sql) {
            eprintln!("{sql}: {why}");
        }
    }
}

/// A throwaway PostgreSQL cluster of the tests' own: made by [`Cluster::start`], which a test
/// may also stop as a crash would and start again; removed on drop.
pub struct Cluster {
    /// Holds `data/` and `log`; the socket is in `socket_dir`.
    dir: PathBuf,
    socket_dir: PathBuf,
    port: u16,
    binaries: PathBuf,
    /// The user and group it runs as, when the tests run as root.
    owner: Option<(u32, u32)>,
    postmaster: Mutex<Option<Child>>,
}

impl Cluster {
    /// `initdb` a new cluster and start it.
    pub fn start() -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let binaries = binaries();
        let owner = is_root().then(|| {
            user_ids("postgres").unwrap_or_else(|| {
                panic!(
                    "the tests run as root, and PostgreSQL will not: they run it as the user \
                     `postgres`, which does not exist (Debian's `postgresql` package creates it)"
                )
            })
        });
        let parent = cluster_parent();
        remove_dead_clusters(&parent);
        let dir = parent.join(format!(
            "{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let port = free_port();
        // A socket's path must fit in 107 bytes; a deep checkout's would not.
        let socket_dir = if dir.join(format!(".s.PGSQL.{port}")).as_os_str().len() < 100 {
            dir.clone()
        } else {
            let short = std::env::temp_dir().join(format!("cairn-pg-{}", dir_name(&dir)));
            std::fs::create_dir_all(&short)
                .unwrap_or_else(|e| panic!("create {}: {e}", short.display()));
            short
        };
        if let Some((uid, gid)) = owner {
            for path in [&dir, &socket_dir] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid))
                    .unwrap_or_else(|e| panic!("chown {} to postgres: {e}", path.display()));
            }
        }
        let mut cluster = Self {
            dir,
            socket_dir,
            port,
            binaries,
            owner,
            postmaster: Mutex::new(None),
        };
        let data = cluster.data();
        run(
            cluster
                .command("initdb")
                .arg("-D")
                .arg(&data)
                .args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C"])
                // A throwaway cluster: no need to wait for its files to reach the disk.
                .arg("--no-sync"),
            &format!("initdb {}", data.display()),
        );
        for attempt in 1.. {
            match cluster.start_postmaster() {
                Ok(()) => break,
                // Another test's server took the port after `free_port` saw it free.
                Err(failure) if attempt < 3 && failure.contains("Address already in use") => {
                    cluster.port = free_port()
                }
                Err(failure) => panic!("{failure}"),
            }
        }
        cluster
    }

    /// Its `postgres` database over TCP.
    pub fn url(&self) -> ConnectionUrl {
        ConnectionUrl::parse(&format!(
            "postgres://postgres@127.0.0.1:{}/postgres",
            self.port
        ))
    }

    /// Its `postgres` database over its Unix socket.
    pub fn socket_url(&self) -> ConnectionUrl {
        ConnectionUrl::socket(&self.socket_dir, self.port)
    }

    /// Stop it as a crash would: an immediate shutdown (SIGQUIT), no checkpoint.
    pub fn crash(&self) {
        let mut postmaster = self.postmaster.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(mut child) = postmaster.take() {
            signal(&child, libc::SIGQUIT);
            let _ = child.wait();
        }
    }

    /// Start it (again), and wait until it takes connections.
    pub fn restart(&self) {
        if let Err(failure) = self.start_postmaster() {
            panic!("{failure}");
        }
    }

    /// Start the server and wait until it takes connections; on failure, why, with what it
    /// logged at this start.
    fn start_postmaster(&self) -> Result<(), String> {
        let mut postmaster = self.postmaster.lock().unwrap_or_else(|e| e.into_inner());
        assert!(postmaster.is_none(), "the cluster is running");
        let log_path = self.dir.join("log");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("open the cluster's log");
        let logged_before = log.metadata().map(|m| m.len() as usize).unwrap_or(0);
        let logged_since = || {
            let log = std::fs::read(&log_path).unwrap_or_default();
            String::from_utf8_lossy(log.get(logged_before..).unwrap_or_default()).into_owned()
        };
        let mut command = self.command("postgres");
        command
            .arg("-D")
            .arg(self.data())
            .args(["-p", &self.port.to_string()])
            .arg("-k")
            .arg(&self.socket_dir)
            .args(["-c", "listen_addresses=127.0.0.1"])
            // Several `cairn serve` nodes, each with its pools, share it in some tests.
            .args(["-c", "max_connections=300"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log again"))
            .stderr(log);
        let mut child = spawn_for_life(command)
            .unwrap_or_else(|e| panic!("start {}: {e}", self.binaries.join("postgres").display()));
        let deadline = Instant::now() + Duration::from_secs(60);
        let admin = self.socket_url().to_database("postgres");
        while let Err(why) = answers_with(&self.binaries.join("psql"), &admin) {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "PostgreSQL ended at its start ({status}); its log:\n{}",
                    logged_since()
                ));
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "PostgreSQL did not take connections within a minute ({why}); its log:\n{}",
                    logged_since()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        *postmaster = Some(child);
        Ok(())
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// One of PostgreSQL's programs, run as the cluster's owner.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.binaries.join(program));
        if let Some((uid, gid)) = self.owner {
            command.uid(uid).gid(gid);
        }
        // initdb and postgres look for their files relative to where they run from only.
        command.current_dir(&self.dir);
        command
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.crash();
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_dir_all(&self.socket_dir);
    }
}

/// A libpq connection URL, split where its database name goes.
#[derive(Debug, Clone)]
pub struct ConnectionUrl {
    /// Up to the `/` before the database name: `postgres://user@host:port`.
    base: String,
    /// The query string, with its `?`, or nothing.
    query: String,
}

impl ConnectionUrl {
    fn parse(url: &str) -> Self {
        let (path, query) = match url.find('?') {
            Some(at) => url.split_at(at),
            None => (url, ""),
        };
        let base = match path.rsplit_once('/') {
            Some((base, _)) if base.contains("://") && base.len() > "postgres://".len() - 1 => base,
            _ => panic!("{url} is not a postgres:// URL with a database name"),
        };
        Self {
            base: base.to_owned(),
            query: query.to_owned(),
        }
    }

    fn socket(directory: &Path, port: u16) -> Self {
        Self {
            base: "postgres://".to_owned(),
            query: format!("?host={}&port={port}&user=postgres", directory.display()),
        }
    }

    /// The URL of database `name`.
    pub fn to_database(&self, name: &str) -> String {
        format!("{}/{name}{}", self.base, self.query)
    }
}

/// The directory of PostgreSQL's server programs (`initdb`, `postgres`, `psql`), installing
/// Debian's `postgresql` first when none is on the machine and the tests may.
fn binaries() -> PathBuf {
    if let Some(found) = find_binaries() {
        return found;
    }
    if let Err(why) = debian::install(&["postgresql"]) {
        panic!(
            "no PostgreSQL answers at {DEFAULT_URL} and none is installed to start one for the \
             tests: {why}; or set {URL_VARIABLE} to a server's URL"
        );
    }
    find_binaries().expect("Debian's postgresql was installed, with initdb")
}

fn find_binaries() -> Option<PathBuf> {
    // Debian keeps each major version's programs apart; the newest installed.
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    debian.sort();
    if let Some((_, bin)) = debian.pop() {
        return Some(bin);
    }
    let initdb = on_path("initdb")?;
    Some(std::fs::canonicalize(initdb).ok()?.parent()?.to_owned())
}

/// Where clusters are made: under the target directory when the `postgres` user can reach it
/// there, else under the system's temporary directory.
fn cluster_parent() -> PathBuf {
    let preferred = target_tmp().join("postgres");
    let reachable = |dir: &Path| {
        // Every directory above must let others through (`o+x`) for `postgres` to get in.
        use std::os::unix::fs::PermissionsExt;
        dir.ancestors()
            .skip(1)
            .all(|a| std::fs::metadata(a).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
    };
    let parent = if !is_root() || reachable(&preferred) {
        preferred
    } else {
        std::env::temp_dir().join("cairn-test-postgres")
    };
    std::fs::create_dir_all(&parent).unwrap_or_else(|e| panic!("create {}: {e}", parent.display()));
    parent
}

/// Remove the clusters of test processes that have ended (each stopped itself when its
/// process did).
fn remove_dead_clusters(parent: &Path) {
    for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.split('-').next()?.parse::<u32>().ok())
        else {
            continue;
        };
        let postmaster_alive = std::fs::read_to_string(entry.path().join("data/postmaster.pid"))
            .ok()
            .and_then(|text| text.lines().next()?.trim().parse::<u32>().ok())
            .is_some_and(alive);
        if pid != std::process::id() && !alive(pid) && !postmaster_alive {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `name`'s user and group ids, from `/etc/passwd`.
fn user_ids(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() > 3 && fields[0] == name)
            .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
            .flatten()
    })
}

/// A TCP port of 127.0.0.1 no one listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

fn signal(child: &Child, signal: i32) {
    // SAFETY: kill has no memory preconditions; the pid is our own unreaped child's.
    unsafe {
        libc::kill(child.id() as libc::pid_t, signal);
    }
}

/// Spawn `command` so that it is told to stop (SIGINT, PostgreSQL's fast shutdown) when this
/// process ends, however it ends. The parent-death signal follows the thread that spawned the
/// child, and a test's thread ends with its test: so every such child is spawned by one
/// thread that lives as long as the process.
fn spawn_for_life(mut command: Command) -> std::io::Result<Child> {
    type Request = (Command, mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Request>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (requests, received) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("spawn-for-life".to_owned())
            .spawn(move || {
                for (mut command, answer) in received {
                    let _ = answer.send(command.spawn());
                }
            })
            .expect("start the spawning thread");
        Mutex::new(requests)
    });
    // SAFETY: prctl is async-signal-safe, and the closure touches nothing else.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let (answer, answered) = mpsc::channel();
    spawner
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((command, answer))
        .expect("the spawning thread lives as long as the process");
    answered
        .recv()
        .expect("the spawning thread answers every request")
}

/// `Ok` when the server at `url` runs a query; otherwise what psql said.
fn answers(url: &str) -> Result<(), String> {
    query(url, "SELECT 1").map(drop)
}

fn answers_with(psql: &Path, url: &str) -> Result<(), String> {
    query_with(psql, url, "SELECT 1").map(drop)
}

/// Run `sql` on `url`, panicking with psql's answer if it fails.
fn execute(url: &str, sql: &str) {
    if let Err(why) = query(url, sql) {
        panic!("{sql}: {why}");
    }
}

/// Run `sql` on `url` with psql; its output, unaligned and without headers.
fn query(url: &str, sql: &str) -> Result<String, String> {
    query_with(&psql(), url, sql)
}

fn query_with(psql: &Path, url: &str, sql: &str) -> Result<String, String> {
    let output = Command::new(psql)
        .arg(url)
        .args(["-v", "ON_ERROR_STOP=1", "-X", "-A", "-t", "-c", sql])
        .env("PGCONNECT_TIMEOUT", "5")
        .output()
        .map_err(|e| format!("run {}: {e}", psql.display()))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
    }
}

/// The database at `url` as SQL (`pg_dump`, without owners or privileges, so that it loads
/// into a database of any name on any server).
pub fn dump(url: &str) -> String {
    let pg_dump = on_path("pg_dump")
        .or_else(|| find_binaries().map(|bin| bin.join("pg_dump")))
        .expect("pg_dump, beside psql");
    run(
        Command::new(pg_dump)
            .args(["--no-owner", "--no-privileges", "--dbname"])
            .arg(url),
        "pg_dump",
    )
}

/// Load the SQL file at `dump` (made by [`dump`]) into the database at `url`, stopping at its
/// first error.
pub fn restore(url: &str, dump: &Path) {
    run(
        Command::new(psql())
            .arg(url)
            .args(["-v", "ON_ERROR_STOP=1", "-X", "-q", "-f"])
            .arg(dump),
        "psql loading a dump",
    );
}

/// psql: the one on `PATH`, else the one beside the server's programs.
fn psql() -> PathBuf {
    static PSQL: OnceLock<PathBuf> = OnceLock::new();
    PSQL.get_or_init(|| {
        on_path("psql")
            .or_else(|| find_binaries().map(|bin| bin.join("psql")))
            .unwrap_or_else(|| {
                panic!("the tests talk to PostgreSQL with psql: install Debian's postgresql-client")
            })
    })
    .clone()
}
