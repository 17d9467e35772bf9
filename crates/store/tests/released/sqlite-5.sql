-- sqlite migration 5 as released (commit 985a14e, crates/store/src/sqlite.rs).
-- Rate limits that nodes sharing the database count together: one token bucket per
-- (account, endpoint class).
CREATE TABLE rate_buckets (
    account_id INTEGER NOT NULL,
    endpoint TEXT NOT NULL,
    tokens REAL NOT NULL,
    refilled_ms INTEGER NOT NULL,
    granted INTEGER NOT NULL,
    PRIMARY KEY (account_id, endpoint)
);
