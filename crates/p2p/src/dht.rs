//! The Kademlia DHT, as Kubo runs it: a dual DHT. The WAN DHT (`/ipfs/kad/1.0.0`) holds
//! peers at public addresses; the LAN DHT (`/ipfs/lan/kad/1.0.0`) peers at private and
//! loopback ones. Peers enter a routing table only through Identify, with the addresses of
//! the table's kind, and only if they speak its protocol.
//!
//! The LAN DHT always serves (as Kubo's does); the WAN DHT serves once the node has a
//! confirmed public address (`--p2p-announce`), and is a client otherwise.
//!
//! What this node provides is kept in the metadata store, never here: Kademlia's own store
//! would hold every provided key in memory and republish them itself (`MemoryStore` caps
//! them at 1024 by default). [`ProviderRecords`] keeps only other peers' records, bounded;
//! the provide queue (re)announces this node's from the database.

use std::borrow::Cow;
use std::num::NonZeroUsize;
use std::time::{Duration, SystemTime};

use libp2p::kad::store::{self, MemoryStore, MemoryStoreConfig, RecordStore};
use libp2p::kad::{self, ProviderRecord, Record, RecordKey};
use libp2p::multiaddr::Protocol;
use libp2p::{Multiaddr, PeerId, StreamProtocol};

use crate::ipns::{self, Name};

pub const WAN_PROTOCOL: StreamProtocol = StreamProtocol::new("/ipfs/kad/1.0.0");
pub const LAN_PROTOCOL: StreamProtocol = StreamProtocol::new("/ipfs/lan/kad/1.0.0");

/// How long other peers keep this node's provider records (Kubo's is 48 h); the queue
/// reprovides every 22 h, well within it.
pub const PROVIDER_RECORD_TTL: Duration = Duration::from_secs(48 * 3600);

/// Keys of other peers' provider records held at once.
const MAX_PROVIDER_KEYS: usize = 100_000;

/// IPNS records held at once: this node's names' and those peers put (10 KiB at most each).
const MAX_RECORDS: usize = 20_000;

pub type Kademlia = kad::Behaviour<ProviderRecords>;

/// One of the two DHTs.
pub fn behaviour(local: PeerId, protocol: StreamProtocol, lan: bool) -> Kademlia {
    let mut config = kad::Config::new(protocol);
    config
        .set_provider_publication_interval(None)
        .set_provider_record_ttl(Some(PROVIDER_RECORD_TTL))
        .set_query_timeout(Duration::from_secs(60))
        .set_kbucket_inserts(kad::BucketInserts::Manual)
        // Records other peers put are checked before they are kept (`acceptable`); this
        // hands provider records to the node too, which keeps them as they come.
        .set_record_filtering(kad::StoreInserts::FilterBoth);
    let mut dht = kad::Behaviour::with_config(local, ProviderRecords::new(local), config);
    if lan {
        dht.set_mode(Some(kad::Mode::Server));
    }
    dht
}

