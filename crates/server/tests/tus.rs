//! TUS 1.0.0 conformance: every line of `docs/tus-rules.md` (T1-T14, F1, F3, F4;
//! F2 kills the real binary and lives in `crates/cairn/tests/tus_crash.rs`).

mod support;

use std::time::{Duration, Instant};

use cairn_server::ServerConfig;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use support::{assert_error, tar_gz, wait_for, TestServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const OCTETS: &str = "application/offset+octet-stream";

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|_| panic!("not JSON: {:?}", String::from_utf8_lossy(&self.body)))
    }
}

/// A TUS request with the token and `Tus-Resumable: 1.0.0` unless the headers say otherwise.
async fn tus(
    server: &TestServer,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut request = server
        .client
        .request(Method::from_bytes(method.as_bytes()).unwrap(), url)
        .bearer_auth(&server.token);
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("tus-resumable"))
    {
        request = request.header("Tus-Resumable", "1.0.0");
    }
    for (name, value) in headers {
        if !value.is_empty() || *name == "Upload-Metadata" {
            request = request.header(*name, *value);
        }
    }
    let response = request.body(body.to_vec()).send().await.unwrap();
    Reply {
        status: response.status(),
        headers: response.headers().clone(),
        body: response.bytes().await.unwrap().to_vec(),
    }
}

fn endpoint(server: &TestServer) -> String {
    format!("{}/api/upload/tus", server.upload)
}

/// Create an upload; returns its URL.
async fn create(server: &TestServer, headers: &[(&str, &str)]) -> String {
    let reply = tus(server, "POST", &endpoint(server), headers, b"").await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.json());
    reply.header("location").unwrap().to_owned()
}

/// Create an upload of `length` bytes; returns its URL and its operation's id.
async fn create_with_operation(server: &TestServer, length: u64) -> (String, i64) {
    let length = length.to_string();
    let reply = tus(
        server,
        "POST",
        &endpoint(server),
        &[("Upload-Length", &length)],
        b"",
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.json());
    let operation = reply.header("cairn-operation-id").unwrap().parse().unwrap();
    (reply.header("location").unwrap().to_owned(), operation)
}

async fn patch(server: &TestServer, url: &str, offset: u64, body: &[u8]) -> Reply {
    let offset = offset.to_string();
    tus(
        server,
        "PATCH",
        url,
        &[("Content-Type", OCTETS), ("Upload-Offset", &offset)],
        body,
    )
    .await
}

async fn offset(server: &TestServer, url: &str) -> u64 {
    let reply = tus(server, "HEAD", url, &[], b"").await;
    assert_eq!(reply.status, StatusCode::OK);
    reply.header("upload-offset").unwrap().parse().unwrap()
}

/// The table of simple request/response lines: each runs against a fresh 10-byte upload.
struct Case {
    line: &'static str,
    method: &'static str,
    /// Whether the request goes to the upload's URL (else the creation endpoint).
    on_upload: bool,
    headers: &'static [(&'static str, &'static str)],
    body: &'static [u8],
    status: u16,
    /// Headers that must be present with this value ("*" for any value), or absent (None).
    expect: &'static [(&'static str, Option<&'static str>)],
}

