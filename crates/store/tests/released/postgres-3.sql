-- postgres migration 3 as released (commit 985a14e, crates/store/src/postgres.rs).
-- Rate limits that nodes sharing the database count together: one token bucket per
-- (account, endpoint class).
CREATE TABLE rate_buckets (
    account_id BIGINT NOT NULL,
    endpoint TEXT NOT NULL,
    tokens DOUBLE PRECISION NOT NULL,
    refilled_ms BIGINT NOT NULL,
    granted BIGINT NOT NULL,
    PRIMARY KEY (account_id, endpoint)
);
