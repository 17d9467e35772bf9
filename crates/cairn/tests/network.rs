//! Cairn on the IPFS network, with the peers users run (Kubo, the Go implementation, and
//! Helia, the JavaScript one), each test in a network namespace with only loopback: what
//! Cairn stores is fetched over Bitswap (TCP and QUIC), and through Cairn's delegated router
//! over Bitswap and over HTTP.

use cairn_harness::peers;
use cairn_harness::server;

use std::path::Path;
use std::time::Duration;

use cairn_car::{CarLimits, CarReader};
use cairn_harness::per_kubo_release;
use cairn_test_support::moto::Moto;
use cairn_test_support::postgres::{self, Database};
use peers::{eventually, netns, tree, Broker, Helia, Kubo, KuboRelease, Source};
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

per_kubo_release!(kubo_fetches_uploads_from_cairn_over_tcp_and_quic);
fn kubo_fetches_uploads_from_cairn_over_tcp_and_quic(kubo_release: KuboRelease, work: &Path) {
    let (running, node) = start_node(&work.join("cairn"));
    let big = server::content(5 << 20, 3);
    std::fs::write(work.join("big.bin"), &big).unwrap();
    write_site(&work.join("site"));
    let file_cid = upload(&running, work, &work.join("big.bin"));
    let dir_cid = upload(&running, work, &work.join("site"));

    for (name, transport) in [("tcp", "/tcp/"), ("quic", "/quic-v1")] {
        let mut kubo = Kubo::start(kubo_release, &work.join(format!("kubo-{name}")));
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
    // What /metrics shows of it.
    assert!(metric(&running, "cairn_p2p_connected_peers") >= 1.0);
    assert!(metric(&running, "cairn_bitswap_blocks_sent_total") >= 20.0);
    assert!(metric(&running, "cairn_bitswap_bytes_sent_total") >= 2.0 * (5 << 20) as f64);
    // And the account's usage: what both peers fetched of its DAGs (credited every 10 s).
    let fetched = 2 * ((5 << 20) + 2_500_000);
    let usage = format!("{}/api/usage", running.account);
    let served = eventually("Bitswap bytes in the usage", TIMEOUT, || {
        let usage: serde_json::Value =
            serde_json::from_str(&http_get(&usage, Some(&running.token))).unwrap();
        let served = usage["servedBytes"].as_u64().unwrap();
        (served >= fetched).then_some(served)
    });
    assert!(served < 2 * fetched, "{served} bytes for {fetched} fetched");

    // What the router does not know is `200` with no records (IPIP-0513), cached briefly.
    let unknown = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
    let stranger = "12D3KooWJWoaqZhDaoEFshF7Rh1bpY9ohihFhzcW6d69Lr2NASuq";
    for (path, key) in [
        (format!("providers/{unknown}"), "Providers"),
        (format!("peers/{stranger}"), "Peers"),
    ] {
        let url = format!("{}/routing/v1/{path}", running.upload);
        let (status, cache, json) = routing_answer(&url, "application/json");
        assert_eq!(
            (status, cache.as_str()),
            (200, "public, max-age=15"),
            "{path}"
        );
        assert_eq!(json, format!("{{\"{key}\":[]}}"));
        let (status, _, ndjson) = routing_answer(&url, "application/x-ndjson");
        assert_eq!((status, ndjson.as_str()), (200, ""), "{path}");
    }
    terminate(running);
}

/// A routing answer's status, `Cache-Control` and body.
fn routing_answer(url: &str, accept: &str) -> (u16, String, String) {
    let request = reqwest::Client::new().get(url).header("Accept", accept);
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let cache = response.headers()["cache-control"]
            .to_str()
            .unwrap()
            .to_owned();
        (status, cache, response.text().await.unwrap())
    })
}

