//! The live nodes ([`crate::Nodes`]).

use super::*;

pub(super) async fn nodes_are_named_while_they_announce_themselves(store: &dyn MetadataStore) {
    use crate::model::NodeRecord;
    let node = |peer_id: &str, seen_at_ms: i64| NodeRecord {
        peer_id: peer_id.to_owned(),
        addrs: vec![
            "/ip4/10.0.0.1/tcp/4001".to_owned(),
            "/ip4/10.0.0.1/udp/4001/quic-v1".to_owned(),
        ],
        gateway: Some("/dns/up.example/tcp/443/tls/http".to_owned()),
        seen_at_ms,
    };
    store
        .announce_node(&node("12D3KooWA", 1_000))
        .await
        .unwrap();
    store
        .announce_node(&node("12D3KooWB", 1_500))
        .await
        .unwrap();
    assert_eq!(
        store.live_nodes(0).await.unwrap(),
        vec![node("12D3KooWA", 1_000), node("12D3KooWB", 1_500)]
    );
    // A node that stops announcing drops out; one that announces again is refreshed in place.
    let mut moved = node("12D3KooWA", 2_000);
    moved.addrs = vec!["/ip4/10.0.0.2/tcp/4001".to_owned()];
    moved.gateway = None;
    store.announce_node(&moved).await.unwrap();
    assert_eq!(store.live_nodes(1_800).await.unwrap(), vec![moved]);
    store.forget_node("12D3KooWA").await.unwrap();
    store.forget_node("12D3KooWB").await.unwrap();
    assert!(store.live_nodes(0).await.unwrap().is_empty());
}
