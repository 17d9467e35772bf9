//! Cairn on the IPFS network, with the peers users run (Kubo, the Go implementation, and
//! Helia, the JavaScript one), each test in a network namespace with only loopback: what
//! Cairn stores is fetched over Bitswap (TCP and QUIC), and through Cairn's delegated router
//! over Bitswap and over HTTP.

mod peers;
mod server;

use std::path::Path;
use std::time::Duration;

use peers::{netns, tree, Broker, Helia, Kubo, Source};
use server::{client, start, terminate, Running};

const TIMEOUT: Duration = Duration::from_secs(60);

/// `cairn serve` with its IPFS node on loopback, TCP, QUIC and WebSocket on ports the system
/// picks.
fn start_node(data: &Path) -> (Running, Node) {
    let mut running = start(
        data,
        &[
            "--p2p-listen",
            "/ip4/127.0.0.1/tcp/0,/ip4/127.0.0.1/udp/0/quic-v1,/ip4/127.0.0.1/tcp/0/ws",
        ],
    );
    let node = Node::read(&mut running, 3);
    (running, node)
}

/// What `serve` printed of its node.
struct Node {
    peer_id: String,
    /// With `/p2p/`.
    addrs: Vec<String>,
}

impl Node {
    fn read(running: &mut Running, listeners: usize) -> Self {
        let mut peer_id = String::new();
        let mut addrs = Vec::new();
        while addrs.len() < listeners {
            let line = running
                .lines
                .next()
                .expect("serve prints its node")
                .unwrap();
            if let Some(id) = line.strip_prefix("p2p peer id ") {
                peer_id = id.to_owned();
            } else if let Some(addr) = line.strip_prefix("p2p listening on ") {
                addrs.push(addr.to_owned());
            }
        }
        Self { peer_id, addrs }
    }

    /// The address for `transport`: `/tcp/` (plain TCP), `/quic-v1` or `/ws`.
    fn addr(&self, transport: &str) -> String {
        let websocket = |a: &str| a.contains("/ws/");
        self.addrs
            .iter()
            .find(|a| match transport {
                "/tcp/" => a.contains("/tcp/") && !websocket(a),
                "/ws" => websocket(a),
                other => a.contains(other),
            })
            .unwrap_or_else(|| panic!("no {transport} address in {:?}", self.addrs))
            .clone()
    }
}

/// Upload `path` with `cairn upload --wait`; its CID.
fn upload(running: &Running, home: &Path, path: &Path) -> String {
    let printed = client(
        running,
        &running.token,
        home,
        &["upload", "--wait", path.to_str().unwrap()],
    );
    printed.split('\t').next().unwrap().trim().to_owned()
}

fn write_site(dir: &Path) {
    std::fs::create_dir_all(dir.join("assets/empty")).unwrap();
    std::fs::write(dir.join("index.html"), b"<h1>hello from cairn</h1>").unwrap();
    std::fs::write(dir.join(".well-known"), b"hidden").unwrap();
    std::fs::write(dir.join("assets/data.bin"), server::content(2_500_000, 9)).unwrap();
}

#[test]
fn kubo_fetches_uploads_from_cairn_over_tcp_and_quic() {
    peers::install();
    netns::isolated("kubo_fetches_uploads_from_cairn_over_tcp_and_quic", || {
        let work = tempfile::tempdir().unwrap();
        let work = work.path();
        let (running, node) = start_node(&work.join("cairn"));
        let big = server::content(5 << 20, 3);
        std::fs::write(work.join("big.bin"), &big).unwrap();
        write_site(&work.join("site"));
        let file_cid = upload(&running, work, &work.join("big.bin"));
        let dir_cid = upload(&running, work, &work.join("site"));

        for (name, transport) in [("tcp", "/tcp/"), ("quic", "/quic-v1")] {
            let mut kubo = Kubo::start(&work.join(format!("kubo-{name}")));
            kubo.connect(&node.addr(transport)).unwrap();
            let connected = kubo.peers().unwrap();
            assert!(
                connected
                    .iter()
                    .any(|c| c.peer_id == node.peer_id && c.addr.contains(transport)),
                "{connected:?}"
            );
            let out = work.join(format!("{name}-big.bin"));
            kubo.get(&file_cid, &out, TIMEOUT).unwrap();
            assert!(
                std::fs::read(&out).unwrap() == big,
                "{name}: the file differs"
            );
            let out = work.join(format!("{name}-site"));
            kubo.get(&dir_cid, &out, TIMEOUT).unwrap();
            assert_eq!(tree(&out), tree(&work.join("site")), "{name}");
        }
        terminate(running);
    });
}

