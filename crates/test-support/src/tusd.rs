//! tusd, the reference TUS server (Go), as the benches' peer: built once from the Go module
//! proxy (`go install github.com/tus/tusd/v2/cmd/tusd@v2.9.1`) into `target/tmp/tusd-<release>/`,
//! then started on a loopback port with a file store of its own. It never syncs what it
//! writes; Cairn syncs before every `204`.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

use crate::{on_path, target_tmp};

/// The tusd release built.
pub const RELEASE: &str = "v2.9.1";

/// The `tusd` binary of [`RELEASE`], built by the first caller (others wait for it, across
/// processes too).
pub fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(build)
}

fn build() -> PathBuf {
    let dir = target_tmp().join(format!("tusd-{RELEASE}"));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    let lock = File::create(dir.join(".lock")).expect("create the build's lock file");
    lock.lock().expect("lock the tusd build");
    let binary = dir.join("tusd");
    if binary.exists() {
        return binary;
    }
    let go = on_path("go")
        .or_else(|| Some(PathBuf::from("/usr/local/go/bin/go")).filter(|go| go.exists()))
        .unwrap_or_else(|| {
            panic!(
                "the benches build tusd {RELEASE} with Go, which is not on this machine: \
                 install Go (https://go.dev/doc/install), or put its bin/ on PATH"
            )
        });
    let started = Instant::now();
    eprintln!(
        "building tusd {RELEASE} from the Go module proxy into {} (once)",
        dir.display()
    );
    // Caches of the build's own, removed once it is built (a user's own left untouched).
    let caches = [dir.join("go-build-cache"), dir.join("go-mod-cache")];
    let status = Command::new(go)
        .args([
            "install",
            &format!("github.com/tus/tusd/v2/cmd/tusd@{RELEASE}"),
        ])
        .env("GOBIN", &dir)
        .env("GOFLAGS", "-modcacherw")
        .env("GOCACHE", &caches[0])
        .env("GOMODCACHE", &caches[1])
        .status()
        .expect("run go install");
    assert!(status.success(), "go install tusd@{RELEASE}: {status}");
    for cache in &caches {
        let _ = std::fs::remove_dir_all(cache);
    }
    eprintln!(
        "built tusd {RELEASE} in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    binary
}

/// A running tusd, killed on drop.
pub struct Tusd {
    /// Where uploads are created (`http://127.0.0.1:PORT/files/`).
    pub endpoint: String,
    pub child: Child,
}

impl Tusd {
    /// tusd on a loopback port the system picks, storing uploads under `dir`.
    pub fn start(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let mut child = Command::new(binary())
            .args(["-host", "127.0.0.1", "-port", "0"])
            .arg("-upload-dir")
            .arg(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start tusd");
        // tusd logs to stdout; it is ready once it says where to upload (the port it got).
        let mut lines = BufReader::new(child.stdout.take().expect("tusd's stdout")).lines();
        let endpoint = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|line| {
                let (_, url) = line.split_once("You can now upload files to: ")?;
                Some(url.trim().to_owned())
            })
            .expect("tusd exited before it listened");
        // Keep reading, so that tusd never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Self { endpoint, child }
    }
}

impl Drop for Tusd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
