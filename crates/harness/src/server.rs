//! Running the real `cairn` binary in tests: start `serve` on port 0 and read what it prints,
//! run admin commands on its data directory, and stop it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub struct Running {
    pub child: Child,
    pub upload: String,
    pub account: String,
    pub token: String,
    pub lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Running {
    /// The rest of the first line `serve` prints from here on that starts with `prefix` (its
    /// node's address or peer id); the lines before it are read past.
    pub fn printed(&mut self, prefix: &str) -> String {
        loop {
            let line = self
                .lines
                .next()
                .unwrap_or_else(|| panic!("serve printed no line starting {prefix:?}"))
                .unwrap();
            if let Some(rest) = line.strip_prefix(prefix) {
                return rest.to_owned();
            }
        }
    }
}

/// A server that a test leaves behind (it failed before stopping it) is killed, so that it
/// does not outlive the test run, holding its ports and databases.
impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `cairn` binary Cargo built beside the running test or bench (`<target>/<profile>/cairn`,
/// the test being `<target>/<profile>/deps/<test>`): Cargo builds a package's binaries before
/// its integration tests and benches, and names them to those alone (`CARGO_BIN_EXE_cairn`),
/// so a library finds it from the test's own path.
pub fn binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile = exe
        .ancestors()
        .find(|dir| dir.file_name().is_some_and(|name| name == "deps"))
        .and_then(std::path::Path::parent)
        .unwrap_or_else(|| panic!("{} is not under a Cargo target directory", exe.display()));
    let binary = profile.join("cairn");
    assert!(
        binary.exists(),
        "no cairn binary at {} (run the tests of the `cairn` package)",
        binary.display()
    );
    binary
}

/// The binary, without its IPFS node unless the test asks for one (network tests run it in a
/// namespace of their own; a `--p2p-listen` flag overrides this).
pub fn cairn() -> Command {
    cairn_at(&binary())
}

/// [`cairn`] with the binary at `binary` (an earlier release, in the upgrade tests).
pub fn cairn_at(binary: &std::path::Path) -> Command {
    let mut command = Command::new(binary);
    command.env("CAIRN_P2P_LISTEN", "none");
    command
}

pub fn start(data_dir: &std::path::Path, extra: &[&str]) -> Running {
    let mut command = cairn();
    command.args(serve_args(data_dir)).args(extra);
    start_command(command)
}

/// `serve` on port 0 for both hosts, on `data_dir`.
pub fn serve_args(data_dir: &std::path::Path) -> Vec<String> {
    let data_dir = data_dir.display().to_string();
    [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--account-listen",
        "127.0.0.1:0",
        "--data-dir",
        &data_dir,
    ]
    .map(str::to_owned)
    .into()
}

