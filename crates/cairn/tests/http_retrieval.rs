//! HTTP retrieval from a Cairn serving TLS (issue 36), by the clients that do it today:
//! Kubo 0.43.1 (`HTTPRetrieval`, boxo's `httpnet`) and Helia over HTTP alone (its
//! trustless-gateway block broker, `peers/helia_http.mjs`). Each is told only Cairn's URL, as
//! its delegated router, and trusts a test CA as users trust theirs (`SSL_CERT_FILE`,
//! `NODE_EXTRA_CA_CERTS`); it finds Cairn's gateway in the router's answer (its `/https`
//! address), probes it, fetches the upload block by block (`?format=raw` over HTTP/2) and gets
//! the uploaded tree back byte for byte. Each test runs in a loopback-only network namespace.
//!
//! The blocks are shown to come over HTTP, not Bitswap: Cairn's Bitswap sends none, and the
//! client counts them as received from the gateway. Kubo keeps Bitswap over libp2p on, because
//! with `Bitswap.Libp2pEnabled=false` Kubo 0.43.1 fetches nothing from anyone, over HTTP
//! included (`core/node/groups.go` hands `OnlineExchange` that flag, and a no-op exchange
//! answers every block "not found"); with it on, Kubo would fall back to Cairn's Bitswap were
//! the HTTPS probe or the certificate refused, which Cairn's counter would show.

use cairn_harness::server;

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use cairn_car::{CarLimits, CarReader};
use cairn_test_support::tls::TestCa;
use cairn_test_support::{kubo, netns, node, run, tree};
use server::{client, start_command, terminate, Running};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Kubo finds Cairn through Cairn's own router and fetches a directory over HTTPS from the
/// gateway's `/ip4/127.0.0.1/tcp/PORT/https` address (by IP address, which the certificate
/// names; Kubo refuses an HTTPS provider that does not answer in HTTP/2): `ipfs routing
/// findprovs` names Cairn, `ipfs get` writes the tree as uploaded.
#[test]
fn kubo_finds_cairn_through_its_router_and_fetches_an_upload_over_https() {
    kubo::binary();
    let name = "kubo_finds_cairn_through_its_router_and_fetches_an_upload_over_https";
    netns::isolated(name, || {
        let work = tempfile::tempdir().unwrap();
        let work = work.path();
        let ca = trust_test_ca(work);
        let (running, cairn_peer) = start_cairn(&work.join("cairn"), &ca, None);
        let site = work.join("site");
        let site_bytes = write_site(&site);
        let cid = upload(&running, work, &site);

        let kubo = start_kubo(&work.join("kubo"), &running.upload);
        let found = kubo
            .ipfs(
                &["routing", "findprovs", "--num-providers=1", &cid],
                TIMEOUT,
            )
            .unwrap();
        assert_eq!(found.trim(), cairn_peer, "the providers Kubo found");
        let out = work.join("fetched");
        kubo.ipfs(&["get", &cid, "-o", out.to_str().unwrap()], TIMEOUT)
            .unwrap();
        assert!(tree(&out) == tree(&site), "the tree Kubo wrote differs");

        // Over HTTP: Cairn's Bitswap sent nothing, and Kubo's HTTP retrieval received every
        // block and every byte (boxo's `httpnet` counts its block responses and their bodies).
        let over_bitswap = bitswap_blocks_sent(&running, &ca);
        assert_eq!(over_bitswap, 0.0, "blocks Cairn sent over Bitswap");
        let blocks = dag_blocks(&running, &ca, &cid) as f64;
        let got = r#"exchange_httpnet_status{host="other",method="GET",status="200"}"#;
        let blocks_over_http = kubo_metric(&kubo, got);
        assert!(
            blocks_over_http >= blocks,
            "{blocks_over_http} blocks over HTTP of the {blocks} in the DAG"
        );
        let over_http = kubo_metric(&kubo, "exchange_httpnet_response_bytes_sum");
        assert!(
            over_http >= site_bytes as f64,
            "{over_http} bytes over HTTP for {site_bytes} uploaded"
        );
        terminate(running);
    });
}

