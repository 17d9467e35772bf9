//! Publishing 1,000,000 multihashes to IPNI (issue 15): what a node does after walking a DAG
//! of a million blocks, on the embedded store. Entry chunks are encoded and the advertisement
//! signed (`cairn-p2p`'s `ipni`), then the publication is written in one transaction
//! (`publish_ipni`), then every chunk is read back as an indexer's fetches would read it.
//! The walk itself is the collector's (see the gc bench) and is not in these figures.
//!
//! Memory is this process's peak RSS (`VmHWM`) before and after.
//!
//! Run: `cargo bench -p cairn-server --bench ipni` (`IPNI_MULTIHASHES=N` for another count).

mod support;
use support::stored;

use cairn_store::Providing;
use std::time::Instant;

use cairn_p2p::ipni_format::{entry_chunks, Advertisement, METADATA_BITSWAP_AND_HTTP};
use cairn_store::model::{IpniChain, IpniPublication};
use sha2::{Digest, Sha256};

fn multihash_count() -> usize {
    std::env::var("IPNI_MULTIHASHES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000)
}

/// A field of `/proc/self/status`, in MiB.
fn status_mib(field: &str) -> f64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let count = multihash_count();
    let dir = tempfile::tempdir().unwrap();
    let (store, _packs, _) = stored::embedded_store(dir.path()).await;
    let multihashes: Vec<Vec<u8>> = (0..count as u64)
        .map(|i| {
            let mut mh = vec![0x12, 0x20];
            mh.extend_from_slice(&Sha256::digest(i.to_be_bytes()));
            mh
        })
        .collect();
    let key = cairn_p2p::key::Keypair::generate_ed25519();
    let rss_before = status_mib("VmRSS:");

    let started = Instant::now();
    let (chunks, entries) = entry_chunks(&multihashes);
    let ad = Advertisement {
        previous: None,
        provider: key.public().to_peer_id(),
        addresses: vec![
            "/ip4/203.0.113.7/tcp/4001".into(),
            "/dns/ipfs.example.net/tcp/443/https".into(),
        ],
        entries,
        context_id: vec![0x01; 36],
        metadata: METADATA_BITSWAP_AND_HTTP.to_vec(),
        is_rm: false,
    }
    .sign(&key)
    .unwrap();
    let encoded = started.elapsed();
    let chunk_bytes: usize = chunks.iter().map(|c| c.bytes.len()).sum();
    let chunk_cids: Vec<String> = chunks.iter().map(|c| c.cid.to_string()).collect();
    let mut blocks: Vec<(String, Vec<u8>)> = chunks
        .into_iter()
        .map(|c| (c.cid.to_string(), c.bytes))
        .collect();
    blocks.push((ad.cid.to_string(), ad.bytes));
    let publication = IpniPublication {
        blocks,
        chain: IpniChain {
            head: Some(ad.cid.to_string()),
            ..IpniChain::default()
        },
        advertised: vec!["bafyroot".into()],
        withdrawn: vec![],
    };

    let db_before = db_bytes(dir.path());
    let started = Instant::now();
    store.publish_ipni("bench", &publication).await.unwrap();
    let written = started.elapsed();
    let db_after = db_bytes(dir.path());
    drop(publication);

    let started = Instant::now();
    let mut read = 0;
    for cid in &chunk_cids {
        read += store.ipni_block("bench", cid).await.unwrap().unwrap().len();
    }
    let served = started.elapsed();
    assert_eq!(read, chunk_bytes);

    let mb = |bytes: f64| bytes / 1e6;
    println!("\nIPNI: one advertisement of {count} multihashes (embedded store)\n");
    println!("| step | time | figure |");
    println!("|---|---|---|");
    println!(
        "| encode {} entry chunks and sign the advertisement | {:.2} s | {:.1} MB of dag-json ({:.1} bytes per multihash) |",
        chunk_cids.len(),
        encoded.as_secs_f64(),
        mb(chunk_bytes as f64),
        chunk_bytes as f64 / count as f64
    );
    println!(
        "| write the publication (one transaction) | {:.2} s | database grew {:.1} MB |",
        written.as_secs_f64(),
        mb(db_after.saturating_sub(db_before) as f64)
    );
    println!(
        "| read every chunk back, as an indexer fetches them | {:.2} s | {:.0} MB/s |",
        served.as_secs_f64(),
        mb(read as f64) / served.as_secs_f64()
    );
    println!(
        "| memory | | peak RSS {:.0} MiB; {:.0} MiB before encoding (the multihashes: {:.0} MB) |",
        status_mib("VmHWM:"),
        rss_before,
        mb((count * 34) as f64)
    );
}

/// The database and its WAL.
fn db_bytes(dir: &std::path::Path) -> u64 {
    ["cairn.db", "cairn.db-wal"]
        .iter()
        .filter_map(|name| std::fs::metadata(dir.join(name)).ok())
        .map(|m| m.len())
        .sum()
}
