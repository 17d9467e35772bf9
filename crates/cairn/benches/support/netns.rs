//! Running a bench inside a network namespace with only loopback, so that nothing it starts
//! (Cairn's node, Kubo, Helia, DHT nodes) can dial beyond the machine: the bench re-executes
//! itself under `unshare -n` (or `-rn` where unprivileged user namespaces are the way in).

use std::process::Command;

/// Set in the re-executed bench, inside the namespace.
const INSIDE: &str = "CAIRN_BENCH_NETNS";

/// Inside the namespace, run `measure`; outside, run `prepare` (what needs the registries,
/// which cannot be reached from inside), then the bench again inside, and exit with its status.
pub fn in_loopback_namespace(prepare: impl FnOnce(), measure: impl FnOnce()) {
    if std::env::var_os(INSIDE).is_some() {
        return measure();
    }
    prepare();
    let Some(flag) = ["-n", "-rn"].into_iter().find(|flag| {
        Command::new("unshare")
            .args([flag, "ip", "link", "set", "lo", "up"])
            .output()
            .is_ok_and(|output| output.status.success())
    }) else {
        eprintln!(
            "network namespaces are not allowed here (`unshare -n` and `unshare -rn` failed)"
        );
        std::process::exit(1);
    };
    let status = Command::new("unshare")
        .args([flag, "sh", "-c", r#"ip link set lo up && exec "$@""#, "sh"])
        .arg(std::env::current_exe().expect("the bench's own path"))
        .env(INSIDE, "1")
        .status()
        .expect("run unshare");
    std::process::exit(status.code().unwrap_or(1));
}
