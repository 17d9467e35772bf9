//! Debian packages a test needs, installed with `apt-get` on first use when the tests run as
//! root on Debian (as on CI and a fresh machine of ours); elsewhere the caller is told exactly
//! what to install.

use std::process::Command;

use crate::{is_root, on_path};

/// Install `packages` (`apt-get install --no-install-recommends`), updating the package lists
/// once if the first try fails. `Err` says why not, naming the packages, for the caller to
/// fail (or skip) with.
pub fn install(packages: &[&str]) -> Result<(), String> {
    let named = packages.join(" ");
    if !is_root() || on_path("apt-get").is_none() {
        return Err(format!(
            "install the Debian package(s) {named}, or run the tests as root on Debian so that \
             they install themselves"
        ));
    }
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            // Another apt-get on the machine may hold the lock for a while; wait for it.
            .args(["-o", "DPkg::Lock::Timeout=600", "-o", "Acquire::Retries=3"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
    };
    let install = [
        &["install", "-y", "-q", "--no-install-recommends"][..],
        packages,
    ]
    .concat();
    let mut output = apt(&install);
    if !output.as_ref().is_ok_and(|o| o.status.success()) {
        // The package lists may be stale, or absent on a fresh machine.
        let _ = apt(&["update", "-q"]);
        output = apt(&install);
    }
    match output {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(format!(
            "apt-get install {named} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )),
        Err(e) => Err(format!("apt-get install {named}: {e}")),
    }
}

/// Where Debian's `chromium` puts the browser.
const CHROMIUM: &str = "/usr/bin/chromium";

/// Chromium, installed from Debian when missing (once per test binary). Where it cannot be,
/// the test fails saying why, or, when skipping was asked for by hand ([`crate::cannot_run`]),
/// `None`: nothing else on such a machine drives a browser.
pub fn chromium() -> Option<&'static std::path::Path> {
    use std::path::Path;
    static INSTALLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let installed = *INSTALLED.get_or_init(|| {
        Path::new(CHROMIUM).exists()
            || match install(&["chromium"]) {
                Ok(()) => Path::new(CHROMIUM).exists(),
                Err(why) => {
                    crate::cannot_run(&format!(
                        "Chromium is not installed (Debian package chromium): {why}"
                    ));
                    false
                }
            }
    });
    installed.then_some(Path::new(CHROMIUM))
}
