-- sqlite migration 3 as released (commit 985a14e, crates/store/src/sqlite.rs).
-- An operation is claimable once its bytes are all there (TUS uploads fill in over time).
ALTER TABLE operations ADD COLUMN ready INTEGER NOT NULL DEFAULT 1;
CREATE TABLE tus_uploads (
    id TEXT PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    operation_id INTEGER REFERENCES operations(id),
    length INTEGER,
    metadata TEXT NOT NULL,
    concat TEXT,
    parts TEXT,
    state TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX tus_uploads_expiry ON tus_uploads(state, expires_at);
