//! `deploy/`: the systemd unit is one systemd accepts (`systemd-analyze verify`, Debian's
//! `systemd`), hardened as its comments say (`systemd-analyze security` rates it), and starts
//! what it names: its `ExecStart` with its `Environment`, run here, serves. The container
//! recipe is not built: this machine has Docker's client but no engine (README, "Running it as
//! a service").

use cairn_harness::server::{binary, start_command};
use cairn_test_support::{cannot_run, debian};

use std::path::Path;
use std::process::Command;

fn unit() -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/cairn.service");
    std::fs::read_to_string(file).unwrap()
}

/// `systemd-analyze`, installed with Debian's `systemd` where missing.
fn systemd_analyze() -> Option<&'static str> {
    const TOOL: &str = "/usr/bin/systemd-analyze";
    if !Path::new(TOOL).exists() {
        if let Err(why) = debian::install(&["systemd"]) {
            cannot_run(&format!("systemd-analyze (Debian package systemd): {why}"));
            return None;
        }
    }
    Some(TOOL)
}

/// The unit with its `ExecStart` on the binary this test was built with.
fn unit_for_this_binary(dir: &Path) -> std::path::PathBuf {
    let unit = unit().replace("/usr/local/bin/cairn", binary().to_str().unwrap());
    let path = dir.join("cairn.service");
    std::fs::write(&path, unit).unwrap();
    path
}

#[test]
fn systemd_accepts_the_unit_and_rates_it_hardened() {
    let Some(analyze) = systemd_analyze() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let unit = unit_for_this_binary(dir.path());
    let verified = Command::new(analyze)
        .arg("verify")
        .arg(&unit)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&verified.stderr);
    assert!(
        verified.status.success() && said.trim().is_empty(),
        "systemd-analyze verify: {said}"
    );
    let rated = Command::new(analyze)
        .args(["security", "--offline=true"])
        .arg(&unit)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&rated.stdout);
    // "→ Overall exposure level for cairn.service: 1.7 OK": 0 is the most confined, 10 the least.
    let exposure: f64 = (report.lines())
        .find_map(|line| line.split("cairn.service: ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|level| level.parse().ok())
        .unwrap_or_else(|| panic!("no exposure level in:\n{report}"));
    assert!(exposure <= 2.0, "exposure {exposure}:\n{report}");
}

#[tokio::test]
async fn the_units_command_and_environment_serve() {
    let unit = unit();
    let line = |key: &str| -> Vec<String> {
        (unit.lines())
            .filter_map(|line| line.strip_prefix(key))
            .map(str::to_owned)
            .collect()
    };
    let exec = line("ExecStart=").pop().expect("ExecStart=");
    let mut words = exec.split_whitespace();
    assert_eq!(words.next(), Some("/usr/local/bin/cairn"));
    let args: Vec<&str> = words.collect();
    let dir = tempfile::tempdir().unwrap();
    // The unit's paths, moved under a temporary directory: its state directory and its config.
    let config = dir.path().join("cairn.toml");
    std::fs::write(&config, "").unwrap();
    let data = dir.path().join("state");
    let mut command = Command::new(binary());
    for arg in args {
        command.arg(arg.replace("/etc/cairn/cairn.toml", config.to_str().unwrap()));
    }
    for assignment in line("Environment=") {
        let (name, value) = assignment.split_once('=').expect("NAME=value");
        command.env(
            name,
            value.replace("/var/lib/cairn", data.to_str().unwrap()),
        );
    }
    // Loopback and free ports, as every test server here.
    command.args([
        "--listen",
        "127.0.0.1:0",
        "--account-listen",
        "127.0.0.1:0",
        "--p2p-listen",
        "none",
    ]);
    let running = start_command(command);
    assert!(
        data.join("cairn.db").exists(),
        "the data is not in the state directory"
    );
    let health = reqwest::get(format!("{}/healthz", running.upload))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    cairn_harness::server::terminate(running);
}