/// Under TLS the router names the gateway's `/https` address, which HTTP retrieval (Kubo's,
/// Helia's) dials, and the content is fetched from it over HTTP/2.
#[test]
fn under_tls_the_router_names_the_gateways_https_address() {
    netns::isolated(
        "under_tls_the_router_names_the_gateways_https_address",
        || {
            let work = tempfile::tempdir().unwrap();
            let ca = cairn_test_support::tls::TestCa::make(work.path());
            let (cert, key) = (ca.cert.to_str().unwrap(), ca.key.to_str().unwrap());
            let mut running = start(
                &work.path().join("cairn"),
                &[
                    "--p2p-listen",
                    "/ip4/127.0.0.1/tcp/0",
                    "--tls-cert",
                    cert,
                    "--tls-key",
                    key,
                ],
            );
            Node::read(&mut running, 1);
            let authority = std::fs::read(&ca.authority).unwrap();
            let http = reqwest::Client::builder()
                .add_root_certificate(reqwest::Certificate::from_pem(&authority).unwrap())
                .build()
                .unwrap();
            let runtime = tokio::runtime::Runtime::new().unwrap();
            let body = server::content(100_000, 8);
            let (providers, fetched) = runtime.block_on(async {
                let part = reqwest::multipart::Part::bytes(body.clone()).file_name("f.bin");
                let uploaded: serde_json::Value = http
                    .post(format!("{}/api/upload", running.upload))
                    .bearer_auth(&running.token)
                    .multipart(reqwest::multipart::Form::new().part("file", part))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                let cid = uploaded["cid"].as_str().unwrap().to_owned();
                let url = format!("{}/routing/v1/providers/{cid}", running.upload);
                let providers: serde_json::Value =
                    http.get(url).send().await.unwrap().json().await.unwrap();
                let block = http
                    .get(format!("{}/ipfs/{cid}?format=raw", running.upload))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(block.version(), reqwest::Version::HTTP_2);
                (providers, block.bytes().await.unwrap())
            });
            let port = running.upload.rsplit(':').next().unwrap();
            let gateway = format!("/ip4/127.0.0.1/tcp/{port}/https");
            let addrs = &providers["Providers"][0]["Addrs"];
            assert!(
                addrs.as_array().unwrap().iter().any(|a| a == &gateway),
                "{gateway} in {providers}"
            );
            assert_eq!(fetched, body, "the file is one raw block, read back whole");
            terminate(running);
        },
    );
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
            // Large enough that Helia's burst of streams (one per Bitswap message) once
            // overflowed what libp2p-stream would queue, and its fetch stalled.
            let bytes = server::content(64 << 20, 4);
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

per_kubo_release!(content_kubo_holds_is_pinned_on_cairn_as_ipfs_pin_remote_add_does);
fn content_kubo_holds_is_pinned_on_cairn_as_ipfs_pin_remote_add_does(
    kubo_release: KuboRelease,
    work: &Path,
) {
    let (running, _node) = start_node(&work.join("cairn"));
    let mut kubo = Kubo::start(kubo_release, &work.join("kubo"));
    write_site(&work.join("site"));
    let big = server::content(3 << 20, 9);
    std::fs::write(work.join("site/big.bin"), &big).unwrap();
    let cid = kubo.add(&work.join("site")).unwrap();

    // What `ipfs pin remote add` sends: the CID, with Kubo's own addresses as origins.
    let pins = format!("{}/pins", running.upload);
    let pin = serde_json::json!({"cid": cid, "name": "from kubo", "origins": [kubo.tcp_addr()]});
    let (status, added) = http_send("POST", &pins, &running.token, Some(pin));
    assert_eq!(status, 202, "{added}");
    assert_eq!(added["status"], "queued", "Cairn does not have it yet");
    let delegates = added["delegates"].as_array().unwrap();
    assert!(!delegates.is_empty() && delegates.len() <= 20, "{added}");
    // ... then connects to the delegates, and polls every half second.
    kubo.connect(delegates[0].as_str().unwrap()).unwrap();
    let url = format!("{pins}/{}", added["requestid"].as_str().unwrap());
    let pinned = wait_until_pinned(&url, &running.token, TIMEOUT);
    assert_eq!(pinned["pin"]["cid"], cid.as_str());
    let (_, list) = http_send(
        "GET",
        &format!("{pins}?status=pinned"),
        &running.token,
        None,
    );
    assert_eq!(list["count"], 1, "{list}");

    // Kubo gone, Cairn serves the content itself.
    drop(kubo);
    let gateway = format!("{}/ipfs/{cid}/big.bin", running.upload);
    let fetched = http_get_bytes(&gateway, None);
    assert!(fetched == big, "the gateway serves what Kubo held");
    let stored = http_get(
        &format!("{}/api/upload-limit", running.account),
        Some(&running.token),
    );
    let stored: serde_json::Value = serde_json::from_str(&stored).unwrap();
    assert!(
        stored["storedBytes"].as_u64().unwrap() > 3 << 20,
        "{stored}"
    );
    terminate(running);
}

/// Today's Kubo as the Pinning Service client users have: `ipfs pin remote service add`, then
/// `ipfs pin remote add` of content only Kubo holds (Cairn fetches it from the origins Kubo
/// sends, its own addresses, while Kubo connects to the delegates Cairn answers with), `ls`
/// and `rm`, as Kubo's documentation describes them. Kubo 0.22 as a library has no remote
/// pinning: `content_kubo_holds_is_pinned_on_cairn_as_ipfs_pin_remote_add_does` sends its
/// requests by hand.
#[test]
fn ipfs_pin_remote_pins_lists_and_removes_on_cairn() {
    peers::install();
    netns::isolated("ipfs_pin_remote_pins_lists_and_removes_on_cairn", || {
        let work = tempfile::tempdir().unwrap();
        let work = work.path();
        let (running, _node) = start_node(&work.join("cairn"));
        let mut kubo = Kubo::start(KuboRelease::V0_43, &work.join("kubo"));
        let data = server::content(3 << 20, 41);
        std::fs::write(work.join("data.bin"), &data).unwrap();
        let cid = kubo.add(&work.join("data.bin")).unwrap();
        let ipfs = |args: &[&str]| {
            let daemon = kubo.daemon().unwrap();
            daemon
                .ipfs(args, TIMEOUT)
                .unwrap_or_else(|e| panic!("ipfs {}: {}", e.command, e.message))
        };

        // Kubo adds `/pins` to the endpoint it is given.
        ipfs(&[
            "pin",
            "remote",
            "service",
            "add",
            "cairn",
            &running.upload,
            &running.token,
        ]);
        let services = ipfs(&["pin", "remote", "service", "ls"]);
        assert!(services.contains("cairn"), "{services}");
        // Without --background, Kubo waits until the service says `pinned`.
        let added = ipfs(&[
            "pin",
            "remote",
            "add",
            "--service=cairn",
            "--name=from-kubo",
            &cid,
        ]);
        assert!(added.contains(&cid) && added.contains("pinned"), "{added}");

        let listed = ipfs(&["pin", "remote", "ls", "--service=cairn", "--enc=json"]);
        let listed: Vec<serde_json::Value> = listed
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(listed[0]["Cid"], cid.as_str(), "{listed:?}");
        assert_eq!(listed[0]["Name"], "from-kubo", "{listed:?}");
        assert_eq!(listed[0]["Status"], "pinned", "{listed:?}");
        // Cairn holds the bytes itself: its gateway serves them.
        let gateway = format!("{}/ipfs/{cid}", running.upload);
        assert!(
            http_get_bytes(&gateway, None) == data,
            "Cairn serves what Kubo held"
        );

        ipfs(&[
            "pin",
            "remote",
            "rm",
            "--service=cairn",
            &format!("--cid={cid}"),
        ]);
        let listed = ipfs(&[
            "pin",
            "remote",
            "ls",
            "--service=cairn",
            "--status=queued,pinning,pinned,failed",
        ]);
        assert!(listed.trim().is_empty(), "removed: {listed}");
        let (_, pins) = http_send(
            "GET",
            &format!("{}/pins", running.upload),
            &running.token,
            None,
        );
        assert_eq!(pins["count"], 0, "{pins}");
        terminate(running);
    });
}

/// Content of another IPLD codec, as apps store it (NFT metadata, indexes): today's Kubo
/// makes a dag-cbor node linking to a raw block (`ipfs block put`, `ipfs dag put`); Cairn pins
/// it by CID, fetching both blocks over Bitswap from the origin Kubo names, counts them in the
/// account's usage and serves the node as it is (its bytes hash to its CID) and the block its
/// link names by path; it provides the root to the DHT (asked through Kubo, the DHT names
/// Cairn), and a second Kubo, connected to Cairn alone, fetches both blocks from Cairn once
/// the first is gone.
/// Kubo 0.22 as a library has no `dag put`.
#[test]
fn a_dag_cbor_dag_kubo_holds_is_pinned_by_cid_provided_and_fetched_from_cairn() {
    use cairn_unixfs::block::block_cid;
    use cairn_unixfs::ipld::DAG_CBOR;
    use cairn_unixfs::CidVersion;

    peers::install();
    netns::isolated(
        "a_dag_cbor_dag_kubo_holds_is_pinned_by_cid_provided_and_fetched_from_cairn",
        || {
            let work = tempfile::tempdir().unwrap();
            let work = work.path();
            let (running, node) = start_node(&work.join("cairn"));
            let ipfs = |kubo: &Kubo, args: &[&str]| -> String {
                let daemon = kubo.daemon().unwrap();
                daemon
                    .ipfs(args, TIMEOUT)
                    .unwrap_or_else(|e| panic!("ipfs {}: {}", e.command, e.message))
                    .trim()
                    .to_owned()
            };
            let kubo_a = Kubo::start(KuboRelease::V0_43, &work.join("kubo-a"));
            let picture = server::content(300_000, 51);
            let picture_path = work.join("picture.bin");
            std::fs::write(&picture_path, &picture).unwrap();
            let picture_cid = ipfs(
                &kubo_a,
                &[
                    "block",
                    "put",
                    "--cid-codec=raw",
                    picture_path.to_str().unwrap(),
                ],
            );
            let metadata = format!(
                r#"{{"name":"a picture","size":300000,"picture":{{"/":"{picture_cid}"}}}}"#
            );
            let metadata_path = work.join("metadata.json");
            std::fs::write(&metadata_path, metadata).unwrap();
            // dag-json in, dag-cbor stored: `ipfs dag put`'s defaults.
            let root = ipfs(&kubo_a, &["dag", "put", metadata_path.to_str().unwrap()]);

            let pins = format!("{}/pins", running.upload);
            let pin = serde_json::json!({"cid": root, "name": "metadata", "origins": [kubo_a.tcp_addr()]});
            let (status, added) = http_send("POST", &pins, &running.token, Some(pin));
            assert_eq!(status, 202, "{added}");
            let url = format!("{pins}/{}", added["requestid"].as_str().unwrap());
            wait_until_pinned(&url, &running.token, TIMEOUT);

            let node_bytes =
                http_get_bytes(&format!("{}/ipfs/{root}?format=raw", running.upload), None);
            assert_eq!(
                block_cid(CidVersion::V1, DAG_CBOR, &node_bytes).to_string(),
                root,
                "the node is served as it was stored"
            );
            let by_path = http_get_bytes(&format!("{}/ipfs/{root}/picture", running.upload), None);
            assert!(
                by_path == picture,
                "the path through the node's link reads the picture"
            );
            let usage = http_get(
                &format!("{}/api/upload-limit", running.account),
                Some(&running.token),
            );
            let usage: serde_json::Value = serde_json::from_str(&usage).unwrap();
            let stored = usage["storedBytes"].as_u64().unwrap();
            assert_eq!(stored, (node_bytes.len() + picture.len()) as u64, "{usage}");

            // Announced: asked through Kubo A, the DHT names Cairn for the pin's root (the
            // default strategy provides roots).
            wait_until_provided(&running, &running.token);
            let mut helia = Helia::start(&work.join("helia"));
            eventually("Kubo tells that Cairn provides the root", TIMEOUT, || {
                let records = helia
                    .find_providers(&root, &kubo_a.tcp_addr(), TIMEOUT)
                    .unwrap();
                records
                    .iter()
                    .any(|r| r.peer_id == node.peer_id && r.from == kubo_a.peer_id)
                    .then_some(())
            });
            drop(kubo_a);

            // Served: Kubo B knows Cairn alone, and Kubo A is gone.
            let mut kubo_b = Kubo::start(KuboRelease::V0_43, &work.join("kubo-b"));
            kubo_b.connect(&node.addr("/tcp/")).unwrap();
            let fetched = ipfs(&kubo_b, &["dag", "get", &root]);
            let fetched: serde_json::Value = serde_json::from_str(&fetched).unwrap();
            assert_eq!(fetched["name"], "a picture", "{fetched}");
            assert_eq!(fetched["picture"]["/"], picture_cid.as_str(), "{fetched}");
            let out = work.join("picture.back");
            kubo_b.get(&picture_cid, &out, TIMEOUT).unwrap();
            assert!(
                std::fs::read(&out).unwrap() == picture,
                "Kubo B reads the picture from Cairn"
            );
            terminate(running);
        },
    );
}

per_kubo_release!(content_kubo_holds_is_pinned_over_quic);
/// Kubo answers each want on a new stream that it closes at once; on QUIC that close also
/// stops the stream's reading side, which once made Cairn drop every answer unread
/// (`vendor/multistream-select`). Here the only connection is the QUIC one Cairn dials.
fn content_kubo_holds_is_pinned_over_quic(kubo_release: KuboRelease, work: &Path) {
    let (running, _node) = start_node(&work.join("cairn"));
    let mut kubo = Kubo::start(kubo_release, &work.join("kubo"));
    let data = server::content(3 << 20, 12);
    std::fs::write(work.join("data.bin"), &data).unwrap();
    let cid = kubo.add(&work.join("data.bin")).unwrap();
    let pins = format!("{}/pins", running.upload);
    let pin = serde_json::json!({"cid": cid, "origins": [kubo.quic_addr()]});
    let (status, added) = http_send("POST", &pins, &running.token, Some(pin));
    assert_eq!(status, 202, "{added}");
    let url = format!("{pins}/{}", added["requestid"].as_str().unwrap());
    wait_until_pinned(&url, &running.token, TIMEOUT);
    drop(kubo);
    let gateway = format!("{}/ipfs/{cid}", running.upload);
    let fetched = http_get_bytes(&gateway, None);
    assert!(fetched == data, "the gateway serves what Kubo held");
    terminate(running);
}

/// A pin with no origins, on a node connected neither to the content's holder nor to anyone
/// who has it, while the holder is a Kubo that is only a DHT client (so no routing meets it:
/// only its provider record, on a third node, leads there). Returns the pin's URL, with the
/// nodes still running.
struct DhtPin {
    router: Running,
    kubo: Kubo,
    pinner: Running,
    cid: String,
    data: Vec<u8>,
    url: String,
}

fn pin_what_only_the_dht_names(kubo_release: KuboRelease, work: &Path) -> DhtPin {
    let loopback = ["--p2p-listen", "/ip4/127.0.0.1/tcp/0"];
    let mut router = start(&work.join("router"), &loopback);
    let router_addr = Node::read(&mut router, 1).addr("/tcp/");
    let mut kubo = Kubo::start_dht_client(kubo_release, &work.join("kubo"));
    kubo.connect(&router_addr).unwrap();
    // Kubo provides what it adds once, at once (its next reprovide is hours away): only to the
    // DHT peers it knows by then, which takes an Identify exchange after connecting.
    std::thread::sleep(Duration::from_secs(3));
    let data = server::content(2 << 20, 31);
    std::fs::write(work.join("data.bin"), &data).unwrap();
    let cid = kubo.add(&work.join("data.bin")).unwrap();
    let joined = [loopback[0], loopback[1], "--p2p-bootstrap", &router_addr];
    let mut pinner = start(&work.join("pinner"), &joined);
    Node::read(&mut pinner, 1);
    let pins = format!("{}/pins", pinner.upload);
    let (status, added) = http_send(
        "POST",
        &pins,
        &pinner.token,
        Some(serde_json::json!({"cid": cid})),
    );
    assert_eq!(status, 202, "{added}");
    let url = format!("{pins}/{}", added["requestid"].as_str().unwrap());
    DhtPin {
        router,
        kubo,
        pinner,
        cid,
        data,
        url,
    }
}

per_kubo_release!(a_pin_without_origins_fetches_from_the_provider_the_dht_names);
/// The pin's worker finds the Kubo through the DHT, fetches the content from it, and then
/// serves it with Kubo gone. In a network this small, Kubo's own DHT refreshes may connect it
/// to the pinner too, so this shows the pin working end to end rather than the lookup alone:
/// `cairn_p2p`'s `a_provider_is_found_and_connected_through_a_dht_peer` tests the lookup.
fn a_pin_without_origins_fetches_from_the_provider_the_dht_names(
    kubo_release: KuboRelease,
    work: &Path,
) {
    let pin = pin_what_only_the_dht_names(kubo_release, work);
    wait_until_pinned(&pin.url, &pin.pinner.token, Duration::from_secs(120));
    drop(pin.kubo);
    let gateway = format!("{}/ipfs/{}", pin.pinner.upload, pin.cid);
    let fetched = http_get_bytes(&gateway, None);
    assert!(fetched == pin.data, "the pinner serves what Kubo held");
    terminate(pin.pinner);
    terminate(pin.router);
}

/// `method url` with `token` and a JSON body: the status and the JSON answer.
fn http_send(
    method: &str,
    url: &str,
    token: &str,
    body: Option<serde_json::Value>,
) -> (u16, serde_json::Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = reqwest::Client::new()
        .request(method, url)
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or_default())
    })
}

