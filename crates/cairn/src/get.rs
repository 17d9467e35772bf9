//! `cairn get CID[/PATH] [-o OUT]`: fetch the DAG as a CAR from the gateway, verify it, and
//! unpack it.
//!
//! The server is not trusted, and neither is the DAG (anyone can upload one). Before anything
//! is written: every block is verified against its CID, the path must lead from the CID asked
//! for to the target, the target's DAG must be complete and keep the UnixFS rules, and a plan
//! of what unpacking would write (entries, bytes, depth; a subtree that is linked many times
//! is counted every time) must fit the limits and the free space. Names are checked too (no
//! `/`, `..`, `.`, NUL or empty names), so a DAG cannot write outside the destination. The
//! tree is then written into a temporary directory beside the destination and renamed into
//! place at the end: a failure leaves nothing behind.

use std::fs;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use cairn_car::{CarLimits, CarReader};
use cairn_p2p::{MemoryBlockstore, Multiaddr, NodeConfig};
use cairn_unixfs::dir::validate_name;
use cairn_unixfs::read::{Node, ReadError, ReadLimits, Reader, Repeats};
use cairn_unixfs::{BlockBytes, BlockSink, BlockSource, Cid};
use tokio::io::AsyncWriteExt;

use crate::client::Connection;
use crate::spill::SpillStore;

/// How much one `cairn get` may write.
#[derive(Clone, Copy, Debug)]
pub struct GetLimits {
    /// Depth and blocks read while verifying and planning.
    pub read: ReadLimits,
    /// Files, directories and symlinks.
    pub max_entries: u64,
    /// Bytes of file content (the free space on the destination's disk also binds).
    pub max_bytes: u64,
}

impl Default for GetLimits {
    fn default() -> Self {
        Self {
            read: ReadLimits::default(),
            max_entries: 1_000_000,
            max_bytes: ReadLimits::default().max_bytes,
        }
    }
}

/// Where the blocks come from.
pub enum Source {
    /// A CAR from the service's trustless gateway.
    Gateway,
    /// Bitswap from these peers, or (none given) from the providers the service's delegated
    /// router names.
    Bitswap { peers: Vec<Multiaddr> },
}

pub async fn get(
    conn: &Connection,
    target: &str,
    output: Option<PathBuf>,
    limits: GetLimits,
    source: Source,
) -> Result<PathBuf> {
    let (root_text, path) = target.split_once('/').unwrap_or((target, ""));
    let root: Cid = root_text
        .parse()
        .with_context(|| format!("{root_text:?} is not a CID"))?;
    let names: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let destination =
        output.unwrap_or_else(|| PathBuf::from(names.last().map_or(root_text, String::as_str)));
    if fs::symlink_metadata(&destination).is_ok() {
        bail!(
            "{} already exists; refusing to overwrite it",
            destination.display()
        );
    }
    let parent = match destination.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let blocks = match source {
        Source::Gateway => fetch_car(conn, root, &names, &limits).await?,
        Source::Bitswap { peers } => fetch_bitswap(conn, root, &names, peers, &limits).await?,
    };
    let at = destination.clone();
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || -> Result<()> {
        let mut blocks = blocks;
        // The blocks along the path and the target's DAG, not the siblings: follow the path
        // from the root, then check the target's DAG is whole and well formed.
        let mut reader = Reader::new(&mut blocks, limits.read);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let target = reader
            .resolve(&root, &names)
            .with_context(|| format!("following {path:?} from {root}"))?
            .cid;
        reader
            .walk(&target, Repeats::Skip, &mut |_, _| Ok(()))
            .context("the blocks received are not a complete, valid DAG")?;
        let plan = plan(&target, &mut Reader::new(&mut blocks, limits.read), &limits)?;
        let free = free_bytes(&parent)?;
        if plan.bytes > free {
            bail!(
                "unpacking needs {} bytes, but only {free} are free in {}",
                plan.bytes,
                parent.display()
            );
        }
        // The plan bounded what is written; reading it needs no other budget.
        let unpacking = ReadLimits {
            max_blocks: u64::MAX,
            max_bytes: u64::MAX,
            ..limits.read
        };
        let staging = tempfile::Builder::new()
            .prefix(".cairn-get-")
            .tempdir_in(&parent)
            .with_context(|| format!("creating a temporary directory in {}", parent.display()))?;
        let inside = staging.path().join("content");
        unpack(&target, &inside, &mut Reader::new(&mut blocks, unpacking))?;
        fs::rename(&inside, &at).with_context(|| format!("moving it to {}", at.display()))?;
        Ok(())
    })
    .await??;
    Ok(destination)
}

