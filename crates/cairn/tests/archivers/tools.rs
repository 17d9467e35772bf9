//! The archivers the corpus runs, found on the machine or installed on first use (once per test
//! binary): Debian packages with `apt-get` when the tests run as root, and npm packages (pinned
//! in `package.json`) into the target directory. A tool that cannot be had fails the test with
//! its name and how to get it: no case is ever skipped.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

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
    (&["node"], "nodejs"),
    (&["npm"], "npm"),
];

pub struct Tools {
    /// 7-Zip, by whichever name the machine has it.
    pub seven_zip: PathBuf,
    /// Where npm's `tar` and `archiver` are installed, with `pack.mjs` beside them.
    pub node_dir: PathBuf,
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
            node_dir: install_npm_packages(),
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

fn install_npm_packages() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("archivers-node");
    std::fs::create_dir_all(&dir).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/archivers");
    for file in ["package.json", "pack.mjs"] {
        std::fs::copy(source.join(file), dir.join(file)).unwrap();
    }
    // Written once the install succeeded, naming what was installed, so a change is reinstalled.
    let manifest = std::fs::read(dir.join("package.json")).unwrap();
    let installed = dir.join(".installed");
    if std::fs::read(&installed).ok() != Some(manifest.clone()) {
        let output = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .output()
            .expect("run npm");
        assert!(
            output.status.success(),
            "npm install of the archiver corpus's packages (tar, archiver) failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        std::fs::write(&installed, manifest).unwrap();
    }
    dir
}
