//! Running a test's body in a fresh network namespace where only loopback is up, so that
//! nothing it starts (Kubo, Helia, `cairn serve`) can reach, or be reached from, beyond
//! the machine.
//!
//! [`isolated`] re-executes the test binary with `--exact <test name>` under
//! `unshare -n` (as root; `unshare -rn` otherwise) and `ip link set lo up`, with
//! [`INSIDE`] set, and asserts that the inner run passed that very test, printing its
//! output. Inside, the same call runs the body. Where namespaces are not allowed, the test
//! prints a SKIPPED line and passes. There is no network inside: install what the body
//! needs (npm, PyPI) before calling.

use std::process::Command;

/// Set (to the test's name) in the re-executed test binary, inside the namespace.
pub const INSIDE: &str = "CAIRN_TEST_NETNS";

/// Run `body` inside a new loopback-only network namespace. `test_name` is the test's
/// name as libtest knows it (the function's path inside the test binary).
pub fn isolated(test_name: &str, body: impl FnOnce()) {
    if std::env::var(INSIDE).as_deref() == Ok(test_name) {
        body();
        return;
    }
    let Some(unshare) = unshare_flag() else {
        eprintln!(
            "SKIPPED {test_name}: network namespaces are not allowed here \
             (`unshare -n` and `unshare -rn` with `ip link set lo up` both failed)"
        );
        return;
    };
    let test_binary = std::env::current_exe().expect("the test binary's path");
    let output = Command::new("unshare")
        .args([
            unshare,
            "sh",
            "-c",
            r#"ip link set lo up && exec "$@""#,
            "sh",
        ])
        .arg(test_binary)
        // `--include-ignored`: an ignored test asked for by name runs inside too.
        .args(["--exact", test_name, "--include-ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(INSIDE, test_name)
        .output()
        .expect("run unshare");
    let stdout = String::from_utf8_lossy(&output.stdout);
    print!("{stdout}");
    print!("{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        output.status.success(),
        "{test_name} failed inside its network namespace ({})",
        output.status
    );
    // `--exact` with a name that matches nothing runs nothing and succeeds.
    assert!(
        stdout.contains(&format!("test {test_name} ... ok")),
        "{test_name} did not run inside its network namespace: is it the test's full name?"
    );
}

/// The `unshare` flag that gives this process a network namespace of its own in which it
/// may bring loopback up, if any does.
fn unshare_flag() -> Option<&'static str> {
    // `-n` needs CAP_SYS_ADMIN (root); `-r` maps us to root in a new user namespace first.
    ["-n", "-rn"].into_iter().find(|flag| {
        Command::new("unshare")
            .args([flag, "ip", "link", "set", "lo", "up"])
            .output()
            .is_ok_and(|output| output.status.success())
    })
}