/// `GET url` (with `token`, if any) from a test's thread: the body as text.
fn http_get(url: &str, token: Option<&str>) -> String {
    String::from_utf8_lossy(&http_get_bytes(url, token)).into_owned()
}

/// `GET url` (with `token`, if any) from a test's thread: the body.
fn http_get_bytes(url: &str, token: Option<&str>) -> Vec<u8> {
    let mut request = reqwest::Client::new().get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async { request.send().await.unwrap().bytes().await.unwrap() })
        .to_vec()
}

/// Poll the pin at `url` (`/pins/{requestid}`) every half second until it is pinned; its
/// status. A pin that fails fails the test.
fn wait_until_pinned(url: &str, token: &str, timeout: Duration) -> serde_json::Value {
    eventually("the pin is pinned", timeout, || {
        std::thread::sleep(Duration::from_millis(500));
        let (_, pin) = http_send("GET", url, token, None);
        assert_ne!(pin["status"], "failed", "{pin}");
        (pin["status"] == "pinned").then_some(pin)
    })
}

/// What `GET /api/node` says of the node behind `running`, asked with `token`.
fn node_status(running: &Running, token: &str) -> serde_json::Value {
    let body = http_get(&format!("{}/api/node", running.upload), Some(token));
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// Wait until the node behind `running` has provided everything stored to the DHT.
fn wait_until_provided(running: &Running, token: &str) {
    eventually("the provide queue empties", Duration::from_secs(30), || {
        (node_status(running, token)["provideQueue"] == 0).then_some(())
    });
}

/// The value of the sample `name` (with its labels, as `/metrics` writes it) on `running`.
fn metric(running: &Running, name: &str) -> f64 {
    let text = http_get(&format!("{}/metrics", running.upload), None);
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{text}"))
        .parse()
        .unwrap()
}

/// The peer ids `GET /routing/v1/providers/{cid}` names on `running`.
fn providers_named_by(running: &Running, cid: &str) -> Vec<String> {
    let url = format!("{}/routing/v1/providers/{cid}", running.upload);
    let answer: serde_json::Value = serde_json::from_str(&http_get(&url, None)).unwrap();
    let mut ids: Vec<String> = answer["Providers"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|p| p["ID"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

per_kubo_release!(two_nodes_on_a_shared_store_name_each_other_and_either_serves_kubo, before: || {
    Moto::install();
    // Started out here: inside the namespace it is reached through its socket.
    postgres::server();
});
fn two_nodes_on_a_shared_store_name_each_other_and_either_serves_kubo(
    kubo_release: KuboRelease,
    work: &Path,
) {
    let moto = Moto::start();
    let store = moto.bucket("network");
    let database = Database::create("network");
    let shared = [
        "--database-url",
        &database.url,
        "--store",
        &store,
        "--p2p-listen",
        "/ip4/127.0.0.1/tcp/0",
    ];
    let mut a = start(&work.join("a"), &shared);
    let node_a = Node::read(&mut a, 1);
    let mut b = start(&work.join("b"), &shared);
    let node_b = Node::read(&mut b, 1);
    assert_ne!(node_a.peer_id, node_b.peer_id, "each node has its own key");

    let data = server::content(3 << 20, 5);
    std::fs::write(work.join("data.bin"), &data).unwrap();
    let cid = upload(&a, work, &work.join("data.bin"));
    let mut both = vec![node_a.peer_id.clone(), node_b.peer_id.clone()];
    both.sort();
    // B started after A announced itself; A learns of B on its next refresh.
    assert_eq!(providers_named_by(&b, &cid), both, "B names both");
    eventually("A names both", Duration::from_secs(20), || {
        (providers_named_by(&a, &cid) == both).then_some(())
    });
    assert!(metric(&b, "cairn_routing_queries_total{kind=\"providers\"}") >= 1.0);

    // Kubo, connected to B only, fetches what was uploaded through A; both nodes
    // provide it to the DHT (Kubo is their DHT peer).
    let mut kubo = Kubo::start(kubo_release, &work.join("kubo"));
    kubo.connect(&node_b.addr("/tcp/")).unwrap();
    let out = work.join("fetched.bin");
    kubo.get(&cid, &out, TIMEOUT).unwrap();
    assert!(std::fs::read(&out).unwrap() == data, "the bytes differ");
    // Only now a DHT peer of A too, so that A also has one to provide to.
    kubo.connect(&node_a.addr("/tcp/")).unwrap();
    wait_until_provided(&a, &a.token);
    wait_until_provided(&b, &a.token);
    // Both are providers on the DHT, each with its own record on Kubo (which names
    // itself too: it fetched the content).
    let mut helia = Helia::start(&work.join("helia"));
    eventually("Kubo names both nodes as providers", TIMEOUT, || {
        let records = helia
            .find_providers(&cid, &kubo.tcp_addr(), TIMEOUT)
            .unwrap();
        both.iter()
            .all(|node| {
                records
                    .iter()
                    .any(|r| r.peer_id == *node && r.from == kubo.peer_id)
            })
            .then_some(())
    });

    // A node that stops is withdrawn: B names only itself.
    assert!(terminate(a).0.success());
    eventually("B names only itself", Duration::from_secs(20), || {
        (providers_named_by(&b, &cid) == [node_b.peer_id.clone()]).then_some(())
    });
    terminate(b);
}

per_kubo_release!(with_the_all_strategy_an_inner_block_is_found_through_the_dht);
/// With `--provide-strategy all` every block is provided, not only the root: a leaf deep in
/// an uploaded tree, asked for alone, is found through the DHT peer Cairn provided to.
fn with_the_all_strategy_an_inner_block_is_found_through_the_dht(
    kubo_release: KuboRelease,
    work: &Path,
) {
    let mut running = start(
        &work.join("cairn"),
        &[
            "--p2p-listen",
            "/ip4/127.0.0.1/tcp/0",
            "--provide-strategy",
            "all",
        ],
    );
    let node = Node::read(&mut running, 1);
    let mut kubo = Kubo::start(kubo_release, &work.join("kubo"));
    kubo.connect(&node.addr("/tcp/")).unwrap();
    write_site(&work.join("site"));
    let root = upload(&running, work, &work.join("site"));
    wait_until_provided(&running, &running.token);

    // Every block of the DAG, root first, depth first: the last is a leaf.
    let car = http_get_bytes(&format!("{}/ipfs/{root}?format=car", running.upload), None);
    let blocks: Vec<String> = CarReader::new(&car[..], CarLimits::default())
        .unwrap()
        .map(|block| block.unwrap().0.to_string())
        .collect();
    assert!(blocks.len() >= 5, "{blocks:?}");
    assert!(metric(&running, "cairn_dht_provides_total") >= blocks.len() as f64);
    let leaf = blocks.last().unwrap();
    let mut helia = Helia::start(&work.join("helia"));
    eventually("Kubo tells that Cairn provides the leaf", TIMEOUT, || {
        let records = helia
            .find_providers(leaf, &kubo.tcp_addr(), TIMEOUT)
            .unwrap();
        records
            .iter()
            .any(|r| r.peer_id == node.peer_id && r.from == kubo.peer_id)
            .then_some(())
    });
    terminate(running);
}

per_kubo_release!(kubo_finds_cairn_through_the_dht_knowing_only_another_kubo);
/// The DHT as the network uses it: Kubo B, which knows only Kubo A, finds Cairn by a CID
/// alone through the provider record Cairn put on A (for content stored before Cairn had a
/// DHT peer too). It failed until Cairn's records carried its addresses: rust-libp2p's
/// Kademlia sends the swarm's external addresses, and Kubo drops a record with none.
fn kubo_finds_cairn_through_the_dht_knowing_only_another_kubo(
    kubo_release: KuboRelease,
    work: &Path,
) {
    let mut running = start(
        &work.join("cairn"),
        &["--p2p-listen", "/ip4/127.0.0.1/tcp/0"],
    );
    let node = Node::read(&mut running, 1);
    // Stored while Cairn has no DHT peer: provided once it has one.
    let early = server::content(300_000, 21);
    std::fs::write(work.join("early.bin"), &early).unwrap();
    let early_cid = upload(&running, work, &work.join("early.bin"));

    let mut kubo_a = Kubo::start(kubo_release, &work.join("kubo-a"));
    kubo_a.connect(&node.addr("/tcp/")).unwrap();
    let late = server::content(3 << 20, 22);
    std::fs::write(work.join("late.bin"), &late).unwrap();
    let late_cid = upload(&running, work, &work.join("late.bin"));

    // Provided within half a minute of its upload (the early one once Kubo A came).
    wait_until_provided(&running, &running.token);

    // B knows only A: it finds Cairn as the provider through A's DHT records.
    let mut kubo_b = Kubo::start(kubo_release, &work.join("kubo-b"));
    kubo_b.connect(&kubo_a.tcp_addr()).unwrap();
    for (name, cid, bytes) in [("early", &early_cid, &early), ("late", &late_cid, &late)] {
        let out = work.join(format!("{name}.back"));
        kubo_b.get(cid, &out, Duration::from_secs(90)).unwrap();
        assert!(
            std::fs::read(&out).unwrap() == *bytes,
            "{name}: the bytes differ"
        );
    }
    let connected = kubo_b.peers().unwrap();
    assert!(
        connected.iter().any(|c| c.peer_id == node.peer_id),
        "B fetched from Cairn, which it found by the CID: {connected:?}"
    );

    terminate(running);
}

per_kubo_release!(kubo_keeps_the_records_of_a_region_sweep_and_finds_cairn_by_them);
/// Content stored before the node first starts is provided by the reprovide cycle's sweep
/// alone: every record of a region goes to each of its peers as `ADD_PROVIDER` messages, one
/// after another on one stream, with no answer. Kubo keeps each of them: asked through Kubo A,
/// the DHT names Cairn for every block, and Kubo B, which knows only A, finds Cairn by a
/// block's CID and fetches the file from it.
fn kubo_keeps_the_records_of_a_region_sweep_and_finds_cairn_by_them(
    kubo_release: KuboRelease,
    work: &Path,
) {
    // Stored with the node off: 4 leaves of 1 MiB (the default profile's chunks) and their
    // root.
    let data = work.join("cairn");
    let first = start(&data, &[]);
    let bytes = server::content(4 << 20, 23);
    std::fs::write(work.join("swept.bin"), &bytes).unwrap();
    let root = upload(&first, work, &work.join("swept.bin"));
    let uploaded = std::time::Instant::now();
    terminate(first);

    // A node that has never provided follows the provide log from its start, its first read
    // looking 30 s back: content stored longer ago than that is provided by the sweep alone.
    // Kubo A and the Helia driver start meanwhile.
    let mut kubo_a = Kubo::start(kubo_release, &work.join("kubo-a"));
    let mut helia = Helia::start(&work.join("helia"));
    std::thread::sleep(Duration::from_secs(31).saturating_sub(uploaded.elapsed()));
    let mut running = start(
        &data,
        &[
            "--p2p-listen",
            "/ip4/127.0.0.1/tcp/0",
            "--provide-strategy",
            "all",
        ],
    );
    let node = Node::read(&mut running, 1);
    kubo_a.connect(&node.addr("/tcp/")).unwrap();

    // Every block of the DAG, root first, depth first: the last is the last leaf.
    let car = http_get_bytes(&format!("{}/ipfs/{root}?format=car", running.upload), None);
    let blocks: Vec<String> = CarReader::new(&car[..], CarLimits::default())
        .unwrap()
        .map(|block| block.unwrap().0.to_string())
        .collect();
    assert_eq!(blocks.len(), 5, "{blocks:?}");
    // Kubo A is the only DHT peer: the keyspace is one region, and A gets every record.
    let sent = eventually("a sweep sends every block's record", TIMEOUT, || {
        let swept = metric(&running, "cairn_dht_reprovide_sweeps_total");
        let sent = metric(&running, "cairn_dht_provider_records_sent_total");
        (swept >= 1.0 && sent >= blocks.len() as f64).then_some(sent)
    });
    assert!(metric(&running, "cairn_dht_reprovide_regions_total") >= 1.0);

    // A answers with Cairn's record for each block, the last message of the batch too.
    for block in &blocks {
        let records = helia
            .find_providers(block, &kubo_a.tcp_addr(), TIMEOUT)
            .unwrap();
        assert!(
            records
                .iter()
                .any(|r| r.peer_id == node.peer_id && r.from == kubo_a.peer_id),
            "Kubo A names Cairn as a provider of {block} ({sent} records sent): {records:?}"
        );
    }

    // B knows only A. The leaf first: B is not connected to Cairn yet, so it can learn of
    // Cairn only from A's record (a root fetched first would bring B the leaf with it).
    let mut kubo_b = Kubo::start(kubo_release, &work.join("kubo-b"));
    kubo_b.connect(&kubo_a.tcp_addr()).unwrap();
    let leaf = blocks.last().unwrap();
    let out = work.join("leaf.back");
    kubo_b.get(leaf, &out, Duration::from_secs(90)).unwrap();
    assert!(
        std::fs::read(&out).unwrap() == bytes[bytes.len() - (1 << 20)..],
        "the leaf's bytes differ"
    );
    let connected = kubo_b.peers().unwrap();
    assert!(
        connected.iter().any(|c| c.peer_id == node.peer_id),
        "B fetched from Cairn, which it found by the leaf's CID: {connected:?}"
    );
    let out = work.join("swept.back");
    kubo_b.get(&root, &out, Duration::from_secs(90)).unwrap();
    assert!(
        std::fs::read(&out).unwrap() == bytes,
        "the file's bytes differ"
    );

    terminate(running);
}

/// Issue 36: a website uploaded twice is reachable at one name. Today's Kubo, knowing only
/// Cairn as a DHT peer, resolves the name Cairn published over the DHT, and after each update
/// resolves the newest record and reads that version's content through the name.
#[test]
fn kubo_resolves_a_name_over_the_dht_to_its_newest_version() {
    peers::run_isolated(
        KuboRelease::V0_43,
        "kubo_resolves_a_name_over_the_dht_to_its_newest_version",
        || {},
        resolves_a_name,
    );
}

fn resolves_a_name(kubo_release: KuboRelease, work: &Path) {
    let mut running = start(
        &work.join("cairn"),
        &["--p2p-listen", "/ip4/127.0.0.1/tcp/0"],
    );
    let node = Node::read(&mut running, 1);
    let mut versions = Vec::new();
    for version in 1..=3 {
        let file = work.join(format!("v{version}.txt"));
        std::fs::write(&file, format!("version {version} of the site")).unwrap();
        versions.push(upload(&running, work, &file));
    }
    let mut kubo = Kubo::start(kubo_release, &work.join("kubo"));
    kubo.connect(&node.addr("/tcp/")).unwrap();

    let names = format!("{}/api/names", running.upload);
    let (status, made) = http_send(
        "POST",
        &names,
        &running.token,
        Some(serde_json::json!({"cid": versions[0], "label": "site"})),
    );
    assert_eq!(status, 201, "{made}");
    let name = made["name"].as_str().unwrap().to_owned();
    for (sequence, cid) in versions.iter().enumerate() {
        if sequence > 0 {
            let (status, pointed) = http_send(
                "PUT",
                &format!("{names}/site"),
                &running.token,
                Some(serde_json::json!({"cid": cid})),
            );
            assert_eq!(
                (status, pointed["sequence"].as_u64()),
                (200, Some(sequence as u64))
            );
        }
        let resolved = eventually("Kubo resolving the name", TIMEOUT, || {
            let resolved = kubo.resolve_name(&name, TIMEOUT).ok()?;
            (resolved == format!("/ipfs/{cid}")).then_some(resolved)
        });
        assert_eq!(resolved, format!("/ipfs/{cid}"));
    }
    let read = kubo.cat(&format!("/ipns/{name}"), TIMEOUT).unwrap();
    assert_eq!(read, "version 3 of the site");
    terminate(running);
}

/// Issue 36: Helia's `@helia/ipns`, with Cairn as its only router (a web app's set-up, no
/// DHT), resolves a name Cairn keeps and reads the content behind it from Cairn's gateway;
/// then publishes a name of its own through Cairn's router, whose record (signed by js-ipns)
/// Cairn verifies, keeps, and serves at `/ipns/{name}` like its own.
#[test]
fn helia_resolves_and_publishes_names_through_cairns_router() {
    peers::install();
    netns::isolated(
        "helia_resolves_and_publishes_names_through_cairns_router",
        || {
            let work = tempfile::tempdir().unwrap();
            let work = work.path();
            let (running, _node) = start_node(&work.join("cairn"));
            let mut cids = Vec::new();
            for (file, text) in [
                ("site.txt", "the site, by name"),
                ("helia.txt", "Helia's own"),
            ] {
                std::fs::write(work.join(file), text).unwrap();
                cids.push(upload(&running, work, &work.join(file)));
            }
            let (status, made) = http_send(
                "POST",
                &format!("{}/api/names", running.upload),
                &running.token,
                Some(serde_json::json!({"cid": cids[0]})),
            );
            assert_eq!(status, 201, "{made}");
            let name = made["name"].as_str().unwrap();

            let timeout = TIMEOUT.as_secs().to_string();
            let output = peers::run_helia_script(
                "helia_ipns.mjs",
                &[&running.upload, name, &cids[1], &timeout],
            );
            assert!(
                output.status.success(),
                "helia_ipns.mjs: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            assert_eq!(report["resolved"]["value"], format!("/ipfs/{}", cids[0]));
            assert_eq!(report["text"], "the site, by name");
            let helias = report["published"]["name"].as_str().unwrap();
            let helias = helias.trim_start_matches("/ipns/");
            // Cairn kept Helia's record: its gateway serves what the name points at.
            let served = http_get(&format!("{}/ipns/{helias}", running.upload), None);
            assert_eq!(served, "Helia's own");
            terminate(running);
        },
    );
}
