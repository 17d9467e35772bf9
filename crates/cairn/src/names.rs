//! `cairn name create|publish|resolve|list|delete`: the account's IPNS names, over
//! `/api/names` on the upload host; and `Connection::point_name`, what `cairn upload
//! --publish` does once the upload has its CID.
//!
//! `resolve` trusts no server: it asks the delegated router (`/routing/v1/ipns/{name}`) for
//! the signed record and verifies it here (`cairn_p2p::ipns::Record::verify`: the name's key,
//! the signature, the validity) before printing what the name points at.

use std::time::SystemTime;

use anyhow::{anyhow, bail, Context, Result};
use cairn_p2p::ipns::{Name, Record, MAX_RECORD_BYTES};
use serde_json::{json, Value};

use crate::client::{Connection, UsageError};

/// The media type of a signed IPNS record (routing and trustless gateway specs).
const IPNS_RECORD: &str = "application/vnd.ipfs.ipns-record";

/// The account keeps no name by that name or label.
#[derive(Debug, thiserror::Error)]
#[error("no name {0:?} in this account{hint}", hint = how_to_make(.0))]
struct NoSuchName(String);

fn how_to_make(name_or_label: &str) -> String {
    if name_or_label.parse::<Name>().is_ok() {
        " (`cairn name list` shows its names)".to_owned()
    } else {
        format!(
            ": make it with `cairn name create CID --name {name_or_label}` \
             (`cairn name list` shows the account's names)"
        )
    }
}

impl Connection {
    /// The account's name `name_or_label` (its `k51...` form, or its label), as the server
    /// finds it; a clear error, saying how to make one, when the account has none.
    pub async fn require_name(&self, name_or_label: &str) -> Result<Value> {
        let page = self
            .send(
                self.http.get(format!("{}/api/names", self.url)),
                "listing names",
            )
            .await?;
        // As the server reads it: a name if it parses as one, otherwise a label.
        let wanted = name_or_label.parse::<Name>().ok().map(|n| n.to_string());
        let found = page["results"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|n| match &wanted {
                Some(name) => n["name"] == name.as_str(),
                None => n["label"] == name_or_label,
            });
        found
            .cloned()
            .ok_or_else(|| anyhow!(NoSuchName(name_or_label.to_owned())))
    }

    /// Point the account's name `name_or_label` at `cid`: its new record (sequence + 1).
    pub async fn point_name(&self, name_or_label: &str, cid: &str) -> Result<Value> {
        check_cid(cid)?;
        let url = format!("{}/api/names/{}", self.url, segment(name_or_label)?);
        let request = self.http.put(url).json(&json!({ "cid": cid }));
        match self.send(request, "pointing a name").await {
            Ok(record) => Ok(record),
            // The server's 404 says only "no name"; say how to make one.
            Err(err) => match self.require_name(name_or_label).await {
                Err(missing) if missing.is::<NoSuchName>() => Err(missing),
                _ => Err(err),
            },
        }
    }
}

/// `cairn name create CID [--name LABEL]`.
pub async fn create(conn: &Connection, cid: &str, label: Option<String>, json: bool) -> Result<()> {
    check_cid(cid)?;
    let mut body = json!({ "cid": cid });
    if let Some(label) = label {
        body["label"] = Value::String(label);
    }
    let request = conn
        .http
        .post(format!("{}/api/names", conn.url))
        .json(&body);
    let record = conn.send(request, "creating a name").await?;
    print_record(&record, json);
    Ok(())
}

/// `cairn name publish NAME CID`.
pub async fn publish(conn: &Connection, name_or_label: &str, cid: &str, json: bool) -> Result<()> {
    let record = conn
        .point_name(name_or_label, cid)
        .await
        .with_context(|| format!("pointing {name_or_label:?} at {cid}"))?;
    print_record(&record, json);
    Ok(())
}

/// `cairn name list`: one name a line (see `row`), or the server's page with `json`.
pub async fn list(conn: &Connection, json: bool) -> Result<()> {
    let request = conn.http.get(format!("{}/api/names", conn.url));
    let page = conn.send(request, "listing names").await?;
    if json {
        println!("{page}");
        return Ok(());
    }
    for record in page["results"].as_array().into_iter().flatten() {
        println!("{}", row(record));
    }
    Ok(())
}

/// `cairn name delete NAME`.
pub async fn delete(conn: &Connection, name_or_label: &str) -> Result<()> {
    let url = format!("{}/api/names/{}", conn.url, segment(name_or_label)?);
    conn.send(conn.http.delete(url), "deleting a name")
        .await
        .with_context(|| format!("deleting name {name_or_label:?}"))?;
    eprintln!("deleted name {name_or_label}");
    Ok(())
}

