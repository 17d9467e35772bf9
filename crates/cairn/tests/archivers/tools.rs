//! The archivers the corpus runs, found on the machine or installed on first use (once per test
//! binary): Debian packages with `apt-get` when the tests run as root, and npm packages (pinned
//! by `package-lock.json`, on PyPI's Node 22) into the target directory. A tool that cannot be had fails the test with
//! its name and how to get it: no case is ever skipped.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cairn_test_support::node;

/// Each program the corpus runs, and the Debian package that provides it.
const DEBIAN: &[(&[&str], &str)] = &[
    (&["tar"], "tar"),
    (&["bsdtar"], "libarchive-tools"),
    (&["zip"], "zip"),
    // Debian 12's 7-Zip is `7zz`; later releases also name it `7z`.
    (&["7zz", "7z"], "7zip"),
    (&["git"], "git"),
    (&["gzip"], "gzip"),
    (&["bzip2"], "bzip2"),
    (&["xz"], "xz-utils"),
    (&["zstd"], "zstd"),
    (&["python3"], "python3"),
];

pub struct Tools {
    /// 7-Zip, by whichever name the machine has it.
    pub seven_zip: PathBuf,
    /// npm's `tar` and `archiver` with `pack.mjs` beside them, and the Node to run it with.
    pub npm: node::Installed,
}

/// The tools, installed by the first caller; the others wait for it.
pub fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        install_debian_packages();
        Tools {
            seven_zip: ["7zz", "7z"]
                .iter()
                .find_map(|name| on_path(name))
                .expect("7-Zip was just installed"),
            npm: install_npm_packages(),
        }
    })
}

pub use cairn_test_support::on_path;

fn install_debian_packages() {
    let missing: Vec<(&str, &str)> = DEBIAN
        .iter()
        .filter(|(names, _)| names.iter().all(|n| on_path(n).is_none()))
        .map(|(names, package)| (names[0], *package))
        .collect();
    if missing.is_empty() {
        return;
    }
    let wanted = missing
        .iter()
        .map(|(name, package)| format!("{name} (Debian package {package})"))
        .collect::<Vec<_>>()
        .join(", ");
    let packages: Vec<&str> = missing.iter().map(|(_, package)| *package).collect();
    if let Err(why) = cairn_test_support::debian::install(&packages) {
        panic!("the archiver corpus needs {wanted}: {why}");
    }
}

/// npm's `tar` and `archiver`, from `archivers/package-lock.json`, with `pack.mjs` beside them.
fn install_npm_packages() -> node::Installed {
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/archivers");
    node::npm_ci(
        &node::NODE_22,
        "archivers-node",
        &sources,
        &["pack.mjs"],
        &[],
    )
}
