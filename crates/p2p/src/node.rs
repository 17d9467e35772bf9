//! The libp2p node: one task owns the [`Swarm`] and all of its state; the rest of Cairn talks to
//! it through a cloneable [`NodeHandle`] that sends commands over a bounded channel and gets
//! answers on oneshot channels (rust-libp2p's file-sharing example is the pattern).
//!
//! Transports: TCP, QUIC (`/quic-v1`) and WebSocket (`/ws`, for browsers), with DNS for
//! `/dnsaddr` bootstrap peers; Noise and Yamux; Identify and Ping. Peers may use RSA, Ed25519,
//! secp256k1 or ECDSA keys. Nothing is dialled that the configuration does not name.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use libp2p::core::transport::ListenerId;
use libp2p::identity::Keypair;
use libp2p::swarm::dial_opts::DialOpts;
use libp2p::swarm::{ConnectionId, NetworkBehaviour, SwarmEvent};
use libp2p::{
    allow_block_list, connection_limits, identify, noise, ping, tcp, yamux, Multiaddr, PeerId,
    Swarm,
};
use tokio::sync::{mpsc, oneshot, watch};

use cairn_unixfs::Cid;
use libp2p::kad::store::RecordStore;
use libp2p::kad::{self, QueryId};

use crate::bitswap::{Bitswap, BitswapLimits};
use crate::blocks::Blockstore;
use crate::dht;

/// How long a cut-off peer stays refused.
const BLOCKED_FOR: Duration = Duration::from_secs(600);

/// Everything the node is started with.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    pub listen: Vec<Multiaddr>,
    /// Addresses to tell others instead of the listen ones (public addresses behind NAT).
    pub announce: Vec<Multiaddr>,
    /// Peers dialled at start (with their `/p2p/` id).
    pub bootstrap: Vec<Multiaddr>,
    pub max_connections: u32,
    pub bitswap: BitswapLimits,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            listen: vec![
                "/ip4/127.0.0.1/tcp/4001".parse().expect("valid multiaddr"),
                "/ip4/127.0.0.1/udp/4001/quic-v1"
                    .parse()
                    .expect("valid multiaddr"),
            ],
            announce: Vec::new(),
            bootstrap: Vec::new(),
            max_connections: 1024,
            bitswap: BitswapLimits::default(),
        }
    }
}

/// The well-known bootstrap peers of the public IPFS network (Kubo's default list).
pub fn public_bootstrap() -> Vec<Multiaddr> {
    [
        "/dnsaddr/bootstrap.libp2p.io/p2p/QmNnooDu7bfjPFoTZYxMNLWUQJyrVwtbZg5gBMjTezGAJN",
        "/dnsaddr/bootstrap.libp2p.io/p2p/QmQCU2EcMqAqQPR2i9bChDtGNJchTbq5TbXJJ16u19uLTa",
        "/dnsaddr/bootstrap.libp2p.io/p2p/QmbLHAnMoJPWSCR5Zhtx6BHJX9KiKNN6tpvbUcqanj75Nb",
        "/dnsaddr/bootstrap.libp2p.io/p2p/QmcZf59bWwK5XFi76CZX8cbJ4BhTzzA3gU1ZjYZcYW3dwt",
        "/dnsaddr/va1.bootstrap.libp2p.io/p2p/12D3KooWKnDdG3iXw9eTFijk3EWSunZcFi54Zka4wmtqtt6rPxc8",
        "/ip4/104.131.131.82/tcp/4001/p2p/QmaCpDMGvV2BGHeYERUEnRQAwe3N8SzbUtfsmvsqQLuvuJ",
        "/ip4/104.131.131.82/udp/4001/quic-v1/p2p/QmaCpDMGvV2BGHeYERUEnRQAwe3N8SzbUtfsmvsqQLuvuJ",
    ]
    .iter()
    .filter_map(|a| a.parse().ok())
    .collect()
}

/// Why the node could not start or do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("cannot listen on {addr}: {reason}")]
    Listen { addr: Multiaddr, reason: String },
    #[error("building the libp2p transports: {0}")]
    Transport(String),
    #[error("cannot dial {addr}: {reason}")]
    Dial { addr: Multiaddr, reason: String },
    #[error("the node has stopped")]
    Stopped,
}

#[derive(NetworkBehaviour)]
struct Behaviour {
    limits: connection_limits::Behaviour,
    blocked: allow_block_list::Behaviour<allow_block_list::BlockedPeers>,
    identify: identify::Behaviour,
    ping: ping::Behaviour,
    stream: libp2p_stream::Behaviour,
    wan: dht::Kademlia,
    lan: dht::Kademlia,
}