/// `cairn name resolve NAME`: the value of the name's newest record, verified here.
pub async fn resolve(conn: &Connection, target: &str, json: bool) -> Result<()> {
    let text = target.strip_prefix("/ipns/").unwrap_or(target);
    let name = match text.parse::<Name>() {
        Ok(name) => name,
        // A content CID is a mistake worth its own words (the parser's say which codec).
        Err(why) if cairn_unixfs::Cid::try_from(text).is_ok() => {
            return Err(anyhow!(UsageError(why)));
        }
        Err(_) => {
            let kept = conn.require_name(text).await.with_context(|| {
                format!("{text:?} is not an IPNS name, so it was looked up as a label")
            })?;
            let name = kept["name"].as_str().unwrap_or_default();
            name.parse::<Name>()
                .map_err(|why| anyhow!("the server listed {text:?} as {why}"))?
        }
    };
    let url = format!("{}/routing/v1/ipns/{name}", conn.url);
    let bytes = fetch_record(conn, &url)
        .await
        .with_context(|| format!("resolving {name}"))?;
    let record = Record::verify(&name, &bytes, SystemTime::now())
        .with_context(|| format!("refusing the record {url} answered"))?;
    if json {
        let answer = json!({
            "name": name.to_string(),
            "value": record.value,
            "sequence": record.sequence,
            "validUntil": humantime::format_rfc3339_seconds(record.validity).to_string(),
            "ttlSeconds": record.ttl.as_secs(),
        });
        println!("{answer}");
    } else {
        println!("{}", record.value);
        eprintln!(
            "{name}: record verified, sequence {}, valid until {}",
            record.sequence,
            humantime::format_rfc3339_seconds(record.validity)
        );
    }
    Ok(())
}

/// The record the router at `url` answers, read up to one byte past the largest valid
/// record's size (so a larger answer is refused by the verification, not held whole).
async fn fetch_record(conn: &Connection, url: &str) -> Result<Vec<u8>> {
    let mut response = conn
        .http
        .get(url)
        .header(reqwest::header::ACCEPT, IPNS_RECORD)
        .send()
        .await
        .with_context(|| format!("asking {url} for the record"))?;
    let status = response.status();
    let is_record = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim() == IPNS_RECORD);
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.context("reading the record")? {
        let room = MAX_RECORD_BYTES + 1 - bytes.len();
        bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if bytes.len() > MAX_RECORD_BYTES {
            break;
        }
    }
    if status.is_success() && is_record {
        return Ok(bytes);
    }
    // The routing spec answers "no record" as a 200 of another type; errors as usual.
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let message = body["message"].as_str().unwrap_or_default();
    if status.is_success() {
        match message {
            "" => bail!("the router knows no valid record of it"),
            message => bail!("{message}"),
        }
    }
    let code = body["error"].as_str().unwrap_or("error");
    bail!("the router answered {status} ({code}): {message}")
}

/// A name as the other name commands print it: its record in full with `json`, else its row.
fn print_record(record: &Value, json: bool) {
    if json {
        println!("{record}");
    } else {
        println!("{}", row(record));
    }
}

/// `name  label  value  sequence N  expires T`, tab-separated (`-` for no label).
fn row(record: &Value) -> String {
    format!(
        "{}\t{}\t{}\tsequence {}\texpires {}",
        record["name"].as_str().unwrap_or_default(),
        record["label"].as_str().unwrap_or("-"),
        record["value"].as_str().unwrap_or_default(),
        record["sequence"],
        record["expiresAt"].as_str().unwrap_or("-"),
    )
}

/// A CID, before anything is sent: a typo is a usage error, not a server's `400`.
fn check_cid(cid: &str) -> Result<()> {
    cairn_unixfs::Cid::try_from(cid)
        .map(drop)
        .map_err(|e| anyhow!(UsageError(format!("{cid:?} is not a CID: {e}"))))
}

/// `name_or_label` as one segment of a URL path. Labels are letters, digits, `-`, `_` and
/// `.`; anything else is percent-encoded so that it reaches the server as typed (which then
/// says it is no name). A label of only dots cannot travel in a path at all: URL parsers
/// read `.` and `..` (and their encodings) as directories.
fn segment(name_or_label: &str) -> Result<String> {
    if name_or_label.chars().all(|c| c == '.') {
        return Err(anyhow!(UsageError(format!(
            "{name_or_label:?} cannot be sent in a URL: use the name's k51... form"
        ))));
    }
    let mut out = String::with_capacity(name_or_label.len());
    for byte in name_or_label.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    Ok(out)
}
