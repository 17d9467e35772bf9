//! `cairn key create|list|revoke`: an account's API keys, over `/api/keys` on the account
//! host, with the token the command is given (which needs the `keys` scope).

use anyhow::Result;
use serde_json::{json, Map, Value};

use crate::client::Connection;

/// What `cairn key create` asks for.
pub struct KeyRequest {
    pub name: Option<String>,
    pub scopes: Vec<String>,
    pub expires: Option<std::time::Duration>,
    pub max_uses: Option<u64>,
    pub origins: Vec<String>,
    pub max_upload_bytes: Option<u64>,
}

/// Prints the new key's secret (shown once), or its whole record with `json`.
pub async fn create(conn: &Connection, request: KeyRequest, json_out: bool) -> Result<()> {
    let mut body = Map::new();
    body.insert("scopes".into(), json!(request.scopes));
    if let Some(name) = request.name {
        body.insert("name".into(), json!(name));
    }
    if let Some(expires) = request.expires {
        body.insert("expiresIn".into(), json!(expires.as_secs().max(1)));
    }
    if let Some(n) = request.max_uses {
        body.insert("maxUses".into(), json!(n));
    }
    if !request.origins.is_empty() {
        body.insert("origins".into(), json!(request.origins));
    }
    if let Some(n) = request.max_upload_bytes {
        body.insert("maxUploadBytes".into(), json!(n));
    }
    let http = conn.http.post(format!("{}/api/keys", conn.account_url));
    let key = conn
        .send(http.json(&Value::Object(body)), "creating a key")
        .await?;
    if json_out {
        println!("{key}");
    } else {
        println!("{}", key["key"].as_str().unwrap_or_default());
        eprintln!(
            "key {} ({}): shown once; keep it now",
            key["id"],
            scopes(&key)
        );
    }
    Ok(())
}

/// One line per live key: id, name, scopes, expiry, uses, last use.
pub async fn list(conn: &Connection, json_out: bool) -> Result<()> {
    let http = conn.http.get(format!("{}/api/keys", conn.account_url));
    let page = conn.send(http, "listing keys").await?;
    if json_out {
        println!("{page}");
        return Ok(());
    }
    let text = |v: &Value| v.as_str().unwrap_or("-").to_owned();
    for key in page["keys"].as_array().into_iter().flatten() {
        let uses = match key["maxUses"].as_u64() {
            Some(max) => format!("{}/{max}", key["uses"]),
            None => key["uses"].to_string(),
        };
        println!(
            "{}\t{}\t{}\t{}\texpires {}\tuses {uses}\tlast used {}",
            key["id"],
            key["prefix"].as_str().unwrap_or_default(),
            if key["name"] == "" {
                "-".into()
            } else {
                text(&key["name"])
            },
            scopes(key),
            text(&key["expiresAt"]),
            text(&key["lastUsedAt"]),
        );
    }
    Ok(())
}

pub async fn revoke(conn: &Connection, id: &str) -> Result<()> {
    let http = conn
        .http
        .delete(format!("{}/api/keys/{id}", conn.account_url));
    conn.send(http, "revoking a key").await?;
    eprintln!("key {id} revoked");
    Ok(())
}

fn scopes(key: &Value) -> String {
    let names: Vec<&str> = key["scopes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    names.join(",")
}