/// The CAR of `root/names` from the gateway, every block verified, in a spill store.
async fn fetch_car(
    conn: &Connection,
    root: Cid,
    names: &[String],
    limits: &GetLimits,
) -> Result<SpillStore> {
    let mut url = reqwest::Url::parse(&conn.url).context("the upload host URL")?;
    url.path_segments_mut()
        .map_err(|()| anyhow::anyhow!("{} cannot take a path", conn.url))?
        .pop_if_empty()
        .push("ipfs")
        .push(&root.to_string())
        .extend(names);
    url.set_query(Some("format=car"));
    let mut response = conn
        .http
        .get(url)
        .send()
        .await
        .context("fetching the CAR")?;
    if !response.status().is_success() {
        // The gateway says why in plain text (or JSON, to a client that asks for it).
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        let message = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|body| body["message"].as_str().map(str::to_owned))
            .unwrap_or(text);
        bail!("the gateway answered {status}: {}", message.trim());
    }
    // A CAR without duplicates holds the content once plus its nodes: a bigger one is not
    // what was asked for, and must not fill the disk on the way in.
    let max_car_bytes = limits
        .max_bytes
        .saturating_add(limits.max_entries.saturating_mul(1024));
    let car = tempfile::NamedTempFile::new().context("creating a temporary file")?;
    let mut file = tokio::fs::File::create(car.path()).await?;
    let mut received = 0u64;
    while let Some(chunk) = response.chunk().await.context("receiving the CAR")? {
        received += chunk.len() as u64;
        if received > max_car_bytes {
            bail!("the CAR is larger than {max_car_bytes} bytes; refusing it");
        }
        file.write_all(&chunk).await?;
    }
    file.flush().await?;
    tokio::task::spawn_blocking(move || -> Result<SpillStore> {
        let mut blocks = SpillStore::new()?;
        let reader = CarReader::new(
            BufReader::new(fs::File::open(car.path())?),
            CarLimits::default(),
        )?;
        if reader.roots() != [root] {
            bail!("the CAR is not rooted at {root}");
        }
        for entry in reader {
            let (cid, block) = entry.context("the CAR does not verify")?;
            blocks.put_block(&cid, BlockBytes::new(&block))?;
        }
        Ok(blocks)
    })
    .await?
}

/// How long one peer has to answer one want before the next is asked.
const PER_PEER: Duration = Duration::from_secs(20);

/// The blocks of `root/names` over Bitswap, with a node of our own that listens nowhere:
/// the path's blocks one by one, then the target's whole DAG (within the limits).
async fn fetch_bitswap(
    conn: &Connection,
    root: Cid,
    names: &[String],
    peers: Vec<Multiaddr>,
    limits: &GetLimits,
) -> Result<SpillStore> {
    let config = NodeConfig {
        listen: Vec::new(),
        ..NodeConfig::default()
    };
    // A throwaway identity: this node only fetches.
    let key = cairn_p2p::key::Keypair::generate_ed25519();
    let node = cairn_p2p::start(key, config, Arc::new(MemoryBlockstore::default())).await?;
    let addrs = if peers.is_empty() {
        providers(conn, &root).await?
    } else {
        peers
    };
    let mut connected = Vec::new();
    for addr in &addrs {
        match node.dial(addr.clone()).await {
            Ok(peer) => connected.push(peer),
            Err(e) => eprintln!("warning: {e}"),
        }
    }
    if connected.is_empty() {
        bail!("could not connect to any of the {} peers", addrs.len());
    }
    let (bitswap, read) = (node.bitswap().clone(), limits.read);
    let names = names.to_vec();
    let runtime = tokio::runtime::Handle::current();
    let blocks = tokio::task::spawn_blocking(move || -> Result<SpillStore> {
        let mut spill = SpillStore::new()?;
        let target = {
            let mut fetching = Fetching {
                bitswap: &bitswap,
                peers: &connected,
                runtime: &runtime,
                spill: &mut spill,
            };
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            Reader::new(&mut fetching, read).resolve(&root, &names)?.cid
        };
        runtime.block_on(bitswap.fetch_dag(
            &target,
            &connected,
            read,
            None,
            PER_PEER,
            &mut |cid, block, _| spill.put_block(cid, BlockBytes::new(block)),
        ))?;
        Ok(spill)
    })
    .await;
    node.shutdown().await;
    blocks?
}

/// Blocks fetched over Bitswap as a path is followed (each verified against its multihash
/// when it arrives), kept in the spill store.
struct Fetching<'a> {
    bitswap: &'a cairn_p2p::bitswap::Bitswap,
    peers: &'a [cairn_p2p::PeerId],
    runtime: &'a tokio::runtime::Handle,
    spill: &'a mut SpillStore,
}

impl BlockSource for Fetching<'_> {
    fn get_block(&mut self, cid: &Cid) -> std::io::Result<Option<Vec<u8>>> {
        if let Some(block) = self.spill.get_block(cid)? {
            return Ok(Some(block));
        }
        let fetched = self
            .runtime
            .block_on(self.bitswap.want_block(cid, self.peers, PER_PEER));
        match fetched {
            Ok(block) => {
                self.spill.put_block(cid, BlockBytes::new(&block))?;
                Ok(Some(block))
            }
            Err(cairn_p2p::bitswap::fetch::FetchError::NotFound { .. }) => Ok(None),
            Err(e) => Err(std::io::Error::other(e)),
        }
    }
}

