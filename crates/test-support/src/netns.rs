//! Running a test's body in a fresh network namespace where only loopback is up, so that
//! nothing it starts (Kubo, Helia, `cairn serve`) can reach, or be reached from, beyond
//! the machine.
//!
//! [`isolated`] re-executes the test binary with `--exact <test name>` under
//! `unshare -n` (as root; `unshare -rn` otherwise) and `ip link set lo up`, with
//! [`INSIDE`] set, and asserts that the inner run passed that very test, printing its
//! output. Inside, the same call runs the body. Where namespaces are not allowed, the test
//! fails, saying so (unless skipping was asked for by hand: [`crate::cannot_run`]). There is no network inside: install what the body
//! needs (npm, PyPI) before calling, and ask for [`crate::postgres::server`] before calling
//! if the body needs PostgreSQL: the inner run reaches it through its Unix socket.

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
        return crate::cannot_run(&format!(
            "{test_name}: network namespaces are not allowed here (`unshare -n` and \
             `unshare -rn` with `ip link set lo up` both failed): run the tests as root, or \
             where unprivileged user namespaces are allowed"
        ));
    };
    let test_binary = std::env::current_exe().expect("the test binary's path");
    let mut command = Command::new("unshare");
    command
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
        .args(["--test-threads", "1"]);
    if let Some(url) = crate::postgres::url_for_namespace() {
        command.env(crate::postgres::URL_VARIABLE, url);
    }
    let output = command
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

/// Set in a re-executed bench, inside the namespace.
const BENCH_INSIDE: &str = "CAIRN_BENCH_NETNS";

/// For a bench (a program of its own, without libtest): inside the namespace, run `measure`;
/// outside, run `prepare` (what needs the registries, which cannot be reached from inside),
/// then the bench again inside, and exit with its status.
pub fn in_loopback_namespace(prepare: impl FnOnce(), measure: impl FnOnce()) {
    if std::env::var_os(BENCH_INSIDE).is_some() {
        return measure();
    }
    prepare();
    let Some(flag) = unshare_flag() else {
        eprintln!(
            "network namespaces are not allowed here (`unshare -n` and `unshare -rn` failed)"
        );
        std::process::exit(1);
    };
    let mut command = Command::new("unshare");
    command
        .args([flag, "sh", "-c", r#"ip link set lo up && exec "$@""#, "sh"])
        .arg(std::env::current_exe().expect("the bench's own path"));
    if let Some(url) = crate::postgres::url_for_namespace() {
        command.env(crate::postgres::URL_VARIABLE, url);
    }
    let status = command
        .env(BENCH_INSIDE, "1")
        .status()
        .expect("run unshare");
    std::process::exit(status.code().unwrap_or(1));
}
