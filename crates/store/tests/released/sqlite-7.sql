-- sqlite migration 7 as on main before the backends were folded (commit 4f5433b, crates/store/src/sqlite.rs).
-- The provide log is the completed uploads in completion order; each node keeps how far it
-- has provided them, and when its last reprovide sweep (over distinct roots) started.
CREATE INDEX operations_completed ON operations(completed_at, id)
    WHERE status = 'completed' AND cid IS NOT NULL;
CREATE INDEX operations_roots ON operations(cid) WHERE status = 'completed';
CREATE TABLE provide_progress (
    peer_id TEXT PRIMARY KEY,
    completed_at INTEGER NOT NULL,
    operation_id INTEGER NOT NULL,
    last_sweep_at INTEGER
);
