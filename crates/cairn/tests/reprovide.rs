//! The reprovide cycle, which provides everything again region by region of the DHT's
//! keyspace (issue 37), against a DHT of [`DHT_NODES`] `cairn_p2p` nodes in this process, in
//! a network namespace with only loopback.

use cairn_harness::dht;
use cairn_harness::server;

use std::time::{Duration, Instant};

use dht::{addr_of, dht_node, start_cairn, start_dht, wait_for_dht_peers, Provides};
use server::{start, stored_upload, terminate, Running};

const DHT_NODES: usize = 100;
const NEIGHBOURS: [usize; 4] = [1, 3, 7, 15];
/// Roots stored: enough that no region of the keyspace holds so few that they would be
/// provided one by one instead.
const ROOTS: usize = 120;
/// Each record goes to this many peers (Kademlia's K).
const REPLICAS: u64 = 20;
/// A node that has never provided reads its provide log from 30 s back: roots stored longer
/// ago than this are provided by the reprovide cycle alone.
const LOG_LOOK_BACK: Duration = Duration::from_secs(31);

/// Poll `/metrics` until `done`; panics after two minutes.
async fn provides_when(running: &Running, done: impl Fn(&Provides) -> bool) -> Provides {
    Provides::when(
        &reqwest::Client::new(),
        running,
        Duration::from_secs(120),
        done,
    )
    .await
}

#[test]
fn a_restart_mid_cycle_resumes_after_the_last_region_swept_and_every_root_is_found() {
    const NAME: &str =
        "a_restart_mid_cycle_resumes_after_the_last_region_swept_and_every_root_is_found";
    cairn_test_support::netns::isolated(NAME, || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let work = tempfile::tempdir().unwrap();
        let data = work.path().join("cairn");

        // Stored while the node is off, so that only the cycle provides them.
        let running = start(&data, &["--uploads-per-minute", "1000000"]);
        let roots: Vec<String> = runtime.block_on(async {
            let mut roots = Vec::new();
            for n in 0..ROOTS {
                let bytes = format!("root {n} of the reprovide test").into_bytes();
                let name = format!("{n}.bin");
                roots.push(
                    stored_upload(&running, &running.token, &name, bytes)
                        .await
                        .1,
                );
            }
            roots
        });
        let stored = Instant::now();
        assert!(terminate(running).0.success());

        let nodes = runtime.block_on(start_dht(DHT_NODES, &NEIGHBOURS));
        std::thread::sleep(LOG_LOOK_BACK.saturating_sub(stored.elapsed()));
        let bootstrap: Vec<String> = [0, 33, 66]
            .iter()
            .map(|&i| addr_of(&nodes[i]).to_string())
            .collect();
        let bootstrap = bootstrap.join(",");
        let serve = |data: &std::path::Path| {
            start_cairn(data, &bootstrap, &["--reprovide-interval", "60s"])
        };
        let (mut running, cairn) = serve(&data);
        let (first, killed) = runtime.block_on(async {
            // A node that has never swept makes its first pass at once, region by region.
            let first = provides_when(&running, |p| p.sweeps >= 1).await;
            assert_eq!(
                first.records_sent,
                ROOTS as u64 * REPLICAS,
                "every root to its {REPLICAS} closest peers: {first:?}"
            );
            assert!(first.regions >= 2, "{first:?}");
            assert!(
                first.lookups < ROOTS as u64 / 2,
                "a few lookups a region, not one a root: {first:?}"
            );
            // The next pass began as the first ended; its regions fall due over the 60 s.
            // Killed once one of them is swept, before the next falls due.
            let one_more = provides_when(&running, |p| p.regions > first.regions).await;
            running.child.kill().unwrap();
            running.child.wait().unwrap();
            (first, one_more)
        });
        drop(running);
        let swept_before_kill = killed.records_sent - first.records_sent;
        assert!(swept_before_kill > 0, "{killed:?}");

        let (running, _) = serve(&data);
        runtime.block_on(async {
            // The pass goes on after the last region it swept: nothing again, nothing left.
            let rest = provides_when(&running, |p| p.sweeps >= 1).await;
            assert_eq!(
                swept_before_kill + rest.records_sent,
                first.records_sent,
                "the pass resumed where it stopped (before the kill {killed:?}, after {rest:?})"
            );

            // A node that joins the DHT afterwards finds Cairn for every root.
            let seeker = dht_node().await;
            for i in [10, 50, 90] {
                seeker.dial(addr_of(&nodes[i])).await.unwrap();
            }
            wait_for_dht_peers(&seeker, 3).await;
            for root in &roots {
                let found = seeker
                    .connect_providers(root.parse().unwrap())
                    .await
                    .unwrap();
                assert!(found.contains(&cairn), "{root} is not found at Cairn");
            }
        });
        assert!(terminate(running).0.success());
        runtime.block_on(async {
            for node in &nodes {
                node.shutdown().await;
            }
        });
    });
}