/// Start `command`, which runs `cairn serve` (perhaps through a wrapper such as `unshare`),
/// and read the addresses and the first token it prints.
pub fn start_command(mut command: Command) -> Running {
    // As `cairn()` does, for a command that wraps the binary.
    if !command.get_envs().any(|(k, _)| k == "CAIRN_P2P_LISTEN") {
        command.env("CAIRN_P2P_LISTEN", "none");
    }
    // CAIRN_TEST_SERVE_LOG=FILE appends the servers' logs (filtered by RUST_LOG) to FILE.
    let stderr = match std::env::var_os("CAIRN_TEST_SERVE_LOG") {
        Some(path) => std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("open CAIRN_TEST_SERVE_LOG")
            .into(),
        None => Stdio::null(),
    };
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("start cairn serve");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || lines.next().expect("serve prints its addresses").unwrap();
    let url_of = |line: String, host: &str| {
        assert!(
            line.starts_with(&format!("{host} host listening on http://"))
                || line.starts_with(&format!("{host} host listening on https://")),
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

/// Whether this test run may make private mount namespaces (`unshare -m`), where a test
/// mounts a small disk of its own. Where it may not, the test fails saying so, unless skipping
/// those parts was asked for by hand (`cairn_test_support::cannot_run`).
pub fn namespaces_allowed() -> bool {
    let allowed = Command::new("unshare")
        .args(["-m", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !allowed {
        cairn_test_support::cannot_run(
            "private mount namespaces are not allowed here (`unshare -m` failed): run the \
             tests as root",
        );
    }
    allowed
}

/// `serve` with its data directory on a tmpfs of `mib` MiB that only the server sees (a
/// private mount namespace). The test reaches that disk through `/proc/PID/root`.
pub fn start_on_small_disk(data_dir: &std::path::Path, mib: u32, extra: &[&str]) -> Running {
    let script = format!(
        "mount -t tmpfs -o size={mib}m tmpfs {} && exec \"$0\" \"$@\"",
        data_dir.display()
    );
    let mut command = Command::new("unshare");
    command
        .args(["-m", "sh", "-c", &script])
        .arg(binary())
        .args(serve_args(data_dir))
        .args(extra);
    start_command(command)
}

/// `data_dir` as the server of `running` sees it: inside its mount namespace, if it has one.
pub fn seen_by(running: &Running, data_dir: &std::path::Path) -> std::path::PathBuf {
    let root = std::path::PathBuf::from(format!("/proc/{}/root", running.child.id()));
    root.join(data_dir.strip_prefix("/").unwrap_or(data_dir))
}

/// `cairn account create NAME` with `extra` flags on `data_dir`: the new account's token.
pub fn create_account(data_dir: &std::path::Path, name: &str, extra: &[&str]) -> String {
    let mut args = vec!["account", "create", name, "--json"];
    args.extend_from_slice(extra);
    let created: serde_json::Value = serde_json::from_slice(&admin(&args, data_dir)).unwrap();
    created["token"].as_str().unwrap().to_owned()
}

/// Run an admin command on `data_dir`; returns its stdout, failing the test on a failure.
pub fn admin(args: &[&str], data_dir: &std::path::Path) -> Vec<u8> {
    admin_with(cairn(), args, data_dir)
}

/// [`admin`] with `cairn` (see [`cairn_at`]).
pub fn admin_with(mut cairn: Command, args: &[&str], data_dir: &std::path::Path) -> Vec<u8> {
    let output = cairn
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
    let printed = running.lines.by_ref().map(Result::unwrap).collect();
    (status, printed)
}

/// A client command against `running`, with `token`; returns stdout, failing on failure.
pub fn client(running: &Running, token: &str, home: &std::path::Path, args: &[&str]) -> String {
    client_with(cairn(), running, token, home, args)
}

/// [`client`] with `cairn` (see [`cairn_at`]).
pub fn client_with(
    mut cairn: Command,
    running: &Running,
    token: &str,
    home: &std::path::Path,
    args: &[&str],
) -> String {
    let output = cairn
        .args(args)
        .env("CAIRN_URL", &running.upload)
        .env("CAIRN_ACCOUNT_URL", &running.account)
        .env("CAIRN_TOKEN", token)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cairn {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// An operation (by id, or by TUS upload id) as the upload host of `running` reports it.
pub async fn operation(running: &Running, token: &str, id: &str) -> serde_json::Value {
    get_json(&format!("{}/api/operations/{id}", running.upload), token).await
}

/// `GET url` with `token`: the JSON body, whatever the status.
pub async fn get_json(url: &str, token: &str) -> serde_json::Value {
    reqwest::Client::new()
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The upload host's `/metrics` text, asked on `client` (a bench polling it keeps one
/// connection).
pub async fn metrics_text(client: &reqwest::Client, running: &Running) -> String {
    client
        .get(format!("{}/metrics", running.upload))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Poll an operation until it is completed or failed (a minute at most), and return it.
pub async fn finished_operation(running: &Running, token: &str, id: &str) -> serde_json::Value {
    for _ in 0..600 {
        let op = operation(running, token, id).await;
        if op["status"] == "completed" || op["status"] == "failed" {
            return op;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("operation {id} did not finish within a minute");
}

/// [`post_upload`], answered `200` and then completed (both asserted): the upload's id and
/// its root CID.
pub async fn stored_upload(
    running: &Running,
    token: &str,
    name: &str,
    bytes: Vec<u8>,
) -> (String, String) {
    let (status, body) = post_upload(running, token, name, bytes).await;
    assert_eq!(status, 200, "{body}");
    let id = body["id"].as_str().unwrap().to_owned();
    // The upload's answer when it was stored at once, else its operation's record.
    let op = match body["status"].as_str() {
        Some("completed") => body,
        _ => finished_operation(running, token, &body["operationId"].to_string()).await,
    };
    assert_eq!(op["status"], "completed", "{op}");
    (id, op["cid"].as_str().unwrap().to_owned())
}

/// `POST /api/upload` of `bytes` as the file `name`, with `token`: the status and the JSON body.
pub async fn post_upload(
    running: &Running,
    token: &str,
    name: &str,
    bytes: Vec<u8>,
) -> (reqwest::StatusCode, serde_json::Value) {
    let part = reqwest::multipart::Part::bytes(bytes).file_name(name.to_owned());
    let response = reqwest::Client::new()
        .post(format!("{}/api/upload", running.upload))
        .bearer_auth(token)
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await
        .unwrap();
    (response.status(), response.json().await.unwrap())
}

/// A TUS upload of `bytes` as the file `name`, as a plain HTTP exchange on `client`: create,
/// then one PATCH with everything. Returns the upload's URL (its last segment is its id).
pub async fn tus_upload(
    client: &reqwest::Client,
    upload_url: &str,
    token: &str,
    name: &str,
    bytes: Vec<u8>,
) -> String {
    use base64::Engine;
    let name = base64::engine::general_purpose::STANDARD.encode(name);
    let created = client
        .post(format!("{upload_url}/api/upload/tus"))
        .bearer_auth(token)
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Length", bytes.len().to_string())
        .header("Upload-Metadata", format!("filename {name}"))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let location = created.headers()["location"].to_str().unwrap().to_owned();
    let patched = client
        .patch(&location)
        .bearer_auth(token)
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Offset", "0")
        .header("Content-Type", "application/offset+octet-stream")
        .body(bytes)
        .send()
        .await
        .unwrap();
    assert_eq!(patched.status(), 204);
    location
}

/// A TUS upload of `length` bytes, created with no metadata: its path (`/api/upload/tus/ID`,
/// to join to any node's upload URL) and its operation's id.
pub async fn tus_create(
    client: &reqwest::Client,
    upload_url: &str,
    token: &str,
    length: usize,
) -> (String, String) {
    let created = client
        .post(format!("{upload_url}/api/upload/tus"))
        .bearer_auth(token)
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Length", length.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let header = |name: &str| created.headers()[name].to_str().unwrap().to_owned();
    let location = header("location");
    let (_, path) = location.split_once("/api/").unwrap();
    (format!("/api/{path}"), header("cairn-operation-id"))
}

/// HEAD: the upload's offset.
pub async fn tus_offset(client: &reqwest::Client, url: &str, token: &str) -> u64 {
    let response = client
        .head(url)
        .bearer_auth(token)
        .header("Tus-Resumable", "1.0.0")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "HEAD {url}");
    response.headers()["upload-offset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// One PATCH of `body` at `offset`, which must be acknowledged: the new offset.
pub async fn tus_patch(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    offset: u64,
    body: Vec<u8>,
) -> u64 {
    let reply = client
        .patch(url)
        .bearer_auth(token)
        .header("Tus-Resumable", "1.0.0")
        .header("Content-Type", "application/offset+octet-stream")
        .header("Upload-Offset", offset.to_string())
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 204, "PATCH {url} at {offset}");
    reply.headers()["upload-offset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// Start a PATCH of `total` bytes on `node` and send only `sent` of them: the node holds the
/// upload's lease while it waits for the rest.
pub async fn stalled_patch(
    node: &Running,
    path: &str,
    token: &str,
    offset: u64,
    total: usize,
    sent: &[u8],
) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let address = node.upload.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!(
        "PATCH {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\n\
         Tus-Resumable: 1.0.0\r\nContent-Type: application/offset+octet-stream\r\n\
         Upload-Offset: {offset}\r\nContent-Length: {total}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(sent).await.unwrap();
    stream
}

/// What `cairn cid` prints for `path` (a file or a directory): the CID a test holds what the
/// service answered against.
pub fn cid_of_path(path: &std::path::Path) -> String {
    let output = cairn().arg("cid").arg(path).output().unwrap();
    assert!(output.status.success(), "cairn cid {}", path.display());
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// An OpenAPI document of both hosts: `openapi.yaml` at the repository's root, which is JSON.
pub fn openapi_document() -> serde_json::Value {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../openapi.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    // The file is written in JSON, which is also YAML, so that the server can serve it as it
    // is (`crates/server/src/docs.rs`); this is where a YAML-only construct would be caught.
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: not JSON (and so not servable): {e}", file.display()))
}

/// The `operationId` of every operation [`openapi_document`] describes (unique: `openapi.rs`).
pub fn openapi_operation_ids() -> std::collections::BTreeSet<String> {
    let document = openapi_document();
    let paths = document["paths"].as_object().expect("paths");
    (paths.values())
        .flat_map(|item| item.as_object().expect("a path item").values())
        .filter_map(|operation| operation["operationId"].as_str().map(str::to_owned))
        .collect()
}

/// The CID of a file of `bytes` in the default profile, as the engine computes it in memory.
pub fn cid_of(bytes: &[u8]) -> String {
    let mut importer = cairn_unixfs::FileImporter::new(
        &cairn_unixfs::Profile::default(),
        cairn_unixfs::DiscardBlocks,
    );
    importer.push(bytes).unwrap();
    importer.finish().unwrap().cid.to_string()
}

/// The CID of every block of the DAG under `cid`, as the gateway's CAR sends them (root
/// first, depth first).
pub async fn dag_cids(upload_url: &str, cid: &str) -> Vec<cairn_unixfs::Cid> {
    let car = reqwest::Client::new()
        .get(format!("{upload_url}/ipfs/{cid}?format=car"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    cairn_car::CarReader::new(&car[..], cairn_car::CarLimits::default())
        .unwrap()
        .map(|block| block.unwrap().0)
        .collect()
}

/// A tar holding `files`, extracted into a directory on upload.
pub fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, *bytes).unwrap();
    }
    builder.into_inner().unwrap()
}

/// Deterministic test bytes (xorshift64, one byte per step) from `seed`.
pub fn content(len: usize, seed: u64) -> Vec<u8> {
    cairn_test_support::xorshift::low_bytes(len, seed)
}

/// A key made with `token` (`POST /api/keys` on the account host, `request` its JSON):
/// its secret and its record.
pub async fn create_key(
    running: &Running,
    token: &str,
    request: serde_json::Value,
) -> (String, serde_json::Value) {
    let url = format!("{}/api/keys", running.account);
    let record = created(&url, token, request).await;
    (record["key"].as_str().unwrap().to_owned(), record)
}

/// An upload link made with `token` (`POST /api/upload-links`, `request` its JSON): its record,
/// with `url` and `tusEndpoint`.
pub async fn create_link(
    running: &Running,
    token: &str,
    request: serde_json::Value,
) -> serde_json::Value {
    created(
        &format!("{}/api/upload-links", running.upload),
        token,
        request,
    )
    .await
}

/// What a `POST` of `request` to `url` with `token` made, failing unless it is `201`.
async fn created(url: &str, token: &str, request: serde_json::Value) -> serde_json::Value {
    let response = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .json(&request)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let record: serde_json::Value = response.json().await.unwrap();
    assert_eq!(status, 201, "{request}: {record}");
    record
}