const CASES: &[Case] = &[
    Case { line: "T1 OPTIONS needs no Tus-Resumable", method: "OPTIONS", on_upload: false,
        headers: &[("Tus-Resumable", "")], body: b"", status: 204,
        expect: &[("tus-resumable", Some("1.0.0"))] },
    Case { line: "T1 unsupported version is 412 with Tus-Version", method: "POST", on_upload: false,
        headers: &[("Tus-Resumable", "0.2.2"), ("Upload-Length", "5")], body: b"", status: 412,
        expect: &[("tus-version", Some("1.0.0")), ("tus-resumable", Some("1.0.0")), ("location", None)] },
    Case { line: "T1 missing version on HEAD is 412", method: "HEAD", on_upload: true,
        headers: &[("Tus-Resumable", "")], body: b"", status: 412,
        expect: &[("upload-offset", None)] },
    Case { line: "T2 HEAD reports offset, length, metadata, no-store", method: "HEAD", on_upload: true,
        headers: &[], body: b"", status: 200,
        expect: &[("upload-offset", Some("0")), ("upload-length", Some("10")),
                  ("upload-metadata", Some("filename aGVsbG8udHh0")), ("cache-control", Some("no-store")),
                  ("upload-expires", Some("*")), ("tus-resumable", Some("1.0.0"))] },
    Case { line: "T4 wrong content type is 415", method: "PATCH", on_upload: true,
        headers: &[("Content-Type", "application/octet-stream"), ("Upload-Offset", "0")],
        body: b"abc", status: 415, expect: &[] },
    Case { line: "T4 missing Upload-Offset is 400", method: "PATCH", on_upload: true,
        headers: &[("Content-Type", OCTETS)], body: b"abc", status: 400, expect: &[] },
    Case { line: "T4 negative Upload-Offset is 400", method: "PATCH", on_upload: true,
        headers: &[("Content-Type", OCTETS), ("Upload-Offset", "-1")], body: b"abc", status: 400,
        expect: &[] },
    Case { line: "T4 offset mismatch is 409", method: "PATCH", on_upload: true,
        headers: &[("Content-Type", OCTETS), ("Upload-Offset", "3")], body: b"abc", status: 409,
        expect: &[] },
    Case { line: "T4 success is 204 with the new offset", method: "PATCH", on_upload: true,
        headers: &[("Content-Type", OCTETS), ("Upload-Offset", "0")], body: b"abc", status: 204,
        expect: &[("upload-offset", Some("3")), ("upload-expires", Some("*"))] },
    Case { line: "T4 bytes beyond Upload-Length are 413", method: "PATCH", on_upload: true,
        headers: &[("Content-Type", OCTETS), ("Upload-Offset", "0")], body: b"0123456789XYZ",
        status: 413, expect: &[] },
    Case { line: "T5 OPTIONS lists exactly what is supported", method: "OPTIONS", on_upload: false,
        headers: &[], body: b"", status: 204,
        expect: &[("tus-version", Some("1.0.0")),
                  ("tus-extension", Some("creation,creation-with-upload,creation-defer-length,termination,checksum,expiration,concatenation")),
                  ("tus-max-size", Some("1099511627776")), ("tus-checksum-algorithm", Some("sha1,sha256,md5"))] },
    Case { line: "T6 X-HTTP-Method-Override on POST", method: "POST", on_upload: true,
        headers: &[("X-HTTP-Method-Override", "PATCH"), ("Content-Type", OCTETS), ("Upload-Offset", "0")],
        body: b"abc", status: 204, expect: &[("upload-offset", Some("3"))] },
    Case { line: "T7 neither length nor defer is 400", method: "POST", on_upload: false,
        headers: &[], body: b"", status: 400, expect: &[("location", None)] },
    Case { line: "T7 both length and defer is 400", method: "POST", on_upload: false,
        headers: &[("Upload-Length", "5"), ("Upload-Defer-Length", "1")], body: b"", status: 400,
        expect: &[] },
    Case { line: "T7 a defer value other than 1 is 400", method: "POST", on_upload: false,
        headers: &[("Upload-Defer-Length", "2")], body: b"", status: 400, expect: &[] },
    Case { line: "T7 length above Tus-Max-Size is 413", method: "POST", on_upload: false,
        headers: &[("Upload-Length", "1099511627777")], body: b"", status: 413, expect: &[] },
    Case { line: "T7 success is 201 with Location and expiry", method: "POST", on_upload: false,
        headers: &[("Upload-Length", "5")], body: b"", status: 201,
        expect: &[("location", Some("*")), ("upload-expires", Some("*")), ("cairn-operation-id", Some("*"))] },
    Case { line: "T8 bad base64 in metadata is 400", method: "POST", on_upload: false,
        headers: &[("Upload-Length", "5"), ("Upload-Metadata", "filename !!!")], body: b"", status: 400,
        expect: &[] },
    Case { line: "T8 duplicate metadata keys are 400", method: "POST", on_upload: false,
        headers: &[("Upload-Length", "5"), ("Upload-Metadata", "a YQ==,a Yg==")], body: b"", status: 400,
        expect: &[] },
    Case { line: "T8 an empty Upload-Metadata is accepted", method: "POST", on_upload: false,
        headers: &[("Upload-Length", "5"), ("Upload-Metadata", "")], body: b"", status: 201,
        expect: &[] },
    Case { line: "T8 an empty value is accepted", method: "POST", on_upload: false,
        headers: &[("Upload-Length", "5"), ("Upload-Metadata", "flag,filename YQ==")], body: b"",
        status: 201, expect: &[] },
    Case { line: "T10 creation-with-upload stores the body", method: "POST", on_upload: false,
        headers: &[("Upload-Length", "10"), ("Content-Type", OCTETS)], body: b"01234", status: 201,
        expect: &[("upload-offset", Some("5"))] },
    Case { line: "T12 unknown checksum algorithm is 400", method: "PATCH", on_upload: true,
        headers: &[("Content-Type", OCTETS), ("Upload-Offset", "0"), ("Upload-Checksum", "crc32 AAAAAA==")],
        body: b"abc", status: 400, expect: &[] },
    Case { line: "T12 checksum mismatch is 460", method: "PATCH", on_upload: true,
        headers: &[("Content-Type", OCTETS), ("Upload-Offset", "0"),
                   ("Upload-Checksum", "sha1 Kq5sNclPz7QV2+lfQIuc6R7oRu0=")],
        body: b"abc", status: 460, expect: &[] },
    Case { line: "T12 a matching checksum is 204", method: "PATCH", on_upload: true,
        headers: &[("Content-Type", OCTETS), ("Upload-Offset", "0"),
                   ("Upload-Checksum", "sha1 qZk+NkcGgWq6PiVxeFDCbJzQ2J0=")],
        body: b"abc", status: 204, expect: &[("upload-offset", Some("3"))] },
    Case { line: "T13 DELETE on an incomplete upload is 204", method: "DELETE", on_upload: true,
        headers: &[], body: b"", status: 204, expect: &[] },
];