/// Helia with no libp2p and no Bitswap, its block broker on its defaults (HTTPS only, no
/// loopback or private IP addresses), finds Cairn through Cairn's router and fetches a
/// directory from the gateway by the name `--public-url` gives it (`/dns/localhost/.../https`).
#[test]
fn helia_over_http_alone_finds_cairn_through_its_router_and_fetches_over_https() {
    let install = helia_http_install();
    let name = "helia_over_http_alone_finds_cairn_through_its_router_and_fetches_over_https";
    netns::isolated(name, || {
        let work = tempfile::tempdir().unwrap();
        let work = work.path();
        let ca = trust_test_ca(work);
        let port = free_port();
        let (running, cairn_peer) = start_cairn(&work.join("cairn"), &ca, Some(port));
        let site = work.join("site");
        write_site(&site);
        let cid = upload(&running, work, &site);

        let out = work.join("fetched");
        let output = Command::new(&install.node)
            .arg(install.dir.join("helia_http.mjs"))
            .args([&running.upload, &cid, out.to_str().unwrap()])
            .arg(TIMEOUT.as_secs().to_string())
            .env("NODE_EXTRA_CA_CERTS", &ca.authority)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "helia_http.mjs: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let fetched: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(fetched["kind"], "directory", "{fetched}");
        assert!(tree(&out) == tree(&site), "the tree Helia wrote differs");

        // Every block of the DAG from Cairn's gateway, at the public URL the router named.
        let blocks = dag_blocks(&running, &ca, &cid);
        assert_eq!(fetched["blocks"], blocks, "{fetched}");
        let gateway = format!("https://localhost:{port}/");
        assert_eq!(fetched["http"], serde_json::json!({ gateway: blocks }));
        let https = serde_json::json!(format!("/dns/localhost/tcp/{port}/https"));
        let routed = fetched["routed"].as_array().unwrap();
        assert!(
            !routed.is_empty()
                && routed.iter().all(|p| p["peerId"] == cairn_peer.as_str()
                    && p["addrs"].as_array().unwrap().contains(&https)),
            "{fetched}"
        );
        terminate(running);
    });
}

/// A test CA in `dir`, trusted by what this process starts through `SSL_CERT_FILE`, which Go
/// (Kubo) and rustls-native-certs (`cairn upload`) read beside the system's roots.
fn trust_test_ca(dir: &Path) -> TestCa {
    let ca = TestCa::make(dir);
    // Inside the namespace this process runs this one test, and nothing has started yet.
    std::env::set_var("SSL_CERT_FILE", &ca.authority);
    ca
}

