//! An S3-compatible server for tests: moto's, installed from PyPI into `target/` on first run
//! and started on a loopback port it picks itself.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

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
        // moto binds port 0 itself and says which port it got: a port picked here and handed
        // over could be taken by another test's server in between, and then the first request
        // would reach that server, or nothing.
        const SERVE: &str = "import threading\n\
            from moto.server import ThreadedMotoServer\n\
            server = ThreadedMotoServer(ip_address='127.0.0.1', port=0, verbose=False)\n\
            server.start()\n\
            print(server.get_host_and_port()[1], flush=True)\n\
            threading.Event().wait()\n";
        let mut child = Command::new(bin.join("python"))
            .args(["-c", SERVE])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto's server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("read moto's port");
        let port: u16 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("moto's server did not start (it printed {line:?})"));
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