/// Whether an address belongs in the LAN DHT (loopback, private, link-local) rather than
/// the WAN one.
pub fn is_lan(addr: &Multiaddr) -> bool {
    match addr.iter().next() {
        Some(Protocol::Ip4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Some(Protocol::Ip6(ip)) => {
            ip.is_loopback() || (ip.segments()[0] & 0xfe00) == 0xfc00 || ip.is_unicast_link_local()
        }
        // Names resolve to public addresses in practice.
        _ => false,
    }
}

/// The key under which a block is provided: its multihash, as Kubo announces it.
pub fn provider_key(cid: &cairn_unixfs::Cid) -> RecordKey {
    RecordKey::new(&cid.hash().to_bytes())
}

/// A Kademlia `ADD_PROVIDER` message telling that `provider`, at `addrs`, provides `key` (a
/// multihash), framed as the protocol frames messages: its length as a varint first. The
/// fields are the DHT's protobuf `Message` (type 1, key 2, providerPeers 9) and `Peer`
/// (id 1, addrs 2).
pub fn add_provider_message(key: &[u8], provider: &PeerId, addrs: &[Multiaddr]) -> Vec<u8> {
    use crate::protobuf::{put_bytes, put_varint, put_varint_field};
    const ADD_PROVIDER: u64 = 2;
    let mut peer = Vec::new();
    put_bytes(&mut peer, 1, &provider.to_bytes());
    for addr in addrs {
        put_bytes(&mut peer, 2, &addr.to_vec());
    }
    let mut message = Vec::new();
    put_varint_field(&mut message, 1, ADD_PROVIDER);
    put_bytes(&mut message, 2, key);
    put_bytes(&mut message, 9, &peer);
    let mut framed = Vec::with_capacity(message.len() + 2);
    put_varint(&mut framed, message.len() as u64);
    framed.extend(message);
    framed
}

/// Whether to keep a record a peer put: only IPNS records, valid now, and newer than the one
/// kept (Kubo's validator does the same; the DHT's other namespaces are gone or not ours).
pub fn acceptable(record: &Record, kept: Option<&Record>) -> bool {
    let Some(name) = Name::from_routing_key(record.key.as_ref()) else {
        return false;
    };
    let now = SystemTime::now();
    let Ok(new) = ipns::Record::verify(&name, &record.value, now) else {
        return false;
    };
    match kept.map(|kept| ipns::Record::verify(&name, &kept.value, now)) {
        Some(Ok(old)) => new.supersedes(&old),
        _ => true,
    }
}

/// Kademlia's record store without this node's own provider records (which live in the
/// metadata store), and bounded in the others it keeps.
pub struct ProviderRecords {
    local: PeerId,
    inner: MemoryStore,
}

impl ProviderRecords {
    fn new(local: PeerId) -> Self {
        let config = MemoryStoreConfig {
            max_provided_keys: MAX_PROVIDER_KEYS,
            max_providers_per_key: NonZeroUsize::new(20).map_or(20, NonZeroUsize::get),
            max_records: MAX_RECORDS,
            max_value_bytes: ipns::MAX_RECORD_BYTES,
        };
        Self {
            local,
            inner: MemoryStore::with_config(local, config),
        }
    }
}

impl RecordStore for ProviderRecords {
    type RecordsIter<'a> = <MemoryStore as RecordStore>::RecordsIter<'a>;
    type ProvidedIter<'a> = std::iter::Empty<Cow<'a, ProviderRecord>>;

    fn get(&self, key: &RecordKey) -> Option<Cow<'_, Record>> {
        self.inner.get(key)
    }

    fn put(&mut self, record: Record) -> store::Result<()> {
        self.inner.put(record)
    }

    fn remove(&mut self, key: &RecordKey) {
        self.inner.remove(key)
    }

    fn records(&self) -> Self::RecordsIter<'_> {
        self.inner.records()
    }

    fn add_provider(&mut self, record: ProviderRecord) -> store::Result<()> {
        if record.provider == self.local {
            return Ok(());
        }
        self.inner.add_provider(record)
    }

    fn providers(&self, key: &RecordKey) -> Vec<ProviderRecord> {
        self.inner.providers(key)
    }

    fn provided(&self) -> Self::ProvidedIter<'_> {
        std::iter::empty()
    }

    fn remove_provider(&mut self, key: &RecordKey, provider: &PeerId) {
        self.inner.remove_provider(key, provider)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_sort_into_the_dht_of_their_kind() {
        for (addr, lan) in [
            ("/ip4/127.0.0.1/tcp/4001", true),
            ("/ip4/10.1.2.3/tcp/4001", true),
            ("/ip4/192.168.1.9/udp/4001/quic-v1", true),
            ("/ip4/203.0.113.7/tcp/4001", false),
            ("/ip6/::1/tcp/4001", true),
            ("/ip6/fd00::1/tcp/4001", true),
            ("/ip6/2001:db8::1/tcp/4001", false),
            ("/dns/example.net/tcp/4001", false),
        ] {
            assert_eq!(is_lan(&addr.parse().unwrap()), lan, "{addr}");
        }
    }

    #[test]
    fn this_nodes_own_provider_records_are_not_kept_in_memory() {
        let (local, other) = (PeerId::random(), PeerId::random());
        let mut store = ProviderRecords::new(local);
        let key = RecordKey::new(b"some multihash");
        store
            .add_provider(ProviderRecord::new(key.clone(), local, vec![]))
            .unwrap();
        store
            .add_provider(ProviderRecord::new(key.clone(), other, vec![]))
            .unwrap();
        let providers: Vec<PeerId> = store.providers(&key).iter().map(|r| r.provider).collect();
        assert_eq!(providers, [other]);
        assert_eq!(store.provided().count(), 0);
    }
}
