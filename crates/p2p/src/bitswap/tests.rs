//! Two or three nodes on loopback, in this process: fetching DAGs, `DONT_HAVE`, and peers
//! that break the limits. Each test runs in a network namespace with only loopback.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_unixfs::read::{ReadLimits, Reader};
use cairn_unixfs::{BlockSink, Cid, FileImporter, MemoryBlocks, Profile};
use libp2p::identity::Keypair;

use super::message::{self, Message, WantEntry, WantType};
use super::PROTOCOLS;
use crate::blocks::MemoryBlockstore;
use crate::node::{start, NodeConfig, NodeHandle};

use cairn_test_support::netns;

/// Run an async test body on a runtime of its own, inside a loopback-only namespace.
fn isolated<F: std::future::Future<Output = ()>>(name: &str, body: impl FnOnce() -> F) {
    netns::isolated(&format!("bitswap::tests::{name}"), || {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(body())
    });
}

fn loopback() -> NodeConfig {
    NodeConfig {
        listen: vec!["/ip4/127.0.0.1/tcp/0".parse().unwrap()],
        ..NodeConfig::default()
    }
}

async fn node(blocks: MemoryBlockstore) -> NodeHandle {
    start(Keypair::generate_ed25519(), loopback(), Arc::new(blocks))
        .await
        .unwrap()
}

/// A file of `len` bytes in small blocks, stored in a blockstore.
fn file(len: usize) -> (Cid, Vec<u8>, MemoryBlockstore) {
    let bytes: Vec<u8> = (0..len as u32).map(|i| (i * 31 % 251) as u8).collect();
    let profile = Profile {
        chunk_size: 1000,
        max_links: 8,
        ..Profile::UNIXFS_V1_2025
    };
    let mut blocks = MemoryBlocks::default();
    let mut importer = FileImporter::new(&profile, &mut blocks);
    importer.push(&bytes).unwrap();
    let root = importer.finish().unwrap().cid;
    let store = MemoryBlockstore::default();
    for (cid, block) in blocks.iter() {
        store.insert(cid, block.to_vec());
    }
    (root, bytes, store)
}

#[test]
fn a_dag_fetched_over_bitswap_reads_back_byte_for_byte() {
    isolated(
        "a_dag_fetched_over_bitswap_reads_back_byte_for_byte",
        || async {
            let (root, bytes, store) = file(50_000);
            let server = node(store).await;
            let client = node(MemoryBlockstore::default()).await;
            let peer = client.dial(server.listen_addrs()[0].clone()).await.unwrap();
            assert_eq!(peer, server.peer_id());

            let mut fetched = MemoryBlocks::default();
            let stats = client
                .bitswap()
                .fetch_dag(
                    &root,
                    &[peer],
                    ReadLimits::default(),
                    None,
                    Duration::from_secs(5),
                    &mut |cid, block, _| {
                        fetched.put_block(cid, cairn_unixfs::BlockBytes::new(block))
                    },
                )
                .await
                .unwrap();
            assert!(stats.blocks_fetched > 50, "{stats:?}");
            let mut back = Vec::new();
            Reader::new(&mut fetched, ReadLimits::default())
                .read_range(&root, 0..bytes.len() as u64, &mut |_, _| Ok(()), &mut |b| {
                    back.extend_from_slice(&b);
                    Ok(())
                })
                .unwrap();
            assert_eq!(back, bytes);
            assert_eq!(
                server
                    .bitswap()
                    .metrics()
                    .blocks_sent
                    .load(std::sync::atomic::Ordering::Relaxed),
                stats.blocks_fetched
            );
            // What went to the peer, for usage: the root first, every byte counted once.
            let sent = server.bitswap().take_sent();
            assert_eq!(sent.len(), 1);
            assert_eq!(sent[0].peer, client.peer_id());
            assert_eq!(sent[0].first_blocks[0], root);
            assert_eq!(sent[0].first_blocks.len(), 16);
            let sent_bytes = server
                .bitswap()
                .metrics()
                .bytes_sent
                .load(std::sync::atomic::Ordering::Relaxed);
            assert_eq!(sent[0].bytes, sent_bytes);
            assert!(server.bitswap().take_sent().is_empty(), "taken once");
        },
    );
}

#[test]
fn a_block_no_one_has_is_reported_at_once_not_after_a_timeout() {
    isolated(
        "a_block_no_one_has_is_reported_at_once_not_after_a_timeout",
        || async {
            let server = node(MemoryBlockstore::default()).await;
            let client = node(MemoryBlockstore::default()).await;
            let peer = client.dial(server.listen_addrs()[0].clone()).await.unwrap();
            let missing = cairn_unixfs::block::block_cid(
                cairn_unixfs::CidVersion::V1,
                cairn_unixfs::block::RAW,
                b"nobody has this",
            );
            let started = Instant::now();
            let result = client
                .bitswap()
                .want_block(&missing, &[peer], Duration::from_secs(30))
                .await;
            assert!(matches!(
                result,
                Err(super::fetch::FetchError::NotFound { .. })
            ));
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{:?}",
                started.elapsed()
            );
        },
    );
}

