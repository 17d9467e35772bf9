//! Content as its own origin, and the web page on an origin of its own: a website uploaded by
//! one user must not be able to read another's storage, nor the page's token.

mod support;

use cairn_server::ServerConfig;
use reqwest::multipart::Part;
use reqwest::StatusCode;
use support::{assert_error, tar_gz, wait_for, TestServer};

/// A website with an index and a file, uploaded; its root CID.
async fn website(server: &TestServer) -> String {
    let archive = tar_gz(&[("index.html", b"<h1>home</h1>"), ("docs/a.txt", b"text")]);
    let (_, body) = server
        .post_file(&server.token, "", Part::bytes(archive))
        .await;
    let op = wait_for(server, body["operationId"].as_i64().unwrap()).await;
    op["cid"].as_str().unwrap().to_owned()
}

/// A client that shows redirects rather than following them.
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

const BROWSER_ACCEPT: &str = "text/html,application/xhtml+xml,*/*;q=0.8";

#[tokio::test]
async fn browsers_are_sent_to_the_content_origin_and_programs_are_not() {
    let server = TestServer::start().await;
    let root = website(&server).await;
    let client = no_redirects();
    let port = server.upload.rsplit(':').next().unwrap().to_owned();

    let navigation = client
        .get(format!("{}/ipfs/{root}/docs/a.txt?x=1", server.upload))
        .header("Accept", BROWSER_ACCEPT)
        .header("Sec-Fetch-Mode", "navigate")
        .send()
        .await
        .unwrap();
    assert_eq!(navigation.status(), StatusCode::MOVED_PERMANENTLY);
    assert_eq!(
        navigation.headers()["location"],
        format!("http://{root}.ipfs.localhost:{port}/docs/a.txt?x=1")
    );
    // A program asking for HTML (the gateway suite, a crawler) is not navigating: it gets the
    // page where it asked, sandboxed.
    let program = client
        .get(format!("{}/ipfs/{root}/", server.upload))
        .header("Accept", BROWSER_ACCEPT)
        .send()
        .await
        .unwrap();
    assert_eq!(program.status(), StatusCode::OK);
    assert!(program.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .starts_with("sandbox "));

    // A CIDv0 has no lower-case form: it becomes its CIDv1.
    let empty_dir_v0 = "QmUNLLsPACCz1vLxQVkXqqLX5R1X345qqfHbsf67hvA3Nn";
    let v0 = client
        .get(format!("{}/ipfs/{empty_dir_v0}", server.upload))
        .header("Sec-Fetch-Mode", "navigate")
        .send()
        .await
        .unwrap();
    assert_eq!(
        v0.headers()["location"],
        format!("http://bafybeiczsscdsbs7ffqz55asqdf3smv6klcw3gofszvwlyarci47bgf354.ipfs.localhost:{port}/")
    );

    // curl, and trustless clients asking for blocks, read where they asked.
    let curl = client
        .get(format!("{}/ipfs/{root}/docs/a.txt", server.upload))
        .send()
        .await
        .unwrap();
    assert_eq!(curl.status(), StatusCode::OK);
    let car = client
        .get(format!("{}/ipfs/{root}?format=car", server.upload))
        .header("Accept", BROWSER_ACCEPT)
        .header("Sec-Fetch-Mode", "navigate")
        .send()
        .await
        .unwrap();
    assert_eq!(car.status(), StatusCode::OK);
    assert!(car.headers().get("content-security-policy").is_none());
}

