-- Rows as the released PostgreSQL schema holds them (see tests/support/released.rs).
INSERT INTO accounts (name, upload_limit, quota, stored_bytes, created_at)
    VALUES ('released', 1000, 5000, 5, 1);
INSERT INTO tokens (account_id, prefix, hash, created_at) VALUES (1, 'crn_rel', '\x1111111111111111111111111111111111111111111111111111111111111111'::bytea, 2);
INSERT INTO packs (name, size, created_at) VALUES ('released.car', 100, 3);
INSERT INTO blocks (multihash, pack_id, "offset", length) VALUES ('\x12202222222222222222222222222222222222222222222222222222222222222222'::bytea, 1, 40, 5);
INSERT INTO operations (upload_id, account_id, kind, status, status_message, progress, cid,
    name, size, mime_type, profile, created_at, updated_at, completed_at)
    VALUES ('released-upload', 1, 'upload', 'completed', 'stored', 100, 'bafyreleased', 'a.txt', 5,
    'text/plain', 'unixfs-v1-2025', 4, 4, 4);
INSERT INTO rate_buckets (account_id, endpoint, tokens, refilled_ms, granted)
    VALUES (1, 'released', 2.5, 5, 1);
INSERT INTO nodes (peer_id, addrs, gateway, seen_at)
    VALUES ('12D3released', '/ip4/10.0.0.1/tcp/4001', NULL, 8);
INSERT INTO provide_progress (peer_id, completed_at, operation_id, last_sweep_at)
    VALUES ('12D3released', 4, 1, NULL);
