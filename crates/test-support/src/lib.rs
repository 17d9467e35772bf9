//! What Cairn's tests and benches share, as a crate of its own (never published, never in the
//! release binary): the servers and peers they start, and the tools they install.
//!
//! - [`postgres`]: the PostgreSQL server the tests use, the machine's or a throwaway one of
//!   their own, and databases on it.
//! - [`moto`], [`seaweedfs`]: S3-compatible servers (moto for the tests, SeaweedFS, faster, for
//!   the benches), from PyPI.
//! - [`pypi`], [`node`]: Python packages in virtualenvs, Node releases from PyPI, and npm
//!   packages installed from a lock file.
//! - [`kubo`]: today's Kubo, built from the Go module proxy and run as a daemon.
//! - [`tusd`]: the reference TUS server, built from the Go module proxy, for the TUS bench.
//! - [`netns`]: running a test's body in a network namespace with only loopback.
//! - [`debian`]: installing a Debian package a test needs, when the tests run as root.
//! - [`tls`]: a test certificate authority and a server certificate for `localhost`.
//! - [`vectors`]: the deterministic inputs of `shared/vectors/` (its byte generators and
//!   directory specs).
//! - [`fuzz_corpus`]: the fuzz targets' kept regressions, replayed on stable, and seeds.
//! - [`xorshift`]: the one small random generator tests share; [`noise`]: incompressible
//!   deterministic bytes from it; [`disk`]: the disk's durable write speed,
//!   what upload benches are measured against.
//!
//! It depends on none of Cairn's crates, so that each of them can test with it (hostile
//! DAGs are `cairn_car::hostile`, tiny profiles `cairn_unixfs::fuzz::tiny_profile`).
//!
//! Everything installed or started here lives under [`target_tmp`], so `cargo clean` removes
//! it, and nothing in it is shared with another checkout.

pub mod debian;
pub mod disk;
pub mod fuzz_corpus;
pub mod kubo;
pub mod moto;
pub mod netns;
pub mod node;
pub mod noise;
pub mod postgres;
pub mod pypi;
pub mod seaweedfs;
pub mod tls;
pub mod tusd;
pub mod vectors;
pub mod xorshift;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Set by hand (`CAIRN_ALLOW_SKIP=1`) to let a test that cannot run its real peer skip that
/// part instead of failing; CI never sets it.
pub const ALLOW_SKIP: &str = "CAIRN_ALLOW_SKIP";

/// A test cannot run what it needs (`missing`, saying what to install or allow): it fails,
/// unless [`ALLOW_SKIP`] is set, when it says `SKIPPED` and returns for the caller to skip.
/// No test passes by not running where nobody asked for it.
pub fn cannot_run(missing: &str) {
    if std::env::var(ALLOW_SKIP).as_deref() == Ok("1") {
        eprintln!("SKIPPED ({ALLOW_SKIP}=1): {missing}");
        return;
    }
    panic!("{missing} (set {ALLOW_SKIP}=1 by hand to skip this instead)");
}

/// The target directory's `tmp/` (what Cargo names `CARGO_TARGET_TMPDIR` to integration
/// tests): found from the running executable, whatever kind (a test or bench under
/// `<target>/<profile>/deps/`, a binary under `<target>/<profile>/`), as the nearest directory
/// above it holding the `CACHEDIR.TAG` Cargo writes at a target directory's root, so that a
/// library and a binary can use it too.
pub fn target_tmp() -> PathBuf {
    let exe = std::env::current_exe().expect("the running executable's path");
    let target = exe
        .ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .unwrap_or_else(|| panic!("{} is not under a Cargo target directory", exe.display()));
    let tmp = target.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap_or_else(|e| panic!("create {}: {e}", tmp.display()));
    tmp
}

/// Whether this process runs as root (and so may install packages and must not run
/// PostgreSQL as itself).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `name`'s full path when it is on `PATH`.
pub fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// Run `command` to its end, panicking with its output if it cannot start or fails.
pub fn checked(command: &mut Command, what: &str) -> Output {
    let output = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// [`checked`], and its stdout.
pub fn run(command: &mut Command, what: &str) -> String {
    String::from_utf8_lossy(&checked(command, what).stdout).into_owned()
}

/// Every file and directory under `dir`, by relative path, with a file's bytes.
pub fn tree(dir: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).expect("read a directory") {
            let path = entry.expect("a directory entry").path();
            let name = path
                .strip_prefix(dir)
                .expect("under dir")
                .display()
                .to_string();
            if path.is_dir() {
                out.push((name, None));
                stack.push(path);
            } else {
                out.push((name, Some(std::fs::read(&path).expect("read a file"))));
            }
        }
    }
    out.sort();
    out
}
