//! The web page in a real browser: Debian's Chromium driven by npm `playwright-core`
//! (`tests/web/browser.mjs`, one scenario per run), against `cairn serve`. What the page shows
//! must be what the CLI computes: every CID is checked against `cairn cid`; what it makes
//! (keys, upload links, webhooks, key-values) is checked again through the API. Each scenario
//! leaves a screenshot in `target/tmp/web-screenshots/`; the `layout` one measures the page at
//! 1280 and 390 px, shoots every section at both, and runs npm `axe-core` on the whole page
//! with every section open.
//!
//! Chromium is installed with apt when missing (as root); where it cannot be, the tests fail
//! saying so (`cannot_run`).

use cairn_harness::server;

use cairn_test_support::{debian, node};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;
use server::{
    cid_of_path, content, create_account, create_key, openapi_operation_ids, post_upload, start,
    Running,
};

/// The account the page signs in with may POST 8 MiB: a 64 MiB file goes over TUS.
const UPLOAD_LIMIT: u64 = 8 << 20;

/// playwright-core and the scripts, installed once per test binary.
fn scripts() -> &'static node::Installed {
    static INSTALLED: OnceLock<node::Installed> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/web");
        node::npm_ci(&node::NODE_22, "web-page", &sources, &["browser.mjs"], &[])
    })
}

fn screenshots() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-screenshots")
}

/// What the tests read and upload: `small.txt`, `big.bin` (64 MiB), `folder/` (nested
/// folders, hidden files), `dropped/` (what only a drop keeps: empty folders, at the top and
/// deeper, and a hidden one), `site.tar.gz` (of `site/`, which stays beside it); and, for
/// the tests that follow processing, `many.tar` when asked for ([`Fixtures::many_files_tar`]).
struct Fixtures {
    dir: tempfile::TempDir,
}

impl Fixtures {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let dir_path = |path: &str| dir.path().join(path);
        let write = |path: &str, bytes: &[u8]| {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        };
        write("small.txt", b"hello from the browser\n");
        write("big.bin", &content(64 << 20, 7));
        write("folder/index.html", b"<h1>a folder</h1>");
        write("folder/.hidden", b"hidden files are kept");
        write("folder/docs/guide/deep.txt", &content(300_000, 8));
        write("folder/docs/a.txt", b"a");
        write("dropped/.config/settings", b"hidden folder");
        write("dropped/notes/ünïcode name.txt", b"non-ASCII names");
        for dir in ["dropped/empty", "dropped/notes/also empty"] {
            std::fs::create_dir_all(dir_path(dir)).unwrap();
        }
        write("site/index.html", b"<h1>site</h1>");
        write("site/css/site.css", b"h1 { color: teal }");
        let tar = Command::new("tar")
            .args(["-czf", "site.tar.gz", "-C", "site", "."])
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(tar.success(), "tar -czf site.tar.gz");
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `many.tar`, of `many/`: 30,000 small files in 30 folders, which the server takes
    /// seconds to extract (so a stream reports its stages as they move). Made when asked for.
    fn many_files_tar(&self) -> PathBuf {
        for i in 0..30_000 {
            let folder = self.path(&format!("many/part-{:02}", i / 1000));
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(folder.join(format!("{i}.txt")), format!("file {i}\n")).unwrap();
        }
        let tar = Command::new("tar")
            .args(["-cf", "many.tar", "-C", "many", "."])
            .current_dir(self.dir.path())
            .status()
            .unwrap();
        assert!(tar.success(), "tar -cf many.tar");
        self.path("many.tar")
    }

    /// `cairn cid` of one of them.
    fn cid(&self, name: &str) -> String {
        cid_of_path(&self.path(name))
    }
}

/// A server, and the token of an account whose POST limit is [`UPLOAD_LIMIT`].
fn serve() -> (Running, tempfile::TempDir, String) {
    let data = tempfile::tempdir().unwrap();
    let running = start(data.path(), &[]);
    let token = create_account(
        data.path(),
        "web",
        &["--upload-limit", &UPLOAD_LIMIT.to_string()],
    );
    (running, data, token)
}

