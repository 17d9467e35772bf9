//! The schema as numbered steps, written once for both databases. Never edit a released step:
//! add a new one at the end.
//!
//! The words that differ are placeholders, filled in from [`Dialect::column`]. How a backend
//! records which steps a database has (SQLite's `PRAGMA user_version`, PostgreSQL's
//! `cairn_schema` table) is its own; see `sqlite.rs` and `postgres.rs`.

use super::dialect::{Column, Dialect};

const STEPS: &[&str] = &[
    r#"
CREATE TABLE accounts (
    id {id},
    name TEXT NOT NULL UNIQUE,
    upload_limit {int} NOT NULL,
    quota {int},
    stored_bytes {int} NOT NULL DEFAULT 0,
    created_at {int} NOT NULL
);
CREATE TABLE tokens (
    id {id},
    account_id {int} NOT NULL REFERENCES accounts(id),
    prefix TEXT NOT NULL,
    hash {blob} NOT NULL UNIQUE,
    created_at {int} NOT NULL,
    revoked_at {int}
);
CREATE TABLE operations (
    id {id},
    upload_id TEXT NOT NULL UNIQUE,
    account_id {int} NOT NULL REFERENCES accounts(id),
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT NOT NULL,
    progress {real} NOT NULL,
    cid TEXT,
    error_code TEXT,
    error_message TEXT,
    name TEXT NOT NULL,
    size {int} NOT NULL,
    mime_type TEXT NOT NULL,
    archive_mode TEXT,
    profile TEXT NOT NULL,
    created_at {int} NOT NULL,
    updated_at {int} NOT NULL,
    completed_at {int}
);
CREATE INDEX operations_by_account ON operations(account_id, id DESC);
CREATE TABLE packs (
    id {id},
    name TEXT NOT NULL UNIQUE,
    size {int} NOT NULL,
    created_at {int} NOT NULL
);
CREATE TABLE blocks (
    multihash {blob} PRIMARY KEY,
    pack_id {int} NOT NULL REFERENCES packs(id),
    "offset" {int} NOT NULL,
    length {int} NOT NULL
){keyed_by_primary_key};
"#,
    r#"
ALTER TABLE operations ADD COLUMN claimed_by TEXT;
ALTER TABLE operations ADD COLUMN claimed_until {int};
CREATE INDEX operations_queue ON operations(status, id);
"#,
    r#"
-- An operation is claimable once its bytes are all there (TUS uploads fill in over time).
ALTER TABLE operations ADD COLUMN ready {int} NOT NULL DEFAULT 1;
CREATE TABLE tus_uploads (
    id TEXT PRIMARY KEY,
    account_id {int} NOT NULL REFERENCES accounts(id),
    operation_id {int} REFERENCES operations(id),
    length {int},
    metadata TEXT NOT NULL,
    concat TEXT,
    parts TEXT,
    state TEXT NOT NULL,
    created_at {int} NOT NULL,
    expires_at {int} NOT NULL
);
CREATE INDEX tus_uploads_expiry ON tus_uploads(state, expires_at);
"#,
    r#"
-- One writer per TUS upload across nodes: a lease, renewed while held (see server tus/lock.rs).
CREATE TABLE upload_leases (
    upload_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    until_ms {int} NOT NULL,
    stop_requested {int} NOT NULL
);
"#,
    r#"
-- Rate limits that nodes sharing the database count together: one token bucket per
-- (account, endpoint class).
CREATE TABLE rate_buckets (
    account_id {int} NOT NULL,
    endpoint TEXT NOT NULL,
    tokens {real} NOT NULL,
    refilled_ms {int} NOT NULL,
    granted {int} NOT NULL,
    PRIMARY KEY (account_id, endpoint)
);
"#,
    r#"
-- The IPFS nodes of this service, each refreshing its row while it runs, so that delegated
-- routing on any node names them all as providers.
CREATE TABLE nodes (
    peer_id TEXT PRIMARY KEY,
    addrs TEXT NOT NULL,
    gateway TEXT,
    seen_at {int} NOT NULL
);
"#,
    r#"
-- The provide log is the completed uploads in completion order; each node keeps how far it
-- has provided them, and when its last reprovide sweep (over distinct roots) started.
CREATE INDEX operations_completed ON operations(completed_at, id)
    WHERE status = 'completed' AND cid IS NOT NULL;
CREATE INDEX operations_roots ON operations(cid) WHERE status = 'completed';
CREATE TABLE provide_progress (
    peer_id TEXT PRIMARY KEY,
    completed_at {int} NOT NULL,
    operation_id {int} NOT NULL,
    last_sweep_at {int}
);
"#,
    r#"
-- Uploads and pins are what an account keeps, until it deletes them. Pins by CID are
-- operations too (kind 'pin', their requestid the upload_id), so one list shows both.
ALTER TABLE operations ADD COLUMN dag_size {int};
ALTER TABLE operations ADD COLUMN deleted_at {int};
ALTER TABLE operations ADD COLUMN origins TEXT NOT NULL DEFAULT '';
ALTER TABLE operations ADD COLUMN meta TEXT NOT NULL DEFAULT '{}';
CREATE INDEX operations_kept ON operations(account_id, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX operations_kept_by_root ON operations(account_id, cid) WHERE deleted_at IS NULL;
-- The quota counts each distinct root an account keeps once, at its DAG's size: `refs` is how
-- many of the account's live uploads and pins have that root.
CREATE TABLE account_roots (
    account_id {int} NOT NULL REFERENCES accounts(id),
    cid TEXT NOT NULL,
    dag_size {int} NOT NULL,
    refs {int} NOT NULL,
    PRIMARY KEY (account_id, cid)
);
-- One row, whose lock keeps a collection's transaction and the commits that keep roots apart.
CREATE TABLE collector (id {int} PRIMARY KEY);
INSERT INTO collector (id) VALUES (1);
-- Packs a collection removed from the index, until their blobs are deleted.
CREATE TABLE dead_packs (name TEXT PRIMARY KEY);
-- Earlier releases did not record a DAG's size: the bytes uploaded stand in for it.
UPDATE operations SET dag_size = size WHERE status = 'completed' AND cid IS NOT NULL;
INSERT INTO account_roots (account_id, cid, dag_size, refs)
    SELECT account_id, cid, MAX(dag_size), COUNT(*) FROM operations
     WHERE status = 'completed' AND cid IS NOT NULL GROUP BY account_id, cid;
UPDATE accounts SET stored_bytes = COALESCE(
    (SELECT SUM(dag_size) FROM account_roots WHERE account_roots.account_id = accounts.id), 0);
"#,
    r#"
-- IPNI: each node signs and publishes its own advertisement chain (as each provides all
-- content to the DHT). Its blocks, its head and how far it has followed the provide log and
-- the deletions, and the roots it has advertised (a removal names only those).
CREATE TABLE ipni_blocks (
    peer_id TEXT NOT NULL,
    cid TEXT NOT NULL,
    bytes {blob} NOT NULL,
    PRIMARY KEY (peer_id, cid)
);
CREATE TABLE ipni_chains (
    peer_id TEXT PRIMARY KEY,
    head TEXT,
    completed_at {int} NOT NULL,
    completed_id {int} NOT NULL,
    deleted_at {int} NOT NULL,
    deleted_id {int} NOT NULL
);
CREATE TABLE ipni_contexts (
    peer_id TEXT NOT NULL,
    cid TEXT NOT NULL,
    PRIMARY KEY (peer_id, cid)
);
-- The deletions in order, which removal advertisements follow.
CREATE INDEX operations_deleted ON operations(deleted_at, id) WHERE deleted_at IS NOT NULL;
"#,
    r#"
-- A dag-pb block that links to nothing (a CIDv0 file's leaf): walks that need only names skip
-- reading it. NULL for blocks stored before this was recorded (they are read).
ALTER TABLE blocks ADD COLUMN without_links {int};
"#,
    r#"
-- What `GET /pins` counts (an account's live uploads and pins that have a root), by status,
-- kept by triggers on every change: the Pinning Service API answers every page with the
-- number of matches, and counting a million rows took 110 ms.
CREATE TABLE kept_counts (
    account_id {int} PRIMARY KEY REFERENCES accounts(id),
    pending {int} NOT NULL DEFAULT 0,
    processing {int} NOT NULL DEFAULT 0,
    completed {int} NOT NULL DEFAULT 0,
    failed {int} NOT NULL DEFAULT 0
);
INSERT INTO kept_counts (account_id, pending, processing, completed, failed)
    SELECT account_id,
           SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END),
           SUM(CASE WHEN status = 'processing' THEN 1 ELSE 0 END),
           SUM(CASE WHEN status = 'completed' THEN 1 ELSE 0 END),
           SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END)
      FROM operations WHERE deleted_at IS NULL AND cid IS NOT NULL GROUP BY account_id;
{kept_counts_triggers}
-- Counting a window of time (`before`, `after`) and a status reads only this index.
CREATE INDEX operations_pins ON operations(account_id, created_at, id, status)
    WHERE deleted_at IS NULL AND cid IS NOT NULL;
"#,
    r#"
-- Keys limited to what they may do (every token made before is `all`), upload links, and the
-- key-values uploads and pins are tagged with (kept in `meta`; indexed here to be found).
ALTER TABLE tokens ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN scopes TEXT NOT NULL DEFAULT 'all';
ALTER TABLE tokens ADD COLUMN expires_at {int};
ALTER TABLE tokens ADD COLUMN max_uses {int};
ALTER TABLE tokens ADD COLUMN uses {int} NOT NULL DEFAULT 0;
ALTER TABLE tokens ADD COLUMN last_used_at {int};
ALTER TABLE tokens ADD COLUMN origins TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN max_upload_bytes {int};
CREATE INDEX tokens_by_account ON tokens(account_id, id);
CREATE TABLE upload_links (
    id TEXT PRIMARY KEY,
    hash {blob} NOT NULL UNIQUE,
    account_id {int} NOT NULL REFERENCES accounts(id),
    created_by {int} NOT NULL REFERENCES tokens(id),
    created_at {int} NOT NULL,
    expires_at {int} NOT NULL,
    max_bytes {int},
    mime_types TEXT NOT NULL,
    name TEXT,
    keyvalues TEXT NOT NULL,
    archive_mode TEXT,
    uploads {int} NOT NULL,
    uses {int} NOT NULL DEFAULT 0,
    revoked_at {int}
);
CREATE INDEX upload_links_by_account ON upload_links(account_id, created_at);
-- Who began an upload: the key (an upload-only key reads the operations it began) or the link.
ALTER TABLE operations ADD COLUMN key_id {int};
ALTER TABLE operations ADD COLUMN link_id TEXT;
ALTER TABLE tus_uploads ADD COLUMN link_id TEXT;
-- One row per key-value of a live upload or pin, newest first within a pair, so that a filter
-- reads the matches in the order a page lists them; `rooted` when it has a root CID, so that
-- `GET /pins` counts a pair's matches in an index of its own.
CREATE TABLE keyvalues (
    account_id {int} NOT NULL,
    k TEXT NOT NULL,
    v TEXT NOT NULL,
    created_at {int} NOT NULL,
    operation_id {int} NOT NULL,
    rooted {int} NOT NULL,
    PRIMARY KEY (account_id, k, v, created_at, operation_id)
){keyed_by_primary_key};
CREATE INDEX keyvalues_by_operation ON keyvalues(operation_id);
CREATE INDEX keyvalues_rooted ON keyvalues(account_id, k, v) WHERE rooted = 1;
{keyvalues_from_meta}
"#,
    r#"
-- What happened to an account's uploads and pins, in the order it committed: written by
-- triggers on `operations` (no write path can forget one), read by the event streams and
-- fanned out into webhook deliveries by a trigger of its own, in the same transaction.
CREATE TABLE events (
    id {id},
    account_id {int} NOT NULL,
    type TEXT NOT NULL,
    operation_id {int} NOT NULL,
    created_at {int} NOT NULL
);
CREATE INDEX events_by_account ON events(account_id, id);
CREATE INDEX events_by_time ON events(created_at);
-- `events` holds the types subscribed to between commas (`,upload.completed,pin.pinned,`);
-- the secret signs every delivery, so it is kept as it is (like the node's key).
CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    account_id {int} NOT NULL REFERENCES accounts(id),
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    description TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at {int} NOT NULL,
    deleted_at {int}
);
CREATE INDEX webhooks_by_account ON webhooks(account_id, created_at);
-- One event for one endpoint: the durable queue of sends, claimed with a lease as operations
-- are, so a node that dies holding one leaves it to another.
CREATE TABLE webhook_deliveries (
    id {id},
    webhook_id TEXT NOT NULL,
    event_id {int} NOT NULL,
    status TEXT NOT NULL,
    attempts {int} NOT NULL DEFAULT 0,
    next_attempt_at {int} NOT NULL,
    -- Retried until then (24 hours after it was queued, or retried by hand).
    expires_at {int} NOT NULL,
    claimed_by TEXT,
    claimed_until {int},
    created_at {int} NOT NULL,
    updated_at {int} NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries(webhook_id, id);
CREATE TABLE webhook_attempts (
    delivery_id {int} NOT NULL,
    attempt {int} NOT NULL,
    at {int} NOT NULL,
    duration_ms {int} NOT NULL,
    response_status {int},
    error TEXT,
    PRIMARY KEY (delivery_id, attempt)
);
-- Bytes the gateway and Bitswap sent of an account's content, per calendar month (YYYY-MM).
CREATE TABLE served_bytes (
    account_id {int} NOT NULL,
    month TEXT NOT NULL,
    bytes {int} NOT NULL,
    PRIMARY KEY (account_id, month)
);
{events_triggers}
"#,
    r#"
-- IPNS names an account keeps (see `names.rs`): the label is what the account calls one.
CREATE TABLE names (
    name TEXT PRIMARY KEY,
    account_id {int} NOT NULL REFERENCES accounts(id),
    label TEXT,
    sealed_key {blob} NOT NULL,
    value TEXT NOT NULL,
    sequence {int} NOT NULL,
    record {blob} NOT NULL,
    expires_at {int} NOT NULL,
    created_at {int} NOT NULL,
    updated_at {int} NOT NULL,
    deleted_at {int}
);
CREATE INDEX names_by_account ON names(account_id, created_at);
CREATE UNIQUE INDEX names_by_label ON names(account_id, label)
    WHERE deleted_at IS NULL AND label IS NOT NULL;
CREATE INDEX names_expiring ON names(expires_at) WHERE deleted_at IS NULL;
-- Verified records of names kept elsewhere, pushed to the router: the best one per name.
CREATE TABLE ipns_records (
    name TEXT PRIMARY KEY,
    record {blob} NOT NULL,
    sequence {int} NOT NULL,
    expires_at {int} NOT NULL,
    received_at {int} NOT NULL
);
CREATE INDEX ipns_records_expiring ON ipns_records(expires_at);
"#,
    r#"
-- The reprovide cycle goes through the DHT's keyspace region by region, each region at its
-- time in the 22 hours: a node keeps when its current pass began and how far along the
-- keyspace it has reached (the first 64 bits of a place in it, stored as a signed integer).
-- A sweep that began at S made the next one due at S + 22 h: that is when its pass begins.
ALTER TABLE provide_progress RENAME COLUMN last_sweep_at TO pass_began_at;
ALTER TABLE provide_progress ADD COLUMN pass_reached {int} NOT NULL DEFAULT 0;
UPDATE provide_progress SET pass_began_at = pass_began_at + 79200000
 WHERE pass_began_at IS NOT NULL;
"#,
    r#"
-- Webhook deliveries follow the event log: one dispatcher at a time (the lease) reads the
-- events after `through_event_id`, sends them, and writes each delivery's row with its first
-- attempt while moving the cursor, in one transaction. An upload's commit writes nothing for
-- webhooks any more (a trigger queued a row per delivery in it). Deliveries queued that way
-- and still pending are retried as before; the cursor starts after them.
{drop_webhooks_trigger}
CREATE TABLE webhook_dispatch (
    id {int} PRIMARY KEY,
    through_event_id {int} NOT NULL,
    claimed_by TEXT,
    claimed_until {int}
);
INSERT INTO webhook_dispatch (id, through_event_id) SELECT 1, COALESCE(MAX(id), 0) FROM events;
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries(event_id, webhook_id);
"#,
    r#"
-- What an upload's bytes were found to be (a file, an archive, a CAR) and an archive's
-- format, set when they are looked at: at once for a POST, when processed for a TUS upload,
-- whose detection reads the file name its uploader sent.
ALTER TABLE operations ADD COLUMN file_name TEXT;
ALTER TABLE operations ADD COLUMN stored_as TEXT;
ALTER TABLE operations ADD COLUMN archive_format TEXT;
-- The uploads sent through a link, newest first (`GET /api/uploads?link=ID`).
CREATE INDEX operations_by_link ON operations(link_id, created_at DESC, id DESC)
    WHERE link_id IS NOT NULL;
"#,
];

/// Every step, in order, in one database's words.
pub fn steps(dialect: Dialect) -> Vec<String> {
    let placeholders = [
        ("{id}", dialect.column(Column::Id).to_owned()),
        ("{int}", dialect.column(Column::Int).to_owned()),
        ("{real}", dialect.column(Column::Real).to_owned()),
        ("{blob}", dialect.column(Column::Blob).to_owned()),
        (
            "{keyed_by_primary_key}",
            dialect.column(Column::KeyedByPrimaryKey).to_owned(),
        ),
        ("{kept_counts_triggers}", dialect.kept_counts_triggers()),
        ("{keyvalues_from_meta}", dialect.keyvalues_triggers()),
        ("{events_triggers}", dialect.events_triggers()),
        (
            "{drop_webhooks_trigger}",
            dialect.drop_webhooks_trigger().to_owned(),
        ),
    ];
    STEPS
        .iter()
        .map(|step| {
            placeholders
                .iter()
                .fold(step.to_string(), |sql, (placeholder, words)| {
                    sql.replace(placeholder, words)
                })
        })
        .collect()
}
