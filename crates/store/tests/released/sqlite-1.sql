-- sqlite migration 1 as released (commit 985a14e, crates/store/src/sqlite.rs).
CREATE TABLE accounts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    upload_limit INTEGER NOT NULL,
    quota INTEGER,
    stored_bytes INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);
CREATE TABLE tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    prefix TEXT NOT NULL,
    hash BLOB NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE TABLE operations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    upload_id TEXT NOT NULL UNIQUE,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT NOT NULL,
    progress REAL NOT NULL,
    cid TEXT,
    error_code TEXT,
    error_message TEXT,
    name TEXT NOT NULL,
    size INTEGER NOT NULL,
    mime_type TEXT NOT NULL,
    archive_mode TEXT,
    profile TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    completed_at INTEGER
);
CREATE INDEX operations_by_account ON operations(account_id, id DESC);
CREATE TABLE packs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE blocks (
    multihash BLOB PRIMARY KEY,
    pack_id INTEGER NOT NULL REFERENCES packs(id),
    offset INTEGER NOT NULL,
    length INTEGER NOT NULL
) WITHOUT ROWID;
