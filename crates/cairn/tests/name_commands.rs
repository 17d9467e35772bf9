//! `cairn name` and `cairn upload --publish` against the real `cairn serve`: a name made for
//! one upload follows the next, resolves (its record verified by the client) and serves under
//! `/ipns/`; a wrong label is a clear failure; a record a router altered is refused.

use cairn_harness::server;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use server::{cairn, cid_of, content, create_account, start, tar_of, Running};

const IPNS_RECORD: &str = "application/vnd.ipfs.ipns-record";

/// The client, pointed at `server` with `token`, its config and state kept in `home`.
fn client(server: &Running, token: &str, home: &Path) -> Command {
    let mut command = cairn();
    command
        .env("CAIRN_URL", &server.upload)
        .env("CAIRN_ACCOUNT_URL", &server.account)
        .env("CAIRN_TOKEN", token)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"));
    command
}

/// Stdout and stderr of a command that must succeed.
fn ok(output: Output) -> (String, String) {
    let (stdout, stderr) = (
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    );
    assert!(
        output.status.success(),
        "status {:?}\n{stdout}\n{stderr}",
        output.status
    );
    (stdout, stderr)
}

/// The one-line error of a command that must fail with exit status `code`.
fn fails(output: Output, code: i32) -> String {
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    assert!(output.stdout.is_empty(), "{:?}", output.stdout);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr
}

/// `cairn upload PATH` of `bytes`: the CID it prints.
fn upload(server: &Running, token: &str, home: &Path, path: &Path, bytes: &[u8]) -> String {
    std::fs::write(path, bytes).unwrap();
    let (out, _) = ok(client(server, token, home)
        .arg("upload")
        .arg(path)
        .output()
        .unwrap());
    out.split('\t').next().unwrap().to_owned()
}

/// `GET url`: the status and the body.
async fn get(url: &str) -> (u16, Vec<u8>) {
    let response = reqwest::get(url).await.unwrap();
    let status = response.status().as_u16();
    (status, response.bytes().await.unwrap().to_vec())
}

#[tokio::test]
async fn a_name_made_for_one_upload_follows_the_next_and_resolves_to_it() {
    let work = tempfile::tempdir().unwrap();
    let server = start(&work.path().join("data"), &[]);
    let home = work.path().join("home");
    let run = |args: &[&str]| {
        ok(client(&server, &server.token, &home)
            .args(args)
            .output()
            .unwrap())
    };

    let first = content(3000, 1);
    let first_cid = upload(
        &server,
        &server.token,
        &home,
        &work.path().join("v1.txt"),
        &first,
    );
    let (created, _) = run(&["name", "create", &first_cid, "--name", "site", "--json"]);
    let created: Value = serde_json::from_str(&created).unwrap();
    let name = created["name"].as_str().unwrap().to_owned();
    assert!(name.starts_with("k51"), "{created}");
    assert_eq!(
        (&created["label"], &created["value"], &created["sequence"]),
        (
            &Value::from("site"),
            &Value::from(format!("/ipfs/{first_cid}")),
            &Value::from(0)
        ),
        "{created}"
    );

    // The second version, uploaded and published in one command.
    let second = content(5000, 2);
    let second_path = work.path().join("v2.txt");
    std::fs::write(&second_path, &second).unwrap();
    let (out, said) = run(&["upload", second_path.to_str().unwrap(), "--publish", "site"]);
    let second_cid = cid_of(&second);
    assert_eq!(out.split('\t').next(), Some(second_cid.as_str()), "{out}");
    assert!(
        said.contains(&format!(
            "published {name} (site): /ipfs/{second_cid}, sequence 1"
        )),
        "{said}"
    );

    // Resolved by its k51 form with no token at all (the router is public), and by its label.
    let (resolved, said) = ok(client(&server, "", &home)
        .env_remove("CAIRN_TOKEN")
        .args(["name", "resolve", &name])
        .output()
        .unwrap());
    assert_eq!(resolved, format!("/ipfs/{second_cid}\n"));
    assert!(said.contains("record verified, sequence 1"), "{said}");
    let (resolved, _) = run(&["name", "resolve", "site"]);
    assert_eq!(resolved, format!("/ipfs/{second_cid}\n"));
    let (resolved, _) = run(&["name", "resolve", "--json", &format!("/ipns/{name}")]);
    let resolved: Value = serde_json::from_str(&resolved).unwrap();
    assert_eq!(resolved["value"], format!("/ipfs/{second_cid}"));
    assert_eq!(resolved["sequence"], 1);

    // Any gateway client reading /ipns/ gets the second file.
    let (status, body) = get(&format!("{}/ipns/{name}", server.upload)).await;
    assert_eq!(status, 200);
    assert!(body == second, "/ipns/{name} is not the second file");

    let (listed, _) = run(&["name", "list"]);
    let rows: Vec<Vec<&str>> = listed.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), 1, "{listed}");
    let second_value = format!("/ipfs/{second_cid}");
    assert_eq!(
        rows[0][..4],
        [name.as_str(), "site", second_value.as_str(), "sequence 1"],
        "{listed}"
    );
    assert!(rows[0][4].starts_with("expires 20"), "{listed}");
    let (listed, _) = run(&["name", "list", "--json"]);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["count"], 1);
    assert_eq!(listed["results"][0]["sequence"], 1);

    // Pointed back by hand, then deleted.
    let (published, _) = run(&["name", "publish", "site", &first_cid]);
    let first_value = format!("/ipfs/{first_cid}");
    let row: Vec<&str> = published.trim_end().split('\t').collect();
    assert_eq!(
        row[..4],
        [name.as_str(), "site", first_value.as_str(), "sequence 2"],
        "{published}"
    );
    let (resolved, _) = run(&["name", "resolve", &name]);
    assert_eq!(resolved, format!("{first_value}\n"));
    let (_, said) = run(&["name", "delete", "site"]);
    assert!(said.contains("deleted name site"), "{said}");
    let (listed, _) = run(&["name", "list"]);
    assert_eq!(listed, "");
    server::terminate(server);
}

