//! The service over real HTTP: both hosts bound to port 0, driven with reqwest.

mod support;

use cairn_store::Accounts;
use reqwest::multipart::{Form, Part};
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{assert_error, tar_gz, wait_for, TestServer};

#[tokio::test]
async fn a_plain_file_gets_the_cid_ipfs_computes_and_its_operation_is_complete() {
    let server = TestServer::start().await;
    let file = Part::bytes(b"hello world".to_vec()).file_name("hello.txt");
    let (status, body) = server.post_file(&server.token, "", file).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["cid"],
        "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"
    );
    assert_eq!(body["name"], "hello.txt");
    assert_eq!(body["size"], 11);
    assert_eq!(body["mimeType"], "text/plain");
    assert_eq!(body["status"], "completed");

    // Polled on both hosts, by integer id and by upload id.
    let op_id = body["operationId"].as_i64().unwrap();
    let upload_id = body["id"].as_str().unwrap();
    for host in [&server.upload, &server.account] {
        for id in [op_id.to_string(), upload_id.to_owned()] {
            let (status, _, op) = server
                .get(format!("{host}/api/operations/{id}"), Some(&server.token))
                .await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(op["id"], op_id);
            assert_eq!(op["status"], "completed");
            assert_eq!(op["progressPercent"], 100.0);
            assert_eq!(op["cid"], body["cid"]);
            assert!(op["completedAt"].is_string());
        }
    }
}

#[tokio::test]
async fn profile_and_name_parameters_are_honoured() {
    let server = TestServer::start().await;
    let file = Part::bytes(b"hello world".to_vec()).file_name("ignored.txt");
    let (status, body) = server
        .post_file(
            &server.token,
            "?cid_profile=unixfs-v0-2015&name=greeting",
            file,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["cid"],
        "Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD"
    );
    assert_eq!(body["name"], "greeting");
}

#[tokio::test]
async fn uploads_over_the_limit_are_refused_with_a_pointer_to_tus() {
    let server = TestServer::start().await;
    // Content-Length far above the 2000-byte limit: refused before the body is read.
    let (status, body) = server
        .post_file(&server.token, "", Part::bytes(vec![7u8; 100_000]))
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_error(&body, "payload_too_large");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .contains("/api/upload/tus"));

    // Within the multipart allowance by Content-Length, but over the limit once streamed.
    let (status, body) = server
        .post_file(&server.token, "", Part::bytes(vec![7u8; 3000]))
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_error(&body, "payload_too_large");
}

