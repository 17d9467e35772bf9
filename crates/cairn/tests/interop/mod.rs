//! The npm clients the interoperability tests drive (`@helia/verified-fetch`, ipfs-car,
//! tus-js-client), pinned by `package-lock.json` and installed with `npm ci` on PyPI's Node 22
//! into `target/tmp/interop`, with the scripts that drive them beside them.
#![allow(dead_code)] // each test binary drives a different client

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use cairn_test_support::node;

/// Installed once per test binary, and again only when the lock file changed.
pub fn clients() -> &'static node::Installed {
    static INSTALLED: OnceLock<node::Installed> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop");
        let scripts = ["verified_fetch.mjs", "tus_js.mjs"];
        node::npm_ci(&node::NODE_22, "interop", &sources, &scripts, &[])
    })
}

/// `node SCRIPT` for one of the scripts beside the clients (`verified_fetch.mjs`, `tus_js.mjs`).
pub fn script(name: &str) -> Command {
    let clients = clients();
    let mut command = Command::new(&clients.node);
    command.arg(clients.dir.join(name));
    command
}

/// `ipfs-car` (its command line, run on the same Node).
pub fn ipfs_car() -> Command {
    let clients = clients();
    let mut command = Command::new(&clients.node);
    command.arg(bin(&clients.dir, "ipfs-car"));
    command
}

fn bin(dir: &Path, name: &str) -> PathBuf {
    dir.join("node_modules/.bin").join(name)
}
