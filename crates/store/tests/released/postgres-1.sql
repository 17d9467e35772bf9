-- postgres migration 1 as released (commit 985a14e, crates/store/src/postgres.rs).
CREATE TABLE accounts (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    upload_limit BIGINT NOT NULL,
    quota BIGINT,
    stored_bytes BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL
);
CREATE TABLE tokens (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    prefix TEXT NOT NULL,
    hash BYTEA NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE TABLE operations (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    upload_id TEXT NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT NOT NULL,
    progress DOUBLE PRECISION NOT NULL,
    cid TEXT,
    error_code TEXT,
    error_message TEXT,
    name TEXT NOT NULL,
    size BIGINT NOT NULL,
    mime_type TEXT NOT NULL,
    archive_mode TEXT,
    profile TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    completed_at BIGINT,
    claimed_by TEXT,
    claimed_until BIGINT,
    -- An operation is claimable once its bytes are all there (TUS uploads fill in over time).
    ready BIGINT NOT NULL DEFAULT 1
);
CREATE INDEX operations_by_account ON operations(account_id, id DESC);
CREATE INDEX operations_queue ON operations(status, id);
CREATE TABLE packs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    size BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE TABLE blocks (
    multihash BYTEA PRIMARY KEY,
    pack_id BIGINT NOT NULL REFERENCES packs(id),
    "offset" BIGINT NOT NULL,
    length BIGINT NOT NULL
);
CREATE TABLE tus_uploads (
    id TEXT PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    operation_id BIGINT REFERENCES operations(id),
    length BIGINT,
    metadata TEXT NOT NULL,
    concat TEXT,
    parts TEXT,
    state TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX tus_uploads_expiry ON tus_uploads(state, expires_at);
