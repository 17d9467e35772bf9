//! IPNS names (issue 36): a name made for an upload follows it to the next version on the
//! gateway (`/ipns/{name}`, `{name}.ipns.{domain}`) and in the router
//! (`/routing/v1/ipns/{name}`), whose records verify as the IPNS spec says; records pushed to
//! the router are taken only when valid and newer.

mod support;

use std::time::{Duration, SystemTime};

use cairn_p2p::ipns::{Name, Record};
use cairn_p2p::key::Keypair;
use reqwest::multipart::Part;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{assert_error, get, TestServer};

const RECORD: &str = "application/vnd.ipfs.ipns-record";

async fn upload(server: &TestServer, bytes: &[u8]) -> String {
    let part = Part::bytes(bytes.to_vec()).file_name("index.txt");
    let (status, body) = server.post_file(&server.token, "", part).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["cid"].as_str().unwrap().to_owned()
}

async fn send(
    server: &TestServer,
    method: reqwest::Method,
    path: &str,
    body: Value,
) -> (StatusCode, Value) {
    let response = server
        .client
        .request(method, format!("{}{path}", server.upload))
        .bearer_auth(&server.token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body = if status == StatusCode::NO_CONTENT {
        Value::Null
    } else {
        response.json().await.unwrap()
    };
    (status, body)
}

/// The router's record of `name`, verified as any IPNS client would.
async fn routed_record(server: &TestServer, name: &str) -> Record {
    let answer = get(
        server,
        &format!("/routing/v1/ipns/{name}"),
        &[("Accept", RECORD)],
    )
    .await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(answer.headers()["content-type"], RECORD);
    assert!(
        answer.headers()["cache-control"]
            .to_str()
            .unwrap()
            .starts_with("public, max-age=300"),
        "{:?}",
        answer.headers()
    );
    let bytes = answer.bytes().await.unwrap();
    Record::verify(&name.parse().unwrap(), &bytes, SystemTime::now()).unwrap()
}

#[tokio::test]
async fn a_name_follows_a_site_to_its_next_version_on_the_gateway_and_the_router() {
    let server = TestServer::start().await;
    let first = upload(&server, b"first version").await;
    let second = upload(&server, b"second version").await;

    let (status, made) = send(
        &server,
        reqwest::Method::POST,
        "/api/names",
        json!({"cid": first, "label": "site"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let name = made["name"].as_str().unwrap().to_owned();
    assert!(name.starts_with("k51"), "{made}");
    assert_eq!(made["sequence"], 0);
    assert_eq!(made["value"], format!("/ipfs/{first}"));

    let served = get(&server, &format!("/ipns/{name}"), &[]).await;
    assert_eq!(served.status(), StatusCode::OK);
    assert_eq!(
        served.headers()["x-ipfs-path"],
        format!("/ipns/{name}").as_str()
    );
    assert_eq!(served.headers()["cache-control"], "public, max-age=300");
    assert_eq!(served.bytes().await.unwrap(), &b"first version"[..]);
    assert_eq!(
        routed_record(&server, &name).await.value,
        format!("/ipfs/{first}")
    );

    // Pointed by its label, twice: the newest wins everywhere.
    let (status, pointed) = send(
        &server,
        reqwest::Method::PUT,
        "/api/names/site",
        json!({"cid": second}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{pointed}");
    assert_eq!(pointed["sequence"], 1);
    let served = get(&server, &format!("/ipns/{name}"), &[]).await;
    assert_eq!(served.bytes().await.unwrap(), &b"second version"[..]);
    let (_, pointed) = send(
        &server,
        reqwest::Method::PUT,
        &format!("/api/names/{name}"),
        json!({"cid": first}),
    )
    .await;
    assert_eq!(pointed["sequence"], 2);
    let record = routed_record(&server, &name).await;
    assert_eq!(
        (record.sequence, record.value.as_str()),
        (2, &*format!("/ipfs/{first}"))
    );
    // Valid for two days, cached five minutes: a site's next version shows within minutes.
    assert_eq!(record.ttl, Duration::from_secs(300));
    let left = record.validity.duration_since(SystemTime::now()).unwrap();
    assert!(left > Duration::from_secs(47 * 3600), "{left:?}");

    // The name's own origin serves it too.
    let origin = get(&server, "/", &[("Host", &format!("{name}.ipns.localhost"))]).await;
    assert_eq!(origin.status(), StatusCode::OK);
    assert_eq!(origin.bytes().await.unwrap(), &b"first version"[..]);
    // And the gateway hands out the record itself to a client that verifies.
    let asked = get(&server, &format!("/ipns/{name}?format=ipns-record"), &[]).await;
    assert_eq!(asked.headers()["content-type"], RECORD);
    // Of the name alone: with a path, the spec's 400.
    let with_path = get(
        &server,
        &format!("/ipns/{name}/index.txt?format=ipns-record"),
        &[],
    )
    .await;
    assert_eq!(with_path.status(), StatusCode::BAD_REQUEST);

    let (status, listed) = send(&server, reqwest::Method::GET, "/api/names", Value::Null).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed["count"], 1);
    assert_eq!(listed["results"][0]["label"], "site");

    // A label is the account's own, and unique in it.
    let (status, body) = send(
        &server,
        reqwest::Method::POST,
        "/api/names",
        json!({"cid": second, "label": "site"}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, body) = send(
        &server,
        reqwest::Method::PUT,
        "/api/names/nonesuch",
        json!({"cid": second}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "not_found");

    let (status, _) = send(
        &server,
        reqwest::Method::DELETE,
        "/api/names/site",
        Value::Null,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let gone = get(&server, &format!("/ipns/{name}"), &[]).await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_router_takes_valid_newer_records_and_refuses_forged_or_expired_ones() {
    let server = TestServer::start().await;
    let key = Keypair::generate_ed25519();
    let name = Name::of(&key.public());
    let record = |sequence, validity| Record {
        value: "/ipfs/bafkqaddwgevxmmraojswg33smq".into(),
        sequence,
        validity,
        ttl: Duration::from_secs(60),
    };
    let later = SystemTime::now() + Duration::from_secs(3600);
    let put = |bytes: Vec<u8>, name: Name| {
        let client = server.client.clone();
        let url = format!("{}/routing/v1/ipns/{name}", server.upload);
        async move {
            let response = client
                .put(url)
                .header("Content-Type", RECORD)
                .body(bytes)
                .send()
                .await
                .unwrap();
            let status = response.status();
            (status, response.text().await.unwrap())
        }
    };

    // Signed by another key than the name's.
    let forger = Keypair::generate_ed25519();
    let (status, body) = put(record(1, later).sign(&forger), name).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("signature"), "{body}");
    // Expired.
    let past = SystemTime::now() - Duration::from_secs(60);
    let (status, body) = put(record(1, past).sign(&key), name).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("expired"), "{body}");
    // Nothing was taken: the router knows no record (a 200 that is not a record, no 404).
    let none = get(
        &server,
        &format!("/routing/v1/ipns/{name}"),
        &[("Accept", RECORD)],
    )
    .await;
    assert_eq!(none.status(), StatusCode::OK);
    assert_ne!(none.headers()["content-type"], RECORD);

    let (status, body) = put(record(5, later).sign(&key), name).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // An older sequence does not replace it.
    let (status, _) = put(record(4, later).sign(&key), name).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(routed_sequence(&server, &name).await, 5);

    // Without the record's media type, the spec's 406.
    let refused = get(&server, &format!("/routing/v1/ipns/{name}"), &[]).await;
    assert_eq!(refused.status(), StatusCode::NOT_ACCEPTABLE);
}

async fn routed_sequence(server: &TestServer, name: &Name) -> u64 {
    let answer = get(
        server,
        &format!("/routing/v1/ipns/{name}"),
        &[("Accept", RECORD)],
    )
    .await;
    let bytes = answer.bytes().await.unwrap();
    Record::verify(name, &bytes, SystemTime::now())
        .unwrap()
        .sequence
}