/// Run `script` with `args` against `running`: the JSON line it printed.
fn run_script(
    script: &str,
    args: &[&str],
    running: &Running,
    token: &str,
    fixtures: &Fixtures,
    env: &[(&str, &str)],
) -> Option<Value> {
    let chromium = debian::chromium()?;
    let scripts = scripts();
    // Chromium leaves files of its own in the temporary directory: one per run, removed with it.
    let tmp = tempfile::tempdir().unwrap();
    let output = Command::new(&scripts.node)
        .env("TMPDIR", tmp.path())
        .arg(scripts.dir.join(script))
        .args(args)
        .env("CAIRN_PAGE_URL", &running.account)
        .env("CAIRN_UPLOAD_URL", &running.upload)
        .env("CAIRN_TOKEN", token)
        .env("CAIRN_FIXTURES", fixtures.dir.path())
        .env("CAIRN_SCREENSHOTS", screenshots())
        .env("CHROMIUM", chromium)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{script} {args:?} failed (screenshot in {}):\n{}{stdout}",
        screenshots().display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let line = stdout.lines().last().expect("the script prints its result");
    Some(serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
}

/// Run a scenario of `browser.mjs` on a server of its own.
fn scenario(name: &str, fixtures: &Fixtures) -> Option<Value> {
    let (running, _data, token) = serve();
    run_script("browser.mjs", &[name], &running, &token, fixtures, &[])
}

#[test]
fn the_docs_render_the_api_reference_and_guides_with_nothing_from_elsewhere() {
    let fixtures = Fixtures::new();
    if let Some(result) = scenario("docs", &fixtures) {
        let described = openapi_operation_ids().len() as u64;
        assert_eq!(result["operations"], described, "operations shown");
    }
}

#[test]
fn a_wrong_token_is_refused_with_a_message() {
    let fixtures = Fixtures::new();
    let Some(result) = scenario("wrong-token", &fixtures) else {
        return;
    };
    let message = result["message"].as_str().unwrap();
    assert!(message.contains("not accepted"), "{message}");
}

#[test]
fn a_small_file_gets_the_cid_the_cli_computes() {
    let fixtures = Fixtures::new();
    if let Some(result) = scenario("small", &fixtures) {
        assert_eq!(result["cid"], fixtures.cid("small.txt"));
    }
}

#[test]
fn a_64_mib_file_goes_over_tus_to_100_percent() {
    let fixtures = Fixtures::new();
    if let Some(result) = scenario("big", &fixtures) {
        assert_eq!(result["cid"], fixtures.cid("big.bin"));
    }
}

#[test]
fn a_folder_is_one_directory_with_the_cid_the_cli_computes() {
    let fixtures = Fixtures::new();
    if let Some(result) = scenario("folder", &fixtures) {
        assert_eq!(result["cid"], fixtures.cid("folder"));
    }
}

#[test]
fn a_dropped_folder_keeps_its_empty_folders_and_the_cid_the_cli_computes() {
    let fixtures = Fixtures::new();
    let (running, _data, token) = serve();
    let dropped = fixtures.path("dropped");
    let env = [("CAIRN_DROP_DIR", dropped.to_str().unwrap())];
    if let Some(result) = run_script("browser.mjs", &["drop"], &running, &token, &fixtures, &env) {
        assert_eq!(result["cid"], fixtures.cid("dropped"));
    }
}

#[test]
fn an_extracted_archive_has_the_cid_of_its_contents() {
    let fixtures = Fixtures::new();
    if let Some(result) = scenario("archive", &fixtures) {
        assert_eq!(result["cid"], fixtures.cid("site"));
    }
}

#[test]
fn a_tus_upload_resumes_after_the_page_is_reloaded() {
    let fixtures = Fixtures::new();
    if let Some(result) = scenario("resume", &fixtures) {
        assert_eq!(result["cid"], fixtures.cid("big.bin"));
        assert!(result["resumedAt"].as_u64().unwrap() > 0, "{result}");
    }
}

#[test]
fn a_deleted_upload_leaves_the_list() {
    let fixtures = Fixtures::new();
    if let Some(result) = scenario("delete", &fixtures) {
        assert_eq!(result["cid"], fixtures.cid("small.txt"));
    }
}

#[tokio::test]
async fn a_cid_pinned_from_the_page_is_pinned() {
    let fixtures = Fixtures::new();
    let (running, _data, token) = serve();
    let (_, uploaded) = post_upload(&running, &token, "a.txt", b"pin me".to_vec()).await;
    let cid = uploaded["cid"].as_str().unwrap().to_owned();
    let pinned = tokio::task::spawn_blocking(move || {
        let env = [("CAIRN_PIN_CID", cid.as_str())];
        run_script("browser.mjs", &["pin"], &running, &token, &fixtures, &env)
    });
    if let Some(result) = pinned.await.unwrap() {
        assert_eq!(result["cid"], uploaded["cid"]);
    }
}

/// `GET {account}/api/upload-limit` with `token`: its status.
async fn upload_limit_status(running: &Running, token: &str) -> u16 {
    reqwest::Client::new()
        .get(format!("{}/api/upload-limit", running.account))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn keys_made_on_the_page_are_shown_once_work_for_their_scopes_and_are_revoked() {
    let fixtures = Fixtures::new();
    let (running, _data, token) = serve();
    // The page ends by revoking the key it signed in with: this one checks what it left.
    let request = serde_json::json!({"name": "the test's", "scopes": ["all"]});
    let (checker, _) = create_key(&running, &token, request).await;
    let page_token = token.clone();
    let (running, result) = tokio::task::spawn_blocking(move || {
        let result = run_script(
            "browser.mjs",
            &["keys"],
            &running,
            &page_token,
            &fixtures,
            &[],
        );
        (running, result)
    })
    .await
    .unwrap();
    let Some(result) = result else {
        return;
    };
    let secret = result["secret"].as_str().unwrap();
    let record = &result["record"];
    assert_eq!(record["scopes"], serde_json::json!(["upload", "read"]));
    assert_eq!(record["maxUses"], 5);
    assert_eq!(record["maxUploadBytes"], 1 << 20);
    assert!(
        record.get("key").is_none(),
        "a listed key shows its secret: {record}"
    );
    assert!(
        secret.starts_with(record["prefix"].as_str().unwrap()),
        "{record}"
    );
    let lifetime = result["lifetimeSeconds"].as_f64().unwrap();
    assert!(
        (86_399.0..=86_401.0).contains(&lifetime),
        "a key chosen to expire in 1 day lives {lifetime} s: {record}"
    );
    // Both revoked on the page: refused from outside it too, and no longer listed.
    assert_eq!(upload_limit_status(&running, secret).await, 401);
    assert_eq!(upload_limit_status(&running, &token).await, 401);
    let listed = server::get_json(&format!("{}/api/keys", running.account), &checker).await;
    let names: Vec<&str> = listed["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|key| key["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["the test's"], "{listed}");
}

#[tokio::test]
async fn a_key_without_the_keys_scope_is_told_why_and_the_rest_of_the_page_works() {
    let fixtures = Fixtures::new();
    let (running, _data, token) = serve();
    let request = serde_json::json!({"name": "no keys", "scopes": ["upload", "read"]});
    let (limited, _) = create_key(&running, &token, request).await;
    let expected_cid = fixtures.cid("small.txt");
    let result = tokio::task::spawn_blocking(move || {
        run_script(
            "browser.mjs",
            &["keys-forbidden"],
            &running,
            &limited,
            &fixtures,
            &[],
        )
    });
    if let Some(result) = result.await.unwrap() {
        let message = result["message"].as_str().unwrap();
        // The server's own reason, as the 403 gave it.
        assert!(message.contains("do not include keys"), "{message}");
        assert_eq!(result["cid"], expected_cid);
    }
}

/// Stores a secret in its origin's storage (its title says whether it could).
const VICTIM_HTML: &str = r#"<!doctype html><title>victim</title><script>
try { localStorage.setItem('secret', 'victim-secret'); document.title = 'stored' }
catch (e) { document.title = 'refused' }
</script>"#;

/// Shows every storage it can read, as JSON in `#loot`.
const THIEF_HTML: &str = r#"<!doctype html><title>thief</title><pre id="loot"></pre><script>
const read = get => { try { return get() } catch (e) { return 'denied: ' + e.name } }
const all = storage => JSON.stringify(Object.entries(storage))
document.getElementById('loot').textContent = JSON.stringify({
  localStorage: read(() => all(localStorage)),
  sessionStorage: read(() => all(sessionStorage)),
  cookie: read(() => document.cookie)
})
</script>"#;

/// One account's website tries to read what the page and another account's content keep in
/// the browser, from the origin the gateway gives it: `extra_args` choose the gateway.
async fn isolation(extra_args: &[&str], screenshot: &str) -> Option<Value> {
    let fixtures = Fixtures::new();
    let data = tempfile::tempdir().unwrap();
    let running = start(data.path(), extra_args);
    let (victim, thief) = (
        create_account(data.path(), "victim", &[]),
        create_account(data.path(), "thief", &[]),
    );
    let site = |html: &str| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.html"), html).unwrap();
        let tar = Command::new("tar")
            .args(["-cf", "-", "-C"])
            .arg(dir.path())
            .arg(".")
            .output()
            .unwrap();
        tar.stdout
    };
    let mut cids = Vec::new();
    for (token, html) in [(&victim, VICTIM_HTML), (&thief, THIEF_HTML)] {
        let (_, body) = post_upload(&running, token, "site.tar", site(html)).await;
        let id = body["operationId"].to_string();
        let done = server::finished_operation(&running, token, &id).await;
        cids.push(done["cid"].as_str().unwrap().to_owned());
    }
    let screenshot = screenshot.to_owned();
    tokio::task::spawn_blocking(move || {
        let env = [
            ("CAIRN_VICTIM_CID", cids[0].as_str()),
            ("CAIRN_THIEF_CID", cids[1].as_str()),
            ("CAIRN_SCREENSHOT_NAME", screenshot.as_str()),
        ];
        run_script(
            "browser.mjs",
            &["isolation"],
            &running,
            &victim,
            &fixtures,
            &env,
        )
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn content_on_its_own_origin_cannot_read_the_token_or_other_content() {
    let Some(result) = isolation(&[], "isolation-subdomains").await else {
        return;
    };
    let origins = [
        &result["pageOrigin"],
        &result["victimOrigin"],
        &result["thiefOrigin"],
    ];
    assert!(
        result["victimOrigin"]
            .as_str()
            .unwrap()
            .contains(".ipfs.localhost:"),
        "{result}"
    );
    assert!(
        origins[0] != origins[1] && origins[1] != origins[2] && origins[0] != origins[2],
        "three origins: {result}"
    );
    let loot = result["loot"].to_string();
    assert!(!loot.contains("cairn_"), "the thief read a token: {loot}");
    assert!(
        !loot.contains("victim-secret"),
        "the thief read the victim's storage: {loot}"
    );
}

#[tokio::test]
async fn content_on_the_sandboxed_path_gateway_cannot_read_anyone_s_storage() {
    let Some(result) = isolation(&["--gateway-domain", "none"], "isolation-path-gateway").await
    else {
        return;
    };
    // One origin serves both here: the sandbox is what keeps them apart.
    assert_eq!(result["victimOrigin"], "null", "an opaque origin: {result}");
    assert_eq!(result["thiefOrigin"], "null", "an opaque origin: {result}");
    let loot = &result["loot"];
    assert!(
        loot["localStorage"].as_str().unwrap().starts_with("denied"),
        "{loot}"
    );
    assert!(!loot.to_string().contains("victim-secret"), "{loot}");
}

/// A stage's place in the order an operation's stream reports them.
fn stage_rank(stage: &str) -> usize {
    ["receiving", "queued", "extracting", "importing", "storing"]
        .iter()
        .position(|known| *known == stage)
        .unwrap_or_else(|| panic!("a stage no stream sends: {stage:?}"))
}

/// What the page's transfer status says at each stage (`uploads.js`), and after.
const SHOWN_STAGES: [(&str, &str); 5] = [
    ("receiving", "The server is receiving it…"),
    ("queued", "Queued: waiting for the server to start on it…"),
    ("extracting", "Extracting the archive…"),
    ("importing", "Importing…"),
    ("storing", "Storing…"),
];

/// The statuses a transfer showed, in order, each once.
fn statuses(result: &Value) -> Vec<&str> {
    let mut statuses: Vec<&str> = result["shown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|shown| shown["status"].as_str().unwrap())
        .collect();
    statuses.dedup();
    statuses
}

/// Runs an archive scenario (`stream` or `stream-cut`) of `browser.mjs` on a server of its
/// own, and checks the CID the page shows.
fn archive_scenario(name: &str) -> Option<Value> {
    let fixtures = Fixtures::new();
    let archive = fixtures.many_files_tar();
    let (running, _data, token) = serve();
    let env = [("CAIRN_ARCHIVE", archive.to_str().unwrap())];
    let result = run_script("browser.mjs", &[name], &running, &token, &fixtures, &env)?;
    assert_eq!(result["cid"], fixtures.cid("many"), "{result}");
    Some(result)
}

#[test]
fn the_page_follows_an_archive_through_its_stream_to_the_cid() {
    let Some(result) = archive_scenario("stream") else {
        return;
    };
    // Fed by the stream alone: opened, and the operation never asked for.
    assert!(
        !result["streams"].as_array().unwrap().is_empty(),
        "no stream opened: {result}"
    );
    assert_eq!(
        result["polls"],
        serde_json::json!([]),
        "the page polled the operation while its stream worked"
    );
    let statuses = statuses(&result);
    let stored = statuses
        .iter()
        .position(|status| *status == "Stored.")
        .unwrap_or_else(|| panic!("never said stored: {statuses:?}"));
    let stages: Vec<usize> = statuses[..stored]
        .iter()
        .filter_map(|status| SHOWN_STAGES.iter().find(|(_, shown)| shown == status))
        .map(|(stage, _)| stage_rank(stage))
        .collect();
    assert!(
        stages.contains(&stage_rank("extracting")),
        "the extraction was not shown before the CID: {statuses:?}"
    );
    assert!(
        stages.is_sorted(),
        "the stages shown went backwards: {statuses:?}"
    );
    // And how far it got, as it moved.
    let extracted: std::collections::BTreeSet<&str> = result["shown"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|shown| shown["status"] == "Extracting the archive…")
        .map(|shown| shown["bytes"].as_str().unwrap())
        .collect();
    assert!(
        extracted.len() >= 2
            && extracted
                .iter()
                .all(|bytes| bytes.contains("; extracting ")),
        "the bytes extracted did not move on the page: {extracted:?}"
    );
}

#[test]
fn the_page_polls_the_operation_when_its_stream_is_cut() {
    let Some(result) = archive_scenario("stream-cut") else {
        return;
    };
    assert!(
        !result["streams"].as_array().unwrap().is_empty(),
        "no stream tried: {result}"
    );
    assert!(
        !result["polls"].as_array().unwrap().is_empty(),
        "the CID came without a stream or a poll: {result}"
    );
    assert_eq!(statuses(&result).last(), Some(&"Stored."), "{result}");
}

#[tokio::test]
async fn chromium_s_event_source_follows_a_tus_archive_from_receiving_to_completed() {
    let fixtures = Fixtures::new();
    let archive = fixtures.many_files_tar();
    let expected_cid = fixtures.cid("many");
    let (running, _data, token) = serve();
    let page_token = token.clone();
    let (running, result) = tokio::task::spawn_blocking(move || {
        let env = [("CAIRN_ARCHIVE", archive.to_str().unwrap())];
        let result = run_script(
            "browser.mjs",
            &["eventsource"],
            &running,
            &page_token,
            &fixtures,
            &env,
        );
        (running, result)
    })
    .await
    .unwrap();
    let Some(result) = result else {
        return;
    };
    // The upload host answers the account host's page (CORS): every connection, the
    // reconnection after the end included, which is told `204` (no more to send), so that
    // the EventSource stops there rather than reconnecting every few seconds.
    let answers = result["answers"].as_array().unwrap();
    let (last, streams) = answers.split_last().unwrap();
    assert!(!streams.is_empty(), "{result}");
    assert_eq!(
        last["status"], 204,
        "the reconnection after the end: {result}"
    );
    for answer in streams {
        assert_eq!(answer["status"], 200, "{answer}");
    }
    for answer in answers {
        let allowed = answer["allowOrigin"].as_str().unwrap_or("none");
        assert!(
            allowed == "*" || allowed == result["pageOrigin"],
            "the stream does not allow the page's origin: {answer}"
        );
    }
    let events = result["events"].as_array().unwrap();
    let progress: Vec<&Value> = events.iter().filter(|e| e["type"] == "progress").collect();
    let stages: Vec<&str> = progress
        .iter()
        .map(|e| e["data"]["stage"].as_str().unwrap())
        .collect();
    let ranks: Vec<usize> = stages.iter().map(|stage| stage_rank(stage)).collect();
    assert!(ranks.is_sorted(), "the stages went backwards: {stages:?}");
    // Opened after the first half: that is what it first says it has.
    let first = &progress[0]["data"];
    assert_eq!(first["stage"], "receiving", "{stages:?}");
    assert_eq!(first["bytes"], result["half"], "{first}");
    assert_eq!(first["totalBytes"], result["length"], "{first}");
    assert!(
        ranks.iter().any(|rank| *rank > stage_rank("receiving")),
        "no processing stage after receiving: {stages:?}"
    );
    // One final event, the last of them all: the reconnection after it got nothing.
    let finals: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "completed" || e["type"] == "failed")
        .collect();
    assert_eq!(finals.len(), 1, "{events:?}");
    let completed = finals[0];
    assert_eq!(completed["type"], "completed", "{completed}");
    let last = events
        .iter()
        .rposition(|e| e["type"] != "open" && e["type"] != "error");
    assert_eq!(last.map(|i| &events[i]), Some(completed), "{events:?}");
    // Once told 204, the EventSource closed for good: never opened again.
    let after: Vec<&Value> = events.iter().skip(last.unwrap() + 1).collect();
    assert!(after.iter().all(|e| e["type"] == "error"), "{after:?}");
    assert_eq!(after.last().map(|e| &e["closed"]), Some(&Value::Bool(true)));
    for event in progress.iter().chain(&finals) {
        assert_ne!(event["id"], "", "an event without an id: {event}");
    }
    // The CID is the one the server reports, and the one of the archive's files.
    let id = result["operationId"].as_str().unwrap();
    let operation = server::operation(&running, &token, id).await;
    assert_eq!(operation["status"], "completed", "{operation}");
    assert_eq!(completed["data"]["cid"], operation["cid"], "{completed}");
    assert_eq!(operation["cid"], expected_cid.as_str());
}

/// Bytes as the page writes a figure under 1 KiB.
fn shown_bytes(bytes: &Value) -> String {
    let bytes = bytes.as_u64().unwrap();
    assert!(bytes < 1024, "a figure this test keeps small: {bytes}");
    format!("{bytes} {}", if bytes == 1 { "byte" } else { "bytes" })
}

/// The period as the page writes it (Chromium's en-US dates): first day to last, UTC.
fn shown_period(month: &str) -> String {
    const NAMES: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (year, month) = month.split_once('-').unwrap();
    let (year, month): (u32, usize) = (year.parse().unwrap(), month.parse().unwrap());
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    let name = NAMES[month - 1];
    format!("{name} 1, {year} to {name} {days}, {year} (UTC)")
}

#[tokio::test]
async fn the_storage_panel_shows_this_month_s_usage() {
    let fixtures = Fixtures::new();
    let (running, _data, token) = serve();
    // Something uploaded, and served by the gateway (to a program: not redirected).
    let served = b"served by the gateway\n";
    let (_, uploaded) = post_upload(&running, &token, "served.txt", served.to_vec()).await;
    let cid = uploaded["cid"].as_str().unwrap();
    let body = reqwest::get(format!("{}/ipfs/{cid}", running.upload))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(&body[..], served);
    // Served bytes are counted every 10 s.
    let usage_url = format!("{}/api/usage", running.account);
    let mut waited = 0;
    while server::get_json(&usage_url, &token).await["servedBytes"] == 0 {
        assert!(waited < 60, "the bytes served were not counted in 30 s");
        waited += 1;
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    let request = serde_json::json!({"name": "no read", "scopes": ["upload"]});
    let (no_read, _) = create_key(&running, &token, request).await;
    let result = tokio::task::spawn_blocking(move || {
        let env = [("CAIRN_NO_READ_TOKEN", no_read.as_str())];
        run_script("browser.mjs", &["usage"], &running, &token, &fixtures, &env)
    });
    let Some(result) = result.await.unwrap() else {
        return;
    };
    let usage = &result["usage"];
    // The upload before and the page's own (small.txt, 23 bytes); no pin.
    assert_eq!(usage["uploads"], 2, "{usage}");
    assert_eq!(usage["pins"], 0, "{usage}");
    assert_eq!(usage["uploadedBytes"], served.len() + 23, "{usage}");
    assert_ne!(usage["servedBytes"], 0, "{usage}");
    assert_eq!(
        result["shown"],
        serde_json::json!({
            "Uploaded this month": shown_bytes(&usage["uploadedBytes"]),
            "Served this month": shown_bytes(&usage["servedBytes"]),
            "Uploads kept": usage["uploads"].to_string(),
            "Pins by CID": usage["pins"].to_string(),
        }),
        "{result}"
    );
    let month = usage["period"]["month"].as_str().unwrap();
    assert_eq!(result["period"], shown_period(month), "{result}");
    // Without the `read` scope: the server's own reason.
    let refused = result["refused"].as_str().unwrap();
    assert!(refused.contains("read"), "{refused}");
}

#[tokio::test]
async fn a_name_is_listed_and_pointed_at_another_upload_from_the_page() {
    let fixtures = Fixtures::new();
    let (running, _data, token) = serve();
    let mut cids = Vec::new();
    for (file, bytes) in [("v1.txt", &b"version one"[..]), ("v2.txt", b"version two")] {
        let (_, uploaded) = post_upload(&running, &token, file, bytes.to_vec()).await;
        cids.push(uploaded["cid"].as_str().unwrap().to_owned());
    }
    let created = reqwest::Client::new()
        .post(format!("{}/api/names", running.upload))
        .bearer_auth(&token)
        .json(&serde_json::json!({"cid": cids[0], "label": "site"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    let name = created["name"].as_str().unwrap().to_owned();
    let (first, second) = (cids[0].clone(), cids[1].clone());
    let env_name = name.clone();
    let result = tokio::task::spawn_blocking(move || {
        let env = [
            ("CAIRN_NAME", env_name.as_str()),
            ("CAIRN_FIRST_CID", first.as_str()),
            ("CAIRN_SECOND_CID", second.as_str()),
        ];
        run_script("browser.mjs", &["names"], &running, &token, &fixtures, &env)
    });
    let Some(result) = result.await.unwrap() else {
        return;
    };
    let record = &result["record"];
    assert_eq!(record["name"], name.as_str(), "{result}");
    assert_eq!(record["sequence"], 1, "{result}");
    assert_eq!(record["cid"], cids[1].as_str(), "{result}");
    let shown = result["shown"].as_str().unwrap();
    assert!(
        shown.contains(&cids[1]) && !shown.contains(&cids[0]),
        "{shown}"
    );
    let refused = result["refused"].as_str().unwrap();
    assert!(refused.contains("not-a-cid"), "{refused}");
}

/// A server started with `extra` settings, and the token of an account as [`serve`] makes it.
fn serve_with(extra: &[&str]) -> (Running, tempfile::TempDir, String) {
    let data = tempfile::tempdir().unwrap();
    let running = start(data.path(), extra);
    let token = create_account(
        data.path(),
        "web",
        &["--upload-limit", &UPLOAD_LIMIT.to_string()],
    );
    (running, data, token)
}

#[tokio::test]
async fn an_upload_link_made_on_the_page_takes_an_upload_with_no_key_until_revoked() {
    let fixtures = Fixtures::new();
    let expected_cid = fixtures.cid("small.txt");
    let (running, _data, token) = serve();
    let page_token = token.clone();
    let (running, result) = tokio::task::spawn_blocking(move || {
        let result = run_script(
            "browser.mjs",
            &["links"],
            &running,
            &page_token,
            &fixtures,
            &[],
        );
        (running, result)
    })
    .await
    .unwrap();
    let Some(result) = result else {
        return;
    };
    let (record, uploaded) = (&result["record"], &result["uploaded"]);
    // What the form asked for, as the API lists it.
    assert_eq!(record["uploads"], 2, "{record}");
    assert_eq!(record["uses"], 1, "{record}");
    assert_eq!(record["maxBytes"], 1 << 20, "{record}");
    assert_eq!(record["keyvalues"], serde_json::json!({"source": "link"}));
    assert!(record.get("url").is_none(), "a listed link shows its URL");
    let lifetime = result["lifetimeSeconds"].as_f64().unwrap();
    assert!(
        (86_399.0..=86_401.0).contains(&lifetime),
        "a link chosen to expire in 1 day lives {lifetime} s: {record}"
    );
    // The upload through the copied URL: the file's CID, carrying the link's name, key-values
    // and id.
    assert_eq!(uploaded["cid"], expected_cid.as_str(), "{uploaded}");
    assert_eq!(uploaded["name"], record["name"], "{uploaded}");
    assert_eq!(uploaded["keyvalues"], record["keyvalues"], "{uploaded}");
    assert_eq!(uploaded["link"], record["id"], "{uploaded}");
    // Revoked on the page: refused, and listed no more.
    assert_eq!(result["refused"]["status"], 401, "{result}");
    assert_eq!(
        result["refused"]["body"]["error"], "invalid_link",
        "{result}"
    );
    let links = server::get_json(&format!("{}/api/upload-links", running.upload), &token).await;
    assert_eq!(links["links"], serde_json::json!([]), "{links}");
    let link = record["id"].as_str().unwrap();
    let through = server::get_json(
        &format!("{}/api/uploads?link={link}", running.account),
        &token,
    )
    .await;
    assert_eq!(through["uploads"][0]["id"], uploaded["id"], "{through}");
}

#[test]
fn a_webhook_added_on_the_page_is_signed_delivered_listed_retried_and_deleted() {
    let fixtures = Fixtures::new();
    // The receiver is on loopback.
    let (running, _data, token) = serve_with(&["--webhook-allow-private", "true"]);
    let Some(result) = run_script(
        "browser.mjs",
        &["webhooks"],
        &running,
        &token,
        &fixtures,
        &[],
    ) else {
        return;
    };
    assert!(
        result["secret"].as_str().unwrap().starts_with("whsec_"),
        "{result}"
    );
    assert_eq!(
        result["signed"], true,
        "the secret shown does not sign the deliveries: {result}"
    );
    assert_eq!(
        result["retries"],
        serde_json::json!([202]),
        "one retry, queued: {result}"
    );
    let (before, after) = (
        result["before"].as_u64().unwrap(),
        result["after"].as_u64().unwrap(),
    );
    assert!(
        before >= 1 && after > before,
        "the attempts went {before} to {after}"
    );
    // Sent again: the same delivery (one webhook-id), received again.
    assert_eq!(result["webhookIds"], 1, "{result}");
    assert!(result["sent"].as_u64().unwrap() >= after, "{result}");
    assert_eq!(result["left"], serde_json::json!([]), "deleted: {result}");
}

#[test]
fn live_events_show_an_upload_made_on_the_page_and_hold_what_comes_while_paused() {
    let fixtures = Fixtures::new();
    let Some(result) = scenario("live-events", &fixtures) else {
        return;
    };
    assert_eq!(result["cid"], fixtures.cid("small.txt"));
    let shown = result["shown"].as_str().unwrap();
    assert!(
        shown.contains("upload.completed") && shown.contains("small.txt"),
        "{shown}"
    );
    let resumed = result["resumed"].as_str().unwrap();
    assert!(resumed.contains("while-paused.txt"), "{resumed}");
    assert_eq!(result["rows"], 2, "{result}");
}

#[tokio::test]
async fn uploads_are_found_by_a_key_value_and_renamed_and_retagged_on_the_page() {
    let fixtures = Fixtures::new();
    let (running, _data, token) = serve();
    let page_token = token.clone();
    let (running, result) = tokio::task::spawn_blocking(move || {
        let result = run_script(
            "browser.mjs",
            &["keyvalues"],
            &running,
            &page_token,
            &fixtures,
            &[],
        );
        (running, result)
    })
    .await
    .unwrap();
    let Some(result) = result else {
        return;
    };
    // Filtered by user=42: that upload alone, in both lists, showing its key-values.
    let filtered = &result["filtered"];
    assert_eq!(filtered["uploads"], serde_json::json!(["tagged.txt"]));
    assert_eq!(filtered["pins"], serde_json::json!(["tagged.txt"]));
    assert_eq!(
        filtered["keyvalues"],
        serde_json::json!(["kind=avatar", "user=42"])
    );
    assert_eq!(
        result["changed"],
        serde_json::json!(["album=summer", "kind=photo", "user=42"])
    );
    // As the server keeps them: renamed, one changed, one added, then one removed; the
    // other upload untouched.
    let upload = |id: &Value| format!("{}/api/uploads/{}", running.account, id.as_str().unwrap());
    let tagged = server::get_json(&upload(&result["tagged"]), &token).await;
    assert_eq!(tagged["name"], "renamed.txt", "{tagged}");
    assert_eq!(
        tagged["keyvalues"],
        serde_json::json!({"kind": "photo", "album": "summer"}),
        "{tagged}"
    );
    let other = server::get_json(&upload(&result["other"]), &token).await;
    assert_eq!(
        (&other["name"], &other["keyvalues"]),
        (&"other.txt".into(), &serde_json::json!({"user": "7"})),
        "{other}"
    );
}

#[tokio::test]
async fn a_key_made_on_the_page_with_the_names_scope_makes_names_and_nothing_else() {
    let fixtures = Fixtures::new();
    let (running, _data, token) = serve();
    let (_, uploaded) = post_upload(&running, &token, "site.txt", b"a site".to_vec()).await;
    let page_token = token.clone();
    let (running, result) = tokio::task::spawn_blocking(move || {
        let result = run_script(
            "browser.mjs",
            &["names-key"],
            &running,
            &page_token,
            &fixtures,
            &[],
        );
        (running, result)
    })
    .await
    .unwrap();
    let Some(result) = result else {
        return;
    };
    let secret = result["secret"].as_str().unwrap();
    assert!(
        result["row"].as_str().unwrap().contains("names"),
        "{result}"
    );
    let client = reqwest::Client::new();
    let named = client
        .post(format!("{}/api/names", running.upload))
        .bearer_auth(secret)
        .json(&serde_json::json!({"cid": uploaded["cid"], "label": "made-with-the-key"}))
        .send()
        .await
        .unwrap();
    assert_eq!(named.status(), 201, "{:?}", named.text().await);
    let (status, body) = post_upload(&running, secret, "no.txt", b"no".to_vec()).await;
    assert_eq!(status, 403, "a names key uploaded: {body}");
    let keys = server::get_json(&format!("{}/api/keys", running.account), &token).await;
    let made = (keys["keys"].as_array().unwrap().iter())
        .find(|key| key["name"] == "names only")
        .unwrap();
    assert_eq!(made["scopes"], serde_json::json!(["names"]), "{made}");
}

/// How tall the page was before its sections closed (issue 49), with what was in it then.
const HEIGHT_BEFORE: [(u32, u64); 2] = [(1280, 3_847), (390, 8_970)];

#[test]
fn the_page_opens_short_and_every_section_fits_a_phone_and_passes_axe() {
    let fixtures = Fixtures::new();
    // Something in every section, a webhook to a receiver on loopback among it.
    let (running, _data, token) = serve_with(&["--webhook-allow-private", "true"]);
    let Some(result) = run_script("browser.mjs", &["layout"], &running, &token, &fixtures, &[])
    else {
        return;
    };
    let heights = &result["heights"];
    for (width, before) in HEIGHT_BEFORE {
        let closed = heights[format!("closed{width}")].as_u64().unwrap();
        let open = heights[format!("open{width}")].as_u64().unwrap();
        eprintln!(
            "page height at {width} px: {closed} px as it opens (was {before} px), {open} px with every section open"
        );
        assert!(
            closed * 2 < before,
            "at {width} px the page opens {closed} px tall: {result}"
        );
    }
    assert_eq!(
        result["sections"],
        serde_json::json!([
            "Your uploads and pins",
            "Storage",
            "Live events",
            "Names",
            "Upload links",
            "API keys",
            "Webhooks"
        ])
    );
    for width in ["390", "1280"] {
        let overflow = &result["overflow"][width];
        assert!(
            overflow["scrollWidth"].as_u64().unwrap() <= width.parse().unwrap(),
            "{overflow}"
        );
        assert_eq!(overflow["wide"], serde_json::json!([]), "{overflow}");
    }
    assert_eq!(
        result["violations"],
        serde_json::json!({"light": [], "dark": []}),
        "axe-core"
    );
}