/// A peer asking for far more missing blocks than allowed is cut off; others are still served.
#[test]
fn a_flood_of_wants_for_missing_blocks_cuts_the_peer_off() {
    isolated(
        "a_flood_of_wants_for_missing_blocks_cuts_the_peer_off",
        || async {
            let (root, _, store) = file(5_000);
            let server = node(store).await;
            let attacker = node(MemoryBlockstore::default()).await;
            let honest = node(MemoryBlockstore::default()).await;
            let address = server.listen_addrs()[0].clone();
            let peer = attacker.dial(address.clone()).await.unwrap();

            let mut control = attacker.bitswap().control().unwrap();
            let mut stream = control
                .open_stream(peer, PROTOCOLS[0].0.clone())
                .await
                .unwrap();
            let mut cut_off = false;
            for batch in 0..100u32 {
                let wantlist = (0..1000u32)
                    .map(|i| WantEntry {
                        cid: cairn_unixfs::block::block_cid(
                            cairn_unixfs::CidVersion::V1,
                            cairn_unixfs::block::RAW,
                            &(batch * 1000 + i).to_be_bytes(),
                        ),
                        priority: 1,
                        cancel: false,
                        want_type: WantType::Have,
                        send_dont_have: true,
                    })
                    .collect();
                let wants = Message {
                    wantlist,
                    ..Message::default()
                };
                let frame = wants.encode(message::Version::V120);
                if message::write_frame(&mut stream, &frame).await.is_err() {
                    cut_off = true;
                    break;
                }
            }
            // The server's ledger works through the wants; the cut-off follows within a few seconds.
            for _ in 0..100 {
                if !server
                    .connected_peers()
                    .await
                    .unwrap()
                    .contains(&attacker.peer_id())
                {
                    cut_off = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            assert!(cut_off, "the flooding peer is still connected");
            // It may not come back at once: the server refuses the connection it dials.
            let _ = attacker.dial(address.clone()).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            let peers = server.connected_peers().await.unwrap();
            assert!(!peers.contains(&attacker.peer_id()), "it came back at once");

            let peer = honest.dial(address).await.unwrap();
            let block = honest
                .bitswap()
                .want_block(&root, &[peer], Duration::from_secs(5))
                .await
                .unwrap();
            assert!(!block.is_empty());
        },
    );
}

#[test]
fn an_oversized_message_cuts_the_peer_off() {
    isolated("an_oversized_message_cuts_the_peer_off", || async {
        let server = node(MemoryBlockstore::default()).await;
        let attacker = node(MemoryBlockstore::default()).await;
        let peer = attacker
            .dial(server.listen_addrs()[0].clone())
            .await
            .unwrap();
        let mut control = attacker.bitswap().control().unwrap();
        let mut stream = control
            .open_stream(peer, PROTOCOLS[0].0.clone())
            .await
            .unwrap();
        // Only the length prefix is needed: 64 MiB announced.
        let _ = futures::AsyncWriteExt::write_all(&mut stream, &[0x80, 0x80, 0x80, 0x20]).await;
        let _ = futures::AsyncWriteExt::flush(&mut stream).await;
        for _ in 0..50 {
            if server.connected_peers().await.unwrap().is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the peer that announced a 64 MiB message is still connected");
    });
}

/// A node that knows only a DHT peer finds through it who provides a CID, and connects to
/// the provider (the pin worker's way to content its origins do not have).
#[test]
fn a_provider_is_found_and_connected_through_a_dht_peer() {
    isolated(
        "a_provider_is_found_and_connected_through_a_dht_peer",
        || async {
            let (root, _, store) = file(5_000);
            let router = node(MemoryBlockstore::default()).await;
            let holder = node(store).await;
            let seeker = node(MemoryBlockstore::default()).await;
            let router_addr = router.listen_addrs()[0].clone();
            for joining in [&holder, &seeker] {
                joining.dial(router_addr.clone()).await.unwrap();
                let mut peers = joining.dht_peers();
                tokio::time::timeout(Duration::from_secs(10), peers.wait_for(|n| *n > 0))
                    .await
                    .expect("the router enters the routing table")
                    .unwrap();
            }
            assert!(
                holder.provide(root).await.unwrap() >= 1,
                "provided to the router"
            );
            // A provider record has no acknowledgement: the router stores it a moment after
            // the provide returns.
            let deadline = Instant::now() + Duration::from_secs(10);
            let found = loop {
                let lookup = seeker.connect_providers(root);
                let found = tokio::time::timeout(Duration::from_secs(30), lookup)
                    .await
                    .expect("the lookup ends")
                    .unwrap();
                if !found.is_empty() || Instant::now() > deadline {
                    break found;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            };
            assert_eq!(found, [holder.peer_id()]);
            let connected = seeker.connected_peers().await.unwrap();
            assert!(connected.contains(&holder.peer_id()), "{connected:?}");
            // A CID nobody provides: no one.
            let (other, _, _) = file(6_000);
            assert!(seeker.connect_providers(other).await.unwrap().is_empty());
        },
    );
}
