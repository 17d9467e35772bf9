//! DAGs built to hurt the read path, uploaded as CARs or planted in storage (as content that
//! arrived some other way could be), against the gateway: a lie is refused at upload and never
//! served as complete content; deep or self-repeating DAGs end within the request's budget
//! with a JSON error before the headers or a cut connection after them; the server stays up.

mod support;

use cairn_car::hostile;
use cairn_store::{Accounts, Uploads};

use std::time::{Duration, Instant};

use cairn_store::model::{NewUpload, OperationKind, StoredDag};
use cairn_unixfs::{BlockBytes, BlockSink, Profile};
use reqwest::multipart::Part;
use reqwest::StatusCode;
use serde_json::Value;
use support::{assert_error, get, TestServer};

/// A server whose account may POST 64 MB.
async fn server() -> TestServer {
    let server = TestServer::start().await;
    server
        .store
        .set_account_limits("alice", Some(64 << 20), None)
        .await
        .unwrap();
    server
}

async fn upload_car(server: &TestServer, dag: &hostile::Dag) -> (StatusCode, Value) {
    let part = Part::bytes(dag.car()).file_name("dag.car");
    server.post_file(&server.token, "", part).await
}

/// Store a DAG's blocks as they are, without the importer's checks.
async fn plant(server: &TestServer, dag: &hostile::Dag) -> String {
    let mut pack = server
        .state
        .service
        .packs
        .writer(cairn_store::packs::nothing_known())
        .unwrap();
    for (cid, block) in &dag.blocks {
        pack.put_block(cid, BlockBytes::new(block)).unwrap();
    }
    let account = server
        .store
        .account_by_name("alice")
        .await
        .unwrap()
        .unwrap();
    let upload = NewUpload {
        upload_id: format!("planted-{}", dag.root),
        account_id: account.id,
        kind: OperationKind::CarImport,
        name: "planted.car".into(),
        size: 0,
        mime_type: "application/vnd.ipld.car".into(),
        archive_mode: None,
        profile: Profile::default().name.into(),
        keyvalues: Default::default(),
        key_id: None,
        link_id: None,
        file_name: None,
        content: None,
    };
    let pack_dag_bytes = pack.dag_bytes();
    let root = dag.root.to_string();
    server
        .store
        .commit_completed_upload(
            upload,
            pack.seal().unwrap(),
            &StoredDag {
                cid: root.clone(),
                size: pack_dag_bytes,
            },
        )
        .await
        .unwrap();
    root
}

/// What a client gets: a JSON error before the headers, or a body that arrives whole or not.
enum Outcome {
    Error(StatusCode, Value),
    Whole(StatusCode, Vec<u8>),
    /// The connection was cut: after the status line, or (a failure met at once) before it.
    Cut(Option<StatusCode>),
}

/// GET `path` and see what the client gets.
/// Errors come as the contract's JSON (the client asks for it), so their codes can be read.
async fn fetch(server: &TestServer, path: &str, headers: &[(&str, &str)]) -> Outcome {
    let mut request = server.client.get(format!("{}{path}", server.upload));
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("accept"))
    {
        request = request.header("Accept", "application/json");
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let Ok(response) = request.send().await else {
        return Outcome::Cut(None);
    };
    let status = response.status();
    if status.is_client_error() || status.is_server_error() {
        return Outcome::Error(status, response.json().await.unwrap());
    }
    match response.bytes().await {
        Ok(bytes) => Outcome::Whole(status, bytes.to_vec()),
        Err(_) => Outcome::Cut(Some(status)),
    }
}

async fn assert_up(server: &TestServer) {
    let health = get(server, "/healthz", &[]).await;
    assert_eq!(health.status(), StatusCode::OK);
}

#[tokio::test]
async fn lies_are_refused_at_upload_naming_the_block_and_the_rule() {
    let server = server().await;
    for (dag, rule) in [
        (hostile::lying_blocksizes(), "blocksizes say 5"),
        (hostile::lying_filesize(15), "filesize says 15"),
        (hostile::lying_filesize(25), "filesize says 25"),
        (hostile::hamt_with_bad_fanout(), "HAMT fanout 255"),
        (hostile::hamt_with_mismatched_sub_shard(), "fanout 16"),
    ] {
        let (status, body) = upload_car(&server, &dag).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_error(&body, "invalid_archive");
        let message = body["message"].as_str().unwrap();
        assert!(message.starts_with("invalid CAR file: "), "{message}");
        assert!(
            message.contains(rule) && message.contains("block baf"),
            "{message}"
        );
    }
}

