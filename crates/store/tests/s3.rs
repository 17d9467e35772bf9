//! The blob store suite against an S3-compatible server: moto's, installed from PyPI into
//! `target/` on first run and started on a free loopback port for this test binary.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cairn_store::blobs::suite;
use cairn_store::s3::S3Blobs;

const MOTO: &str = "moto[server]==5.2.5";

/// A virtualenv with moto; returns its bin directory.
fn moto_bin() -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("moto-venv");
    let bin = venv.join("bin");
    if !bin.join("moto_server").exists() {
        let run = |command: &mut Command, what: &str| {
            let status = command.status().unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(status.success(), "{what} failed");
        };
        run(
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
            "python3 -m venv",
        );
        run(
            Command::new(bin.join("python")).args(["-m", "pip", "install", "--quiet", MOTO]),
            "pip install moto",
        );
    }
    bin
}

struct Moto {
    child: Child,
    endpoint: String,
    bin: PathBuf,
}

impl Moto {
    fn start() -> Self {
        let bin = moto_bin();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(bin.join("moto_server"))
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto_server");
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "moto_server did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        Self {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            bin,
        }
    }

    /// A new bucket (moto accepts an unsigned `PUT /bucket`).
    fn bucket(&self, name: &str) -> String {
        let script = format!(
            "import urllib.request; urllib.request.urlopen(urllib.request.Request('{}/{name}', method='PUT'))",
            self.endpoint
        );
        let status = Command::new(self.bin.join("python"))
            .args(["-c", &script])
            .status()
            .unwrap();
        assert!(status.success(), "creating bucket {name}");
        format!(
            "s3://{name}/cairn?endpoint={}&region=us-east-1",
            self.endpoint
        )
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn s3_blobs_pass_the_blob_store_suite() {
    let moto = Moto::start();
    // moto accepts any credentials; object_store needs some to sign with.
    std::env::set_var("AWS_ACCESS_KEY_ID", "cairn");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "cairn");
    let url = moto.bucket("suite");
    let blobs = S3Blobs::open(&url, "packs").unwrap();
    suite::run(&blobs);
    // Stores sharing a bucket under different names do not see each other's blobs.
    let staging = S3Blobs::open(&url, "staging").unwrap();
    let mut writer = cairn_store::blobs::BlobStore::create(&staging, "x").unwrap();
    std::io::Write::write_all(&mut writer, b"staged").unwrap();
    writer.commit().unwrap();
    assert!(cairn_store::blobs::BlobStore::list(&blobs)
        .unwrap()
        .is_empty());
}