#[tokio::test]
async fn what_the_path_gateway_serves_is_sandboxed_unless_turned_off() {
    let server = TestServer::start().await;
    let root = website(&server).await;
    let page = no_redirects()
        .get(format!("{}/ipfs/{root}/", server.upload))
        .send()
        .await
        .unwrap();
    assert_eq!(page.headers()["content-type"], "text/html");
    let policy = page.headers()["content-security-policy"].to_str().unwrap();
    assert!(policy.starts_with("sandbox "), "{policy}");
    assert!(!policy.contains("allow-same-origin"), "{policy}");

    let open = TestServer::start_with(ServerConfig {
        path_gateway_sandbox: false,
        gateway_domain: None,
        ..ServerConfig::default()
    })
    .await;
    let root = website(&open).await;
    let page = no_redirects()
        .get(format!("{}/ipfs/{root}/", open.upload))
        .header("Accept", BROWSER_ACCEPT)
        .send()
        .await
        .unwrap();
    // No content origins: browsers stay on the path gateway, as the deployment asked.
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.headers().get("content-security-policy").is_none());
}

#[tokio::test]
async fn a_content_origin_serves_only_its_content() {
    let server = TestServer::start().await;
    let root = website(&server).await;
    let client = no_redirects();
    let at = |host: String, path: &str| {
        client
            .get(format!("{}{path}", server.upload))
            .header("Host", host)
            .header("Accept", BROWSER_ACCEPT)
            .send()
    };
    let origin = format!("{root}.ipfs.localhost:1234");

    let index = at(origin.clone(), "/").await.unwrap();
    assert_eq!(index.status(), StatusCode::OK);
    // Its own origin: no sandbox, so the website's scripts and storage work.
    assert!(index.headers().get("content-security-policy").is_none());
    assert_eq!(index.text().await.unwrap(), "<h1>home</h1>");
    let file = at(origin.clone(), "/docs/a.txt").await.unwrap();
    assert_eq!(file.text().await.unwrap(), "text");
    // A directory's trailing slash is added where the browser is.
    let docs = at(origin.clone(), "/docs?x=1").await.unwrap();
    assert_eq!(docs.headers()["location"], "/docs/?x=1");
    // The service's API is not part of anyone's website.
    // A browser is told why in plain text, as on any gateway.
    let api = at(origin.clone(), "/api/upload-limit").await.unwrap();
    assert_eq!(api.status(), StatusCode::NOT_FOUND);
    assert_eq!(api.headers()["content-type"], "text/plain; charset=utf-8");
    let text = api.text().await.unwrap();
    assert!(text.contains("/api/upload-limit"), "{text}");

    let bad = at("not-a-cid.ipfs.localhost".into(), "/").await.unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    let text = bad.text().await.unwrap();
    assert!(text.contains("not a CID"), "{text}");
    // A program that asks for JSON gets the contract's error object.
    let asked = client
        .get(format!("{}/", server.upload))
        .header("Host", "not-a-cid.ipfs.localhost")
        .header("Accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_error(&asked.json().await.unwrap(), "bad_request");
}

#[tokio::test]
async fn the_page_is_on_the_account_host_only_under_a_strict_policy() {
    let server = TestServer::start_with(ServerConfig {
        public_url: Some("https://up.example.net".parse().unwrap()),
        gateway_domain: Some("example.net".into()),
        ..ServerConfig::default()
    })
    .await;
    let page = server
        .client
        .get(format!("{}/", server.account))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    let policy = page.headers()["content-security-policy"].to_str().unwrap();
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self' https://up.example.net",
        "frame-ancestors 'none'",
    ] {
        assert!(policy.contains(directive), "{directive} in {policy}");
    }
    assert!(page
        .text()
        .await
        .unwrap()
        .contains("<script type=\"module\""));

    let config: serde_json::Value = server
        .client
        .get(format!("{}/api/web-config", server.account))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(config["uploadUrl"], "https://up.example.net");
    assert_eq!(config["subdomainGateway"], "https://{cid}.ipfs.example.net");

    // Never where users' content is served.
    let on_upload_host = server
        .client
        .get(format!("{}/", server.upload))
        .send()
        .await
        .unwrap();
    assert_eq!(on_upload_host.status(), StatusCode::NOT_FOUND);
    let missing = server
        .client
        .get(format!("{}/nothing.js", server.account))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}
