//! Reading Cairn's IPNI advertisement chain back with the IPFS/libp2p npm libraries
//! (`read_chain.mjs`: every hash, dag-json encoding and signature checked as go-libipni and
//! storetheindex check them), and an indexer's announce endpoint standing in for one.
//!
//! Installed on first use into `<target tmp>/ipni-reader`, on Node 24 from PyPI, again only
//! when the lock changes (`cairn_test_support::node`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::sync::OnceLock;

use cairn_test_support::node;

/// One advertisement as `read_chain.mjs` reports it.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ad {
    pub cid: String,
    pub provider: String,
    pub addresses: Vec<String>,
    /// Hex.
    pub context_id: String,
    /// Hex.
    pub metadata: String,
    pub is_rm: bool,
    pub entries: String,
    /// Hex, every entry chunk's.
    pub multihashes: Vec<String>,
}

/// The chain, newest advertisement first.
#[derive(Debug, serde::Deserialize)]
pub struct Chain {
    pub head: Option<String>,
    pub ads: Vec<Ad>,
}

/// Read the chain `base_url` publishes as `peer_id`, checking everything; panics with the
/// reader's message when a check fails.
pub fn read_chain(base_url: &str, peer_id: &str) -> Chain {
    static INSTALLED: OnceLock<node::Installed> = OnceLock::new();
    let installed = INSTALLED.get_or_init(|| {
        let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ipni");
        node::npm_ci(
            &node::NODE_24,
            "ipni-reader",
            &sources,
            &["read_chain.mjs"],
            &[],
        )
    });
    let output = Command::new(&installed.node)
        .arg(installed.dir.join("read_chain.mjs"))
        .args([base_url, peer_id])
        .output()
        .expect("run read_chain.mjs");
    assert!(
        output.status.success(),
        "the chain did not check out: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("read_chain.mjs prints its JSON")
}

/// A request an indexer received.
#[derive(Debug)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub content_type: String,
    pub body: Vec<u8>,
}

/// An HTTP server on loopback that answers every request `204` and hands it over, as an
/// indexer takes announces; its URL is `http://127.0.0.1:{port}`.
pub fn indexer() -> (String, mpsc::Receiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (sender, received) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let mut parts = line.split_whitespace();
            let (method, path) = (
                parts.next().unwrap_or("").to_owned(),
                parts.next().unwrap_or("").to_owned(),
            );
            let (mut length, mut content_type) = (0, String::new());
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                    break;
                }
                let (name, value) = header.split_once(':').unwrap_or((&header, ""));
                match name.trim().to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap_or(0),
                    "content-type" => content_type = value.trim().to_owned(),
                    _ => {}
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let _ = stream.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
            let received = Received {
                method,
                path,
                content_type,
                body,
            };
            if sender.send(received).is_err() {
                return;
            }
        }
    });
    (url, received)
}
