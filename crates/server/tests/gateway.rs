//! The read path, `/ipfs/{cid}[/{path}]`, as browsers, curl and trustless IPFS clients use it.

mod support;

use cairn_car::{import_complete, CarLimits, CarReader};
use cairn_store::Accounts;
use cairn_unixfs::read::{ReadLimits, Reader};
use cairn_unixfs::{Cid, MemoryBlocks, NoBlocks};
use reqwest::multipart::Part;
use reqwest::StatusCode;
use support::{assert_error, get, tar_gz, wait_for, TestServer};

fn content(len: usize) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

/// A server whose account may POST 8 MB, with a 3 MB file uploaded (three 1 MiB leaves).
async fn with_file() -> (TestServer, Vec<u8>, String) {
    let server = TestServer::start().await;
    server
        .store
        .set_account_limits("alice", Some(8 << 20), None)
        .await
        .unwrap();
    let bytes = content(3_000_000);
    let (status, body) = server
        .post_file(
            &server.token,
            "",
            Part::bytes(bytes.clone()).file_name("data.bin"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let cid = body["cid"].as_str().unwrap().to_owned();
    (server, bytes, cid)
}

/// Read a CAR response: its root and verified blocks, in order.
async fn car_blocks(response: reqwest::Response) -> (Cid, Vec<(Cid, Vec<u8>)>) {
    assert_eq!(
        response.headers()["content-type"],
        "application/vnd.ipld.car; version=1; order=dfs; dups=n"
    );
    let bytes = response.bytes().await.unwrap();
    let mut reader = CarReader::new(&bytes[..], CarLimits::default()).unwrap();
    let root = reader.roots()[0];
    (root, reader.by_ref().map(Result::unwrap).collect())
}

#[tokio::test]
async fn a_file_comes_back_byte_for_byte_with_ranges_and_immutable_caching() {
    let (server, bytes, cid) = with_file().await;
    let response = get(&server, &format!("/ipfs/{cid}"), &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert_eq!(headers["content-length"], bytes.len().to_string());
    assert_eq!(headers["etag"], format!("\"{cid}\""));
    assert!(headers["cache-control"]
        .to_str()
        .unwrap()
        .contains("immutable"));
    assert_eq!(headers["accept-ranges"], "bytes");
    assert_eq!(response.bytes().await.unwrap(), bytes);

    // A range across a leaf boundary, a suffix, and one past the end.
    let ranged = get(
        &server,
        &format!("/ipfs/{cid}"),
        &[("Range", "bytes=1048570-1048600")],
    )
    .await;
    assert_eq!(ranged.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        ranged.headers()["content-range"],
        format!("bytes 1048570-1048600/{}", bytes.len())
    );
    assert_eq!(ranged.bytes().await.unwrap(), bytes[1_048_570..=1_048_600]);
    let tail = get(&server, &format!("/ipfs/{cid}"), &[("Range", "bytes=-10")]).await;
    assert_eq!(tail.bytes().await.unwrap(), bytes[bytes.len() - 10..]);
    let beyond = get(
        &server,
        &format!("/ipfs/{cid}"),
        &[("Range", "bytes=5000000-")],
    )
    .await;
    assert_eq!(beyond.status(), StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(
        beyond.headers()["content-range"],
        format!("bytes */{}", bytes.len())
    );

    // The ETag is forever: a revalidation is 304; HEAD has the headers and no body.
    let etag = headers["etag"].to_str().unwrap();
    let again = get(&server, &format!("/ipfs/{cid}"), &[("If-None-Match", etag)]).await;
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    let head = server
        .client
        .head(format!("{}/ipfs/{cid}", server.upload))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(head.headers()["content-length"], bytes.len().to_string());
    assert!(head.bytes().await.unwrap().is_empty());

    // ?filename= and ?download=true.
    let named = get(
        &server,
        &format!("/ipfs/{cid}?filename=report.pdf&download=true"),
        &[],
    )
    .await;
    assert_eq!(named.headers()["content-type"], "application/pdf");
    assert_eq!(
        named.headers()["content-disposition"],
        "attachment; filename=\"report.pdf\""
    );
}

#[tokio::test]
async fn trustless_responses_verify_raw_blocks_and_complete_cars() {
    let (server, bytes, cid) = with_file().await;
    let root: Cid = cid.parse().unwrap();

    for request in [
        (format!("/ipfs/{cid}?format=raw"), vec![]),
        (
            format!("/ipfs/{cid}"),
            vec![("Accept", "application/vnd.ipld.raw")],
        ),
    ] {
        let response = get(&server, &request.0, &request.1).await;
        assert_eq!(
            response.headers()["content-type"],
            "application/vnd.ipld.raw"
        );
        let block = response.bytes().await.unwrap();
        cairn_unixfs::block::verify_block(&root, &block).unwrap();
    }

    // The whole DAG, root first, each block verified by the reader, and complete.
    let response = get(
        &server,
        &format!("/ipfs/{cid}"),
        &[("Accept", "application/vnd.ipld.car")],
    )
    .await;
    let (car_root, blocks) = car_blocks(response).await;
    assert_eq!(car_root, root);
    assert_eq!(blocks[0].0, root);
    assert_eq!(blocks.len(), 4, "the root and three leaves");
    let car = get(&server, &format!("/ipfs/{cid}?format=car"), &[])
        .await
        .bytes()
        .await
        .unwrap();
    let mut rebuilt = MemoryBlocks::default();
    let reader = CarReader::new(&car[..], CarLimits::default()).unwrap();
    assert_eq!(
        import_complete(reader, &mut rebuilt, &mut NoBlocks).unwrap(),
        root
    );
    let mut back = Vec::new();
    Reader::new(&mut rebuilt, ReadLimits::default())
        .read_range(&root, 0..bytes.len() as u64, &mut |_, _| Ok(()), &mut |b| {
            back.extend_from_slice(&b);
            Ok(())
        })
        .unwrap();
    assert_eq!(back, bytes);

    // Narrower scopes: the block alone, or only the leaves a byte range needs.
    let response = get(
        &server,
        &format!("/ipfs/{cid}?format=car&dag-scope=block"),
        &[],
    )
    .await;
    assert_eq!(car_blocks(response).await.1.len(), 1);
    let response = get(
        &server,
        &format!("/ipfs/{cid}?format=car&entity-bytes=0:99"),
        &[],
    )
    .await;
    assert_eq!(
        car_blocks(response).await.1.len(),
        2,
        "the root and the first leaf"
    );
    let response = get(
        &server,
        &format!("/ipfs/{cid}?format=car&entity-bytes=-10:*"),
        &[],
    )
    .await;
    let blocks = car_blocks(response).await.1;
    assert_eq!(blocks.len(), 2, "the root and the last leaf");
}

#[tokio::test]
async fn car_duplicates_order_and_version_are_negotiated() {
    // Three identical 1 MiB leaves: one block, met three times by the walk.
    let server = TestServer::start().await;
    server
        .store
        .set_account_limits("alice", Some(8 << 20), None)
        .await
        .unwrap();
    let zeros = vec![0u8; 3 << 20];
    let (status, body) = server
        .post_file(&server.token, "", Part::bytes(zeros).file_name("zeros"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let cid = body["cid"].as_str().unwrap();

    let deduplicated = get(
        &server,
        &format!("/ipfs/{cid}?format=car&car-order=unk"),
        &[],
    )
    .await;
    assert_eq!(car_blocks(deduplicated).await.1.len(), 2, "root, leaf once");

    for (path, accept) in [
        (format!("/ipfs/{cid}?format=car&car-dups=y"), ""),
        (
            format!("/ipfs/{cid}"),
            "application/vnd.ipld.car; version=1; order=dfs; dups=y",
        ),
    ] {
        let response = get(&server, &path, &[("Accept", accept)]).await;
        assert_eq!(
            response.headers()["content-type"],
            "application/vnd.ipld.car; version=1; order=dfs; dups=y"
        );
        let bytes = response.bytes().await.unwrap();
        let reader = CarReader::new(&bytes[..], CarLimits::default()).unwrap();
        let blocks: Vec<_> = reader.map(Result::unwrap).collect();
        assert_eq!(
            blocks.len(),
            4,
            "root, then the leaf each time the walk meets it"
        );
        assert!(blocks[1..].iter().all(|b| b.0 == blocks[1].0));
    }

    for bad in ["car-version=2", "car-order=bfs", "car-dups=maybe"] {
        let response = get(
            &server,
            &format!("/ipfs/{cid}?format=car&{bad}"),
            &[("Accept", "application/json")],
        )
        .await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad}");
        assert_error(&response.json().await.unwrap(), "bad_request");
    }
}

#[tokio::test]
async fn an_uploaded_website_serves_its_index_and_lists_its_directories() {
    let server = TestServer::start().await;
    let archive = tar_gz(&[
        ("site/index.html", b"<h1>home</h1>"),
        ("site/css/a.css", b"p{}"),
        ("site/css/<b>.css", b"q{}"),
    ]);
    let (_, body) = server
        .post_file(&server.token, "", Part::bytes(archive))
        .await;
    let op = wait_for(&server, body["operationId"].as_i64().unwrap()).await;
    let root = op["cid"].as_str().unwrap().to_owned();

    let redirect = get(&server, &format!("/ipfs/{root}/site"), &[]).await;
    // reqwest follows the 301 to the slash form, where index.html is served.
    assert_eq!(redirect.url().path(), format!("/ipfs/{root}/site/"));
    assert_eq!(redirect.headers()["content-type"], "text/html");
    assert_eq!(redirect.text().await.unwrap(), "<h1>home</h1>");

    // Asking for JSON lists even a directory that has an index.html.
    let site = get(
        &server,
        &format!("/ipfs/{root}/site/"),
        &[("Accept", "application/json")],
    )
    .await;
    let site: serde_json::Value = site.json().await.unwrap();
    assert_eq!(site["entries"].as_array().unwrap().len(), 2, "{site}");
    let json = get(
        &server,
        &format!("/ipfs/{root}/site/css/"),
        &[("Accept", "application/json")],
    )
    .await;
    let listing: serde_json::Value = json.json().await.unwrap();
    let names: Vec<&str> = listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["<b>.css", "a.css"]);
    let html = get(&server, &format!("/ipfs/{root}/site/css/"), &[])
        .await
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("&lt;b&gt;.css") && !html.contains("<b>.css"),
        "names are escaped"
    );
    assert!(
        html.contains(&format!("href=\"/ipfs/{root}/site/css/%3Cb%3E.css\"")),
        "links resolve from the listing's own path: {html}"
    );

    let file = get(&server, &format!("/ipfs/{root}/site/css/a.css"), &[]).await;
    assert_eq!(file.headers()["content-type"], "text/css");
    assert_eq!(file.text().await.unwrap(), "p{}");

    // A path CAR carries the path's blocks first, then the file.
    let response = get(
        &server,
        &format!("/ipfs/{root}/site/css/a.css?format=car"),
        &[],
    )
    .await;
    let (car_root, blocks) = car_blocks(response).await;
    assert_eq!(car_root.to_string(), root);
    assert_eq!(blocks[0].0.to_string(), root);
    assert_eq!(blocks.len(), 4, "root, site, css, a.css");
}

#[tokio::test]
async fn unknown_content_and_bad_requests_say_why_in_text_or_json() {
    let (server, _, cid) = with_file().await;
    let unknown = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
    // As every IPFS gateway answers: the reason in plain text...
    let response = get(&server, &format!("/ipfs/{unknown}"), &[]).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = response.text().await.unwrap();
    assert!(text.contains(unknown), "{text}");
    // ...and Cairn's JSON error to a client that asks for JSON.
    let json = [("Accept", "application/json")];
    let response = get(&server, &format!("/ipfs/{unknown}"), &json).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_error(&response.json().await.unwrap(), "not_found");
    let response = get(&server, "/ipfs/not-a-cid", &json).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_error(&response.json().await.unwrap(), "bad_request");
    let response = get(&server, &format!("/ipfs/{cid}/inside/a/file"), &[]).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = get(&server, &format!("/ipfs/{cid}?format=zip"), &[]).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_block_that_rotted_on_disk_is_never_served() {
    let (server, _, cid) = with_file().await;
    // Flip bytes in the middle of every pack file (empty ones are made ahead for packs).
    for entry in std::fs::read_dir(server.data_dir().join("packs")).unwrap() {
        let path = entry.unwrap().path();
        let mut bytes = std::fs::read(&path).unwrap();
        if bytes.is_empty() {
            continue;
        }
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        std::fs::write(&path, bytes).unwrap();
    }
    let url = format!("{}/ipfs/{cid}?format=car", server.upload);
    // A failure met before the status line went out cuts the connection at once.
    let Ok(response) = server.client.get(url).send().await else {
        return;
    };
    let status = response.status();
    let body = response.bytes().await;
    // Either refused up front or cut short: a corrupt block never reaches the client whole,
    // and the client can tell (the connection is cut, so the body does not end cleanly).
    if status.is_success() {
        assert!(body.is_err(), "the body ended as if it were complete");
    } else {
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    }
}

/// Today's gateway specs: the trustless gateway's probe, identity CIDs within IPIP-0512's
/// limit, `format` over `Accept` (IPIP-0523), and `406` for a codec a block is not in
/// (IPIP-0524).
#[tokio::test]
async fn the_probe_identity_cids_and_formats_answer_as_todays_specs_say() {
    let (server, bytes, cid) = with_file().await;
    let identity = |codec: u64, data: &[u8]| {
        let hash = cid::multihash::Multihash::<64>::wrap(0x00, data).unwrap();
        Cid::new_v1(codec, hash).to_string()
    };
    assert_eq!(identity(0x55, b""), "bafkqaaa");

    // The probe: an empty raw block, and a CAR whose root it is, carrying no block.
    for (path, accept) in [
        ("/ipfs/bafkqaaa?format=raw", ""),
        ("/ipfs/bafkqaaa", "application/vnd.ipld.raw"),
    ] {
        for head in [false, true] {
            let url = format!("{}{path}", server.upload);
            let client = reqwest::Client::new();
            let request = if head {
                client.head(url)
            } else {
                client.get(url)
            };
            let response = request.header("Accept", accept).send().await.unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{path} {accept}");
            assert_eq!(
                response.headers()["content-type"],
                "application/vnd.ipld.raw"
            );
            assert_eq!(response.headers()["content-length"], "0");
            assert!(response.bytes().await.unwrap().is_empty());
        }
    }
    let response = get(&server, "/ipfs/bafkqaaa?format=car", &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    let (root, blocks) = car_blocks(response).await;
    assert_eq!((root.to_string().as_str(), blocks.len()), ("bafkqaaa", 0));

    // Identity CIDs: read from the CID itself up to the limit, refused past it, saying why.
    let hello = identity(0x55, b"hello");
    let response = get(&server, &format!("/ipfs/{hello}?format=raw"), &[]).await;
    assert_eq!(response.bytes().await.unwrap(), &b"hello"[..]);
    let big = {
        let mut bytes = vec![0x01, 0x55, 0x00, 0x81, 0x01];
        bytes.extend([7; 129]);
        cid::multibase::encode(cid::multibase::Base::Base32Lower, bytes)
    };
    // Past the CID type's 64 bytes and within the limit: read from the CID all the same.
    let inline: Vec<u8> = (0..100u8).map(|i| b'a' + i % 26).collect();
    let long = {
        let mut bytes = vec![0x01, 0x55, 0x00, 100];
        bytes.extend(&inline);
        cid::multibase::encode(cid::multibase::Base::Base32Lower, bytes)
    };
    let response = get(&server, &format!("/ipfs/{long}"), &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    assert_eq!(response.bytes().await.unwrap(), &inline[..]);
    let response = get(
        &server,
        &format!("/ipfs/{long}?format=raw"),
        &[("Range", "bytes=0-9")],
    )
    .await;
    assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        response.headers()["content-type"],
        "application/vnd.ipld.raw"
    );
    assert_eq!(response.bytes().await.unwrap(), &inline[..10]);
    let car = get(&server, &format!("/ipfs/{long}?format=car"), &[]).await;
    let car = car.bytes().await.unwrap();
    // A header naming the root, and no block: the header's length prefix, then the header.
    let (header_len, header) = unsigned_varint::decode::usize(&car).unwrap();
    assert_eq!(header.len(), header_len, "a block follows the header");
    assert!(
        header.windows(inline.len()).any(|w| w == inline),
        "the root is not in the header"
    );
    let response = get(&server, &format!("/ipfs/{long}/a/path"), &[]).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let response = get(
        &server,
        &format!("/ipfs/{big}?format=raw"),
        &[("Accept", "application/json")],
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_error(&body, "bad_request");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("129 bytes") && message.contains("128"),
        "{message}"
    );

    // `format` wins over `Accept`, which browsers always send.
    let response = get(
        &server,
        &format!("/ipfs/{cid}?format=raw"),
        &[("Accept", "application/vnd.ipld.car")],
    )
    .await;
    assert_eq!(
        response.headers()["content-type"],
        "application/vnd.ipld.raw"
    );
    let response = get(
        &server,
        &format!("/ipfs/{cid}?format=car"),
        &[("Accept", "text/html,*/*")],
    )
    .await;
    let (root, _) = car_blocks(response).await;
    assert_eq!(root.to_string(), cid);

    // A block in the codec asked for comes as it is; another codec is 406, not converted.
    let json = identity(0x0129, br#"{"hello":"world"}"#);
    let response = get(&server, &format!("/ipfs/{json}?format=dag-json"), &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "application/vnd.ipld.dag-json"
    );
    assert_eq!(
        response.bytes().await.unwrap(),
        &br#"{"hello":"world"}"#[..]
    );
    for (query, accept) in [
        ("?format=dag-json", ""),
        ("?format=cbor", ""),
        ("", "application/vnd.ipld.dag-cbor"),
    ] {
        let response = get(
            &server,
            &format!("/ipfs/{cid}{query}"),
            &[("Accept", accept)],
        )
        .await;
        assert_eq!(
            response.status(),
            StatusCode::NOT_ACCEPTABLE,
            "{query} {accept}"
        );
        let text = response.text().await.unwrap();
        assert!(text.contains("is a dag-pb block"), "{text}");
    }
    // The file itself is still there, as it is.
    let response = get(&server, &format!("/ipfs/{cid}"), &[("Accept", "*/*")]).await;
    assert_eq!(response.bytes().await.unwrap(), bytes);
}