#[tokio::test]
async fn stored_lies_are_never_served_as_complete_content() {
    let server = server().await;
    let blocksizes = plant(&server, &hostile::lying_blocksizes()).await;
    for (path, range) in [
        (format!("/ipfs/{blocksizes}"), None),
        (format!("/ipfs/{blocksizes}"), Some("bytes=12-14")),
    ] {
        let headers: Vec<(&str, &str)> = range.iter().map(|r| ("Range", *r)).collect();
        match fetch(&server, &path, &headers).await {
            Outcome::Error(status, body) => {
                assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
                assert_error(&body, "invalid_dag");
                assert!(body["message"].as_str().unwrap().contains("blocksizes say"));
            }
            other => panic!("{path} {range:?}: {}", describe(&other)),
        }
    }
    // A CAR starts before the lie is met: it is cut, never finished.
    let car = fetch(&server, &format!("/ipfs/{blocksizes}?format=car"), &[]).await;
    assert!(matches!(car, Outcome::Cut(_)), "{}", describe(&car));

    for dag in [
        hostile::lying_filesize(15),
        hostile::lying_filesize(25),
        hostile::hamt_with_bad_fanout(),
    ] {
        let root = plant(&server, &dag).await;
        for query in ["", "?format=car"] {
            match fetch(&server, &format!("/ipfs/{root}/{query}"), &[]).await {
                Outcome::Error(StatusCode::UNPROCESSABLE_ENTITY, body) => {
                    assert_error(&body, "invalid_dag")
                }
                other => panic!("{root}{query}: {}", describe(&other)),
            }
        }
    }
    assert_up(&server).await;
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Error(status, body) => format!("{status} {body}"),
        Outcome::Whole(status, bytes) => format!("{status}, {} bytes, whole", bytes.len()),
        Outcome::Cut(status) => format!("{status:?}, cut"),
    }
}

