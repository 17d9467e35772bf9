//! The blocks Cairn holds: the one way anything reads a stored block, by the block index and
//! then the pack bytes, each block verified against its CID before it is handed out, or
//! matched to a checksum of the bytes so verified lately (storage could have rotted since it
//! was written: a block that lies is never served).
//!
//! - [`StoredBlocks`]: a cloneable handle, asynchronous, one block at a time: what the IPFS
//!   node serves over Bitswap and a pin checks for. A block it has verified lately is
//!   matched to a checksum of the bytes it verified rather than hashed again
//!   ([`VerifiedLately`]).
//! - [`StoredBlockReader`]: a [`BlockSource`] for blocking threads that walk DAGs (the
//!   gateway, CAR imports asking about blocks a CAR leaves out, the workers, the collector
//!   and `fsck`), looking up a node's children in one query and reading runs of them
//!   together.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::{Arc, Mutex};

use cairn_unixfs::block::verify_block;
use cairn_unixfs::{BlockSource, Cid};

use crate::model::BlockLocation;
use crate::packs::Packs;
use crate::BlockIndex;

/// Cairn's stored blocks, by the block index and the packs (local or S3).
#[derive(Clone)]
pub struct StoredBlocks {
    store: Arc<dyn BlockIndex>,
    packs: Packs,
    verified: Arc<VerifiedLately>,
}

impl StoredBlocks {
    pub fn new(store: Arc<dyn BlockIndex>, packs: Packs) -> Self {
        Self {
            store,
            packs,
            verified: Arc::default(),
        }
    }

    /// The block, verified against its CID; `None` when it is not held. The pack is read on
    /// a blocking thread.
    pub async fn get(&self, cid: &Cid) -> io::Result<Option<Vec<u8>>> {
        Ok(self.get_many(&[*cid], 0).await?.pop().flatten())
    }

    /// The blocks of `cids`, in order, as far as `max_bytes` goes: one index query for all of
    /// them and one blocking task that reads them, where a call per block costs a query and a
    /// task each (peers fetching a DAG over Bitswap ask for hundreds at a time). Blocks
    /// are taken while the bytes taken are under `max_bytes` (so the one that passes it is
    /// taken, and always the first); one entry per CID taken, `None` for a block not held
    /// (costing nothing), and none for the CIDs after.
    pub async fn get_many(&self, cids: &[Cid], max_bytes: u64) -> io::Result<Vec<Option<Vec<u8>>>> {
        if cids.is_empty() {
            return Ok(Vec::new());
        }
        let multihashes: Vec<Vec<u8>> = cids.iter().map(|cid| cid.hash().to_bytes()).collect();
        let mut found: HashMap<Vec<u8>, BlockLocation> = self
            .store
            .block_locations(&multihashes)
            .await
            .map_err(io::Error::other)?
            .into_iter()
            .collect();
        let mut taken = Vec::new();
        let mut bytes = 0;
        for (cid, multihash) in cids.iter().zip(&multihashes) {
            if !taken.is_empty() && bytes >= max_bytes {
                break;
            }
            let location = found.remove(multihash);
            bytes += location.as_ref().map_or(0, |l| l.length);
            taken.push((*cid, location));
        }
        let (packs, store) = (self.packs.clone(), self.store.clone());
        let verified = self.verified.clone();
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            taken
                .into_iter()
                .map(|(cid, location)| {
                    let Some(location) = location else {
                        return Ok(None);
                    };
                    let relocate = || {
                        runtime
                            .block_on(store.block_location(&cid.hash().to_bytes()))
                            .map_err(io::Error::other)
                    };
                    let Some(block) = packs.read_relocating(&location, relocate)? else {
                        return Ok(None);
                    };
                    verified.verify(&cid, &block)?;
                    Ok(Some(block))
                })
                .collect()
        })
        .await
        .map_err(io::Error::other)?
    }

    /// Whether the block is held (an index lookup: nothing is read).
    pub async fn has(&self, cid: &Cid) -> io::Result<bool> {
        self.store
            .has_block(&cid.hash().to_bytes())
            .await
            .map_err(io::Error::other)
    }

    /// A reader for a blocking thread. Must be called within the runtime (its blocking
    /// threads included): its index lookups block on it.
    pub fn reader(&self) -> StoredBlockReader {
        StoredBlockReader::new(self.store.clone(), self.packs.clone())
    }
}

