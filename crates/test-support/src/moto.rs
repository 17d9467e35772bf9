//! An S3-compatible server for tests: moto's, installed from PyPI into `target/` on first run
//! and started on a free loopback port.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const MOTO: &str = "moto[server]==5.2.5";

pub struct Moto {
    child: Child,
    endpoint: String,
    bin: PathBuf,
}

impl Moto {
    /// Install moto (once per test binary), where the test may not reach PyPI later: before
    /// it enters a network namespace.
    pub fn install() -> PathBuf {
        crate::pypi::venv_with("moto-venv", MOTO)
    }

    pub fn start() -> Self {
        let bin = Self::install();
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
        // moto accepts any credentials; object_store needs some to sign with.
        std::env::set_var("AWS_ACCESS_KEY_ID", "cairn");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "cairn");
        Self {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            bin,
        }
    }

    /// A new bucket (moto accepts an unsigned `PUT /bucket`); returns its `s3://` URL.
    pub fn bucket(&self, name: &str) -> String {
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

impl Moto {
    /// Bytes of the objects under `prefix` in bucket `name`.
    pub fn bytes_under(&self, name: &str, prefix: &str) -> u64 {
        let script = format!(
            "import boto3\n\
             s3 = boto3.client('s3', endpoint_url='{}', region_name='us-east-1',\n\
                 aws_access_key_id='cairn', aws_secret_access_key='cairn')\n\
             pages = s3.get_paginator('list_objects_v2').paginate(Bucket='{name}', Prefix='{prefix}')\n\
             print(sum(o['Size'] for p in pages for o in p.get('Contents', [])))",
            self.endpoint
        );
        let listed = crate::run(
            Command::new(self.bin.join("python")).args(["-c", &script]),
            "listing the bucket with boto3",
        );
        listed.trim().parse().expect("a byte count")
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