#[tokio::test]
async fn every_simple_line_of_the_checklist_holds() {
    let server = TestServer::start().await;
    let mut failures = Vec::new();
    for case in CASES {
        let upload = create(
            &server,
            &[
                ("Upload-Length", "10"),
                ("Upload-Metadata", "filename aGVsbG8udHh0"),
            ],
        )
        .await;
        let url = if case.on_upload {
            upload.clone()
        } else {
            endpoint(&server)
        };
        let reply = tus(&server, case.method, &url, case.headers, case.body).await;
        if reply.status.as_u16() != case.status {
            failures.push(format!(
                "{}: status {} (want {})",
                case.line, reply.status, case.status
            ));
            continue;
        }
        for (name, want) in case.expect {
            let got = reply.header(name);
            let ok = match (want, got) {
                (None, None) => true,
                (Some("*"), Some(_)) => true,
                (Some(want), Some(got)) => *want == got,
                _ => false,
            };
            if !ok {
                failures.push(format!(
                    "{}: header {name} is {got:?}, want {want:?}",
                    case.line
                ));
            }
        }
        // Errors are JSON; HEAD and 204s carry no body.
        if reply.status.as_u16() >= 400 && case.method != "HEAD" {
            assert!(reply.json()["error"].is_string(), "{}", case.line);
        }
        if case.method == "HEAD" || reply.status == StatusCode::NO_CONTENT {
            assert!(reply.body.is_empty(), "{}: a body", case.line);
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[tokio::test]
async fn t3_t13_unknown_is_404_and_terminated_is_410_everywhere() {
    let server = TestServer::start().await;
    let unknown = format!("{}/0123456789abcdef", endpoint(&server));
    let reply = tus(&server, "HEAD", &unknown, &[], b"").await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert!(reply.header("upload-offset").is_none());
    assert_eq!(
        patch(&server, &unknown, 0, b"x").await.status,
        StatusCode::NOT_FOUND
    );

    let url = create(&server, &[("Upload-Length", "10")]).await;
    patch(&server, &url, 0, b"abc").await;
    assert_eq!(
        tus(&server, "DELETE", &url, &[], b"").await.status,
        StatusCode::NO_CONTENT
    );
    for method in ["HEAD", "DELETE"] {
        assert_eq!(
            tus(&server, method, &url, &[], b"").await.status,
            StatusCode::GONE,
            "{method}"
        );
    }
    let reply = patch(&server, &url, 3, b"d").await;
    assert_eq!(reply.status, StatusCode::GONE);
    assert_error(&reply.json(), "gone");

    // The operation of a terminated upload fails with `gone`.
    let id = url.rsplit('/').next().unwrap();
    let (_, _, op) = server
        .get(
            format!("{}/api/operations/{id}", server.upload),
            Some(&server.token),
        )
        .await;
    assert_eq!(op["status"], "failed");
    assert_eq!(op["error"]["error"], "gone");
}

/// A PATCH past `Upload-Length` is 413 and keeps none of its bytes, whether `Content-Length`
/// says so before the body (refused unread) or the bytes show it (a chunked body): the upload
/// stays where it was, its operation waiting, and resumes to the CID of the right bytes.
#[tokio::test]
async fn t4_bytes_beyond_the_length_keep_nothing_and_the_upload_resumes() {
    let server = TestServer::start().await;
    let (url, operation) = create_with_operation(&server, 10).await;
    let reply = patch(&server, &url, 0, b"0123456789EXTRA").await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_error(&reply.json(), "payload_too_large");
    assert_eq!(offset(&server, &url).await, 0, "nothing of it is kept");

    assert_eq!(
        patch(&server, &url, 0, b"0123").await.status,
        StatusCode::NO_CONTENT
    );
    // Chunked: the length shows only when the bytes pass it.
    let chunks: Vec<Result<&'static [u8], std::io::Error>> =
        vec![Ok(b"456"), Ok(b"789"), Ok(b"EXTRA")];
    let response = server
        .client
        .patch(&url)
        .bearer_auth(&server.token)
        .header("Tus-Resumable", "1.0.0")
        .header("Content-Type", OCTETS)
        .header("Upload-Offset", "4")
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let body: serde_json::Value = response.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("still at offset 4"),
        "{body}"
    );
    assert_eq!(offset(&server, &url).await, 4, "the PATCH kept nothing");
    let op = support::operation(&server, operation).await;
    assert_eq!(
        op["status"], "pending",
        "nothing completed the upload: {op}"
    );

    assert_eq!(
        patch(&server, &url, 4, b"456789").await.status,
        StatusCode::NO_CONTENT
    );
    let op = wait_for(&server, operation).await;
    assert_eq!(op["cid"], support::file_cid(b"0123456789"));
    let reply = patch(&server, &url, 10, b"").await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    assert_eq!(reply.header("upload-offset"), Some("10"));
    assert!(
        reply.header("upload-expires").is_none(),
        "complete uploads do not expire"
    );
}

#[tokio::test]
async fn t7_a_zero_length_upload_is_complete_at_once_and_processed() {
    let server = TestServer::start().await;
    let reply = tus(
        &server,
        "POST",
        &endpoint(&server),
        &[("Upload-Length", "0")],
        b"",
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    let operation: i64 = reply.header("cairn-operation-id").unwrap().parse().unwrap();
    let op = wait_for(&server, operation).await;
    assert_eq!(op["status"], "completed", "{op}");
    assert_eq!(
        op["cid"],
        "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"
    );
}

#[tokio::test]
async fn t9_a_deferred_length_is_set_once() {
    let server = TestServer::start().await;
    let url = create(&server, &[("Upload-Defer-Length", "1")]).await;
    let head = tus(&server, "HEAD", &url, &[], b"").await;
    assert_eq!(head.header("upload-defer-length"), Some("1"));
    assert!(head.header("upload-length").is_none());
    let set = tus(
        &server,
        "PATCH",
        &url,
        &[
            ("Content-Type", OCTETS),
            ("Upload-Offset", "0"),
            ("Upload-Length", "6"),
        ],
        b"abc",
    )
    .await;
    assert_eq!(set.status, StatusCode::NO_CONTENT);
    let head = tus(&server, "HEAD", &url, &[], b"").await;
    assert_eq!(head.header("upload-length"), Some("6"));
    assert!(head.header("upload-defer-length").is_none());
    let change = tus(
        &server,
        "PATCH",
        &url,
        &[
            ("Content-Type", OCTETS),
            ("Upload-Offset", "3"),
            ("Upload-Length", "7"),
        ],
        b"d",
    )
    .await;
    assert_eq!(change.status, StatusCode::CONFLICT);
    assert_eq!(offset(&server, &url).await, 3);
}

#[tokio::test]
async fn t11_an_expired_upload_answers_410_and_the_sweep_reclaims_it() {
    let server = TestServer::start_with(ServerConfig {
        tus_expiry: Duration::from_millis(300),
        ..ServerConfig::default()
    })
    .await;
    let swept = create(&server, &[("Upload-Length", "10")]).await;
    let asked = create(&server, &[("Upload-Length", "10")]).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        cairn_service::tus::sweep_expired(&server.state.service)
            .await
            .unwrap(),
        2,
        "both incomplete uploads are past their expiry"
    );
    for url in [swept, asked] {
        assert_eq!(
            tus(&server, "HEAD", &url, &[], b"").await.status,
            StatusCode::GONE
        );
        let id = url.rsplit('/').next().unwrap();
        assert!(
            server.state.service.tus_bytes.open_read(id).is_err(),
            "the bytes were reclaimed"
        );
    }
}

#[tokio::test]
async fn t12_a_checksum_mismatch_leaves_the_offset_unchanged() {
    let server = TestServer::start().await;
    let url = create(&server, &[("Upload-Length", "10")]).await;
    patch(&server, &url, 0, b"ab").await;
    let reply = tus(
        &server,
        "PATCH",
        &url,
        &[
            ("Content-Type", OCTETS),
            ("Upload-Offset", "2"),
            ("Upload-Checksum", "md5 AAAAAAAAAAAAAAAAAAAAAA=="),
        ],
        b"cdef",
    )
    .await;
    assert_eq!(reply.status.as_u16(), 460);
    assert_error(&reply.json(), "checksum_mismatch");
    assert_eq!(offset(&server, &url).await, 2);

    // A checksummed chunk at the wrong offset is refused before a byte is taken, and leaves
    // nothing behind for the next one.
    let md5 = |bytes: &[u8]| {
        use base64::Engine;
        use md5::{Digest, Md5};
        let sum = base64::engine::general_purpose::STANDARD.encode(Md5::digest(bytes));
        format!("md5 {sum}")
    };
    let checked = |at: &'static str, body: &'static [u8]| {
        let (server, url, sum) = (&server, &url, md5(body));
        async move {
            tus(
                server,
                "PATCH",
                url,
                &[
                    ("Content-Type", OCTETS),
                    ("Upload-Offset", at),
                    ("Upload-Checksum", &sum),
                ],
                body,
            )
            .await
        }
    };
    let early = checked("0", b"cdef").await;
    assert_eq!(early.status, StatusCode::CONFLICT);
    assert_error(&early.json(), "conflict");
    assert_eq!(offset(&server, &url).await, 2);
    assert_eq!(checked("2", b"cdef").await.status, StatusCode::NO_CONTENT);
    assert_eq!(offset(&server, &url).await, 6);
}

#[tokio::test]
async fn t14_partials_concatenate_into_a_final_upload_processed_as_one_file() {
    let server = TestServer::start().await;
    let (first, second) = (b"hello ".as_slice(), b"world".as_slice());
    let mut parts = Vec::new();
    for bytes in [first, second] {
        let len = bytes.len().to_string();
        let reply = tus(
            &server,
            "POST",
            &endpoint(&server),
            &[("Upload-Concat", "partial"), ("Upload-Length", &len)],
            b"",
        )
        .await;
        assert_eq!(reply.status, StatusCode::CREATED);
        assert!(
            reply.header("cairn-operation-id").is_none(),
            "partials are never processed alone"
        );
        let url = reply.header("location").unwrap().to_owned();
        assert_eq!(
            patch(&server, &url, 0, bytes).await.status,
            StatusCode::NO_CONTENT
        );
        parts.push(url);
    }
    let concat = format!("final;{} {}", parts[0], parts[1]);
    let with_length = tus(
        &server,
        "POST",
        &endpoint(&server),
        &[("Upload-Concat", &concat), ("Upload-Length", "11")],
        b"",
    )
    .await;
    assert_eq!(with_length.status, StatusCode::BAD_REQUEST);
    let reply = tus(
        &server,
        "POST",
        &endpoint(&server),
        &[("Upload-Concat", &concat)],
        b"",
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.json());
    let url = reply.header("location").unwrap().to_owned();
    assert_eq!(
        patch(&server, &url, 11, b"!").await.status,
        StatusCode::FORBIDDEN
    );
    let operation: i64 = reply.header("cairn-operation-id").unwrap().parse().unwrap();
    let op = wait_for(&server, operation).await;
    assert_eq!(op["status"], "completed", "{op}");
    assert_eq!(
        op["cid"], "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e",
        "the CID of \"hello world\""
    );
}

#[tokio::test]
async fn an_archive_uploaded_with_tus_is_extracted_and_polled_by_the_tus_id() {
    let server = TestServer::start().await;
    let archive = tar_gz(&[("site/index.html", b"<h1>hi</h1>")]);
    let len = archive.len().to_string();
    let reply = tus(
        &server,
        "POST",
        &endpoint(&server),
        &[
            ("Upload-Length", &len),
            (
                "Upload-Metadata",
                "filename c2l0ZS50Z3o=,archive_mode ZXh0cmFjdA==",
            ),
        ],
        b"",
    )
    .await;
    let url = reply.header("location").unwrap().to_owned();
    let half = archive.len() / 2;
    assert_eq!(
        patch(&server, &url, 0, &archive[..half]).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        patch(&server, &url, half as u64, &archive[half..])
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    // The interface document's "finish" step, then polling with the TUS id.
    assert_eq!(
        tus(&server, "DELETE", &url, &[], b"").await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        tus(&server, "DELETE", &url, &[], b"").await.status,
        StatusCode::NO_CONTENT
    );
    let id = url.rsplit('/').next().unwrap();
    let mut op = serde_json::Value::Null;
    for _ in 0..200 {
        op = server
            .get(
                format!("{}/api/operations/{id}", server.upload),
                Some(&server.token),
            )
            .await
            .2;
        if op["status"] == "completed" || op["status"] == "failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(op["status"], "completed", "{op}");
    assert_eq!(op["operation"], "tus_upload");
    assert_eq!(op["name"], "site.tgz");
    let profile = cairn_unixfs::Profile::default();
    let mut importer = cairn_unixfs::FileImporter::new(&profile, cairn_unixfs::DiscardBlocks);
    importer.push(b"<h1>hi</h1>").unwrap();
    let mut dir = cairn_unixfs::DirectoryBuilder::new(&profile);
    dir.add_file("site/index.html", importer.finish().unwrap())
        .unwrap();
    let expected = dir.finish(&mut cairn_unixfs::DiscardBlocks).unwrap();
    assert_eq!(op["cid"], expected.cid.to_string());
}

/// Send a PATCH's head and `sent` body bytes of a declared `declared`, over a raw connection.
async fn partial_patch(
    server: &TestServer,
    url: &str,
    offset: u64,
    declared: usize,
    sent: &[u8],
) -> tokio::net::TcpStream {
    let address = server.upload.trim_start_matches("http://");
    let path = url.split_once(address).unwrap().1;
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!(
        "PATCH {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\n\
         Tus-Resumable: 1.0.0\r\nContent-Type: {OCTETS}\r\nUpload-Offset: {offset}\r\n\
         Content-Length: {declared}\r\n\r\n",
        server.token
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(sent).await.unwrap();
    stream.flush().await.unwrap();
    stream
}

#[tokio::test]
async fn f1_a_patch_cut_mid_body_keeps_every_byte_that_arrived() {
    let server = TestServer::start().await;
    let url = create(&server, &[("Upload-Length", "1000")]).await;
    let stream = partial_patch(&server, &url, 0, 1000, &[7u8; 400]).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(stream);
    let mut kept = 0;
    for _ in 0..50 {
        kept = offset(&server, &url).await;
        if kept == 400 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(kept, 400);
    // The upload carries on from there.
    assert_eq!(
        patch(&server, &url, 400, &[8u8; 600]).await.status,
        StatusCode::NO_CONTENT
    );
}

#[tokio::test]
async fn f3_a_stalled_patch_is_preempted_by_a_head_within_seconds() {
    let server = TestServer::start().await;
    let url = create(&server, &[("Upload-Length", "1000")]).await;
    let _stalled = partial_patch(&server, &url, 0, 1000, &[7u8; 100]).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    assert_eq!(offset(&server, &url).await, 100);
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "{:?}",
        started.elapsed()
    );
    // And the next PATCH continues from the pre-empted one's bytes.
    assert_eq!(
        patch(&server, &url, 100, &[1u8; 900]).await.status,
        StatusCode::NO_CONTENT
    );
}

#[tokio::test]
async fn f4_an_idle_patch_is_closed_after_the_idle_timeout_and_keeps_its_bytes() {
    let server = TestServer::start_with(ServerConfig {
        idle_timeout: Duration::from_millis(500),
        ..ServerConfig::default()
    })
    .await;
    let url = create(&server, &[("Upload-Length", "1000")]).await;
    let mut idle = partial_patch(&server, &url, 0, 1000, &[7u8; 50]).await;
    let started = Instant::now();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), idle.read_to_end(&mut answer)).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "closed by the idle timeout"
    );
    assert_eq!(offset(&server, &url).await, 50);

    // A slow but steady body is never cut: 10 pieces, 100 ms apart, well past 500 ms in total.
    let steady = create(&server, &[("Upload-Length", "10")]).await;
    let mut stream = partial_patch(&server, &steady, 0, 10, b"").await;
    for byte in 0..10u8 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        stream.write_all(&[byte]).await.unwrap();
    }
    let mut response = vec![0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut response))
        .await
        .unwrap()
        .unwrap();
    let response = String::from_utf8_lossy(&response[..n]);
    assert!(response.starts_with("HTTP/1.1 204"), "{response}");
    assert_eq!(offset(&server, &steady).await, 10);
}