/// `cairn serve` under TLS, with its IPFS node on loopback TCP (without one, the router names
/// no provider): upload host on `port` (0: the system's choice) and, given a port, with
/// `--public-url https://localhost:PORT`. Returns the running server and its peer id.
fn start_cairn(data: &Path, ca: &TestCa, port: Option<u16>) -> (Running, String) {
    let mut command = server::cairn();
    let listen = format!("127.0.0.1:{}", port.unwrap_or(0));
    command
        .args([
            "serve",
            "--listen",
            &listen,
            "--account-listen",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(data)
        .args(["--p2p-listen", "/ip4/127.0.0.1/tcp/0"])
        .arg("--tls-cert")
        .arg(&ca.cert)
        .arg("--tls-key")
        .arg(&ca.key);
    if let Some(port) = port {
        command.args(["--public-url", &format!("https://localhost:{port}")]);
    }
    let mut running = start_command(command);
    let peer_id = running.printed("p2p peer id ");
    (running, peer_id)
}

/// A free loopback port, for a server that must know its own port before it starts.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A small site with a file of several blocks and a nested directory; its bytes.
fn write_site(dir: &Path) -> usize {
    let files: [(&str, Vec<u8>); 3] = [
        ("index.html", b"<h1>hello over https</h1>".to_vec()),
        ("assets/data.bin", server::content(5 << 20, 36)),
        ("assets/fonts/empty.woff2", Vec::new()),
    ];
    let mut bytes = 0;
    for (path, content) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        bytes += content.len();
        std::fs::write(path, content).unwrap();
    }
    bytes
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

/// Today's Kubo with Cairn's upload host as its one delegated router and HTTP retrieval on
/// (its default since 0.36, set all the same), else `ipfs init --profile test` (loopback, no
/// bootstrap peers, no mDNS).
fn start_kubo(dir: &Path, router: &str) -> kubo::Daemon {
    let repo = dir.join("repo");
    std::fs::create_dir_all(dir).unwrap();
    let ipfs = |args: &[&str]| {
        let mut command = Command::new(kubo::binary());
        command.args(args).env("IPFS_PATH", &repo);
        run(&mut command, &format!("ipfs {}", args.join(" ")));
    };
    ipfs(&["init", "--profile", "test"]);
    let routers = serde_json::json!([router]).to_string();
    ipfs(&["config", "--json", "Routing.DelegatedRouters", &routers]);
    ipfs(&["config", "--json", "HTTPRetrieval.Enabled", "true"]);
    // The repository is there: the daemon opens it as it is.
    kubo::Daemon::start(dir, kubo::Options::default())
}

/// A sample (`name` with its labels) of the daemon's Prometheus metrics.
fn kubo_metric(kubo: &kubo::Daemon, name: &str) -> f64 {
    let api = std::fs::read_to_string(kubo.dir.join("repo/api")).unwrap();
    let port = api.trim().rsplit('/').next().unwrap();
    let url = format!("http://127.0.0.1:{port}/debug/metrics/prometheus");
    sample(
        &String::from_utf8_lossy(&get(&reqwest::Client::new(), &url)),
        name,
    )
}

/// The blocks Cairn's Bitswap has sent, from its `/metrics`.
fn bitswap_blocks_sent(running: &Running, ca: &TestCa) -> f64 {
    let metrics = get(&https_client(ca), &format!("{}/metrics", running.upload));
    sample(
        &String::from_utf8_lossy(&metrics),
        "cairn_bitswap_blocks_sent_total",
    )
}

/// How many blocks the DAG under `cid` has: those of the gateway's CAR of it, each once.
fn dag_blocks(running: &Running, ca: &TestCa, cid: &str) -> usize {
    let car = get(
        &https_client(ca),
        &format!("{}/ipfs/{cid}?format=car", running.upload),
    );
    let cids: HashSet<String> = CarReader::new(&car[..], CarLimits::default())
        .unwrap()
        .map(|block| block.unwrap().0.to_string())
        .collect();
    cids.len()
}

/// A client that trusts the test CA.
fn https_client(ca: &TestCa) -> reqwest::Client {
    let authority = std::fs::read(&ca.authority).unwrap();
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&authority).unwrap())
        .build()
        .unwrap()
}

/// `GET url`'s body, which must be a success.
fn get(http: &reqwest::Client, url: &str) -> Vec<u8> {
    let request = http.get(url);
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async { request.send().await?.error_for_status()?.bytes().await })
        .unwrap_or_else(|e| panic!("GET {url}: {e}"))
        .to_vec()
}

/// The value of the sample `name` (with its labels, as Prometheus' text format writes it).
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
        .parse()
        .unwrap()
}
/// Node 24 and Helia's packages (`peers/package-lock.json`, in the directory the peer harness
/// installs them into, shared with it), with `helia_http.mjs` beside them; once per test
/// binary, before the namespace (the registries cannot be reached from inside).
fn helia_http_install() -> &'static node::Installed {
    static INSTALL: OnceLock<node::Installed> = OnceLock::new();
    INSTALL.get_or_init(|| {
        node::npm_ci(
            &node::NODE_24,
            "helia",
            &cairn_harness::peers::sources(),
            &["helia_http.mjs"],
            &[],
        )
    })
}