/// The Bitswap addresses (with `/p2p/`) of the providers the service's router names for `cid`.
async fn providers(conn: &Connection, cid: &Cid) -> Result<Vec<Multiaddr>> {
    let mut url = reqwest::Url::parse(&conn.url).context("the upload host URL")?;
    url.path_segments_mut()
        .map_err(|()| anyhow::anyhow!("{} cannot take a path", conn.url))?
        .pop_if_empty()
        .extend(["routing", "v1", "providers", &cid.to_string()]);
    let response = conn
        .http
        .get(url)
        .send()
        .await
        .context("asking the router")?;
    if !response.status().is_success() {
        bail!(
            "the router knows no provider of {cid} ({})",
            response.status()
        );
    }
    let body: serde_json::Value = response.json().await.context("the router's answer")?;
    let mut addrs = Vec::new();
    for record in body["Providers"].as_array().into_iter().flatten() {
        let bitswap = record["Protocols"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p == "transport-bitswap"));
        let Some(id) = record["ID"].as_str().filter(|_| bitswap) else {
            continue;
        };
        for addr in record["Addrs"].as_array().into_iter().flatten() {
            let Some(addr) = addr.as_str() else { continue };
            if addr.contains("/http") {
                continue;
            }
            if let Ok(addr) = format!("{addr}/p2p/{id}").parse() {
                addrs.push(addr);
            }
        }
    }
    if addrs.is_empty() {
        bail!("the router names no Bitswap provider of {cid}");
    }
    Ok(addrs)
}

/// What unpacking a DAG would write.
struct Plan {
    bytes: u64,
}

/// Walk the tree as unpacking would (a subtree linked twice is written twice), counting
/// entries and bytes against the limits; depth is bounded by the reader's limits.
fn plan(root: &Cid, reader: &mut Reader<&mut SpillStore>, limits: &GetLimits) -> Result<Plan> {
    let (mut entries, mut bytes) = (0u64, 0u64);
    let mut stack = vec![(*root, 0usize)];
    while let Some((cid, depth)) = stack.pop() {
        if depth > reader.limits().max_depth {
            bail!(
                "the tree is deeper than {} levels; refusing it",
                reader.limits().max_depth
            );
        }
        entries += 1;
        if entries > limits.max_entries {
            bail!(
                "the tree has more than {} entries; refusing it",
                limits.max_entries
            );
        }
        let (_, node) = reader.node(&cid)?;
        match &node {
            Node::File { size, .. } => {
                bytes = bytes.saturating_add(*size);
                if bytes > limits.max_bytes {
                    bail!(
                        "the tree holds more than {} bytes; refusing it",
                        limits.max_bytes
                    );
                }
            }
            Node::Symlink { .. } => {}
            Node::Ipld { codec, .. } => return Err(not_unixfs(cid, *codec).into()),
            Node::Directory { .. } | Node::HamtShard { .. } => {
                for entry in reader.list(&node)? {
                    if let Err(reason) = validate_name(&entry.name) {
                        bail!(
                            "the DAG has an entry named {:?} ({reason}); refusing it",
                            entry.name
                        );
                    }
                    stack.push((entry.cid, depth + 1));
                }
            }
        }
    }
    Ok(Plan { bytes })
}

/// A block of another codec met where files are written: only UnixFS unpacks into files.
fn not_unixfs(cid: Cid, codec: u64) -> ReadError {
    ReadError::not_unixfs(&cid, codec, "files and directories")
}

/// Bytes an unprivileged user may still write on the filesystem holding `dir`.
fn free_bytes(dir: &Path) -> Result<u64> {
    let stat = rustix::fs::statvfs(dir)
        .with_context(|| format!("reading the free space of {}", dir.display()))?;
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Write the tree under `cid` at `at` (its names checked by `plan`), without recursion.
fn unpack(cid: &Cid, at: &Path, reader: &mut Reader<&mut SpillStore>) -> Result<()> {
    let mut stack = vec![(*cid, at.to_owned())];
    while let Some((cid, at)) = stack.pop() {
        let (_, node) = reader.node(&cid)?;
        match &node {
            Node::File { size, .. } => {
                let mut out = fs::File::create_new(&at)
                    .with_context(|| format!("creating {}", at.display()))?;
                reader.read_range(&cid, 0..*size, &mut |_, _| Ok(()), &mut |bytes| {
                    out.write_all(&bytes)
                })?;
            }
            Node::Symlink { target } => std::os::unix::fs::symlink(target, &at)
                .with_context(|| format!("creating the link {}", at.display()))?,
            Node::Ipld { codec, .. } => return Err(not_unixfs(cid, *codec).into()),
            Node::Directory { .. } | Node::HamtShard { .. } => {
                fs::create_dir(&at).with_context(|| format!("creating {}", at.display()))?;
                // `plan` checked every name.
                for entry in reader.list(&node)? {
                    stack.push((entry.cid, at.join(&entry.name)));
                }
            }
        }
    }
    Ok(())
}