enum Command {
    Dial {
        addr: Multiaddr,
        reply: oneshot::Sender<Result<PeerId, NodeError>>,
    },
    ConnectedPeers(oneshot::Sender<Vec<PeerId>>),
    /// Ask both DHTs who provides a block, and connect to them; answers those connected.
    ConnectProviders {
        cid: Cid,
        reply: oneshot::Sender<Vec<PeerId>>,
    },
    /// Announce this node as a provider of a block in both DHTs; answers how many peers
    /// took part (0: the routing tables are empty).
    Provide {
        cid: Cid,
        reply: oneshot::Sender<usize>,
    },
    /// The peers of one DHT closest to a key (a lookup), with their addresses.
    ClosestPeers {
        dht: Dht,
        key: Vec<u8>,
        reply: oneshot::Sender<Vec<kad::PeerInfo>>,
    },
    /// The DHTs whose routing tables have peers.
    ServingDhts(oneshot::Sender<Vec<Dht>>),
    /// Be connected to a peer, dialling it at `addrs` if not.
    Connect {
        peer: PeerId,
        addrs: Vec<Multiaddr>,
        reply: oneshot::Sender<Result<PeerId, NodeError>>,
    },
    /// Put a record in both DHTs (and this node's stores, which answer peers' gets); answers
    /// how many peers took it.
    PutRecord {
        record: kad::Record,
        reply: oneshot::Sender<usize>,
    },
    /// Ask both DHTs for the records under a key: each value found is sent as it arrives,
    /// and the sender dropped when the queries end.
    GetRecord {
        key: kad::RecordKey,
        found: mpsc::Sender<Vec<u8>>,
    },
    /// A cut-off peer may connect again.
    Unblock(PeerId),
    Shutdown,
}

/// One of the two DHTs (see [`dht`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dht {
    Lan,
    Wan,
}

impl Dht {
    fn protocol(self) -> libp2p::StreamProtocol {
        match self {
            Dht::Lan => dht::LAN_PROTOCOL,
            Dht::Wan => dht::WAN_PROTOCOL,
        }
    }
}

/// A handle on the running node; cheap to clone.
#[derive(Clone)]
pub struct NodeHandle {
    peer_id: PeerId,
    commands: mpsc::Sender<Command>,
    /// Opens the streams this node sends provider records on.
    streams: libp2p_stream::Control,
    dht_peers: watch::Receiver<usize>,
    bitswap: Bitswap,
    listening: Vec<Multiaddr>,
    announced: Vec<Multiaddr>,
    key: Keypair,
}

impl NodeHandle {
    pub fn peer_id(&self) -> PeerId {
        self.peer_id
    }

    /// The addresses the node listens on, as bound (ports resolved).
    pub fn listen_addrs(&self) -> &[Multiaddr] {
        &self.listening
    }

    /// The node's key, which signs what it publishes beyond libp2p (IPNI advertisements).
    pub fn key(&self) -> &Keypair {
        &self.key
    }

    /// What the node tells others: the announce addresses, else the listen ones.
    pub fn announced_addrs(&self) -> &[Multiaddr] {
        &self.announced
    }

    pub fn bitswap(&self) -> &Bitswap {
        &self.bitswap
    }

