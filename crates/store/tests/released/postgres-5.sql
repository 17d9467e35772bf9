-- postgres migration 5 as on main before the backends were folded (commit 4f5433b, crates/store/src/postgres.rs).
-- The provide log is the completed uploads in completion order; each node keeps how far it
-- has provided them, and when its last reprovide sweep (over distinct roots) started.
CREATE INDEX operations_completed ON operations(completed_at, id)
    WHERE status = 'completed' AND cid IS NOT NULL;
CREATE INDEX operations_roots ON operations(cid) WHERE status = 'completed';
CREATE TABLE provide_progress (
    peer_id TEXT PRIMARY KEY,
    completed_at BIGINT NOT NULL,
    operation_id BIGINT NOT NULL,
    last_sweep_at BIGINT
);
