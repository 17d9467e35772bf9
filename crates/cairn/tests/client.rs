//! The `cairn` client against a real server: upload a file, a directory and an archive, get
//! each back and compare; kill an upload mid-TUS and run it again to see it resume.

use cairn_harness::server;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use server::{admin, cairn, content, start, Running};

/// The client, pointed at `server`, with its config and state kept in `home`.
fn client(server: &Running, home: &Path) -> Command {
    let mut command = cairn();
    command
        .env("CAIRN_URL", &server.upload)
        .env("CAIRN_ACCOUNT_URL", &server.account)
        .env("CAIRN_TOKEN", &server.token)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"));
    command
}

fn ok(output: Output) -> String {
    assert!(
        output.status.success(),
        "status {:?}\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Every file, directory and symlink under `dir`, with contents, for comparison.
fn tree(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                out.push((
                    name,
                    format!("-> {}", std::fs::read_link(&path).unwrap().display()),
                ));
            } else if meta.is_dir() {
                out.push((name, "dir".into()));
                stack.push(path);
            } else {
                out.push((name, format!("{:?}", std::fs::read(&path).unwrap())));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn upload_a_file_a_directory_and_an_archive_then_get_each_back() {
    let work = tempfile::tempdir().unwrap();
    let server = start(&work.path().join("data"), &[]);
    let home = work.path().join("home");

    // A file, by POST.
    let file = work.path().join("notes.txt");
    std::fs::write(&file, b"hello world").unwrap();
    let out = ok(client(&server, &home)
        .arg("upload")
        .arg(&file)
        .output()
        .unwrap());
    let cid = out.split('\t').next().unwrap().to_owned();
    assert_eq!(
        cid,
        "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"
    );
    let back = work.path().join("notes.back");
    let got = ok(client(&server, &home)
        .args(["get", "--json", &cid, "-o"])
        .arg(&back)
        .output()
        .unwrap());
    let got: serde_json::Value = serde_json::from_str(got.trim()).unwrap();
    assert_eq!(got["cid"], cid);
    assert_eq!(got["path"], back.display().to_string());
    assert_eq!(std::fs::read(&back).unwrap(), b"hello world");

    // A directory, packed locally into a CAR: its CID is the one `cairn cid` computes.
    let dir = work.path().join("site");
    std::fs::create_dir_all(dir.join("css")).unwrap();
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    std::fs::write(dir.join("index.html"), b"<h1>hi</h1>").unwrap();
    std::fs::write(dir.join("css/a.css"), content(3 << 20, 1)).unwrap();
    std::os::unix::fs::symlink("index.html", dir.join("home")).unwrap();
    let local = ok(cairn().arg("cid").arg(&dir).output().unwrap())
        .trim()
        .to_owned();
    let out = ok(client(&server, &home)
        .args(["upload", "--json"])
        .arg(&dir)
        .output()
        .unwrap());
    let result: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(result["cid"], local);
    let back = work.path().join("site.back");
    ok(client(&server, &home)
        .args(["get", &local, "-o"])
        .arg(&back)
        .output()
        .unwrap());
    assert_eq!(tree(&back), tree(&dir));
    let listing = ok(client(&server, &home)
        .args(["ls", &local])
        .output()
        .unwrap());
    let names: Vec<&str> = listing
        .lines()
        .map(|l| l.rsplit('\t').next().unwrap())
        .collect();
    assert_eq!(names, ["css", "empty", "home", "index.html"]);

    // An archive, extracted by the server: --wait follows its events to the CID.
    let archive = work.path().join("site.tar.gz");
    let status = Command::new("tar")
        .arg("czf")
        .arg(&archive)
        .arg("-C")
        .arg(work.path())
        .arg("site")
        .status()
        .unwrap();
    assert!(status.success());
    let out = ok(client(&server, &home)
        .args(["upload", "--wait"])
        .arg(&archive)
        .output()
        .unwrap());
    let extracted = out.split('\t').next().unwrap().to_owned();
    let back = work.path().join("archive.back");
    ok(client(&server, &home)
        .args(["get", &extracted, "-o"])
        .arg(&back)
        .output()
        .unwrap());
    assert_eq!(tree(&back.join("site")), tree(&dir));
    let operation = out
        .rsplit("operation ")
        .next()
        .unwrap()
        .trim_end_matches(")\n");
    let status = ok(client(&server, &home)
        .args(["status", operation])
        .output()
        .unwrap());
    assert!(
        status.contains("status: completed") && status.contains(&extracted),
        "{status}"
    );
    server::terminate(server);
}

#[tokio::test]
async fn a_killed_tus_upload_resumes_when_the_command_runs_again() {
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let server = start(&data, &[]);
    let home = work.path().join("home");
    // Anything above 1 MiB goes by TUS.
    admin(
        &["account", "set", "default", "--upload-limit", "1048576"],
        &data,
    );
    // Many small chunks (each fsynced by the server) leave a wide window to kill it mid-way.
    let bytes = content(64 << 20, 9);
    let file = work.path().join("big.bin");
    std::fs::write(&file, &bytes).unwrap();
    let upload = || {
        let mut command = client(&server, &home);
        command
            .args(["upload", "--wait", "--chunk-size", "262144"])
            .arg(&file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    };

    // Kill it once the server holds a MiB, watching the upload's bytes on the server's disk
    // (asking over HTTP would pre-empt the client's PATCH).
    let mut first = upload().spawn().unwrap();
    let state = home.join("state/cairn/tus-uploads.json");
    let mut offset = 0u64;
    for _ in 0..2000 {
        let id = std::fs::read_to_string(&state).ok().and_then(|text| {
            let remembered: serde_json::Value = serde_json::from_str(&text).ok()?;
            let url = remembered["uploads"].as_object()?.values().next()?["url"]
                .as_str()?
                .to_owned();
            url.rsplit('/').next().map(str::to_owned)
        });
        if let Some(id) = id {
            offset = std::fs::metadata(data.join("tus").join(&id)).map_or(0, |m| m.len());
            if offset >= 1 << 20 {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(
        offset >= 1 << 20 && offset < bytes.len() as u64,
        "killed mid-upload at {offset}"
    );

    // Run the same command again: it resumes, and the CID is right.
    let output = upload().output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let resumed_at: u64 = stderr
        .split("at byte ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("did not resume: {stderr}"));
    assert!(
        resumed_at >= offset,
        "resumed at {resumed_at}, the server had {offset}"
    );
    let out = ok(output);
    let local = ok(cairn().arg("cid").arg(&file).output().unwrap());
    assert_eq!(out.split('\t').next().unwrap(), local.trim());
    server::terminate(server);
}

#[test]
fn errors_say_what_went_wrong_with_the_right_exit_status() {
    let work = tempfile::tempdir().unwrap();
    let home = work.path();
    // No token anywhere: a usage error.
    let output = cairn()
        .args(["status", "1", "--url", "http://127.0.0.1:9"])
        .env_remove("CAIRN_TOKEN")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no API token"));
    // Nothing listening: a connection error.
    let output = cairn()
        .args([
            "status",
            "1",
            "--url",
            "http://127.0.0.1:9",
            "--token",
            "cairn_x",
        ])
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // Where it looked, and how to point it elsewhere.
    for said in [
        "nothing answers at http://127.0.0.1:9",
        "--url or CAIRN_URL",
    ] {
        assert!(stderr.contains(said), "{stderr}");
    }
}

#[test]
fn uploads_are_listed_pinned_and_removed_from_the_command_line() {
    let work = tempfile::tempdir().unwrap();
    let (home, data) = (work.path().join("home"), work.path().join("data"));
    let server = start(&data, &[]);
    let run = |args: &[&str]| ok(client(&server, &home).args(args).output().unwrap());
    let json = |args: &[&str]| -> serde_json::Value { serde_json::from_str(&run(args)).unwrap() };
    for (name, seed) in [("a.bin", 1), ("b.bin", 2)] {
        std::fs::write(work.path().join(name), content(2000, seed)).unwrap();
        run(&["upload", work.path().join(name).to_str().unwrap()]);
    }
    let uploads = json(&["uploads", "--json"]);
    let names: Vec<&str> = uploads
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["b.bin", "a.bin"], "newest first");
    let a_cid = uploads[1]["cid"].as_str().unwrap().to_owned();
    let b_id = uploads[0]["id"].as_str().unwrap().to_owned();
    let lines = run(&["uploads"]);
    let fields: Vec<Vec<&str>> = lines.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(fields.len(), 2, "{lines}");
    assert_eq!(
        fields[0],
        [
            b_id.as_str(),
            uploads[0]["cid"].as_str().unwrap(),
            "2000",
            "completed",
            "b.bin"
        ]
    );

    // This month's usage: both uploads, their bytes; nothing read back yet.
    let usage = json(&["usage", "--json"]);
    assert_eq!(
        (
            &usage["uploads"],
            &usage["uploadedBytes"],
            &usage["servedBytes"]
        ),
        (
            &serde_json::json!(2),
            &serde_json::json!(4000),
            &serde_json::json!(0)
        ),
        "{usage}"
    );
    let shown = run(&["usage"]);
    assert!(
        shown.contains("uploads: 2") && shown.contains("uploaded: 4.00 kB"),
        "{shown}"
    );
    let output = client(&server, &home)
        .args(["usage", "--period", "2026-13"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("2026-13"));

    // Pinning stored content: pinned at once; the pins list holds uploads and pins.
    let pinned = json(&["pin", &a_cid, "--name", "again", "--wait", "--json"]);
    assert_eq!(pinned["status"], "pinned", "{pinned}");
    assert_eq!(json(&["pins", "--json"]).as_array().unwrap().len(), 3);

    // Remove by CID (every upload of it) and by id; unpin by request id.
    run(&["rm", &a_cid]);
    run(&["rm", &b_id]);
    assert_eq!(json(&["uploads", "--json"]), serde_json::json!([]));
    let pins = json(&["pins", "--json"]);
    assert_eq!(
        pins.as_array().unwrap().len(),
        1,
        "the pin by CID stays: {pins}"
    );
    run(&["unpin", pins[0]["requestid"].as_str().unwrap()]);
    assert_eq!(json(&["pins", "--json"]), serde_json::json!([]));

    // What is not there is an error that says so.
    let output = client(&server, &home)
        .args(["rm", "nosuchupload"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("404") && stderr.contains("not found"),
        "{stderr}"
    );
    let output = client(&server, &home)
        .args(["unpin", &a_cid])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("nothing is pinned"));
}