#[test]
fn helia_fetches_from_cairn_by_address_and_through_cairns_router() {
    peers::install();
    netns::isolated(
        "helia_fetches_from_cairn_by_address_and_through_cairns_router",
        || {
            let work = tempfile::tempdir().unwrap();
            let work = work.path();
            let (running, node) = start_node(&work.join("cairn"));
            let bytes = server::content(3 << 20, 4);
            std::fs::write(work.join("one.bin"), &bytes).unwrap();
            write_site(&work.join("site"));
            let file_cid = upload(&running, work, &work.join("one.bin"));
            let dir_cid = upload(&running, work, &work.join("site"));
            let mut helia = Helia::start(&work.join("helia"));

            // Given Cairn's address: Bitswap.
            let from = [node.addr("/tcp/")];
            let out = work.join("by-address.bin");
            let fetched = helia
                .fetch(&file_cid, &out, Source::Peers(&from), TIMEOUT)
                .unwrap();
            assert!(std::fs::read(&out).unwrap() == bytes);
            assert_eq!(fetched.bitswap_peers, std::slice::from_ref(&node.peer_id));
            assert_eq!(fetched.blocks, fetched.bitswap_blocks);

            // Knowing only Cairn's URL, as its delegated router: over Bitswap, and over HTTP
            // from Cairn's gateway.
            for (broker, session) in [
                (Broker::Bitswap, false),
                (Broker::Bitswap, true),
                (Broker::TrustlessGateway, false),
                (Broker::TrustlessGateway, true),
            ] {
                let brokers = [broker];
                let source = Source::Router {
                    url: &running.upload,
                    brokers: &brokers,
                    session,
                };
                let out = work.join(format!("routed-{broker:?}-{session}"));
                let fetched = helia.fetch(&dir_cid, &out, source, TIMEOUT).unwrap();
                assert_eq!(tree(&out), tree(&work.join("site")), "{broker:?} {session}");
                assert!(
                    fetched.routed.iter().any(|p| p.peer_id == node.peer_id),
                    "{fetched:?}"
                );
                match broker {
                    Broker::Bitswap => {
                        assert_eq!(fetched.blocks, fetched.bitswap_blocks, "{fetched:?}")
                    }
                    Broker::TrustlessGateway => {
                        let over_http: u64 = fetched.http.values().sum();
                        assert_eq!(fetched.blocks, over_http, "{fetched:?}");
                        assert!(
                            fetched.http.keys().all(|url| running
                                .upload
                                .contains(url.trim_start_matches("http://").trim_end_matches('/'))),
                            "{fetched:?}"
                        );
                    }
                }
            }
            terminate(running);
        },
    );
}

#[test]
fn cairn_get_fetches_over_bitswap_by_websocket_and_through_the_router() {
    netns::isolated(
        "cairn_get_fetches_over_bitswap_by_websocket_and_through_the_router",
        || {
            let work = tempfile::tempdir().unwrap();
            let work = work.path();
            let (running, node) = start_node(&work.join("cairn"));
            write_site(&work.join("site"));
            let cid = upload(&running, work, &work.join("site"));
            for (name, args) in [
                ("ws", vec!["--peer".to_owned(), node.addr("/ws")]),
                ("routed", vec!["--p2p".to_owned()]),
            ] {
                let out = work.join(name);
                let mut command = vec!["get".to_owned(), cid.clone(), "-o".to_owned()];
                command.push(out.display().to_string());
                command.extend(args);
                let command: Vec<&str> = command.iter().map(String::as_str).collect();
                client(&running, &running.token, work, &command);
                assert_eq!(tree(&out), tree(&work.join("site")), "{name}");
            }
            terminate(running);
        },
    );
}
