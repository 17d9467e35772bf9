//! The documentation as a reader meets it (issue 49): `/docs` on both hosts lists every guide
//! of `docs/guides/`, each guide is a page of its own, and no link in any of them leads
//! nowhere: a guide, a heading in one, the API reference's operations (by `operationId` in
//! `openapi.yaml`), or a route the server answers. The reference itself, rendered in Chromium,
//! is `web_page.rs`'s `docs` scenario.

use cairn_harness::server;

use std::collections::BTreeSet;
use std::path::Path;

use server::{openapi_operation_ids, start, terminate};

/// Every guide's page: the file names of `docs/guides/*.md` but the index's.
fn guide_pages() -> BTreeSet<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/guides");
    (std::fs::read_dir(&dir).unwrap())
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter_map(|name| name.strip_suffix(".md").map(str::to_owned))
        .filter(|page| page != "README")
        .collect()
}

/// The values of `attribute="..."` in `html`, in order.
fn attribute_values(html: &str, attribute: &str) -> Vec<String> {
    let marker = format!(" {attribute}=\"");
    let mut values = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find(&marker) {
        rest = &rest[at + marker.len()..];
        let end = rest.find('"').expect("a closing quote");
        values.push(rest[..end].replace("&amp;", "&"));
        rest = &rest[end..];
    }
    values
}

#[tokio::test]
async fn every_guide_is_served_on_both_hosts_and_no_link_in_them_leads_nowhere() {
    let data = tempfile::tempdir().unwrap();
    let running = start(data.path(), &[]);
    let http = reqwest::Client::new();
    let get = |url: String| {
        let http = http.clone();
        async move {
            let response = http.get(&url).send().await.unwrap();
            let status = response.status().as_u16();
            let policy = (response.headers().get("content-security-policy"))
                .map(|v| v.to_str().unwrap().to_owned());
            (status, policy, response.text().await.unwrap())
        }
    };
    let operations = openapi_operation_ids();
    let pages = guide_pages();
    assert!(
        pages.len() >= 7,
        "docs/guides holds {pages:?}: a quick start, browser uploads, webhooks, events, \
         names, a reverse proxy and backups at least"
    );
    for base in [&running.upload, &running.account] {
        let (status, _, index) = get(format!("{base}/docs")).await;
        assert_eq!(status, 200, "{base}/docs");
        let listed: BTreeSet<String> = (attribute_values(&index, "href").into_iter())
            .filter_map(|href| href.strip_prefix("/docs/").map(str::to_owned))
            .filter(|page| pages.contains(page))
            .collect();
        assert_eq!(listed, pages, "{base}/docs does not link every guide");

        let mut checked = 0;
        for page in std::iter::once(String::new()).chain(pages.iter().cloned()) {
            let url = format!("{base}/docs/{page}")
                .trim_end_matches('/')
                .to_owned();
            let (status, policy, html) = get(url.clone()).await;
            assert_eq!(status, 200, "{url}");
            assert!(
                policy.is_some_and(|p| p.contains("default-src 'none'")),
                "{url}: no Content-Security-Policy"
            );
            assert_eq!(html.matches("<h1>").count(), 1, "{url}: one title");
            for href in attribute_values(&html, "href") {
                let (target, fragment) = match href.split_once('#') {
                    Some((target, fragment)) => (target.to_owned(), Some(fragment.to_owned())),
                    None => (href.clone(), None),
                };
                if target.starts_with("http://") || target.starts_with("https://") {
                    // Beyond the machine: the server's own addresses in examples, or the
                    // world's specifications; neither is this server's to answer.
                    continue;
                }
                let target = if target.is_empty() {
                    url.trim_start_matches(base.as_str()).to_owned()
                } else {
                    target
                };
                assert!(
                    target.starts_with('/') || target == "data:,",
                    "{url}: link {href:?} is relative; a page moved would break it"
                );
                if target == "data:," {
                    continue;
                }
                match (target.as_str(), fragment) {
                    ("/docs/api", Some(fragment)) => {
                        let id = fragment.strip_prefix("operation/");
                        assert!(
                            id.is_some_and(|id| operations.contains(id)),
                            "{url}: link {href:?} names no operation of openapi.yaml"
                        );
                    }
                    (path, fragment) => {
                        let (status, _, linked) = get(format!("{base}{path}")).await;
                        assert_eq!(status, 200, "{url}: link {href:?} answers {status}");
                        if let Some(fragment) = fragment {
                            assert!(
                                linked.contains(&format!(" id=\"{fragment}\"")),
                                "{url}: link {href:?}: no heading #{fragment} there"
                            );
                        }
                    }
                }
                checked += 1;
            }
        }
        assert!(
            checked > pages.len(),
            "only {checked} links checked on {base}"
        );
    }
    terminate(running);
}

#[tokio::test]
async fn the_reference_and_its_document_load_from_the_host_itself() {
    let data = tempfile::tempdir().unwrap();
    let running = start(data.path(), &[]);
    for base in [&running.upload, &running.account] {
        let reference = reqwest::get(format!("{base}/docs/api")).await.unwrap();
        assert_eq!(reference.status(), 200);
        let html = reference.text().await.unwrap();
        for script in attribute_values(&html, "src") {
            assert!(
                script.starts_with("/docs/assets/"),
                "{script}: not served here"
            );
            let asset = reqwest::get(format!("{base}{script}")).await.unwrap();
            assert_eq!(asset.status(), 200, "{base}{script}");
            let media_type = &asset.headers()["content-type"];
            assert!(media_type.to_str().unwrap().starts_with("text/javascript"));
        }
        let document = reqwest::get(format!("{base}/api/openapi.json"))
            .await
            .unwrap();
        assert_eq!(document.status(), 200, "{base}/api/openapi.json");
        let missing = reqwest::get(format!("{base}/docs/no-such-guide"))
            .await
            .unwrap();
        assert_eq!(missing.status(), 404);
        let error: serde_json::Value = missing.json().await.unwrap();
        assert_eq!(error["error"], "not_found");
    }
    terminate(running);
}
