//! The load test's short form (`scripts/load` runs the long one): 50 clients for 20 s against
//! the real server in `cairn-load`'s realistic mix (small POSTs, TUS uploads in chunks, tar
//! archives, gateway `Range` reads, listings, polling). No request may fail, and every upload
//! the server acknowledged must read back byte for byte and be listed as kept. Latencies are
//! printed, never asserted (they depend on the machine).

use cairn_harness::server;

use std::time::Duration;

use cairn_load::Kind;

const CLIENTS: usize = 50;

#[tokio::test(flavor = "multi_thread")]
async fn fifty_clients_for_twenty_seconds_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let running = server::start(dir.path(), &[]);
    // One account per client, as fifty users would be: each account's rate limits are then
    // those of one user (a 429 would be waited out anyway, and is not an error).
    let tokens: Vec<String> = (0..CLIENTS)
        .map(|i| server::create_account(dir.path(), &format!("load-{i}"), &[]))
        .collect();

    let mut config = cairn_load::Config::new(&running.upload, &running.account, tokens);
    config.clients = CLIENTS;
    config.duration = Duration::from_secs(20);
    config.server_pid = Some(running.child.id());
    let report = cairn_load::run(config).await;
    println!("{report}");

    assert!(report.passed(), "{report}");
    for kind in [
        Kind::Post,
        Kind::Archive,
        Kind::TusCreate,
        Kind::TusPatch,
        Kind::GatewayRead,
        Kind::ListUploads,
        Kind::ListOperations,
        Kind::Poll,
        Kind::Verify,
    ] {
        assert!(
            report.kind(kind).is_some_and(|k| k.count > 0),
            "the mix never ran {kind}:\n{report}"
        );
    }
    let acknowledged = &report.acknowledged;
    assert!(
        acknowledged.posts > 0 && acknowledged.tus > 0 && acknowledged.archives > 0,
        "{report}"
    );
    // Loosely (the goal is 256 MiB with 200 clients): memory that grew with every request
    // would not stay under it.
    let server = report.server.as_ref().expect("the server's /proc status");
    assert!(server.peak < 512 << 20, "{report}");

    let (status, _) = server::terminate(running);
    assert!(status.success(), "serve exits cleanly after the load");
}
