//! Publishing to IPNI, the network indexers that find providers at scale: each node keeps its
//! own signed advertisement chain, as it provides everything to the DHT.
//!
//! - Each root completed in the provide log becomes an advertisement (its context id: the root
//!   CID) whose entries are the multihash of every block of its DAG, read by walking its
//!   interior (raw leaves are named by their parents, not read).
//! - When no live upload or pin keeps an advertised root any more (followed from the deletion
//!   log), a removal advertisement names its context.
//! - The chain lives in the metadata store ([`MetadataStore::publish_ipni`]: blocks, head and
//!   marks in one transaction), is served at `/ipni/v1/ad/` (`routes::ipni`), and after each
//!   change is announced to the indexers configured (`--ipni-announce`).
//!
//! Commits become visible out of order, so every ten seconds both logs are read again a
//! little way back; what was advertised (or withdrawn) already is skipped by the store's
//! record of it.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use cairn_p2p::ipni_format::{
    announce_message, entry_chunks, no_entries, Advertisement, ChainBlock, MAX_CONTEXT_ID,
    METADATA_BITSWAP, METADATA_BITSWAP_AND_HTTP,
};
use cairn_p2p::{Multiaddr, NodeHandle, Protocol};
use cairn_store::model::{IpniChain, IpniPublication, LogPlace};
use cairn_store::{now_ms, StoreError};
use cairn_unixfs::Cid;
use tokio::sync::watch;

use crate::gc::walk::dag_multihashes;
use crate::provide::read_from;
use crate::stop::sleep_unless_stopped;
use crate::Service;

/// How often the logs are read for new roots and deletions.
const POLL_EVERY: Duration = Duration::from_secs(1);
/// Roots read from a log at once, and so at most the advertisements of one publication.
const PAGE: u32 = 256;
/// A failed announce is sent again after this long (the chain is served meanwhile: an indexer
/// that polls finds it).
const ANNOUNCE_RETRY: Duration = Duration::from_secs(30);

/// Why a publication did not happen; the next poll tries again.
#[derive(Debug, thiserror::Error)]
enum PublishError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Chain(String),
}

/// Publish this node's chain until `stop`.
pub async fn keep_publishing(service: Service, stop: watch::Receiver<bool>) {
    let Some(node) = service.node.clone() else {
        return;
    };
    let peer_id = node.peer_id().to_string();
    let mut chain = loop {
        match service.store.ipni_chain(&peer_id).await {
            // A new chain advertises everything stored; deletions before it named nothing of it.
            Ok(chain) => {
                break chain.unwrap_or(IpniChain {
                    head: None,
                    completed_through: LogPlace::default(),
                    deleted_through: LogPlace {
                        at_ms: now_ms(),
                        operation_id: 0,
                    },
                })
            }
            Err(e) => {
                tracing::warn!("reading this node's IPNI chain failed: {e}");
                if sleep_unless_stopped(&stop, Duration::from_secs(5)).await {
                    return;
                }
            }
        }
    };
    let client = reqwest::Client::new();
    // An indexer may have missed the last announce before a restart.
    let mut announce_due = chain.head.is_some();
    let mut failed_at: Option<Instant> = None;
    for poll in 0u64.. {
        match publish_once(&service, &node, &peer_id, &mut chain, poll).await {
            Ok(true) => announce_due = true,
            Ok(false) => {}
            Err(e) => tracing::warn!("publishing to IPNI failed: {e}"),
        }
        let retry_waited = failed_at.is_none_or(|at| at.elapsed() >= ANNOUNCE_RETRY);
        if announce_due && retry_waited {
            if let Some(head) = &chain.head {
                announce_due = !announce(&service, &node, &client, head).await;
                failed_at = announce_due.then(Instant::now);
            }
        }
        if sleep_unless_stopped(&stop, POLL_EVERY).await {
            return;
        }
    }
}

