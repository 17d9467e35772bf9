//! Python packages for tests and benches, each in a virtualenv of its own under the target
//! directory, installed from PyPI on first use.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use crate::{run, target_tmp};

/// The bin directory of the virtualenv `name`, with `package` (a pip requirement) installed.
pub fn venv_with(name: &str, package: &str) -> PathBuf {
    let venv = target_tmp().join(name);
    let bin = venv.join("bin");
    // A test binary's tests run in parallel threads: one installs while the others wait.
    // (`cargo test` runs the binaries themselves one after another.)
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    // Written only once the install succeeded, so an interrupted one is retried.
    let installed = venv.join(format!(".installed {package}"));
    if !installed.exists() {
        run(
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
            "python3 -m venv",
        );
        run(
            Command::new(bin.join("python")).args(["-m", "pip", "install", "--quiet", package]),
            &format!("pip install {package}"),
        );
        std::fs::write(&installed, b"").unwrap();
    }
    bin
}