#[tokio::test]
async fn authentication_errors_follow_the_contract() {
    let server = TestServer::start().await;
    let url = format!("{}/api/upload-limit", server.account);
    let (status, headers, body) = server.get(url.clone(), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(headers["www-authenticate"], "Bearer realm=\"cairn\"");
    assert_error(&body, "unauthorized");

    for bad in ["nonsense", &format!("cairn_{}", "0".repeat(64))] {
        let (status, headers, body) = server.get(url.clone(), Some(bad)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(
            headers["www-authenticate"],
            "Bearer error=\"invalid_token\""
        );
        assert_error(&body, "invalid_token");
    }

    let (status, _, body) = server.get(url, Some(&server.token)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        serde_json::json!({"account": "alice", "limit": 2000, "storedBytes": 0, "quota": null})
    );
    // Refused before its body is read: the answer says the connection closes, so a client
    // does not send its next request down a connection the server is about to drop.
    let refused = server
        .client
        .post(format!("{}/api/upload", server.upload))
        .bearer_auth("nonsense")
        .body(vec![0u8; 300_000])
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(refused.headers()["connection"], "close");
}

/// An Authorization header that is not `Bearer <token>` (the token alone, as people paste it,
/// or another scheme) is told apart from a wrong token: it says what the header must hold.
#[tokio::test]
async fn a_token_without_bearer_is_told_how_to_send_it() {
    let server = TestServer::start().await;
    let url = format!("{}/api/upload-limit", server.account);
    for header in [
        server.token.clone(),
        format!("Token {}", server.token),
        "Basic YTpi".into(),
    ] {
        let response = server
            .client
            .get(&url)
            .header("authorization", header.as_str())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{header}");
        assert_eq!(
            response.headers()["www-authenticate"],
            "Bearer realm=\"cairn\""
        );
        let body: Value = response.json().await.unwrap();
        assert_error(&body, "unauthorized");
        let message = body["message"].as_str().unwrap();
        assert!(message.contains("`Bearer <token>`"), "{message}");
    }
}

/// A body or query the request cannot take is refused in our words, naming the field; never
/// in the framework's ("Failed to deserialize ...", "Invalid `boundary` ...").
#[tokio::test]
async fn bodies_and_queries_that_do_not_fit_are_refused_naming_what_is_wrong() {
    let server = TestServer::start().await;
    let keys = format!("{}/api/keys", server.account);
    let send = |request: reqwest::RequestBuilder| async move {
        let response = request.send().await.unwrap();
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        (
            status,
            body["error"].clone(),
            body["message"].as_str().unwrap().to_owned(),
        )
    };
    let auth = |request: reqwest::RequestBuilder| request.bearer_auth(&server.token);
    let cases = [
        (
            auth(server.client.post(&keys)).body(r#"{"name": "x", "scopes": ["upload"]}"#),
            "`Content-Type: application/json`",
        ),
        (
            auth(server.client.post(&keys)).json(&json!({"name": 5, "scopes": ["upload"]})),
            "the body's JSON does not fit this request: name: invalid type: integer `5`",
        ),
        (
            auth(server.client.post(&keys))
                .header("content-type", "application/json")
                .body("{\"name\": "),
            "the body is not valid JSON",
        ),
        (
            auth(server.client.post(format!("{}/api/upload", server.upload)))
                .json(&json!({"file": "hello"})),
            "multipart/form-data",
        ),
        (
            auth(server.client.get(format!(
                "{}/api/webhooks/wh_x/deliveries?limt=5",
                server.account
            ))),
            "the query string does not fit this request: limt: unknown field `limt`",
        ),
    ];
    for (request, says) in cases {
        let (status, error, message) = send(request).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{message}");
        assert_eq!(error, "bad_request", "{message}");
        assert!(message.contains(says), "{message:?} should say {says:?}");
        for framework in [
            "Failed to",
            "deserialize",
            "Invalid `boundary`",
            "target type",
        ] {
            assert!(!message.contains(framework), "{message}");
        }
    }
}

/// A route asked of the wrong host says which host serves it (the two hosts are the first thing
/// that confuses a new user); a path neither serves says only that.
/// An `EventSource` reconnects to a stream that ended unless told `204`: a finished
/// operation's stream, asked again after its final event, says so.
#[tokio::test]
async fn a_finished_operations_stream_asked_again_after_its_final_event_answers_204() {
    let server = TestServer::start().await;
    let file = Part::bytes(b"done".to_vec()).file_name("done.txt");
    let (status, body) = server.post_file(&server.token, "", file).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let url = format!(
        "{}/api/operations/{}/events",
        server.upload, body["operationId"]
    );
    let first = (server.client.get(&url))
        .bearer_auth(&server.token)
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    // Proxies such as nginx would otherwise hold the events in their buffers.
    assert_eq!(first.headers()["x-accel-buffering"], "no");
    let text = first.text().await.unwrap();
    assert!(text.contains("event: completed"), "{text}");
    let final_id = (text.lines())
        .find_map(|line| line.strip_prefix("id: "))
        .expect("the final event has an id");
    let again = (server.client.get(&url))
        .bearer_auth(&server.token)
        .header("Last-Event-ID", final_id)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NO_CONTENT);
}

/// A page holding a link cannot use the keys' TUS endpoint: a POST through a link that is over
/// the account's limit points to the link's own.
#[tokio::test]
async fn a_post_through_a_link_over_the_limit_names_the_links_own_tus_endpoint() {
    let server = TestServer::start().await;
    let small = server.new_account("small", 2000).await;
    let link: Value = (server.client)
        .post(format!("{}/api/upload-links", server.upload))
        .bearer_auth(&small)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let form = Form::new().part("file", Part::bytes(vec![7; 4000]).file_name("big.bin"));
    let response = (server.client)
        .post(link["url"].as_str().unwrap())
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let body: Value = response.json().await.unwrap();
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("this link's own TUS endpoint") && !message.contains("/api/upload/tus"),
        "{message}"
    );
}

/// A page on another origin that uploads with a key learns what it may POST from the upload
/// host (the account host answers no other origin).
#[tokio::test]
async fn a_page_elsewhere_reads_the_upload_limit_from_the_upload_host() {
    let server = TestServer::start().await;
    let response = (server.client)
        .get(format!("{}/api/upload-limit", server.upload))
        .bearer_auth(&server.token)
        .header("Origin", "https://app.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    let limit: Value = response.json().await.unwrap();
    assert!(limit["limit"].as_u64().unwrap() > 0, "{limit}");
}

#[tokio::test]
async fn a_route_asked_of_the_wrong_host_says_which_host_serves_it() {
    let server = TestServer::start().await;
    for (host, path, says) in [
        (&server.upload, "/api/keys", "the account host"),
        (
            &server.upload,
            "/api/webhooks/wh_1/deliveries",
            "the account host",
        ),
        (&server.account, "/api/upload-links", "the upload host"),
        (&server.account, "/pins", "the upload host"),
    ] {
        let (status, _, body) = server
            .get(format!("{host}{path}"), Some(&server.token))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_error(&body, "not_found");
        let message = body["message"].as_str().unwrap();
        assert!(
            message.contains(says) && message.contains(path),
            "{message}"
        );
    }
    let (_, _, body) = server
        .get(
            format!("{}/api/keysmith", server.upload),
            Some(&server.token),
        )
        .await;
    assert_eq!(body["message"], "no route for /api/keysmith");
}

#[tokio::test]
async fn an_error_answered_before_the_body_is_read_reaches_a_client_still_sending() {
    let server = TestServer::start().await;
    let host = server.upload.trim_start_matches("http://").to_owned();
    let refused = send_with_a_pause(
        &host,
        "POST /api/upload HTTP/1.1\r\nAuthorization: Bearer nonsense\r\n",
        32 << 20,
    )
    .await
    .expect("the 401 reaches the client");
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");

    // Halfway: a TUS PATCH goes past its Upload-Length after 1 MiB.
    let created = server
        .client
        .post(format!("{}/api/upload/tus", server.upload))
        .bearer_auth(&server.token)
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Length", (1u64 << 20).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let path = created.headers()["location"]
        .to_str()
        .unwrap()
        .replace(&server.upload, "");
    let head = format!(
        "PATCH {path} HTTP/1.1\r\nAuthorization: Bearer {}\r\nTus-Resumable: 1.0.0\r\n\
         Upload-Offset: 0\r\nContent-Type: application/offset+octet-stream\r\n",
        server.token
    );
    let refused = send_with_a_pause(&host, &head, 32 << 20)
        .await
        .expect("the 413 reaches the client");
    assert!(refused.starts_with("HTTP/1.1 413"), "{refused}");
    assert!(refused.contains("payload_too_large"), "{refused}");
}

/// Send a request whose body (`length` zeros) far exceeds what the connection buffers, pausing
/// after its first MiB long enough for the server to answer, then read the answer. A server that
/// closes with the body unread resets the connection, and the rest of the body, or the read,
/// fails as a real client's upload did.
async fn send_with_a_pause(host: &str, head: &str, length: usize) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(host).await?;
    let head = format!("{head}Host: {host}\r\nContent-Length: {length}\r\n\r\n");
    stream.write_all(head.as_bytes()).await?;
    let body = vec![0u8; length];
    stream.write_all(&body[..1 << 20]).await?;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    stream.write_all(&body[1 << 20..]).await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

#[tokio::test]
async fn unknown_routes_wrong_methods_and_bad_requests_are_json() {
    let server = TestServer::start().await;
    let (status, _, body) = server
        .get(format!("{}/no/such/route", server.upload), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "not_found");

    let response = server
        .client
        .delete(format!("{}/api/upload", server.upload))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_error(&response.json().await.unwrap(), "method_not_allowed");

    let (status, body) = server
        .post_file(
            &server.token,
            "?archive_mode=shred",
            Part::bytes(b"x".to_vec()),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["message"].as_str().unwrap().contains("archive_mode"));

    // Extraction asked for outright, of something that is not an archive.
    let (status, body) = server
        .post_file(
            &server.token,
            "?archive_mode=extract",
            Part::bytes(b"plain text".to_vec()),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("not a recognised archive"),
        "{body}"
    );

    let response = server
        .client
        .post(format!("{}/api/upload", server.upload))
        .bearer_auth(&server.token)
        .multipart(Form::new().text("name", "no file here"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("`file`"),
        "{body}"
    );

    let response = server
        .client
        .post(format!("{}/api/upload", server.upload))
        .bearer_auth(&server.token)
        .body("not multipart")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_error(&response.json().await.unwrap(), "bad_request");

    // A NUL byte in an id, a name or a filter is refused the same way on every database
    // (PostgreSQL cannot hold one in text).
    for url in [
        format!("{}/api/uploads/abc%00def", server.upload),
        format!("{}/pins?name=a%00", server.upload),
        format!("{}/api/webhooks/%00/deliveries", server.account),
    ] {
        let (status, _, body) = server.get(url.clone(), Some(&server.token)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{url}");
        assert_error(&body, "bad_request");
        assert!(body["message"].as_str().unwrap().contains("NUL"), "{body}");
    }
}

#[tokio::test]
async fn another_accounts_operation_is_not_found_and_lists_are_private() {
    let server = TestServer::start().await;
    let (_, body) = server
        .post_file(&server.token, "", Part::bytes(b"mine".to_vec()))
        .await;
    let op_id = body["operationId"].as_i64().unwrap();
    let bob = server.new_account("bob", 2000).await;
    let (status, _, body) = server
        .get(
            format!("{}/api/operations/{op_id}", server.upload),
            Some(&bob),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "not_found");

    let (_, _, list) = server
        .get(format!("{}/api/operations", server.upload), Some(&bob))
        .await;
    assert_eq!(list["operations"].as_array().unwrap().len(), 0);

    // Alice pages through her own, newest first.
    for i in 0..3u8 {
        server
            .post_file(&server.token, "", Part::bytes(vec![i; 5]))
            .await;
    }
    let (_, _, page) = server
        .get(
            format!("{}/api/operations?limit=2", server.upload),
            Some(&server.token),
        )
        .await;
    let ids: Vec<i64> = page["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids[0] > ids[1]);
    let cursor = page["nextCursor"].as_str().unwrap();
    let (_, _, rest) = server
        .get(
            format!("{}/api/operations?limit=2&cursor={cursor}", server.upload),
            Some(&server.token),
        )
        .await;
    assert_eq!(rest["operations"].as_array().unwrap().len(), 2);
    assert!(rest["operations"][0]["id"].as_i64().unwrap() < ids[1]);
}

#[tokio::test]
async fn archives_are_stored_whole_in_preserve_mode() {
    let server = TestServer::start().await;
    let mut zip = b"PK\x03\x04".to_vec();
    zip.extend_from_slice(&[0u8; 100]);
    let (status, body) = server
        .post_file(
            &server.token,
            "?archive_mode=preserve",
            Part::bytes(zip.clone()).file_name("site.zip"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["mimeType"], "application/zip");
    let expected = cairn_unixfs::block::block_cid(
        cairn_unixfs::CidVersion::V1,
        cairn_unixfs::block::RAW,
        &zip,
    );
    assert_eq!(body["cid"], expected.to_string());
}

/// A CAR of a small multi-block file, and its root and last block.
fn sample_car(drop_last: bool) -> (Vec<u8>, String, String) {
    use cairn_car::{export_dfs, CarLimits, CarReader, CarWriter};
    use cairn_unixfs::{BlockBytes, FileImporter, MemoryBlocks, Profile};
    let profile = Profile {
        chunk_size: 100,
        ..Profile::default()
    };
    let mut blocks = MemoryBlocks::default();
    let mut importer = FileImporter::new(&profile, &mut blocks);
    importer
        .push(&(0..1000u32).map(|i| i as u8).collect::<Vec<_>>())
        .unwrap();
    let root = importer.finish().unwrap().cid;
    let mut writer = CarWriter::new(Vec::new(), &[root]).unwrap();
    export_dfs(&root, &mut blocks, &mut writer).unwrap();
    let car = writer.into_inner();
    let all: Vec<_> = CarReader::new(&car[..], CarLimits::default())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let last = all.last().unwrap().0.to_string();
    if !drop_last {
        return (car, root.to_string(), last);
    }
    let mut writer = CarWriter::new(Vec::new(), &[root]).unwrap();
    for (cid, block) in &all[..all.len() - 1] {
        writer.write_block(cid, BlockBytes::new(block)).unwrap();
    }
    (writer.into_inner(), root.to_string(), last)
}

#[tokio::test]
async fn a_car_is_imported_as_is_when_complete_and_refused_with_the_missing_block_when_not() {
    let server = TestServer::start().await;
    let (partial, _, missing) = sample_car(true);
    let (status, body) = server
        .post_file(
            &server.token,
            "",
            Part::bytes(partial).file_name("site.car"),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_error(&body, "invalid_archive");
    assert!(
        body["message"].as_str().unwrap().contains(&missing),
        "{body}"
    );

    let (car, root, _) = sample_car(false);
    let (status, body) = server
        .post_file(
            &server.token,
            "",
            Part::bytes(car.clone()).file_name("site.car"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["cid"], root);
    assert_eq!(body["mimeType"], "application/vnd.ipld.car");
    assert_eq!(body["size"], car.len());
    let (_, _, op) = server
        .get(
            format!("{}/api/operations/{}", server.upload, body["operationId"]),
            Some(&server.token),
        )
        .await;
    assert_eq!(op["operation"], "car_import");
    assert_eq!(op["cid"], root);

    // A flipped byte in a block is caught by verification.
    let mut corrupt = car;
    let last = corrupt.len() - 1;
    corrupt[last] ^= 1;
    let (status, body) = server
        .post_file(&server.token, "", Part::bytes(corrupt))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("does not hash"),
        "{body}"
    );
}

#[tokio::test]
async fn each_account_is_rate_limited_per_endpoint_with_retry_after() {
    let server = TestServer::start().await;
    let url = format!("{}/api/upload-limit", server.account);
    // The test server allows 5 upload-limit requests a minute.
    for _ in 0..5 {
        let (status, _, _) = server.get(url.clone(), Some(&server.token)).await;
        assert_eq!(status, StatusCode::OK);
    }
    let (status, headers, body) = server.get(url.clone(), Some(&server.token)).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_error(&body, "rate_limited");
    assert_eq!(headers["retry-after"], "12");
    assert_eq!(headers["ratelimit-policy"], "\"account\";q=5;w=60");
    assert_eq!(headers["ratelimit"], "\"account\";r=0;t=12");

    // Another endpoint, and another account, are unaffected.
    let (status, _, _) = server
        .get(
            format!("{}/api/operations", server.account),
            Some(&server.token),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let bob = server.new_account("bob", 2000).await;
    let (status, _, _) = server.get(url, Some(&bob)).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn metrics_count_uploads_bytes_and_responses() {
    let server = TestServer::start().await;
    server
        .post_file(&server.token, "", Part::bytes(b"hello world".to_vec()))
        .await;
    server.get(format!("{}/nope", server.upload), None).await;
    let text = server
        .client
        .get(format!("{}/metrics", server.upload))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        "cairn_uploads_total{kind=\"file\"} 1",
        "cairn_upload_bytes_total 11",
        "cairn_upload_duration_seconds_count 1",
        "cairn_http_responses_total{code=\"200\"} 1",
        "cairn_http_responses_total{code=\"404\"} 1",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in:\n{text}"
        );
    }
}

/// Bytes that only begin like a zip are the file they are; named as an archive, they are
/// refused at once (`docs/contract.md`, "What counts as an archive").
#[tokio::test]
async fn bytes_that_begin_like_a_zip_are_a_file_unless_named_as_an_archive() {
    let server = TestServer::start().await;
    let bytes = b"PK\x03\x04 not really a zip".to_vec();
    let (status, body) = server
        .post_file(&server.token, "", Part::bytes(bytes.clone()))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (&body["status"], &body["kind"], &body["cid"]),
        (
            &json!("completed"),
            &json!("file"),
            &json!(support::file_cid(&bytes))
        ),
        "{body}"
    );
    assert_eq!(
        body["mimeType"], "application/octet-stream",
        "not a zip's type"
    );

    let (status, body) = server
        .post_file(&server.token, "", Part::bytes(bytes).file_name("site.zip"))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_error(&body, "invalid_archive");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("\"site.zip\" is named as an archive") && message.contains("zip"),
        "{message}"
    );
}

#[tokio::test]
async fn an_archive_is_extracted_by_a_worker_and_its_cid_polled() {
    let server = TestServer::start().await;
    server
        .store
        .set_account_limits("alice", Some(1 << 20), None)
        .await
        .unwrap();
    let archive = tar_gz(&[
        ("site/index.html", b"<h1>hi</h1>"),
        ("site/css/a.css", b"p{}"),
    ]);
    let (status, body) = server
        .post_file(
            &server.token,
            "",
            Part::bytes(archive).file_name("site.tgz"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["cid"],
        Value::Null,
        "the CID of an archive comes from the operation"
    );
    assert_eq!(body["mimeType"], "application/gzip");
    let op = wait_for(&server, body["operationId"].as_i64().unwrap()).await;
    assert_eq!(op["status"], "completed", "{op}");
    assert_eq!(op["progressPercent"], 100.0);
    assert_eq!(op["archiveMode"], "extract");

    let profile = cairn_unixfs::Profile::default();
    let file = |bytes: &[u8]| {
        let mut importer = cairn_unixfs::FileImporter::new(&profile, cairn_unixfs::DiscardBlocks);
        importer.push(bytes).unwrap();
        importer.finish().unwrap()
    };
    let mut expected = cairn_unixfs::DirectoryBuilder::new(&profile);
    expected
        .add_file("site/index.html", file(b"<h1>hi</h1>"))
        .unwrap();
    expected.add_file("site/css/a.css", file(b"p{}")).unwrap();
    let expected = expected.finish(&mut cairn_unixfs::DiscardBlocks).unwrap();
    assert_eq!(op["cid"], expected.cid.to_string());
}

#[tokio::test]
async fn an_unsafe_archive_fails_its_operation_naming_the_entry() {
    let server = TestServer::start().await;
    let archive = tar_gz(&[("ok.txt", b"fine"), ("../escape.txt", b"evil")]);
    let (status, body) = server
        .post_file(&server.token, "", Part::bytes(archive))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let op = wait_for(&server, body["operationId"].as_i64().unwrap()).await;
    assert_eq!(op["status"], "failed");
    assert_eq!(op["cid"], Value::Null);
    assert_eq!(op["error"]["error"], "invalid_archive");
    let message = op["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("../escape.txt") && message.contains(".."),
        "{message}"
    );

    // A 7z whose start header holds but whose entries are garbage fails in the worker, like
    // any corrupt archive (one that is only a signature is refused at once: see above).
    let mut seven_z = b"7z\xbc\xaf\x27\x1c\0\x04".to_vec();
    // The next header's offset (0), its size (4) and a CRC it will not match.
    let next_header = [
        &0u64.to_le_bytes()[..],
        &4u64.to_le_bytes(),
        &[0xde, 0xad, 0xbe, 0xef],
    ]
    .concat();
    seven_z.extend_from_slice(&crc32(&next_header).to_le_bytes());
    seven_z.extend_from_slice(&next_header);
    seven_z.extend_from_slice(b"junk");
    let (status, body) = server
        .post_file(&server.token, "", Part::bytes(seven_z).file_name("x.7z"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let op = wait_for(&server, body["operationId"].as_i64().unwrap()).await;
    assert_eq!(op["error"]["error"], "invalid_archive", "{op}");
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(bytes);
    crc.sum()
}

#[tokio::test]
async fn the_stored_bytes_quota_refuses_uploads_and_archives_that_do_not_fit() {
    let server = TestServer::start().await;
    server
        .store
        .set_account_limits("alice", Some(1 << 20), Some(Some(1000)))
        .await
        .unwrap();
    let (status, body) = server
        .post_file(&server.token, "", Part::bytes(vec![9u8; 600]))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The same bytes again cost nothing: quota counts stored bytes, after deduplication.
    let (status, _) = server
        .post_file(&server.token, "", Part::bytes(vec![9u8; 600]))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = server
        .post_file(&server.token, "", Part::bytes(vec![8u8; 600]))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_error(&body, "quota_exceeded");

    // An archive that would expand past the quota fails its operation.
    let archive = tar_gz(&[("big.bin", &[7u8; 5000])]);
    let (status, body) = server
        .post_file(&server.token, "", Part::bytes(archive))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let op = wait_for(&server, body["operationId"].as_i64().unwrap()).await;
    assert_eq!(op["status"], "failed");
    assert_eq!(op["error"]["error"], "quota_exceeded", "{op}");
    assert!(
        op["error"]["message"]
            .as_str()
            .unwrap()
            .contains("400 bytes are left"),
        "{op}"
    );
}

#[tokio::test]
async fn a_metadata_store_that_is_down_answers_503_with_retry_after() {
    let server = TestServer::start().await;
    server.store.close().await;
    let (status, headers, body) = server
        .get(
            format!("{}/api/upload-limit", server.account),
            Some(&server.token),
        )
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_error(&body, "unavailable");
    assert!(headers.contains_key("retry-after"));
}
