//! Running the real `cairn` binary in tests: start `serve` on port 0 and read what it prints,
//! run admin commands on its data directory, and stop it.
#![allow(dead_code)] // each test binary uses a different part

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub struct Running {
    pub child: Child,
    pub upload: String,
    pub account: String,
    pub token: String,
    pub lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

pub fn cairn() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cairn"))
}

pub fn start(data_dir: &std::path::Path, extra: &[&str]) -> Running {
    let mut child = cairn()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--account-listen",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(data_dir)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start cairn serve");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || lines.next().expect("serve prints its addresses").unwrap();
    let url_of = |line: String, host: &str| {
        assert!(
            line.starts_with(&format!("{host} host listening on http://")),
            "{line}"
        );
        line.rsplit(' ').next().unwrap().to_owned()
    };
    let upload = url_of(next(), "upload");
    let account = url_of(next(), "account");
    let about_token = next();
    let token = if about_token.starts_with("created account \"default\"") {
        next().trim().to_owned()
    } else {
        String::new()
    };
    Running {
        child,
        upload,
        account,
        token,
        lines,
    }
}

/// Run an admin command on `data_dir`; returns its stdout, failing the test on a failure.
pub fn admin(args: &[&str], data_dir: &std::path::Path) -> Vec<u8> {
    let output = cairn()
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cairn {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

pub fn terminate(mut running: Running) -> (std::process::ExitStatus, Vec<String>) {
    let pid = running.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = running.child.wait().unwrap();
    (status, running.lines.map(Result::unwrap).collect())
}