    pub async fn connected_peers(&self) -> Result<Vec<PeerId>, NodeError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::ConnectedPeers(reply)).await?;
        answer.await.map_err(|_| NodeError::Stopped)
    }

    /// Connect to `addr` and wait until the connection is up; returns the peer's id.
    pub async fn dial(&self, addr: Multiaddr) -> Result<PeerId, NodeError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Dial { addr, reply }).await?;
        answer.await.map_err(|_| NodeError::Stopped)?
    }

    /// Announce this node as a provider of `cid` in the DHTs. `Ok(0)`: no DHT peer was known
    /// (provide again once [`NodeHandle::dht_peers`] is not zero).
    pub async fn provide(&self, cid: Cid) -> Result<usize, NodeError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Provide { cid, reply }).await?;
        answer.await.map_err(|_| NodeError::Stopped)
    }

    /// The DHTs whose routing tables have peers: those a provide reaches.
    pub async fn serving_dhts(&self) -> Result<Vec<Dht>, NodeError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::ServingDhts(reply)).await?;
        answer.await.map_err(|_| NodeError::Stopped)
    }

    /// The peers of `dht` closest to `key` (at most [`crate::keyspace::K`]), with the addresses the
    /// lookup learnt; found by one lookup, which places `key` where its SHA-256 is.
    pub async fn closest_peers(
        &self,
        dht: Dht,
        key: Vec<u8>,
    ) -> Result<Vec<(PeerId, Vec<Multiaddr>)>, NodeError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::ClosestPeers { dht, key, reply }).await?;
        let peers = answer.await.map_err(|_| NodeError::Stopped)?;
        Ok(peers.into_iter().map(|p| (p.peer_id, p.addrs)).collect())
    }

    /// This node's provider record for `key` (a multihash), with its announced addresses:
    /// an `ADD_PROVIDER` message, framed. The same for every peer, so made once a key and
    /// sent, several to a peer, by [`NodeHandle::send_provider_records`].
    pub fn provider_record(&self, key: &[u8]) -> Vec<u8> {
        dht::add_provider_message(key, &self.peer_id, &self.announced)
    }

    /// Send `peer` of `dht` `records`, [`NodeHandle::provider_record`]s one after another,
    /// on one stream, as Kubo's sweeping provider sends them; `addrs` are where to dial it if
    /// it is not connected. Nothing is answered to those messages: the stream closing cleanly
    /// is all there is to know.
    pub async fn send_provider_records(
        &self,
        dht: Dht,
        peer: PeerId,
        addrs: Vec<Multiaddr>,
        records: &[u8],
    ) -> Result<(), String> {
        use futures::AsyncWriteExt;
        let (reply, answer) = oneshot::channel();
        self.send(Command::Connect { peer, addrs, reply })
            .await
            .map_err(|e| e.to_string())?;
        answer
            .await
            .map_err(|_| NodeError::Stopped.to_string())?
            .map_err(|e| e.to_string())?;
        let mut stream = self
            .streams
            .clone()
            .open_stream(peer, dht.protocol())
            .await
            .map_err(|e| e.to_string())?;
        stream.write_all(records).await.map_err(|e| e.to_string())?;
        stream.close().await.map_err(|e| e.to_string())
    }

    /// Put `value` under `key` in the DHTs until `expires`: the peers that took it (0 when the
    /// routing tables are empty; this node keeps it and answers peers' gets either way).
    pub async fn put_record(
        &self,
        key: Vec<u8>,
        value: Vec<u8>,
        expires: std::time::Instant,
    ) -> Result<usize, NodeError> {
        let mut record = kad::Record::new(key, value);
        record.expires = Some(expires);
        let (reply, answer) = oneshot::channel();
        self.send(Command::PutRecord { record, reply }).await?;
        answer.await.map_err(|_| NodeError::Stopped)
    }

    /// The values the DHTs hold under `key`, as they arrive (this node's own first, if it
    /// has one); the stream ends when the lookups do. Unchecked: the caller verifies them.
    pub async fn get_record(&self, key: Vec<u8>) -> Result<mpsc::Receiver<Vec<u8>>, NodeError> {
        let (found, values) = mpsc::channel(16);
        self.send(Command::GetRecord {
            key: kad::RecordKey::new(&key),
            found,
        })
        .await?;
        Ok(values)
    }

    /// Look up the providers of `cid` in both DHTs and connect to them: the providers now
    /// connected and identified, ready for wants (none when the routing tables are empty).
    pub async fn connect_providers(&self, cid: Cid) -> Result<Vec<PeerId>, NodeError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::ConnectProviders { cid, reply }).await?;
        answer.await.map_err(|_| NodeError::Stopped)
    }

    /// Peers in the DHTs' routing tables (LAN and WAN), watched.
    pub fn dht_peers(&self) -> watch::Receiver<usize> {
        self.dht_peers.clone()
    }

    /// Stop the node (its connections close).
    pub async fn shutdown(&self) {
        let _ = self.commands.send(Command::Shutdown).await;
    }

    async fn send(&self, command: Command) -> Result<(), NodeError> {
        self.commands
            .send(command)
            .await
            .map_err(|_| NodeError::Stopped)
    }
}

