//! IPNI publishing, read back with the IPFS/libp2p npm libraries (`tests/ipni/`): after
//! uploads, the chain that `cairn serve` publishes at `/ipni/v1/ad/` lists every block of each
//! upload's DAG under its root, every hash and signature as indexers check them; an indexer
//! is told of each new head by an announce; deleting an upload publishes a removal.

mod ipni;
use cairn_harness::server;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use cairn_p2p::Multiaddr;
use cairn_unixfs::Cid;
use server::{content, get_json, post_upload, start, tar_of};

/// Every block's multihash (hex) in the DAG under `cid`, from the gateway's CAR.
async fn dag_multihashes(upload_url: &str, cid: &str) -> BTreeSet<String> {
    let blocks = server::dag_cids(upload_url, cid).await;
    blocks
        .iter()
        .map(|cid| hex(&cid.hash().to_bytes()))
        .collect()
}

/// The chain published at `upload_url`, read again every 200 ms until `done` says it is
/// (a minute at most: `what` names what was waited for).
async fn chain_once(
    upload_url: &str,
    peer_id: &str,
    what: &str,
    done: impl Fn(&ipni::Chain) -> bool,
) -> ipni::Chain {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let chain = ipni::read_chain(upload_url, peer_id);
        if done(&chain) {
            return chain;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within a minute: {chain:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The announce body: the CBOR tuple `[cid (tag 42), [addr bytes...], extra]`.
fn read_announce(body: &[u8]) -> (Cid, Vec<Multiaddr>) {
    // A byte string's length at `at` (major type 2, up to two length bytes), and where its
    // bytes start.
    fn byte_string(body: &[u8], at: usize) -> (usize, usize) {
        match body[at] {
            b @ 0x40..=0x57 => (usize::from(b - 0x40), at + 1),
            0x58 => (usize::from(body[at + 1]), at + 2),
            0x59 => (
                usize::from(u16::from_be_bytes([body[at + 1], body[at + 2]])),
                at + 3,
            ),
            b => panic!("not a byte string at {at}: {b:#x}"),
        }
    }
    assert_eq!(
        &body[..3],
        [0x83, 0xd8, 0x2a],
        "a 3-tuple led by a CID (tag 42)"
    );
    let (len, start) = byte_string(body, 3);
    assert_eq!(
        body[start], 0,
        "a CID in CBOR starts with the identity multibase byte"
    );
    let cid = Cid::try_from(&body[start + 1..start + len]).unwrap();
    let mut at = start + len;
    let count = usize::from(body[at] - 0x80);
    at += 1;
    let mut addrs = Vec::new();
    for _ in 0..count {
        let (len, start) = byte_string(body, at);
        addrs.push(Multiaddr::try_from(body[start..start + len].to_vec()).unwrap());
        at = start + len;
    }
    assert_eq!(&body[at..], [0x40], "no extra data");
    (cid, addrs)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_chain_lists_every_block_of_each_upload_is_announced_and_withdraws_deletions() {
    let (indexer_url, announces) = ipni::indexer();
    let dir = tempfile::tempdir().unwrap();
    let serve = [
        "--p2p-listen",
        "/ip4/127.0.0.1/tcp/0",
        "--ipni-announce",
        &indexer_url,
    ];
    let running = start(dir.path(), &serve);
    let node = get_json(&format!("{}/api/node", running.upload), &running.token).await;
    let peer_id = node["peerId"].as_str().unwrap().to_owned();
    let http = reqwest::Client::new();
    let head_url = format!("{}/ipni/v1/ad/head", running.upload);
    assert_eq!(
        http.get(&head_url).send().await.unwrap().status(),
        204,
        "no head before the first advertisement"
    );
    let chain = ipni::read_chain(&running.upload, &peer_id);
    assert!(chain.head.is_none() && chain.ads.is_empty());

    // A file of several blocks, and a directory.
    let (status, file) =
        post_upload(&running, &running.token, "big.bin", content(3 << 20, 1)).await;
    assert_eq!(status, 200, "{file}");
    let tar = tar_of(&[("site/index.html", b"<h1>hi</h1>"), ("site/a.txt", b"a")]);
    let (status, site) = post_upload(&running, &running.token, "site.tar", tar).await;
    assert_eq!(status, 200, "{site}");
    let site =
        server::finished_operation(&running, &running.token, site["id"].as_str().unwrap()).await;
    let roots = [file["cid"].as_str().unwrap(), site["cid"].as_str().unwrap()];

    // Announced: the last announce names the chain's head, from where it is served.
    let chain = chain_once(
        &running.upload,
        &peer_id,
        "both uploads advertised",
        |chain| chain.ads.len() == 2,
    )
    .await;
    let head = chain.head.clone().unwrap();
    assert_eq!(
        head, chain.ads[0].cid,
        "the head is the newest advertisement"
    );
    let announced_head = |expected: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let received = announces
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no announce of {expected} within a minute"));
            assert_eq!(
                (received.method.as_str(), received.path.as_str()),
                ("PUT", "/announce")
            );
            assert_eq!(received.content_type, "application/octet-stream");
            let (cid, addrs) = read_announce(&received.body);
            let publisher = format!("{}/p2p/{peer_id}", addrs[0]);
            assert!(
                addrs.len() == 1
                    && addrs[0]
                        .to_string()
                        .ends_with(&format!("/http/p2p/{peer_id}")),
                "{publisher}"
            );
            if cid.to_string() == expected {
                return;
            }
        }
    };
    announced_head(&head);

    for (ad, root) in chain.ads.iter().rev().zip(roots) {
        let root_cid: Cid = root.parse().unwrap();
        assert_eq!(ad.provider, peer_id);
        assert!(!ad.is_rm);
        assert_eq!(
            ad.context_id,
            hex(&root_cid.to_bytes()),
            "the context is the root"
        );
        assert_eq!(ad.metadata, "8012a01200", "Bitswap and the HTTP gateway");
        assert!(
            ad.addresses.iter().any(|a| a.ends_with("/http"))
                && ad
                    .addresses
                    .iter()
                    .any(|a| a.contains("/tcp/") && !a.ends_with("/http")),
            "the libp2p and gateway addresses: {:?}",
            ad.addresses
        );
        let listed: BTreeSet<String> = ad.multihashes.iter().cloned().collect();
        assert_eq!(listed.len(), ad.multihashes.len(), "each block once");
        assert_eq!(
            listed,
            dag_multihashes(&running.upload, root).await,
            "every block of {root}"
        );
    }
    assert!(chain.ads[0].multihashes.len() >= 3);
    assert!(
        chain.ads[1].multihashes.len() >= 4,
        "the file's leaves and root"
    );

    // The chain's blocks are served as they hash; other names are refused.
    let unknown = "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku";
    let response = http
        .get(format!("{}/ipni/v1/ad/{unknown}", running.upload))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert_eq!(
        response.json::<serde_json::Value>().await.unwrap()["error"],
        "not_found"
    );
    let response = http
        .get(format!("{}/ipni/v1/ad/nonsense", running.upload))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);

    // Deleting the file withdraws it: a removal advertisement names its root.
    let deleted = http
        .delete(format!(
            "{}/api/uploads/{}",
            running.upload,
            file["id"].as_str().unwrap()
        ))
        .bearer_auth(&running.token)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let chain = chain_once(
        &running.upload,
        &peer_id,
        "the removal published",
        |chain| chain.ads.len() == 3,
    )
    .await;
    let removal = &chain.ads[0];
    assert!(removal.is_rm);
    assert_eq!(
        removal.context_id,
        hex(&roots[0].parse::<Cid>().unwrap().to_bytes())
    );
    assert_eq!(removal.entries, "bafkreehdwdcefgh4dqkjv67uzcmw7oje");
    assert_eq!(
        removal.metadata, "",
        "a removal carries no metadata, as index-provider's"
    );
    announced_head(chain.head.as_deref().unwrap());

    let metrics = server::metrics_text(&http, &running).await;
    for line in [
        "cairn_ipni_advertisements_published_total 2",
        "cairn_ipni_removals_published_total 1",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in /metrics");
    }
    let token = running.token.clone();
    server::terminate(running);

    // After a restart the chain goes on from its head: nothing is advertised twice, the head
    // is announced again (an indexer may have missed it), and a new upload links to it.
    let running = start(dir.path(), &serve);
    let old_head = chain.head.clone().unwrap();
    announced_head(&old_head);
    let (status, more) = post_upload(&running, &token, "more.bin", content(1000, 2)).await;
    assert_eq!(status, 200, "{more}");
    let chain = chain_once(
        &running.upload,
        &peer_id,
        "a new advertisement after the restart",
        |chain| chain.head.as_deref() != Some(old_head.as_str()),
    )
    .await;
    assert_eq!(chain.ads.len(), 4, "one more advertisement: {chain:?}");
    assert_eq!(chain.ads[1].cid, old_head);
    assert_eq!(
        chain.ads[0].context_id,
        hex(&more["cid"]
            .as_str()
            .unwrap()
            .parse::<Cid>()
            .unwrap()
            .to_bytes())
    );
    server::terminate(running);
}

#[test]
fn an_announce_url_that_is_not_http_stops_serve_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let output = server::cairn()
        .args(server::serve_args(dir.path()))
        .args(["--ipni-announce", "ftp://indexer.example"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    let errors: Vec<_> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("--ipni-announce"), "{stderr}");
}
