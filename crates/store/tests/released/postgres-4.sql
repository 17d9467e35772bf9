-- postgres migration 4 as on main before the backends were folded (commit 4f5433b, crates/store/src/postgres.rs).
-- The IPFS nodes of this service, each refreshing its row while it runs, so that delegated
-- routing on any node names them all as providers.
CREATE TABLE nodes (
    peer_id TEXT PRIMARY KEY,
    addrs TEXT NOT NULL,
    gateway TEXT,
    seen_at BIGINT NOT NULL
);