/// Start the node: bind every listen address (failing if any cannot be bound), dial the
/// bootstrap peers, and serve Bitswap from `blocks`.
pub async fn start(
    key: Keypair,
    config: NodeConfig,
    blocks: std::sync::Arc<dyn Blockstore>,
) -> Result<NodeHandle, NodeError> {
    let peer_id = key.public().to_peer_id();
    let stream = libp2p_stream::Behaviour::new();
    let control = stream.new_control();
    let streams = stream.new_control();
    let transport = |e: &dyn std::fmt::Display| NodeError::Transport(e.to_string());
    let identify = identify::Behaviour::new(
        identify::Config::new("ipfs/0.1.0".into(), key.public())
            .with_agent_version(format!("cairn/{}", env!("CARGO_PKG_VERSION")))
            .with_push_listen_addr_updates(true),
    );
    let limits = connection_limits::ConnectionLimits::default()
        .with_max_established(Some(config.max_connections))
        .with_max_established_per_peer(Some(8))
        .with_max_pending_incoming(Some(128));
    let behaviour = Behaviour {
        limits: connection_limits::Behaviour::new(limits),
        blocked: allow_block_list::Behaviour::default(),
        identify,
        ping: ping::Behaviour::default(),
        stream,
        wan: dht::behaviour(peer_id, dht::WAN_PROTOCOL, false),
        lan: dht::behaviour(peer_id, dht::LAN_PROTOCOL, true),
    };
    let mut swarm = libp2p::SwarmBuilder::with_existing_identity(key.clone())
        .with_tokio()
        .with_tcp(
            tcp::Config::default().nodelay(true),
            noise::Config::new,
            yamux::Config::default,
        )
        .map_err(|e| transport(&e))?
        .with_quic()
        .with_dns()
        .map_err(|e| transport(&e))?
        .with_websocket(noise::Config::new, yamux::Config::default)
        .await
        .map_err(|e| transport(&e))?
        .with_behaviour(|_| behaviour)
        .map_err(|e| transport(&e))?
        .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(120)))
        .build();

    let listening = listen(&mut swarm, &config.listen).await?;
    let announced = if config.announce.is_empty() {
        listening.clone()
    } else {
        config.announce.clone()
    };
    // Kademlia puts the external addresses in the provider records it sends, and Kubo drops a
    // record without addresses ("no valid addresses"): with no announce addresses the listen
    // ones are what this node tells others, in records too.
    for addr in &announced {
        swarm.add_external_address(addr.clone());
    }
    for addr in &config.bootstrap {
        if let Err(e) = swarm.dial(addr.clone()) {
            tracing::warn!(%addr, error = %e, "dialling a bootstrap peer failed");
        }
    }
    let (commands, receiver) = mpsc::channel(64);
    let (cut_off, cut_offs) = mpsc::unbounded_channel();
    let (dht_peers_tx, dht_peers) = watch::channel(0);
    let bitswap = Bitswap::start(control, blocks, config.bitswap.clone(), cut_off);
    let task = Task {
        swarm,
        commands: receiver,
        cut_offs,
        own_commands: commands.clone(),
        dht_peers: dht_peers_tx,
        dials: HashMap::new(),
        provides: HashMap::new(),
        gets: HashMap::new(),
        closest: HashMap::new(),
        lookups: HashMap::new(),
        lookup_queries: HashMap::new(),
        lookup_dials: HashMap::new(),
        next_lookup: 0,
    };
    tokio::spawn(task.run());
    Ok(NodeHandle {
        peer_id,
        commands,
        streams,
        dht_peers,
        bitswap,
        listening,
        announced,
        key,
    })
}

/// Listen on every address and wait until each is bound.
async fn listen(
    swarm: &mut Swarm<Behaviour>,
    addrs: &[Multiaddr],
) -> Result<Vec<Multiaddr>, NodeError> {
    let mut waiting: HashMap<ListenerId, Multiaddr> = HashMap::new();
    for addr in addrs {
        let id = swarm
            .listen_on(addr.clone())
            .map_err(|e| listen_error(addr.clone(), &e))?;
        waiting.insert(id, addr.clone());
    }
    let mut bound = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !waiting.is_empty() {
        let event = tokio::time::timeout_at(deadline, swarm.select_next_some())
            .await
            .map_err(|_| NodeError::Listen {
                addr: waiting
                    .values()
                    .next()
                    .cloned()
                    .unwrap_or_else(Multiaddr::empty),
                reason: "no address was bound within 10 s".into(),
            })?;
        match event {
            SwarmEvent::NewListenAddr {
                listener_id,
                address,
            } => {
                waiting.remove(&listener_id);
                bound.push(address);
            }
            SwarmEvent::ListenerError { listener_id, error } => {
                if let Some(addr) = waiting.remove(&listener_id) {
                    return Err(listen_error(addr, &error));
                }
            }
            SwarmEvent::ListenerClosed {
                listener_id,
                reason,
                ..
            } => {
                if let Some(addr) = waiting.remove(&listener_id) {
                    return Err(match reason {
                        Ok(()) => NodeError::Listen {
                            addr,
                            reason: "the listener closed".to_owned(),
                        },
                        Err(e) => listen_error(addr, &e),
                    });
                }
            }
            _ => {}
        }
    }
    Ok(bound)
}

