//! Account and token administration, straight on the data directory (safe while a server
//! runs on it: SQLite WAL serialises the writers).

use anyhow::{bail, Result};
use cairn_store::model::Account;
use cairn_store::{tokens, AccountLimits, MetadataStore};
use serde_json::json;

fn account_json(account: &Account) -> serde_json::Value {
    json!({
        "id": account.id,
        "name": account.name,
        "uploadLimit": account.upload_limit,
        "quota": account.quota,
        "storedBytes": account.stored_bytes,
    })
}

pub async fn create_account(
    store: &dyn MetadataStore,
    name: &str,
    limits: AccountLimits,
    as_json: bool,
) -> Result<()> {
    let account = store.create_account(name, limits).await?;
    let token = tokens::generate();
    store
        .add_token(account.id, &token.hash, &token.prefix)
        .await?;
    if as_json {
        println!(
            "{}",
            json!({"id": account.id, "name": account.name, "token": token.secret})
        );
    } else {
        println!("created account {:?} (id {})", account.name, account.id);
        println!("API token (shown only this once): {}", token.secret);
    }
    Ok(())
}

pub async fn list_accounts(store: &dyn MetadataStore, as_json: bool) -> Result<()> {
    let accounts = store.list_accounts().await?;
    if as_json {
        let list: Vec<_> = accounts.iter().map(account_json).collect();
        println!("{}", serde_json::Value::Array(list));
        return Ok(());
    }
    println!(
        "{:>4}  {:<20} {:>14} {:>14} {:>14}",
        "id", "name", "upload limit", "quota", "stored"
    );
    for a in accounts {
        let quota = a.quota.map_or("unlimited".to_owned(), |q| q.to_string());
        println!(
            "{:>4}  {:<20} {:>14} {:>14} {:>14}",
            a.id, a.name, a.upload_limit, quota, a.stored_bytes
        );
    }
    Ok(())
}

pub async fn set_limits(
    store: &dyn MetadataStore,
    name: &str,
    upload_limit: Option<u64>,
    quota: Option<String>,
    as_json: bool,
) -> Result<()> {
    let quota = match quota.as_deref() {
        None => None,
        Some("none" | "unlimited") => Some(None),
        Some(bytes) => match bytes.parse::<u64>() {
            Ok(q) => Some(Some(q)),
            Err(_) => bail!("--quota takes a number of bytes or \"none\", not {bytes:?}"),
        },
    };
    let account = store.set_account_limits(name, upload_limit, quota).await?;
    if as_json {
        println!("{}", account_json(&account));
    } else {
        let quota = account
            .quota
            .map_or("unlimited".to_owned(), |q| format!("{q} bytes"));
        println!(
            "account {:?}: upload limit {} bytes, quota {quota}",
            account.name, account.upload_limit
        );
    }
    Ok(())
}

pub async fn create_token(store: &dyn MetadataStore, account: &str, as_json: bool) -> Result<()> {
    let Some(account) = store.account_by_name(account).await? else {
        bail!("no account named {account:?}");
    };
    let token = tokens::generate();
    let info = store
        .add_token(account.id, &token.hash, &token.prefix)
        .await?;
    if as_json {
        println!(
            "{}",
            json!({"id": info.id, "account": account.name, "token": token.secret})
        );
    } else {
        println!("{}", token.secret);
    }
    Ok(())
}

pub async fn revoke_token(store: &dyn MetadataStore, prefix_or_id: &str) -> Result<()> {
    let info = store.revoke_token(prefix_or_id).await?;
    println!("revoked token {} ({}…)", info.id, info.prefix);
    Ok(())
}
