//! The upload host's IPFS Pinning Service API (`/pins`) against the API's official compliance
//! tool (npm `@ipfs-shipyard/pinning-service-compliance`, run by `tests/pinning/`): a fresh
//! `cairn serve` passes all nine checks, response shapes validated against the spec.

mod pinning;
use cairn_harness::server;

#[test]
fn the_pinning_service_api_passes_the_official_compliance_checks() {
    let dir = tempfile::tempdir().unwrap();
    // With its IPFS node (on loopback, joining nobody): a `PinStatus` names at least one
    // delegate, the node's own address.
    let running = server::start(dir.path(), &["--p2p-listen", "/ip4/127.0.0.1/tcp/0"]);
    let report = pinning::run_compliance(&running.upload, &running.token);
    assert_eq!(report.total, pinning::CHECKS, "{report}");
    assert!(report.all_passed(), "{report}");
}