/// Why `addr` could not be listened on. Transport errors wrap the cause, and some say
/// nothing themselves: every message in the chain is told.
fn listen_error(addr: Multiaddr, error: &(dyn std::error::Error + 'static)) -> NodeError {
    let mut messages: Vec<String> = Vec::new();
    let mut cause = Some(error);
    while let Some(error) = cause {
        let message = error.to_string();
        if !message.is_empty() && !messages.iter().any(|m| m.contains(&message)) {
            messages.push(message);
        }
        cause = error.source();
    }
    let reason = if messages.is_empty() {
        "the transport gave no reason".to_owned()
    } else {
        messages.join(": ")
    };
    NodeError::Listen { addr, reason }
}

/// A provider lookup under way: the two DHTs' queries, the dials to the providers they found
/// (made as each is found: the addresses a query learns are forgotten when it ends), the
/// providers connected but not identified yet, and those ready: identified, so that wants
/// are not the first thing a fresh connection carries (Kubo left some of those unanswered in
/// our tests; see the ignored DHT pin test in `crates/cairn/tests/network.rs`).
struct Finding {
    reply: oneshot::Sender<Vec<PeerId>>,
    queries: Vec<QueryId>,
    dialling: Vec<ConnectionId>,
    identifying: Vec<PeerId>,
    ready: Vec<PeerId>,
}

/// A provide or a record put under way: the two DHTs' queries, and the peers they reached.
struct Providing {
    reply: Option<oneshot::Sender<usize>>,
    queries: Vec<QueryId>,
    peers: usize,
}

/// The task that owns the swarm, and what it tracks.
struct Task {
    swarm: Swarm<Behaviour>,
    commands: mpsc::Receiver<Command>,
    cut_offs: mpsc::UnboundedReceiver<PeerId>,
    own_commands: mpsc::Sender<Command>,
    dht_peers: watch::Sender<usize>,
    dials: HashMap<ConnectionId, (Multiaddr, oneshot::Sender<Result<PeerId, NodeError>>)>,
    /// Provides and record puts under way: the slot of each query in `providing`.
    provides: HashMap<QueryId, usize>,
    /// Record lookups under way: where each query's values go.
    gets: HashMap<QueryId, mpsc::Sender<Vec<u8>>>,
    /// Closest-peer lookups under way.
    closest: HashMap<QueryId, oneshot::Sender<Vec<kad::PeerInfo>>>,
    /// Provider lookups under way, by number; the lookup of each query and dial.
    lookups: HashMap<u64, Finding>,
    lookup_queries: HashMap<QueryId, u64>,
    lookup_dials: HashMap<ConnectionId, u64>,
    next_lookup: u64,
}

impl Task {
    async fn run(mut self) {
        let mut providing: Vec<Option<Providing>> = Vec::new();
        loop {
            tokio::select! {
                command = self.commands.recv() => match command {
                    None | Some(Command::Shutdown) => break,
                    Some(command) => self.command(command, &mut providing),
                },
                // A peer that broke Bitswap's limits: disconnected and refused for a while.
                Some(peer) = self.cut_offs.recv() => cut_off(&mut self.swarm, peer, &self.own_commands),
                event = self.swarm.select_next_some() => self.event(event, &mut providing),
            }
        }
        tracing::info!("the libp2p node stopped");
    }

    fn command(&mut self, command: Command, providing: &mut Vec<Option<Providing>>) {
        match command {
            Command::Dial { addr, reply } => {
                let opts = DialOpts::unknown_peer_id().address(addr.clone()).build();
                self.dial(opts, addr, reply);
            }
            Command::ConnectedPeers(reply) => {
                let _ = reply.send(self.swarm.connected_peers().copied().collect());
            }
            Command::ConnectProviders { cid, reply } => {
                let key = dht::provider_key(&cid);
                let behaviour = self.swarm.behaviour_mut();
                let mut queries = Vec::new();
                for dht in [&mut behaviour.lan, &mut behaviour.wan] {
                    if routing_table_size(dht) > 0 {
                        queries.push(dht.get_providers(key.clone()));
                    }
                }
                if queries.is_empty() {
                    let _ = reply.send(Vec::new());
                    return;
                }
                let lookup = self.next_lookup;
                self.next_lookup += 1;
                for query in &queries {
                    self.lookup_queries.insert(*query, lookup);
                }
                self.lookups.insert(
                    lookup,
                    Finding {
                        reply,
                        queries,
                        dialling: Vec::new(),
                        identifying: Vec::new(),
                        ready: Vec::new(),
                    },
                );
            }
            Command::Provide { cid, reply } => {
                let key = dht::provider_key(&cid);
                let behaviour = self.swarm.behaviour_mut();
                let mut queries = Vec::new();
                for dht in [&mut behaviour.lan, &mut behaviour.wan] {
                    if routing_table_size(dht) > 0 {
                        // Our own records are not stored (see `ProviderRecords`): this fails
                        // only if the store refuses, which it does not for local records.
                        if let Ok(query) = dht.start_providing(key.clone()) {
                            queries.push(query);
                        }
                    }
                }
                self.track_write(queries, reply, providing);
            }
            Command::ClosestPeers { dht, key, reply } => {
                let dht = self.dht(dht);
                if routing_table_size(dht) == 0 {
                    let _ = reply.send(Vec::new());
                    return;
                }
                let query = dht.get_closest_peers(key);
                self.closest.insert(query, reply);
            }
            Command::ServingDhts(reply) => {
                let serving = [Dht::Lan, Dht::Wan]
                    .into_iter()
                    .filter(|which| routing_table_size(self.dht(*which)) > 0)
                    .collect();
                let _ = reply.send(serving);
            }
            Command::Connect { peer, addrs, reply } => {
                if self.swarm.is_connected(&peer) {
                    let _ = reply.send(Ok(peer));
                    return;
                }
                let first = addrs.first().cloned().unwrap_or_else(Multiaddr::empty);
                self.dial(
                    DialOpts::peer_id(peer).addresses(addrs).build(),
                    first,
                    reply,
                );
            }
            Command::PutRecord { record, reply } => {
                let behaviour = self.swarm.behaviour_mut();
                let mut queries = Vec::new();
                for dht in [&mut behaviour.lan, &mut behaviour.wan] {
                    match dht.put_record(record.clone(), kad::Quorum::One) {
                        Ok(query) => queries.push(query),
                        Err(e) => tracing::warn!(error = %e, "a record could not be kept"),
                    }
                }
                self.track_write(queries, reply, providing);
            }
            Command::GetRecord { key, found } => {
                let behaviour = self.swarm.behaviour_mut();
                // This node's own copy first: a name it keeps resolves with no peer at all.
                for dht in [&mut behaviour.lan, &mut behaviour.wan] {
                    if let Some(record) = dht.store_mut().get(&key) {
                        let _ = found.try_send(record.value.clone());
                        break;
                    }
                }
                for dht in [&mut behaviour.lan, &mut behaviour.wan] {
                    if routing_table_size(dht) > 0 {
                        self.gets.insert(dht.get_record(key.clone()), found.clone());
                    }
                }
            }
            Command::Unblock(peer) => {
                self.swarm.behaviour_mut().blocked.unblock_peer(peer);
            }
            Command::Shutdown => {}
        }
    }

    fn event(&mut self, event: SwarmEvent<BehaviourEvent>, providing: &mut Vec<Option<Providing>>) {
        match event {
            SwarmEvent::ConnectionEstablished {
                peer_id,
                connection_id,
                ..
            } => {
                if let Some((_, reply)) = self.dials.remove(&connection_id) {
                    let _ = reply.send(Ok(peer_id));
                }
                self.lookup_dial_ended(connection_id, Some(peer_id));
            }
            SwarmEvent::OutgoingConnectionError {
                connection_id,
                error,
                ..
            } => {
                if let Some((addr, reply)) = self.dials.remove(&connection_id) {
                    let _ = reply.send(Err(NodeError::Dial {
                        addr,
                        reason: error.to_string(),
                    }));
                }
                self.lookup_dial_ended(connection_id, None);
            }
            SwarmEvent::Behaviour(BehaviourEvent::Identify(identify::Event::Received {
                peer_id,
                info,
                ..
            })) => {
                tracing::debug!(%peer_id, agent = %info.agent_version, "identified a peer");
                self.stop_waiting_for(peer_id, true);
                let behaviour = self.swarm.behaviour_mut();
                let speaks = |p: &libp2p::StreamProtocol| info.protocols.contains(p);
                for addr in &info.listen_addrs {
                    if dht::is_lan(addr) && speaks(&dht::LAN_PROTOCOL) {
                        behaviour.lan.add_address(&peer_id, addr.clone());
                    } else if !dht::is_lan(addr) && speaks(&dht::WAN_PROTOCOL) {
                        behaviour.wan.add_address(&peer_id, addr.clone());
                    }
                }
                self.count_dht_peers();
            }
            SwarmEvent::ConnectionClosed {
                peer_id,
                num_established: 0,
                ..
            } => self.stop_waiting_for(peer_id, false),
            SwarmEvent::Behaviour(BehaviourEvent::Lan(event)) => {
                self.dht_event(event, Dht::Lan, providing);
            }
            SwarmEvent::Behaviour(BehaviourEvent::Wan(event)) => {
                self.dht_event(event, Dht::Wan, providing);
            }
            _ => {}
        }
    }

    fn dht_event(&mut self, event: kad::Event, which: Dht, providing: &mut Vec<Option<Providing>>) {
        match event {
            kad::Event::RoutingUpdated { .. } => self.count_dht_peers(),
            kad::Event::InboundRequest {
                request:
                    kad::InboundRequest::PutRecord {
                        record: Some(record),
                        ..
                    },
            } => {
                let dht = self.dht(which);
                let kept = dht.store_mut().get(&record.key).map(|r| r.into_owned());
                if dht::acceptable(&record, kept.as_ref()) {
                    let _ = dht.store_mut().put(record);
                }
            }
            // Filtering records filters provider records too: those are kept as they come
            // (the store bounds them).
            kad::Event::InboundRequest {
                request:
                    kad::InboundRequest::AddProvider {
                        record: Some(record),
                    },
            } => {
                let dht = self.dht(which);
                let _ = dht.store_mut().add_provider(record);
            }
            kad::Event::OutboundQueryProgressed {
                id,
                result: kad::QueryResult::GetRecord(result),
                step,
                ..
            } => {
                if let Ok(kad::GetRecordOk::FoundRecord(found)) = result {
                    if let Some(values) = self.gets.get(&id) {
                        let _ = values.try_send(found.record.value);
                    }
                }
                if step.last {
                    self.gets.remove(&id);
                }
            }
            kad::Event::OutboundQueryProgressed {
                id,
                result: kad::QueryResult::PutRecord(result),
                stats,
                step,
            } if step.last => {
                if let Err(e) = &result {
                    tracing::debug!(error = %e, "a record put ended without success");
                }
                self.write_ended(id, stats.num_successes() as usize, providing);
            }
            kad::Event::OutboundQueryProgressed {
                id,
                result: kad::QueryResult::GetClosestPeers(result),
                step,
                ..
            } if step.last => {
                if let Some(reply) = self.closest.remove(&id) {
                    // A lookup that timed out still answers the closest peers it reached.
                    let peers = match result {
                        Ok(kad::GetClosestPeersOk { peers, .. }) => peers,
                        Err(kad::GetClosestPeersError::Timeout { peers, .. }) => peers,
                    };
                    let _ = reply.send(peers);
                }
            }
            kad::Event::OutboundQueryProgressed {
                id,
                result: kad::QueryResult::GetProviders(result),
                step,
                ..
            } => {
                let Some(&lookup) = self.lookup_queries.get(&id) else {
                    return;
                };
                if let Ok(kad::GetProvidersOk::FoundProviders { providers, .. }) = result {
                    for peer in providers {
                        self.connect_provider(lookup, peer);
                    }
                }
                if step.last {
                    self.lookup_queries.remove(&id);
                    if let Some(finding) = self.lookups.get_mut(&lookup) {
                        finding.queries.retain(|q| *q != id);
                    }
                    self.finish_lookup_if_done(lookup);
                }
            }
            kad::Event::OutboundQueryProgressed {
                id,
                result: kad::QueryResult::StartProviding(result),
                stats,
                step,
            } if step.last => {
                if let Err(e) = &result {
                    tracing::debug!(error = %e, "a provide query ended without success");
                }
                self.write_ended(id, stats.num_successes() as usize, providing);
            }
            _ => {}
        }
    }

    fn dht(&mut self, which: Dht) -> &mut dht::Kademlia {
        let behaviour = self.swarm.behaviour_mut();
        match which {
            Dht::Lan => &mut behaviour.lan,
            Dht::Wan => &mut behaviour.wan,
        }
    }

    /// Dial with `opts`; `reply` is answered when the connection is up or the dial failed
    /// (`addr` names it then).
    fn dial(
        &mut self,
        opts: DialOpts,
        addr: Multiaddr,
        reply: oneshot::Sender<Result<PeerId, NodeError>>,
    ) {
        let id = opts.connection_id();
        match self.swarm.dial(opts) {
            Ok(()) => {
                self.dials.insert(id, (addr, reply));
            }
            Err(e) => {
                let _ = reply.send(Err(NodeError::Dial {
                    addr,
                    reason: e.to_string(),
                }));
            }
        }
    }

    /// Answer `reply` with the peers `queries` reach once they have all ended (at once, 0,
    /// when there are none: the routing tables are empty, or the store refused the record).
    fn track_write(
        &mut self,
        queries: Vec<QueryId>,
        reply: oneshot::Sender<usize>,
        providing: &mut Vec<Option<Providing>>,
    ) {
        if queries.is_empty() {
            let _ = reply.send(0);
            return;
        }
        let slot = providing.len();
        for query in &queries {
            self.provides.insert(*query, slot);
        }
        providing.push(Some(Providing {
            reply: Some(reply),
            queries,
            peers: 0,
        }));
    }

    /// A provide's or a put's query ended, having reached `peers`: answer once all its
    /// queries have.
    fn write_ended(&mut self, id: QueryId, peers: usize, providing: &mut Vec<Option<Providing>>) {
        let Some(slot) = self.provides.remove(&id) else {
            return;
        };
        let Some(Some(provide)) = providing.get_mut(slot) else {
            return;
        };
        provide.peers += peers;
        provide.queries.retain(|q| *q != id);
        if provide.queries.is_empty() {
            if let Some(reply) = provide.reply.take() {
                let _ = reply.send(provide.peers);
            }
            providing[slot] = None;
            // Free the tail of finished slots.
            while matches!(providing.last(), Some(None)) {
                providing.pop();
            }
        }
    }

    /// Connect to a provider a lookup found, now, while its query still knows its addresses.
    fn connect_provider(&mut self, lookup: u64, peer: PeerId) {
        if peer == *self.swarm.local_peer_id() {
            return;
        }
        let Some(finding) = self.lookups.get_mut(&lookup) else {
            return;
        };
        if finding.ready.contains(&peer) || finding.identifying.contains(&peer) {
            return;
        }
        if self.swarm.is_connected(&peer) {
            finding.ready.push(peer);
            return;
        }
        let opts = DialOpts::peer_id(peer).build();
        let id = opts.connection_id();
        match self.swarm.dial(opts) {
            Ok(()) => {
                finding.dialling.push(id);
                self.lookup_dials.insert(id, lookup);
            }
            Err(e) => tracing::debug!(%peer, error = %e, "dialling a provider failed"),
        }
    }

    fn lookup_dial_ended(&mut self, connection: ConnectionId, peer: Option<PeerId>) {
        let Some(lookup) = self.lookup_dials.remove(&connection) else {
            return;
        };
        if let Some(finding) = self.lookups.get_mut(&lookup) {
            finding.dialling.retain(|c| *c != connection);
            if let Some(peer) = peer.filter(|p| !finding.identifying.contains(p)) {
                finding.identifying.push(peer);
            }
        }
        self.finish_lookup_if_done(lookup);
    }

    /// Lookups stop waiting for `peer` to be identified: it is ready (`identified`), or its
    /// connection closed.
    fn stop_waiting_for(&mut self, peer: PeerId, identified: bool) {
        let waiting: Vec<u64> = self
            .lookups
            .iter_mut()
            .filter(|(_, f)| f.identifying.contains(&peer))
            .map(|(lookup, f)| {
                f.identifying.retain(|p| *p != peer);
                if identified {
                    f.ready.push(peer);
                }
                *lookup
            })
            .collect();
        for lookup in waiting {
            self.finish_lookup_if_done(lookup);
        }
    }

    /// Answer a lookup once its queries and its dials have all ended.
    fn finish_lookup_if_done(&mut self, lookup: u64) {
        let done = self.lookups.get(&lookup).is_some_and(|f| {
            f.queries.is_empty() && f.dialling.is_empty() && f.identifying.is_empty()
        });
        if let Some(finding) = done.then(|| self.lookups.remove(&lookup)).flatten() {
            let _ = finding.reply.send(finding.ready);
        }
    }

    fn count_dht_peers(&mut self) {
        let behaviour = self.swarm.behaviour_mut();
        let peers = routing_table_size(&mut behaviour.lan) + routing_table_size(&mut behaviour.wan);
        self.dht_peers.send_if_modified(|known| {
            let changed = *known != peers;
            *known = peers;
            changed
        });
    }
}

fn routing_table_size(dht: &mut dht::Kademlia) -> usize {
    dht.kbuckets().map(|bucket| bucket.num_entries()).sum()
}

fn cut_off(swarm: &mut Swarm<Behaviour>, peer: PeerId, commands: &mpsc::Sender<Command>) {
    tracing::warn!(%peer, "cutting off a peer that broke the limits");
    swarm.behaviour_mut().blocked.block_peer(peer);
    let _ = swarm.disconnect_peer_id(peer);
    // Refused for a while, not forever: peer ids are cheap, and a peer may have been buggy.
    let commands = commands.clone();
    tokio::spawn(async move {
        tokio::time::sleep(BLOCKED_FOR).await;
        let _ = commands.send(Command::Unblock(peer)).await;
    });
}