#[tokio::test]
async fn deep_dags_end_at_once_with_an_error_and_the_server_stays_up() {
    let server = server().await;
    let (status, body) = upload_car(&server, &hostile::deep_file(100_000)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let file = body["cid"].as_str().unwrap().to_owned();
    let (status, body) = upload_car(&server, &hostile::deep_directory(100_000)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let dir = body["cid"].as_str().unwrap().to_owned();

    let started = Instant::now();
    for headers in [&[][..], &[("Range", "bytes=0-0")][..]] {
        match fetch(&server, &format!("/ipfs/{file}"), headers).await {
            Outcome::Error(StatusCode::UNPROCESSABLE_ENTITY, body) => {
                assert_error(&body, "dag_too_large");
                assert!(body["message"].as_str().unwrap().contains("1024 levels"));
            }
            other => panic!("{headers:?}: {}", describe(&other)),
        }
    }
    // Every CAR scope: the block alone is whole; anything that walks down is cut at 1024.
    for (root, scope, whole) in [
        (&file, "all", false),
        (&file, "entity", false),
        (&file, "entity&entity-bytes=0:0", false),
        (&file, "block", true),
        (&dir, "all", false),
        (&dir, "all&car-dups=y", false),
        (&dir, "entity", true),
        (&dir, "block", true),
    ] {
        let path = format!("/ipfs/{root}?format=car&dag-scope={scope}");
        match fetch(&server, &path, &[]).await {
            Outcome::Whole(StatusCode::OK, _) if whole => {}
            Outcome::Cut(_) if !whole => {}
            other => panic!("{scope}: {}", describe(&other)),
        }
    }
    // One level is a listing; a path of 2,000 steps is refused before any block is read.
    let listing = get(
        &server,
        &format!("/ipfs/{dir}/"),
        &[("Accept", "application/json")],
    )
    .await;
    assert_eq!(listing.status(), StatusCode::OK);
    let deep_path = format!("/ipfs/{dir}/{}", vec!["d"; 2000].join("/"));
    match fetch(&server, &deep_path, &[]).await {
        Outcome::Error(StatusCode::UNPROCESSABLE_ENTITY, body) => {
            assert_error(&body, "dag_too_large")
        }
        other => panic!("{}", describe(&other)),
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_up(&server).await;
}

#[tokio::test]
async fn a_self_repeating_dag_costs_one_budget_and_no_more() {
    let server = server().await;
    let (status, body) = upload_car(&server, &hostile::laughing_directory(16, 10)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let dir = body["cid"].as_str().unwrap().to_owned();

    // Without duplicates: the eleven blocks. With them: cut at the budget (a million blocks).
    match fetch(&server, &format!("/ipfs/{dir}?format=car"), &[]).await {
        Outcome::Whole(StatusCode::OK, bytes) => assert!(bytes.len() < 20_000),
        other => panic!("{}", describe(&other)),
    }
    let started = Instant::now();
    let response = get(&server, &format!("/ipfs/{dir}?format=car&car-dups=y"), &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut received = 0u64;
    let mut response = response;
    let cut = loop {
        match response.chunk().await {
            Ok(Some(chunk)) => received += chunk.len() as u64,
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    assert!(cut, "the walk of 16^10 entries ended as if complete");
    // About a million sections of ~600 bytes: the budget, not the DAG's petabyte.
    assert!(received < 1 << 30, "{received} bytes");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );

    // A self-repeating file claims 3 TB: refused before the headers; a Range of it works.
    let (status, body) = upload_car(&server, &hostile::laughing_file(16, 10)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let file = body["cid"].as_str().unwrap().to_owned();
    match fetch(&server, &format!("/ipfs/{file}"), &[]).await {
        Outcome::Error(StatusCode::UNPROCESSABLE_ENTITY, body) => {
            assert_error(&body, "dag_too_large")
        }
        other => panic!("{}", describe(&other)),
    }
    match fetch(&server, &format!("/ipfs/{file}"), &[("Range", "bytes=0-8")]).await {
        Outcome::Whole(StatusCode::PARTIAL_CONTENT, bytes) => assert_eq!(bytes, b"lollollol"),
        other => panic!("{}", describe(&other)),
    }
    assert_up(&server).await;
}

#[tokio::test]
async fn a_symlink_cycle_on_a_path_is_not_followed() {
    let server = server().await;
    let (status, body) = upload_car(&server, &hostile::symlink_cycle()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let root = body["cid"].as_str().unwrap();
    let looped = get(
        &server,
        &format!("/ipfs/{root}/loop/loop/f"),
        &[("Accept", "application/json")],
    )
    .await;
    assert_eq!(looped.status(), StatusCode::NOT_FOUND);
    assert_error(&looped.json().await.unwrap(), "not_found");
    let link = get(&server, &format!("/ipfs/{root}/loop"), &[]).await;
    assert_eq!(link.text().await.unwrap(), "loop");
}

/// Send raw bytes as a request; the response's status line and JSON body.
async fn raw_request(server: &TestServer, request: &[u8]) -> (String, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = server.upload.trim_start_matches("http://");
    let mut socket = tokio::net::TcpStream::connect(address).await.unwrap();
    socket.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    socket.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let status_line = head.lines().next().unwrap().to_owned();
    assert!(head.contains("content-type: application/json"), "{head}");
    (status_line, serde_json::from_str(body).unwrap())
}

#[tokio::test]
async fn errors_answered_before_our_handlers_are_json_too() {
    let server = server().await;
    // Over hyper's 64 KiB URI limit (100,000 segments): hyper answers 414 itself.
    let long = format!(
        "GET /ipfs/bafkqaaa/{} HTTP/1.1\r\nhost: x\r\n\r\n",
        vec!["a"; 100_000].join("/")
    );
    let (status, body) = raw_request(&server, long.as_bytes()).await;
    assert!(status.starts_with("HTTP/1.1 414 "), "{status}");
    assert_error(&body, "uri_too_long");

    // Not HTTP at all.
    let (status, body) = raw_request(&server, b"GARBAGE\x01 / HTTP/1.1\r\n\r\n").await;
    assert!(status.starts_with("HTTP/1.1 400 "), "{status}");
    assert_error(&body, "bad_request");

    // An extractor's rejection (a path that is not UTF-8 once decoded).
    let accept_json = [("Accept", "application/json")];
    let response = get(&server, "/ipfs/bafkqaaa/%FF", &accept_json).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_error(&response.json().await.unwrap(), "bad_request");
    assert_up(&server).await;
}