#[tokio::test]
async fn archives_and_tus_uploads_are_published_once_their_operations_finish() {
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let server = start(&data, &[]);
    let home = work.path().join("home");
    let first_cid = upload(
        &server,
        &server.token,
        &home,
        &work.path().join("v1.txt"),
        b"v1",
    );

    // An archive: its CID is known once the server has extracted it.
    let run =
        |token: &str, args: &[&str]| ok(client(&server, token, &home).args(args).output().unwrap());
    let (created, _) = run(
        &server.token,
        &["name", "create", &first_cid, "--name", "site"],
    );
    let name = created.split('\t').next().unwrap().to_owned();
    let page = b"<h1>second</h1>";
    let archive = work.path().join("site.tar");
    std::fs::write(&archive, tar_of(&[("index.html", page)])).unwrap();
    let (out, said) = run(
        &server.token,
        &["upload", archive.to_str().unwrap(), "--publish", "site"],
    );
    let extracted = out.split('\t').next().unwrap();
    assert!(extracted.starts_with("bafy"), "a directory's CID: {out}");
    assert!(
        said.contains(&format!("/ipfs/{extracted}, sequence 1")),
        "{said}"
    );
    let (status, body) = get(&format!("{}/ipns/{name}/index.html", server.upload)).await;
    assert_eq!((status, body.as_slice()), (200, &page[..]));

    // TUS: an account whose POST limit is 1 KiB sends 5,000 bytes by TUS.
    let small = create_account(&data, "small", &["--upload-limit", "1024"]);
    let (created, _) = run(&small, &["name", "create", &first_cid, "--name", "big"]);
    let big_name = created.split('\t').next().unwrap().to_owned();
    let bytes = content(5000, 3);
    let path = work.path().join("big.bin");
    std::fs::write(&path, &bytes).unwrap();
    let (out, said) = run(
        &small,
        &["upload", path.to_str().unwrap(), "--publish", "big"],
    );
    let cid = cid_of(&bytes);
    assert!(out.starts_with(&format!("{cid}\t")), "{out}");
    assert!(out.contains("(operation "), "went by TUS: {out}");
    assert!(said.contains(&format!("/ipfs/{cid}, sequence 1")), "{said}");
    let (status, body) = get(&format!("{}/ipns/{big_name}", server.upload)).await;
    assert_eq!(status, 200);
    assert!(body == bytes, "/ipns/{big_name} is not the TUS upload");
    server::terminate(server);
}