/// The most blocks [`VerifiedLately`] remembers (each under 100 bytes); when full, it
/// starts again.
const VERIFIED_KEPT: usize = 4096;

/// The CRC-32 of the bytes [`StoredBlocks`] last verified against each of the blocks it
/// verified lately. Peers fetching the same DAG at once ask for each block within seconds of
/// each other, and hashing it with SHA-256 for every answer cost as much of the server's CPU
/// as encrypting it (`perf` of the Bitswap bench's 100 peers: SHA-256 17%,
/// ChaCha20-Poly1305 17%). A block whose bytes have the CRC-32 of the bytes verified is
/// served without hashing them again (CRC-32 is several times cheaper than SHA-256, catches
/// any burst of rot up to 32 bits, and all else but one time in 2^32); any other is hashed.
/// The bytes served are still the bytes verified.
#[derive(Default)]
struct VerifiedLately {
    checksums: Mutex<HashMap<Cid, u32>>,
}

impl VerifiedLately {
    /// Verify `block` against `cid`, unless these are the bytes verified lately.
    fn verify(&self, cid: &Cid, block: &[u8]) -> io::Result<()> {
        let checksum = crc32fast::hash(block);
        let lock = || self.checksums.lock().unwrap_or_else(|e| e.into_inner());
        if lock().get(cid) == Some(&checksum) {
            return Ok(());
        }
        verify_block(cid, block).map_err(io::Error::other)?;
        let mut checksums = lock();
        if checksums.len() >= VERIFIED_KEPT {
            checksums.clear();
        }
        checksums.insert(*cid, checksum);
        Ok(())
    }
}

/// Bytes of recently read blocks kept per reader, so a DAG that reuses a block (zero-filled
/// stretches of a file, the same file in many directories) reads and verifies it once.
const RECENT_BYTES: usize = 4 << 20;

/// Blocks from the packs, each verified against its CID before it is handed out. Runs on a
/// blocking thread: index lookups block on the runtime it was created on.
pub struct StoredBlockReader {
    store: Arc<dyn BlockIndex>,
    packs: Packs,
    runtime: tokio::runtime::Handle,
    /// Locations looked up ahead by `prefetch`, by multihash.
    located: HashMap<Vec<u8>, BlockLocation>,
    /// The blocks `prefetch` announced, in the order they will be asked for.
    upcoming: VecDeque<Vec<u8>>,
    /// Blocks read ahead of being asked for, by multihash.
    read_ahead: HashMap<Vec<u8>, Vec<u8>>,
    /// Verified blocks recently handed out, within `RECENT_BYTES`, and their order (oldest
    /// first) for eviction.
    recent: HashMap<Cid, Vec<u8>>,
    recent_order: VecDeque<Cid>,
    recent_bytes: usize,
}

impl StoredBlockReader {
    /// Must be called within the runtime (its blocking threads included).
    pub fn new(store: Arc<dyn BlockIndex>, packs: Packs) -> Self {
        Self {
            store,
            packs,
            runtime: tokio::runtime::Handle::current(),
            located: HashMap::new(),
            upcoming: VecDeque::new(),
            read_ahead: HashMap::new(),
            recent: HashMap::new(),
            recent_order: VecDeque::new(),
            recent_bytes: 0,
        }
    }

    /// Read `multihash` and the announced blocks after it in the same pack, as many as the
    /// pack store finds worth reading together (on S3, one request instead of one per block),
    /// keeping the others for later; `None` if it was not announced.
    fn read_with_followers(&mut self, multihash: &[u8]) -> io::Result<Option<Vec<u8>>> {
        let batch_bytes = self.packs.batch_bytes();
        let Some(position) = self.upcoming.iter().position(|m| m == multihash) else {
            return Ok(None);
        };
        // Blocks announced before this one were not asked for (a range skipped them).
        self.upcoming.drain(..position);
        let Some(first) = self.located.get(multihash) else {
            return Ok(None);
        };
        let mut batch: Vec<Vec<u8>> = Vec::new();
        let mut bytes = 0;
        while let Some(next) = self.upcoming.front() {
            let Some(location) = self.located.get(next) else {
                break;
            };
            if location.pack != first.pack || (bytes > 0 && bytes + location.length > batch_bytes) {
                break;
            }
            bytes += location.length;
            if let Some(multihash) = self.upcoming.pop_front() {
                batch.push(multihash);
            }
        }
        let locations: Vec<&BlockLocation> = batch.iter().map(|m| &self.located[m]).collect();
        let mut blocks = self.packs.read_many(&first.pack, &locations)?.into_iter();
        let wanted = blocks.next();
        for (multihash, block) in batch.iter().skip(1).zip(blocks) {
            self.read_ahead.insert(multihash.clone(), block);
        }
        for multihash in &batch {
            self.located.remove(multihash);
        }
        Ok(wanted)
    }