/// Publish what the logs add to the chain since it was last followed (at most about
/// [`PAGE`] advertisements at once); `true` if the head moved.
async fn publish_once(
    service: &Service,
    node: &NodeHandle,
    peer_id: &str,
    chain: &mut IpniChain,
    poll: u64,
) -> Result<bool, PublishError> {
    let store = &service.store;
    let (fresh, completed_through) = follow(
        chain.completed_through,
        poll,
        |after| store.completed_roots(after, PAGE),
        |roots| async move { store.ipni_not_advertised(peer_id, &roots).await },
    )
    .await?;
    let (withdrawn, deleted_through) = follow(
        chain.deleted_through,
        poll,
        |after| store.deleted_roots(after, PAGE),
        |roots| async move { store.ipni_withdrawn(peer_id, &roots).await },
    )
    .await?;
    let mut next = IpniChain {
        head: chain.head.clone(),
        completed_through,
        deleted_through,
    };
    if fresh.is_empty() && withdrawn.is_empty() {
        if next != *chain {
            store
                .publish_ipni(
                    peer_id,
                    &IpniPublication {
                        chain: next.clone(),
                        ..IpniPublication::default()
                    },
                )
                .await?;
            *chain = next;
        }
        return Ok(false);
    }

    let mut publication = IpniPublication::default();
    let mut ads = Vec::new();
    for root in &fresh {
        let Ok(cid) = root.parse::<Cid>() else {
            tracing::warn!("not advertising the stored root {root:?}: not a CID");
            continue;
        };
        let Some(multihashes) = dag_multihashes(&service.store, &service.packs, &cid)
            .await
            .map_err(StoreError::Io)?
        else {
            tracing::warn!("not advertising {root}: its root block is not stored");
            continue;
        };
        let (chunks, entries) = entry_chunks(&multihashes);
        publication.blocks.extend(
            chunks
                .into_iter()
                .map(|chunk| (chunk.cid.to_string(), chunk.bytes)),
        );
        ads.push((root, cid, entries, multihashes.len()));
    }
    let addresses = provider_addresses(service, node);
    let metadata = match service.config.gateway_addr {
        Some(_) => METADATA_BITSWAP_AND_HTTP,
        None => METADATA_BITSWAP,
    };
    let mut head: Option<Cid> = match &chain.head {
        Some(text) => Some(text.parse().map_err(|e| {
            PublishError::Chain(format!("this node's IPNI head {text:?} is not a CID: {e}"))
        })?),
        None => None,
    };
    let mut sign = |context: &Cid, entries: Cid, metadata: &[u8], is_rm: bool| {
        let ad = Advertisement {
            previous: head,
            provider: node.peer_id(),
            addresses: addresses.clone(),
            entries,
            context_id: context_id(context)?,
            metadata: metadata.to_vec(),
            is_rm,
        };
        let block: ChainBlock = ad
            .sign(node.key())
            .map_err(|e| PublishError::Chain(format!("signing an advertisement: {e}")))?;
        head = Some(block.cid);
        Ok::<_, PublishError>((block.cid.to_string(), block.bytes))
    };
    let mut multihashes = 0;
    for (root, cid, entries, count) in ads {
        publication
            .blocks
            .push(sign(&cid, entries, metadata, false)?);
        publication.advertised.push(root.clone());
        multihashes += count as u64;
    }
    for root in &withdrawn {
        let cid: Cid = root.parse().map_err(|e| {
            PublishError::Chain(format!("advertised root {root:?} is not a CID: {e}"))
        })?;
        publication
            .blocks
            .push(sign(&cid, no_entries(), &[], true)?);
        publication.withdrawn.push(root.clone());
    }
    let moved = head.map(|cid| cid.to_string()) != chain.head;
    next.head = head.map(|cid| cid.to_string());
    publication.chain = next.clone();
    store.publish_ipni(peer_id, &publication).await?;
    *chain = next;
    // Counted once written: a publication that fails is made again on the next poll.
    let stats = &service.ipni;
    let advertised = publication.advertised.len() as u64;
    stats
        .advertisements
        .fetch_add(advertised, Ordering::Relaxed);
    stats.multihashes.fetch_add(multihashes, Ordering::Relaxed);
    let removals = publication.withdrawn.len() as u64;
    stats.removals.fetch_add(removals, Ordering::Relaxed);
    Ok(moved)
}

