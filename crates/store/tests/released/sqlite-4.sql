-- sqlite migration 4 as released (commit 985a14e, crates/store/src/sqlite.rs).
-- One writer per TUS upload across nodes: a lease, renewed while held (see server tus/lock.rs).
CREATE TABLE upload_leases (
    upload_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    until_ms INTEGER NOT NULL,
    stop_requested INTEGER NOT NULL
);