    /// The block, not yet verified (`get_block` verifies it).
    fn read(&mut self, cid: &Cid) -> io::Result<Option<Vec<u8>>> {
        let multihash = cid.hash().to_bytes();
        if let Some(block) = self.read_ahead.remove(&multihash) {
            return Ok(Some(block));
        }
        match self.read_with_followers(&multihash) {
            Ok(Some(block)) => return Ok(Some(block)),
            Ok(None) => {}
            // A collection moved what was looked up ahead: look everything up again.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.located.clear();
                self.upcoming.clear();
            }
            Err(e) => return Err(e),
        }
        let lookup = || {
            self.runtime
                .block_on(self.store.block_location(&multihash))
                .map_err(io::Error::other)
        };
        let location = match self.located.remove(&multihash) {
            Some(location) => location,
            None => match lookup()? {
                Some(location) => location,
                None => return Ok(None),
            },
        };
        self.packs.read_relocating(&location, lookup)
    }

    fn remember(&mut self, cid: &Cid, block: &[u8]) {
        if block.len() > RECENT_BYTES / 4 || self.recent.contains_key(cid) {
            return;
        }
        self.recent_bytes += block.len();
        self.recent.insert(*cid, block.to_vec());
        self.recent_order.push_back(*cid);
        while self.recent_bytes > RECENT_BYTES {
            let Some(oldest) = self.recent_order.pop_front() else {
                break;
            };
            if let Some(old) = self.recent.remove(&oldest) {
                self.recent_bytes -= old.len();
            }
        }
    }
}

impl BlockSource for StoredBlockReader {
    fn get_block(&mut self, cid: &Cid) -> io::Result<Option<Vec<u8>>> {
        if let Some(block) = self.recent.get(cid) {
            return Ok(Some(block.clone()));
        }
        let Some(block) = self.read(cid)? else {
            return Ok(None);
        };
        // Storage could have rotted since it was written: never serve a block that lies.
        verify_block(cid, &block).map_err(io::Error::other)?;
        self.remember(cid, &block);
        Ok(Some(block))
    }

    fn has_block(&mut self, cid: &Cid) -> io::Result<bool> {
        self.runtime
            .block_on(self.store.has_block(&cid.hash().to_bytes()))
            .map_err(io::Error::other)
    }

    fn block_size(&mut self, cid: &Cid) -> io::Result<Option<u64>> {
        let location = self
            .runtime
            .block_on(self.store.block_location(&cid.hash().to_bytes()))
            .map_err(io::Error::other)?;
        Ok(location.map(|l| l.length))
    }

    /// From the index (one lookup, no read): what it recorded when the block was stored. A
    /// block with links is read next, from the location looked up here.
    fn known_without_links(&mut self, cid: &Cid) -> io::Result<bool> {
        let multihash = cid.hash().to_bytes();
        if let Some(location) = self.located.get(&multihash) {
            return Ok(location.without_links);
        }
        let location = self
            .runtime
            .block_on(self.store.block_location(&multihash))
            .map_err(io::Error::other)?;
        match location {
            Some(location) if !location.without_links => {
                self.located.insert(multihash, location);
                Ok(false)
            }
            location => Ok(location.is_some()),
        }
    }

    /// One index query for a node's children instead of one per block; their bytes are then
    /// read in runs (see `read_with_followers`).
    fn prefetch(&mut self, cids: &[Cid]) -> io::Result<()> {
        // What is already at hand needs no lookup (a DAG that reuses blocks asks again).
        let wanted: Vec<Vec<u8>> = cids
            .iter()
            .filter(|c| !self.recent.contains_key(c))
            .map(|c| c.hash().to_bytes())
            .filter(|m| !self.located.contains_key(m) && !self.read_ahead.contains_key(m))
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let found = self
            .runtime
            .block_on(self.store.block_locations(&wanted))
            .map_err(io::Error::other)?;
        self.located.extend(found);
        // Only where reading together pays (see `BlobStore::batch_bytes`).
        if self.packs.batch_bytes() > 0 {
            self.upcoming.extend(wanted);
        }
        Ok(())
    }
}