#[test]
fn a_wrong_label_is_a_clear_error_and_a_failure_status() {
    let work = tempfile::tempdir().unwrap();
    let server = start(&work.path().join("data"), &[]);
    let home = work.path().join("home");
    let command = || client(&server, &server.token, &home);
    let cid = upload(
        &server,
        &server.token,
        &home,
        &work.path().join("a.txt"),
        b"a",
    );
    ok(command()
        .args(["name", "create", &cid, "--name", "site"])
        .output()
        .unwrap());

    let said = fails(
        command()
            .args(["name", "publish", "sit", &cid])
            .output()
            .unwrap(),
        1,
    );
    assert!(
        said.contains("no name \"sit\" in this account")
            && said.contains("cairn name create CID --name sit"),
        "{said}"
    );

    // `upload --publish` checks the name before it sends a byte.
    let other = work.path().join("b.txt");
    std::fs::write(&other, b"b").unwrap();
    let said = fails(
        command()
            .arg("upload")
            .arg(&other)
            .args(["--publish", "sit"])
            .output()
            .unwrap(),
        1,
    );
    assert!(said.contains("no name \"sit\" in this account"), "{said}");
    let (uploads, _) = ok(command().args(["uploads", "--json"]).output().unwrap());
    let uploads: Value = serde_json::from_str(&uploads).unwrap();
    assert_eq!(
        uploads.as_array().unwrap().len(),
        1,
        "nothing uploaded: {uploads}"
    );

    let said = fails(
        command().args(["name", "resolve", "sit"]).output().unwrap(),
        1,
    );
    assert!(
        said.contains("\"sit\" is not an IPNS name, so it was looked up as a label")
            && said.contains("no name \"sit\""),
        "{said}"
    );
    let said = fails(
        command().args(["name", "delete", "sit"]).output().unwrap(),
        1,
    );
    assert!(said.contains("no name \"sit\" in this account"), "{said}");

    // What the client can tell without asking is a usage error.
    let said = fails(
        command()
            .args(["name", "publish", "site", "not-a-cid"])
            .output()
            .unwrap(),
        2,
    );
    assert!(said.contains("\"not-a-cid\" is not a CID"), "{said}");
    let said = fails(
        command().args(["name", "resolve", &cid]).output().unwrap(),
        2,
    );
    assert!(said.contains("is a CID but not a name"), "{said}");
    server::terminate(server);
}

/// The record bytes a fake router answers, by name.
type Records = Arc<Mutex<HashMap<String, Vec<u8>>>>;

/// A delegated router that answers, for each name, whatever record bytes the test gives it.
async fn fake_router(records: Records) -> String {
    use axum::extract::{Path, State};
    use axum::http::header::CONTENT_TYPE;
    let app = axum::Router::new()
        .route(
            "/routing/v1/ipns/{name}",
            axum::routing::get(
                |State(records): State<Records>, Path(name): Path<String>| async move {
                    let bytes = records.lock().unwrap().get(&name).cloned();
                    ([(CONTENT_TYPE, IPNS_RECORD)], bytes.unwrap_or_default())
                },
            ),
        )
        .with_state(records);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_the_router_altered_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let server = start(&work.path().join("data"), &[]);
    let home = work.path().join("home");
    let token = server.token.clone();
    let first_cid = upload(&server, &token, &home, &work.path().join("a.txt"), b"first");
    let second_cid = upload(&server, &token, &home, &work.path().join("b.txt"), b"other");
    assert_eq!(first_cid.len(), second_cid.len());
    let create = |cid: &str| {
        let (created, _) = ok(client(&server, &token, &home)
            .args(["name", "create", cid])
            .output()
            .unwrap());
        created.split('\t').next().unwrap().to_owned()
    };
    let (name, other_name) = (create(&first_cid), create(&second_cid));
    let response = reqwest::Client::new()
        .get(format!("{}/routing/v1/ipns/{name}", server.upload))
        .header("Accept", IPNS_RECORD)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let record = response.bytes().await.unwrap().to_vec();

    let records = Arc::new(Mutex::new(HashMap::new()));
    let router = fake_router(records.clone()).await;
    let resolve = |name: &str| {
        cairn()
            .args(["name", "resolve", name, "--url", &router])
            .env_remove("CAIRN_TOKEN")
            .output()
            .unwrap()
    };
    // The record as Cairn signed it verifies, whoever serves it.
    records.lock().unwrap().insert(name.clone(), record.clone());
    let (resolved, _) = ok(resolve(&name));
    assert_eq!(resolved, format!("/ipfs/{first_cid}\n"));

    // The same record, its value pointed at other content wherever it appears.
    let (from, to) = (first_cid.as_bytes(), second_cid.as_bytes());
    let mut altered = record.clone();
    let mut replaced = 0;
    for at in 0..altered.len().saturating_sub(from.len() - 1) {
        if &altered[at..at + from.len()] == from {
            altered[at..at + from.len()].copy_from_slice(to);
            replaced += 1;
        }
    }
    assert!(replaced >= 1, "the record holds its value");
    records.lock().unwrap().insert(name.clone(), altered);
    let said = fails(resolve(&name), 1);
    assert!(
        said.contains("refusing the record")
            && said.contains("signature does not verify against the name's key"),
        "{said}"
    );

    // A genuine record, but another name's.
    records.lock().unwrap().insert(other_name.clone(), record);
    let said = fails(resolve(&other_name), 1);
    assert!(
        said.contains("signature does not verify against the name's key"),
        "{said}"
    );
    server::terminate(server);
}