#[tokio::test]
async fn browsers_get_cors_with_the_tus_headers_exposed() {
    let server = TestServer::start().await;
    let reply = server
        .client
        .request(Method::OPTIONS, endpoint(&server))
        .header("Origin", "https://app.example")
        .header("Access-Control-Request-Method", "PATCH")
        .header(
            "Access-Control-Request-Headers",
            "upload-offset,tus-resumable",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), StatusCode::NO_CONTENT);
    for (name, value) in [
        ("access-control-allow-origin", "*"),
        (
            "access-control-allow-headers",
            "upload-offset,tus-resumable",
        ),
        ("access-control-max-age", "86400"),
    ] {
        assert_eq!(reply.headers()[name], value, "{name}");
    }
    let methods = reply.headers()["access-control-allow-methods"]
        .to_str()
        .unwrap();
    assert!(
        methods.contains("PATCH") && methods.contains("DELETE"),
        "{methods}"
    );
    // TUS's own OPTIONS (no Access-Control-Request-Method) is answered by TUS, readable
    // cross-origin.
    let reply = server
        .client
        .request(Method::OPTIONS, endpoint(&server))
        .header("Origin", "https://app.example")
        .send()
        .await
        .unwrap();
    assert_eq!(reply.headers()["tus-version"], "1.0.0");
    assert_eq!(reply.headers()["access-control-allow-origin"], "*");
    let url = create(&server, &[("Upload-Length", "3")]).await;
    let reply = server
        .client
        .head(&url)
        .bearer_auth(&server.token)
        .header("Tus-Resumable", "1.0.0")
        .header("Origin", "https://app.example")
        .send()
        .await
        .unwrap();
    let exposed = reply.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap();
    for name in [
        "upload-offset",
        "location",
        "cairn-operation-id",
        "upload-expires",
    ] {
        assert!(exposed.contains(name), "{exposed}");
    }
}