/// The root's bytes as an advertisement's context id (at most [`MAX_CONTEXT_ID`] bytes).
fn context_id(root: &Cid) -> Result<Vec<u8>, PublishError> {
    let bytes = root.to_bytes();
    if bytes.len() > MAX_CONTEXT_ID {
        return Err(PublishError::Chain(format!(
            "root {root} is longer than an IPNI context id may be"
        )));
    }
    Ok(bytes)
}

/// Where the node is reached: its libp2p addresses (Bitswap) and its gateway (HTTP).
fn provider_addresses(service: &Service, node: &NodeHandle) -> Vec<String> {
    let mut addresses: Vec<String> = node
        .announced_addrs()
        .iter()
        .map(|addr| addr.to_string())
        .collect();
    if let Some(gateway) = &service.config.gateway_addr {
        addresses.push(gateway.to_string());
    }
    addresses
}

/// Follow a log (`read`: a page after a place) from `through` (a little way back from it on
/// some polls: see [`read_from`]), and keep the roots `pick` chooses, each once, until a page
/// is short or about [`PAGE`] are chosen; returns them and how far the log was read (every
/// root up to there is either chosen or not to be published).
async fn follow<Read, Reading, Pick, Picking>(
    through: LogPlace,
    poll: u64,
    read: Read,
    pick: Pick,
) -> Result<(Vec<String>, LogPlace), StoreError>
where
    Read: Fn(LogPlace) -> Reading,
    Reading: std::future::Future<Output = Result<Vec<(LogPlace, String)>, StoreError>>,
    Pick: Fn(Vec<String>) -> Picking,
    Picking: std::future::Future<Output = Result<Vec<String>, StoreError>>,
{
    let mut after = read_from(through, poll);
    let (mut chosen, mut reached) = (Vec::new(), through);
    loop {
        let page = read(after).await?;
        let Some((last, _)) = page.last() else {
            break;
        };
        after = *last;
        reached = reached.max(*last);
        let roots: Vec<String> = page.iter().map(|(_, cid)| cid.clone()).collect();
        for root in pick(roots).await? {
            if !chosen.contains(&root) {
                chosen.push(root);
            }
        }
        if page.len() < PAGE as usize || chosen.len() >= PAGE as usize {
            break;
        }
    }
    Ok((chosen, reached))
}

/// Tell every configured indexer that the head is `head`; `true` if all took it.
async fn announce(
    service: &Service,
    node: &NodeHandle,
    client: &reqwest::Client,
    head: &str,
) -> bool {
    let indexers = &service.config.ipni_announce;
    if indexers.is_empty() {
        return true;
    }
    let Some(gateway) = &service.config.gateway_addr else {
        tracing::warn!("not announcing to IPNI: the node's HTTP address is unknown");
        return true;
    };
    let Ok(head) = head.parse::<Cid>() else {
        return true;
    };
    let publisher: Multiaddr = gateway.clone().with(Protocol::P2p(node.peer_id()));
    let body = announce_message(&head, &[publisher]);
    let mut all = true;
    for indexer in indexers {
        let sent = client
            .put(indexer.clone())
            .header("content-type", "application/octet-stream")
            .body(body.clone())
            .timeout(Duration::from_secs(30))
            .send()
            .await;
        let stats = &service.ipni;
        match sent {
            Ok(response) if response.status().is_success() => {
                stats.announces_sent.fetch_add(1, Ordering::Relaxed);
            }
            Ok(response) => {
                stats.announces_failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    "the indexer {indexer} refused the announce: {}",
                    response.status()
                );
                all = false;
            }
            Err(e) => {
                stats.announces_failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("announcing to the indexer {indexer} failed: {e}");
                all = false;
            }
        }
    }
    all
}
