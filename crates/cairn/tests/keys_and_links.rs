//! Keys limited to what they may do, upload links and key-values, as an app using them sees
//! them over HTTP against `cairn serve` (`tests/authorization.rs` checks every route against
//! every scope; `tests/upload_links_browser.rs` uploads through links from a browser).

use cairn_harness::server;

use reqwest::header::{ACCESS_CONTROL_ALLOW_ORIGIN, ORIGIN};
use reqwest::multipart::{Form, Part};
use reqwest::{Client, Response};
use serde_json::{json, Value};
use server::{cid_of, create_key, create_link, finished_operation, start, tar_of, Running};

/// What a response says: its status and its body as JSON (`null` when it has none).
async fn answer(response: Response) -> (u16, Value) {
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn post(url: &str, token: Option<&str>, form: Form) -> (u16, Value) {
    let request = Client::new().post(url).multipart(form);
    let request = match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    answer(request.send().await.unwrap()).await
}

fn file(bytes: &[u8], name: &str, mime: &str) -> Form {
    let part = Part::bytes(bytes.to_vec())
        .file_name(name.to_owned())
        .mime_str(mime)
        .unwrap();
    Form::new().part("file", part)
}

async fn get(url: &str, token: &str) -> (u16, Value) {
    answer(
        Client::new()
            .get(url)
            .bearer_auth(token)
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// A TUS creation at `endpoint`, with `token` if any: the status, the upload's absolute URL.
async fn tus_create(
    endpoint: &str,
    token: Option<&str>,
    length: usize,
    metadata: &str,
) -> (u16, Option<String>, Value) {
    let request = (Client::new().post(endpoint))
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Length", length.to_string())
        .header("Upload-Metadata", metadata);
    let request = match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    let response = request.send().await.unwrap();
    let location = (response.headers().get("location")).map(|v| v.to_str().unwrap().to_owned());
    let (status, body) = answer(response).await;
    (status, location, body)
}

async fn tus_patch(url: &str, token: Option<&str>, offset: usize, bytes: &[u8]) -> (u16, Value) {
    let request = (Client::new().patch(url))
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Offset", offset.to_string())
        .header("Content-Type", "application/offset+octet-stream")
        .body(bytes.to_vec());
    let request = match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    answer(request.send().await.unwrap()).await
}

fn base64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn serve() -> (tempfile::TempDir, Running) {
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path(), &[]);
    (dir, running)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_does_what_it_was_made_for_and_no_more() {
    let (_dir, running) = serve();
    let owner = &running.token;
    let upload_url = format!("{}/api/upload", running.upload);
    let limits = json!({"name": "ci", "scopes": ["upload"], "maxUses": 2, "maxUploadBytes": 1000});
    let (key, record) = create_key(&running, owner, limits).await;
    assert_eq!(record["scopes"], json!(["upload"]));
    assert!(key.starts_with("cairn_"), "{record}");

    // Over its size: refused before the body, and not a use.
    let big = vec![7u8; 2000];
    let (status, error) = post(
        &upload_url,
        Some(&key),
        file(&big, "big.bin", "application/octet-stream"),
    )
    .await;
    assert_eq!(
        (status, &error["error"]),
        (413, &json!("payload_too_large")),
        "{error}"
    );
    assert!(
        error["message"].as_str().unwrap().contains("key"),
        "{error}"
    );
    let tus = format!("{}/api/upload/tus", running.upload);
    let (status, _, error) = tus_create(&tus, Some(&key), 2000, "").await;
    assert_eq!(
        (status, &error["error"]),
        (413, &json!("payload_too_large")),
        "{error}"
    );

    // Two uploads it may begin, then no more.
    let (status, first) = post(&upload_url, Some(&key), file(b"one", "1.txt", "text/plain")).await;
    assert_eq!(status, 200, "{first}");
    let (status, second) = post(&upload_url, Some(&key), file(b"two", "2.txt", "text/plain")).await;
    assert_eq!(status, 200, "{second}");
    let (status, spent) = post(
        &upload_url,
        Some(&key),
        file(b"three", "3.txt", "text/plain"),
    )
    .await;
    assert_eq!(
        (status, &spent["error"]),
        (403, &json!("uses_exhausted")),
        "{spent}"
    );
    let (status, _, spent) = tus_create(&tus, Some(&key), 5, "").await;
    assert_eq!(
        (status, &spent["error"]),
        (403, &json!("uses_exhausted")),
        "{spent}"
    );
    let (_, keys) = get(&format!("{}/api/keys", running.account), owner).await;
    let listed = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == record["id"])
        .unwrap();
    assert_eq!(listed["uses"], 2, "{listed}");
    assert!(listed["lastUsedAt"].is_string(), "{listed}");
    assert!(
        listed.get("key").is_none(),
        "a listed key shows no secret: {listed}"
    );

    // It reads the operations it began, and only those; nothing else of the account's.
    let (_, mine) = get(
        &format!("{}/api/operations/{}", running.upload, first["operationId"]),
        &key,
    )
    .await;
    assert_eq!(mine["cid"], first["cid"]);
    let (_, by_owner) = post(
        &upload_url,
        Some(owner),
        file(b"owner's", "o.txt", "text/plain"),
    )
    .await;
    let url = format!(
        "{}/api/operations/{}",
        running.upload, by_owner["operationId"]
    );
    assert_eq!(get(&url, &key).await.0, 404);
    let (_, page) = get(&format!("{}/api/operations", running.upload), &key).await;
    let ids: Vec<&Value> = page["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|op| &op["id"])
        .collect();
    assert_eq!(ids, [&second["operationId"], &first["operationId"]]);
    let (status, refused) = get(&format!("{}/api/uploads", running.upload), &key).await;
    assert_eq!((status, &refused["error"]), (403, &json!("forbidden")));
    assert!(
        refused["message"].as_str().unwrap().contains("read"),
        "{refused}"
    );

    // Revoked: refused at once.
    let revoke = (Client::new().delete(format!("{}/api/keys/{}", running.account, record["id"])))
        .bearer_auth(owner)
        .send()
        .await
        .unwrap();
    assert_eq!(revoke.status(), 204);
    let (status, gone) = get(&format!("{}/api/upload-limit", running.account), &key).await;
    assert_eq!((status, &gone["error"]), (401, &json!("invalid_token")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_for_a_web_page_answers_its_origins_only() {
    let (_dir, running) = serve();
    let page = "http://app.example:5173";
    let request = json!({"scopes": ["read"], "origins": [page]});
    let (key, _) = create_key(&running, &running.token, request).await;
    let uploads = format!("{}/api/uploads", running.upload);
    let from = |origin: Option<&'static str>| {
        let request = Client::new().get(&uploads).bearer_auth(&key);
        match origin {
            Some(origin) => request.header(ORIGIN, origin),
            None => request,
        }
    };
    let allowed = from(Some(page)).send().await.unwrap();
    assert_eq!(allowed.status(), 200);
    assert_eq!(allowed.headers()[ACCESS_CONTROL_ALLOW_ORIGIN], page);
    for origin in [Some("http://evil.example"), None] {
        let refused = from(origin).send().await.unwrap();
        assert!(
            !refused.headers().contains_key(ACCESS_CONTROL_ALLOW_ORIGIN),
            "{origin:?}"
        );
        let (status, error) = answer(refused).await;
        assert_eq!(
            (status, &error["error"]),
            (403, &json!("origin_not_allowed")),
            "{origin:?}"
        );
        assert!(error["message"].as_str().unwrap().contains(page), "{error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_gives_no_more_than_it_has() {
    let (_dir, running) = serve();
    let keys_url = format!("{}/api/keys", running.account);
    let (manager, _) = create_key(&running, &running.token, json!({"scopes": ["keys"]})).await;
    let made = |token: &str, request: Value| {
        let request = Client::new()
            .post(&keys_url)
            .bearer_auth(token)
            .json(&request);
        async move { answer(request.send().await.unwrap()).await }
    };
    let (status, error) = made(&manager, json!({"scopes": ["upload"]})).await;
    assert_eq!(
        (status, &error["error"]),
        (403, &json!("forbidden")),
        "{error}"
    );
    assert_eq!(made(&manager, json!({"scopes": ["keys"]})).await.0, 201);
    let brief = json!({"scopes": ["all"], "expiresIn": 3600});
    let (short_lived, _) = create_key(&running, &running.token, brief).await;
    let (status, error) = made(&short_lived, json!({"scopes": ["read"]})).await;
    assert_eq!(
        (status, &error["error"]),
        (403, &json!("forbidden")),
        "{error}"
    );
    assert!(
        error["message"].as_str().unwrap().contains("outlive"),
        "{error}"
    );
    assert_eq!(
        made(&short_lived, json!({"scopes": ["read"], "expiresIn": 60}))
            .await
            .0,
        201
    );
    let (status, error) = made(
        &running.token,
        json!({"scopes": ["read"], "expiresIn": 9, "expiresAt": "2030-01-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(
        (status, &error["error"]),
        (400, &json!("bad_request")),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyvalues_tag_uploads_and_find_them_again() {
    let (_dir, running) = serve();
    let token = &running.token;
    let upload_url = format!("{}/api/upload", running.upload);
    let tagged = file(b"avatar bytes", "me.png", "image/png")
        .text("keyvalues", r#"{"user": "7", "kind": "avatar"}"#);
    let (status, avatar) = post(&upload_url, Some(token), tagged).await;
    assert_eq!(status, 200, "{avatar}");
    assert_eq!(avatar["keyvalues"], json!({"user": "7", "kind": "avatar"}));

    // Over TUS, in the `keyvalues` metadata.
    let metadata = format!(
        "filename {},keyvalues {}",
        base64("notes.txt"),
        base64(r#"{"user":"7"}"#)
    );
    let tus = format!("{}/api/upload/tus", running.upload);
    let (status, location, _) = tus_create(&tus, Some(token), 5, &metadata).await;
    assert_eq!(status, 201);
    tus_patch(&location.unwrap(), Some(token), 0, b"notes").await;
    let (_, other) = post(
        &upload_url,
        Some(token),
        file(b"x", "x.txt", "text/plain").text("keyvalues", r#"{"user":"8"}"#),
    )
    .await;

    let find = |query: &str| {
        let url = format!("{}/api/uploads?{query}", running.upload);
        let query = query.to_owned();
        async move {
            let (status, page) = get(&url, token).await;
            assert_eq!(status, 200, "{query}: {page}");
            let names: Vec<String> = page["uploads"]
                .as_array()
                .unwrap()
                .iter()
                .map(|u| u["name"].as_str().unwrap().to_owned())
                .collect();
            names
        }
    };
    assert_eq!(find("kv=user:7").await, ["notes.txt", "me.png"]);
    assert_eq!(find("kv=user:7&kv=kind:avatar").await, ["me.png"]);
    assert_eq!(find("kv=user:9").await, Vec::<String>::new());

    // Changed: merged, `null` removes a key; over a limit, refused naming it.
    let change = |id: &Value, body: Value| {
        let url = format!("{}/api/uploads/{}", running.account, id.as_str().unwrap());
        let request = Client::new().patch(url).bearer_auth(token).json(&body);
        async move { answer(request.send().await.unwrap()).await }
    };
    let (status, changed) = change(
        &avatar["id"],
        json!({"name": "face.png", "keyvalues": {"kind": null, "size": "xl"}}),
    )
    .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(
        (&changed["name"], &changed["keyvalues"]),
        (&json!("face.png"), &json!({"user": "7", "size": "xl"}))
    );
    assert_eq!(find("kv=kind:avatar").await, Vec::<String>::new());
    assert_eq!(find("kv=size:xl").await, ["face.png"]);
    let many: serde_json::Map<String, Value> =
        (0..17).map(|i| (format!("k{i}"), json!("v"))).collect();
    let (status, error) = change(&other["id"], json!({"keyvalues": many})).await;
    assert_eq!(status, 400);
    assert!(error["message"].as_str().unwrap().contains("16"), "{error}");
    let long = json!({"keyvalues": {"k": "v".repeat(257)}});
    let (status, error) = change(&other["id"], long).await;
    assert!(
        status == 400 && error["message"].as_str().unwrap().contains("256"),
        "{error}"
    );
    let (status, _) = post(
        &upload_url,
        Some(token),
        file(b"x", "x.txt", "text/plain").text("keyvalues", "[1]"),
    )
    .await;
    assert_eq!(status, 400);
    let (status, error) = get(&format!("{}/api/uploads?kv=nocolon", running.upload), token).await;
    assert!(
        status == 400 && error["message"].as_str().unwrap().contains("key:value"),
        "{error}"
    );

    // A pin's meta is its key-values, filtered as the Pinning Service API says.
    let pins = format!("{}/pins", running.upload);
    let pin = json!({"cid": avatar["cid"], "meta": {"app": "gallery"}});
    let added = Client::new()
        .post(&pins)
        .bearer_auth(token)
        .json(&pin)
        .send()
        .await
        .unwrap();
    assert_eq!(added.status(), 202);
    let (_, found) = get(
        &format!("{pins}?meta=%7B%22app%22%3A%22gallery%22%7D"),
        token,
    )
    .await;
    assert_eq!(found["count"], 1, "{found}");
    assert_eq!(
        found["results"][0]["pin"]["meta"],
        json!({"app": "gallery"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_uploads_as_its_maker_said_with_no_other_credential() {
    let (_dir, running) = serve();
    let token = &running.token;
    let made = json!({
        "name": "from the page", "keyvalues": {"user": "7"}, "archiveMode": "preserve",
        "mimeTypes": ["text/*", "application/x-tar"], "uploads": 4, "maxBytes": 100_000
    });
    let link = create_link(&running, token, made).await;
    let url = link["url"].as_str().unwrap();
    assert!(url.starts_with(&running.upload), "{link}");
    assert_eq!(link["tusEndpoint"], format!("{url}/tus"));

    // A multipart POST: the link's name, key-values and archive mode, and the link named.
    let (status, text) = post(url, None, file(b"hello", "hello.txt", "text/plain")).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        (&text["name"], &text["link"]),
        (&json!("from the page"), &link["id"])
    );
    assert_eq!(text["keyvalues"], json!({"user": "7"}));
    let tar = tar_of(&[("a.txt", b"a")]);
    let (status, kept) = post(url, None, file(&tar, "site.tar", "application/x-tar")).await;
    assert_eq!(status, 200, "{kept}");
    assert_eq!(
        kept["cid"].as_str(),
        Some(cid_of(&tar).as_str()),
        "preserved whole: {kept}"
    );
    // A type it does not take: refused, and the link not used by it.
    let (status, error) = post(url, None, file(b"\x89PNG", "a.png", "image/png")).await;
    assert_eq!(
        (status, &error["error"]),
        (415, &json!("unsupported_media_type")),
        "{error}"
    );

    // TUS at its endpoint; the PATCHes need nothing either.
    let endpoint = link["tusEndpoint"].as_str().unwrap();
    let png = format!(
        "filename {},filetype {}",
        base64("a.png"),
        base64("image/png")
    );
    let (status, _, error) = tus_create(endpoint, None, 5, &png).await;
    assert_eq!(
        (status, &error["error"]),
        (415, &json!("unsupported_media_type")),
        "{error}"
    );
    let metadata = format!(
        "filename {},filetype {}",
        base64("b.txt"),
        base64("text/plain")
    );
    let (status, location, _) = tus_create(endpoint, None, 10, &metadata).await;
    assert_eq!(status, 201);
    let location = location.unwrap();
    assert!(location.contains("/api/upload/tus/"), "{location}");
    assert_eq!(tus_patch(&location, None, 0, b"first").await.0, 204);
    let (_, listed) = get(&format!("{}/api/upload-links", running.upload), token).await;
    assert_eq!(
        listed["links"][0]["uses"], 3,
        "the refused tries used nothing: {listed}"
    );
    assert!(
        listed["links"][0].get("url").is_none(),
        "a listed link shows no secret"
    );

    // A key's upload is not a link's: without a token, its URL is refused.
    let tus = format!("{}/api/upload/tus", running.upload);
    let (_, keyed, _) = tus_create(&tus, Some(token), 5, "").await;
    let (status, error) = tus_patch(&keyed.unwrap(), None, 0, b"bytes").await;
    assert_eq!((status, &error["error"]), (401, &json!("unauthorized")));

    // Revoked: its unfinished upload stops too.
    let revoke = format!(
        "{}/api/upload-links/{}",
        running.upload,
        link["id"].as_str().unwrap()
    );
    let gone = Client::new()
        .delete(revoke)
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 204);
    let (status, error) = tus_patch(&location, None, 5, b"later").await;
    assert_eq!(
        (status, &error["error"]),
        (401, &json!("invalid_link")),
        "{error}"
    );

    // Finished before its link went, an upload is processed like any other.
    let link = create_link(&running, token, json!({})).await;
    let (_, location, body) = tus_create(link["tusEndpoint"].as_str().unwrap(), None, 5, "").await;
    assert_eq!(
        tus_patch(&location.unwrap(), None, 0, b"bytes").await.0,
        204,
        "{body}"
    );
    let (_, page) = get(&format!("{}/api/uploads?limit=1", running.upload), token).await;
    let upload = &page["uploads"][0];
    assert_eq!(upload["link"], link["id"]);
    let op = finished_operation(&running, token, &upload["operationId"].to_string()).await;
    assert_eq!(op["cid"].as_str(), Some(cid_of(b"bytes").as_str()), "{op}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_line_makes_uses_lists_and_revokes_keys() {
    let (dir, running) = serve();
    let home = dir.path().join("home");
    let args = [
        "key",
        "create",
        "--scope",
        "upload,read",
        "--expires",
        "24h",
        "--max-uses",
        "3",
        "--name",
        "ci",
    ];
    let key = server::client(&running, &running.token, &home, &args);
    let key = key.trim();
    assert!(key.starts_with("cairn_"), "{key}");

    // Uploads with it, tagged.
    let file = dir.path().join("report.txt");
    std::fs::write(&file, b"quarterly numbers").unwrap();
    let path = file.to_str().unwrap();
    server::client(
        &running,
        key,
        &home,
        &["upload", "--kv", "team=blue", "--kv", "q=3", path],
    );
    let (_, page) = get(
        &format!("{}/api/uploads?kv=team:blue&kv=q:3", running.upload),
        key,
    )
    .await;
    assert_eq!(page["uploads"][0]["name"], "report.txt", "{page}");

    let listed = server::client(&running, &running.token, &home, &["key", "list"]);
    let line = listed.lines().find(|line| line.contains("\tci\t")).unwrap();
    assert!(
        line.contains("upload,read") && line.contains("uses 1/3"),
        "{line}"
    );
    let id = line.split('\t').next().unwrap();
    server::client(&running, &running.token, &home, &["key", "revoke", id]);
    let (status, _) = get(&format!("{}/api/uploads", running.upload), key).await;
    assert_eq!(status, 401);
}

/// A link's `mimeTypes` are held against what the bytes are, not the label they come with;
/// a page that uploaded through the link with TUS reads its upload's CID from the upload's
/// URL alone; the link's maker lists what came through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_checks_the_bytes_and_tells_the_page_its_cid() {
    let (_dir, running) = serve();
    let token = &running.token;
    let link = create_link(
        &running,
        token,
        json!({"mimeTypes": ["image/*"], "uploads": 10}),
    )
    .await;
    let url = link["url"].as_str().unwrap();
    // A 1x1 PNG as image tools write it (signature, IHDR, IDAT, IEND).
    let png: &[u8] =
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\
        \0\0\0\x0bIDATx\x9cc`\0\x02\0\0\x05\0\x01z^\xab?\0\0\0\0IEND\xaeB`\x82";

    // A text file labelled an image, by its part's type and by its name: refused.
    let (status, error) = post(url, None, file(b"just words", "photo.png", "image/png")).await;
    assert_eq!(
        (status, &error["error"]),
        (415, &json!("unsupported_media_type")),
        "{error}"
    );
    assert!(
        error["message"].as_str().unwrap().contains("text/plain"),
        "{error}"
    );
    let (status, stored) = post(url, None, file(png, "photo.png", "image/png")).await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(
        (&stored["mimeType"], &stored["kind"]),
        (&json!("image/png"), &json!("file"))
    );

    // By TUS the bytes are checked once they are all in: the upload's operation fails.
    let endpoint = link["tusEndpoint"].as_str().unwrap();
    let labelled = format!(
        "filename {},filetype {}",
        base64("p.png"),
        base64("image/png")
    );
    let (status, location, _) = tus_create(endpoint, None, 10, &labelled).await;
    assert_eq!(status, 201);
    let lie = location.unwrap();
    assert_eq!(tus_patch(&lie, None, 0, b"not an png").await.0, 204);
    let state = upload_state(&lie, |state| state["status"] == "failed").await;
    assert_eq!(state["error"]["error"], "unsupported_media_type", "{state}");
    assert_eq!(state["cid"], Value::Null);

    // A real image: with no key, HEAD names the CID once it is known, and GET says it as JSON.
    let (_, location, _) = tus_create(endpoint, None, png.len(), &labelled).await;
    let location = location.unwrap();
    assert_eq!(tus_patch(&location, None, 0, png).await.0, 204);
    let state = upload_state(&location, |state| state["status"] == "completed").await;
    assert_eq!(state["cid"].as_str(), Some(cid_of(png).as_str()), "{state}");
    assert_eq!(
        (&state["offset"], &state["complete"]),
        (&json!(png.len()), &json!(true))
    );
    let head = Client::new()
        .head(&location)
        .header("Tus-Resumable", "1.0.0")
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 200);
    let header = |name: &str| head.headers()[name].to_str().unwrap().to_owned();
    assert_eq!(header("upload-cid"), cid_of(png));
    assert_eq!(header("cairn-operation-status"), "completed");

    // The link's maker lists its uploads, and no others.
    let (_, other) = post(
        &format!("{}/api/upload", running.upload),
        Some(token),
        file(b"elsewhere", "x.txt", "text/plain"),
    )
    .await;
    let listing = format!(
        "{}/api/uploads?link={}",
        running.upload,
        link["id"].as_str().unwrap()
    );
    let (status, page) = get(&listing, token).await;
    assert_eq!(status, 200, "{page}");
    let ids: Vec<String> = (page["uploads"].as_array().unwrap().iter())
        .map(|u| u["id"].as_str().unwrap().to_owned())
        .collect();
    let tus_id = |url: &str| url.rsplit('/').next().unwrap().to_owned();
    assert_eq!(
        ids,
        [
            tus_id(&location),
            tus_id(&lie),
            stored["id"].as_str().unwrap().to_owned()
        ],
        "newest first, the refused POST not among them"
    );
    assert!(!ids.iter().any(|id| other["id"] == id.as_str()));
}

/// `GET` on a TUS upload's URL with no credential, until `done` holds (ten seconds at most).
async fn upload_state(url: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..100 {
        let (status, state) = answer(Client::new().get(url).send().await.unwrap()).await;
        assert_eq!(status, 200, "{state}");
        if done(&state) {
            return state;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the upload at {url} did not get there");
}

/// An app's backend makes links with its upload key, and manages them with that key alone:
/// it lists the links it made (not the account's others) and revokes them; a link another key
/// made is not found to it. A `keys` key still sees and revokes every link.
#[tokio::test(flavor = "multi_thread")]
async fn an_upload_key_lists_and_revokes_the_links_it_made_and_no_others() {
    let (_dir, running) = serve();
    let links = format!("{}/api/upload-links", running.upload);
    let (backend, _) = create_key(&running, &running.token, json!({"scopes": ["upload"]})).await;
    let (other, _) = create_key(&running, &running.token, json!({"scopes": ["upload"]})).await;
    let mine = create_link(&running, &backend, json!({"name": "mine"})).await;
    let theirs = create_link(&running, &other, json!({"name": "theirs"})).await;
    let by_owner = create_link(&running, &running.token, json!({"name": "owner's"})).await;

    let names = |listed: &Value| -> Vec<String> {
        let mut names: Vec<String> = (listed["links"].as_array().unwrap().iter())
            .map(|link| link["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    };
    let (status, listed) = get(&links, &backend).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(names(&listed), ["mine"]);
    let (_, listed) = get(&links, &running.token).await;
    assert_eq!(names(&listed), ["mine", "owner's", "theirs"]);

    let revoke = |id: &Value, key: &str| {
        let request = Client::new()
            .delete(format!("{links}/{}", id.as_str().unwrap()))
            .bearer_auth(key);
        async move { answer(request.send().await.unwrap()).await }
    };
    let (status, refused) = revoke(&theirs["id"], &backend).await;
    assert_eq!(
        (status, &refused["error"]),
        (404, &json!("not_found")),
        "{refused}"
    );
    let (status, refused) = revoke(&by_owner["id"], &backend).await;
    assert_eq!(status, 404, "{refused}");
    assert_eq!(revoke(&mine["id"], &backend).await.0, 204);
    let (_, listed) = get(&links, &backend).await;
    assert!(names(&listed).is_empty(), "{listed}");
    // The others' links still take uploads.
    let (status, text) = post(
        theirs["url"].as_str().unwrap(),
        None,
        file(b"hi", "hi.txt", "text/plain"),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(revoke(&theirs["id"], &running.token).await.0, 204);
}