#[tokio::test]
async fn complete_bytes_left_unrecorded_by_a_crash_are_completed_and_processed_on_the_next_look() {
    let server = TestServer::start().await;
    let (url, operation) = create_with_operation(&server, 11).await;
    // The bytes reach the disk, then the process dies before the record is updated.
    let id = url.rsplit('/').next().unwrap();
    let mut appender = server.state.service.tus_bytes.appender(id, false).unwrap();
    appender.append(b"hello world").unwrap();
    appender.keep().unwrap();

    // The client's HEAD sees the offset at the length; the upload is processed all the same.
    assert_eq!(offset(&server, &url).await, 11);
    let op = wait_for(&server, operation).await;
    assert_eq!(op["status"], "completed", "{op}");
    assert_eq!(
        op["cid"],
        "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"
    );
}

#[tokio::test]
async fn a_client_that_missed_the_last_204_learns_the_processed_upload_is_complete() {
    let server = TestServer::start().await;
    let (url, operation) = create_with_operation(&server, 11).await;
    assert_eq!(
        patch(&server, &url, 0, b"hello world").await.status,
        StatusCode::NO_CONTENT
    );
    let op = wait_for(&server, operation).await;
    assert_eq!(op["status"], "completed", "{op}");
    let id = url.rsplit('/').next().unwrap();
    assert!(
        server.state.service.tus_bytes.offset(id).is_err(),
        "processing removed the upload's bytes"
    );

    // An empty PATCH at the length, as tus-js-client sends to finish: the offset, no expiry.
    let empty = patch(&server, &url, 11, b"").await;
    assert_eq!(empty.status, StatusCode::NO_CONTENT);
    assert_eq!(empty.header("upload-offset"), Some("11"));
    assert!(empty.header("upload-expires").is_none());
    let more = patch(&server, &url, 11, b"!").await;
    assert_eq!(
        more.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{:?}",
        more.json()
    );

    // The last PATCH again, as a client that lost its `204` sends it: where the upload is.
    let again = patch(&server, &url, 0, b"hello world").await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_error(&again.json(), "conflict");
    assert!(
        again.json()["message"].as_str().unwrap().contains("at 11"),
        "{:?}",
        again.json()
    );
}

