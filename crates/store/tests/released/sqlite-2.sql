-- sqlite migration 2 as released (commit 985a14e, crates/store/src/sqlite.rs).
ALTER TABLE operations ADD COLUMN claimed_by TEXT;
ALTER TABLE operations ADD COLUMN claimed_until INTEGER;
CREATE INDEX operations_queue ON operations(status, id);
