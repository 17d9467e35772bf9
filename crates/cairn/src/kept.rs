//! What an account keeps, from the command line: `cairn uploads`, `cairn rm`, `cairn pin`,
//! `cairn pins` and `cairn unpin`, over `/api/uploads` and the Pinning Service API (`/pins`).

use std::future::Future;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::client::Connection;

/// The largest page either list gives.
const PAGE: u32 = 1000;

/// What a target names: a record by its id, or every record `with_cid` finds for a root CID
/// (their `id_field`); `nothing` is the error when there is none.
async fn resolve<F: Future<Output = Result<Vec<Value>>>>(
    target: &str,
    with_cid: impl FnOnce() -> F,
    id_field: &str,
    nothing: &str,
) -> Result<Vec<String>> {
    if cairn_unixfs::Cid::try_from(target).is_err() {
        return Ok(vec![target.to_owned()]);
    }
    let records = with_cid().await?;
    if records.is_empty() {
        bail!("{nothing} {target}");
    }
    Ok(records
        .iter()
        .filter_map(|record| record[id_field].as_str().map(str::to_owned))
        .collect())
}

/// Every upload, newest first, following the cursor.
async fn all_uploads(conn: &Connection, cid: Option<&str>) -> Result<Vec<Value>> {
    let mut uploads = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut query = vec![("limit", PAGE.to_string())];
        query.extend(cid.map(|cid| ("cid", cid.to_owned())));
        query.extend(cursor.map(|cursor| ("cursor", cursor)));
        let request = conn
            .http
            .get(format!("{}/api/uploads", conn.url))
            .query(&query);
        let page = conn.send(request, "listing uploads").await?;
        uploads.extend(page["uploads"].as_array().cloned().unwrap_or_default());
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Ok(uploads),
        }
    }
}

/// Every pin, newest first, paging by `before` as the spec has clients do.
async fn all_pins(conn: &Connection, cid: Option<&str>) -> Result<Vec<Value>> {
    let mut pins: Vec<Value> = Vec::new();
    loop {
        let mut query = vec![("limit", PAGE.to_string())];
        query.extend(cid.map(|cid| ("cid", cid.to_owned())));
        if let Some(last) = pins.last() {
            query.push((
                "before",
                last["created"].as_str().unwrap_or_default().to_owned(),
            ));
        }
        let request = conn.http.get(format!("{}/pins", conn.url)).query(&query);
        let page = conn.send(request, "listing pins").await?;
        let results = page["results"].as_array().cloned().unwrap_or_default();
        let full = results.len() == PAGE as usize;
        pins.extend(results);
        if !full {
            return Ok(pins);
        }
    }
}

/// `cairn uploads`: id, CID, size, status and name, one upload a line.
pub async fn uploads(conn: &Connection, json: bool) -> Result<()> {
    let uploads = all_uploads(conn, None).await?;
    if json {
        println!("{}", Value::Array(uploads));
        return Ok(());
    }
    for upload in &uploads {
        println!(
            "{}\t{}\t{}\t{}\t{}",
            upload["id"].as_str().unwrap_or_default(),
            upload["cid"].as_str().unwrap_or("-"),
            upload["size"],
            upload["status"].as_str().unwrap_or_default(),
            upload["name"].as_str().unwrap_or_default(),
        );
    }
    Ok(())
}

/// `cairn rm ID|CID...`: delete uploads by id, or every upload of a root CID.
pub async fn rm(conn: &Connection, targets: &[String]) -> Result<()> {
    for target in targets {
        let with_cid = || all_uploads(conn, Some(target));
        let ids = resolve(target, with_cid, "id", "no upload has the root").await?;
        for id in ids {
            let request = conn.http.delete(format!("{}/api/uploads/{id}", conn.url));
            conn.send(request, &format!("deleting upload {id}")).await?;
            eprintln!("deleted upload {id}");
        }
    }
    Ok(())
}

/// `cairn pin CID`: ask the service to keep a CID; with `wait`, until it is pinned or failed.
/// Returns whether it did not fail.
pub async fn pin(
    conn: &Connection,
    cid: &str,
    name: Option<String>,
    origins: Vec<String>,
    wait: bool,
    json: bool,
) -> Result<bool> {
    let mut pin = json!({"cid": cid, "origins": origins});
    if let Some(name) = name {
        pin["name"] = Value::String(name);
    }
    let request = conn.http.post(format!("{}/pins", conn.url)).json(&pin);
    let mut status = conn.send(request, "pinning").await?;
    let request_id = status["requestid"].as_str().unwrap_or_default().to_owned();
    while wait && matches!(status["status"].as_str(), Some("queued" | "pinning")) {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let request = conn.http.get(format!("{}/pins/{request_id}", conn.url));
        status = conn.send(request, "asking for the pin").await?;
    }
    if json {
        println!("{status}");
    } else {
        println!("{request_id}\t{}", status["status"].as_str().unwrap_or("?"));
        if let Some(reason) = status["info"]["reason"].as_str() {
            eprintln!("failed: {reason}");
        }
    }
    Ok(status["status"] != "failed")
}

/// `cairn pins`: request id, status, CID and name, one pin a line (uploads included).
pub async fn pins(conn: &Connection, json: bool) -> Result<()> {
    let pins = all_pins(conn, None).await?;
    if json {
        println!("{}", Value::Array(pins));
        return Ok(());
    }
    for pin in &pins {
        println!(
            "{}\t{}\t{}\t{}",
            pin["requestid"].as_str().unwrap_or_default(),
            pin["status"].as_str().unwrap_or_default(),
            pin["pin"]["cid"].as_str().unwrap_or_default(),
            pin["pin"]["name"].as_str().unwrap_or_default(),
        );
    }
    Ok(())
}

/// `cairn unpin ID|CID`: remove a pin by request id, or every pin of a CID.
pub async fn unpin(conn: &Connection, target: &str) -> Result<()> {
    let with_cid = || all_pins(conn, Some(target));
    let ids = resolve(
        target,
        with_cid,
        "requestid",
        "nothing is pinned with the CID",
    )
    .await?;
    for id in ids {
        let request = conn.http.delete(format!("{}/pins/{id}", conn.url));
        conn.send(request, &format!("removing pin {id}"))
            .await
            .with_context(|| format!("pin {id}"))?;
        eprintln!("removed pin {id}");
    }
    Ok(())
}