#[tokio::test]
async fn f5_a_client_that_sends_no_headers_or_trickles_them_is_disconnected() {
    let server = TestServer::start_with(ServerConfig {
        header_timeout: Duration::from_millis(500),
        ..ServerConfig::default()
    })
    .await;
    let address = server.upload.trim_start_matches("http://").to_owned();
    // Connects and sends nothing.
    let mut silent = tokio::net::TcpStream::connect(&address).await.unwrap();
    // Sends headers a byte at a time, never finishing.
    let mut trickle = tokio::net::TcpStream::connect(&address).await.unwrap();
    let started = Instant::now();
    let trickling = tokio::spawn(async move {
        for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaa" {
            if trickle.write_all(&[*byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let mut buf = [0u8; 256];
    let closed = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut buf)).await;
    assert!(
        matches!(closed, Ok(Ok(_)) | Ok(Err(_))),
        "the silent client was disconnected"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    tokio::time::timeout(Duration::from_secs(5), trickling)
        .await
        .expect("the trickling client was cut off before it finished")
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // Ordinary requests are unaffected.
    assert_eq!(
        offset(&server, &create(&server, &[("Upload-Length", "1")]).await).await,
        0
    );
}

#[tokio::test]
async fn location_uses_forwarded_headers_only_when_trusted_and_never_reflects_junk() {
    let plain = TestServer::start().await;
    let forwarded = [
        ("X-Forwarded-Proto", "https"),
        ("X-Forwarded-Host", "uploads.example"),
        ("Upload-Length", "1"),
    ];
    let reply = tus(&plain, "POST", &endpoint(&plain), &forwarded, b"").await;
    assert!(reply
        .header("location")
        .unwrap()
        .starts_with("http://127.0.0.1:"));

    let proxied = TestServer::start_with(ServerConfig {
        trust_forwarded_headers: true,
        ..ServerConfig::default()
    })
    .await;
    let reply = tus(&proxied, "POST", &endpoint(&proxied), &forwarded, b"").await;
    assert!(reply
        .header("location")
        .unwrap()
        .starts_with("https://uploads.example/api/upload/tus/"));
    let junk = [
        ("X-Forwarded-Host", "evil.example/<script>"),
        ("Upload-Length", "1"),
    ];
    let reply = tus(&proxied, "POST", &endpoint(&proxied), &junk, b"").await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
}

/// A TCP proxy for one connection that forwards the client's first `limit` bytes, then cuts
/// the connection on both sides (F1, as a network failure would).
async fn cutting_proxy(upstream: String, limit: usize) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let (mut client, _) = listener.accept().await.unwrap();
        let mut server = tokio::net::TcpStream::connect(upstream).await.unwrap();
        let mut forwarded = 0;
        let mut buf = vec![0u8; 16 * 1024];
        while forwarded < limit {
            let n = client.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            let n = n.min(limit - forwarded);
            server.write_all(&buf[..n]).await.unwrap();
            forwarded += n;
        }
        // Both sides see the connection die mid-request.
    });
    address
}

