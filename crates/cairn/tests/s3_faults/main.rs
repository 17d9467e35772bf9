//! A node whose content store (moto's S3) misbehaves, through a fault-injecting proxy: `503`
//! answers, reset connections and stalls. A short fault is ridden out by retries; a lasting one
//! makes uploads answer `503 unavailable` with `Retry-After` in seconds; a `200` or `204` is only
//! ever sent for bytes that are stored; and the node works again as soon as S3 does.

use cairn_harness::server;

mod fault_proxy;
use cairn_test_support::moto;

use std::time::{Duration, Instant};

use fault_proxy::{Fault, FaultProxy};
use moto::Moto;
use server::{content, post_upload, start, terminate, tus_create, tus_offset, Running};

async fn read(running: &Running, cid: &str) -> (u16, Vec<u8>) {
    let reply = reqwest::get(format!("{}/ipfs/{cid}", running.upload))
        .await
        .unwrap();
    (
        reply.status().as_u16(),
        reply.bytes().await.unwrap().to_vec(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_faults_are_retried_or_answered_503_and_nothing_acknowledged_is_lost() {
    let moto = Moto::start();
    let direct = moto.bucket("faults");
    let (endpoint, _) = direct
        .split_once("endpoint=http://")
        .unwrap()
        .1
        .split_once('&')
        .unwrap();
    let proxy = FaultProxy::start(endpoint);
    let store = direct.replace(endpoint, &proxy.address);
    let data = tempfile::tempdir().unwrap();
    let running = start(data.path(), &["--store", &store]);
    let token = running.token.clone();
    let http = reqwest::Client::new();
    let mut acknowledged = Vec::new();

    let first = content(1 << 20, 1);
    let (status, body) = post_upload(&running, &token, "first.bin", first.clone()).await;
    assert_eq!(status, 200, "{body}");
    acknowledged.push((body["cid"].as_str().unwrap().to_owned(), first));

    // A second of 503s, then of resets, then a stall: each ridden out by retries.
    for fault in [Fault::Unavailable, Fault::Reset, Fault::Stall] {
        proxy.set(fault);
        let bytes = content(1 << 20, 2 + fault as u64);
        let upload = post_upload(&running, &token, "during.bin", bytes.clone());
        let (_, (status, body)) = tokio::join!(
            async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                proxy.set(Fault::None);
            },
            upload
        );
        assert_eq!(status, 200, "{fault:?}: {body}");
        acknowledged.push((body["cid"].as_str().unwrap().to_owned(), bytes));
    }

    // A lasting fault: 503 with Retry-After, in seconds, for a POST and for a TUS PATCH; the
    // PATCH's offset does not move.
    let (path, _) = tus_create(&http, &running.upload, &token, 3 << 20).await;
    let url = format!("{}{path}", running.upload);
    for fault in [Fault::Unavailable, Fault::Reset] {
        proxy.set(fault);
        let started = Instant::now();
        let (status, body) =
            post_upload(&running, &token, "refused.bin", content(1 << 20, 9)).await;
        assert_eq!(status, 503, "{fault:?}: {body}");
        assert_eq!(body["error"], "unavailable", "{body}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
        let patch = http
            .patch(&url)
            .bearer_auth(&token)
            .header("Tus-Resumable", "1.0.0")
            .header("Upload-Offset", "0")
            .header("Content-Type", "application/offset+octet-stream")
            .body(content(1 << 20, 10))
            .send()
            .await
            .unwrap();
        assert_eq!(patch.status(), 503, "{fault:?}");
        assert!(patch.headers().contains_key("retry-after"));
        proxy.set(Fault::None);
        assert_eq!(tus_offset(&http, &url, &token).await, 0, "{fault:?}");
    }

    // S3 is back: the same node stores again, and everything acknowledged reads back whole.
    let last = content(1 << 20, 20);
    let (status, body) = post_upload(&running, &token, "last.bin", last.clone()).await;
    assert_eq!(status, 200, "{body}");
    acknowledged.push((body["cid"].as_str().unwrap().to_owned(), last));
    for (cid, bytes) in &acknowledged {
        assert_eq!(read(&running, cid).await, (200, bytes.clone()), "{cid}");
    }
    terminate(running);
}