#[tokio::test]
async fn f1_a_connection_cut_by_the_network_keeps_what_arrived_and_the_upload_resumes() {
    let server = TestServer::start().await;
    let content: Vec<u8> = (0..1_000_000u32).map(|i| (i % 241) as u8).collect();
    let length = content.len().to_string();
    let reply = tus(
        &server,
        "POST",
        &endpoint(&server),
        &[("Upload-Length", &length)],
        b"",
    )
    .await;
    let url = reply.header("location").unwrap().to_owned();
    let operation: i64 = reply.header("cairn-operation-id").unwrap().parse().unwrap();
    let address = server.upload.trim_start_matches("http://").to_owned();
    let proxy = cutting_proxy(address.clone(), 300_000).await;
    let through_proxy = url.replace(&address, &proxy);
    // The client's PATCH dies with the connection.
    let cut = server
        .client
        .patch(&through_proxy)
        .bearer_auth(&server.token)
        .header("Tus-Resumable", "1.0.0")
        .header("Content-Type", OCTETS)
        .header("Upload-Offset", "0")
        .body(content.clone())
        .send()
        .await;
    assert!(cut.is_err(), "the connection was cut");
    let mut kept = 0;
    for _ in 0..50 {
        kept = offset(&server, &url).await;
        if kept > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        kept > 250_000 && kept < 300_000,
        "the bytes that crossed the proxy: {kept}"
    );
    // Resume from the reported offset: if any kept byte were wrong, the CID would show it.
    let rest = &content[kept as usize..];
    assert_eq!(
        patch(&server, &url, kept, rest).await.status,
        StatusCode::NO_CONTENT
    );
    let op = wait_for(&server, operation).await;
    let mut importer = cairn_unixfs::FileImporter::new(
        &cairn_unixfs::Profile::default(),
        cairn_unixfs::DiscardBlocks,
    );
    importer.push(&content).unwrap();
    assert_eq!(op["cid"], importer.finish().unwrap().cid.to_string());
}
