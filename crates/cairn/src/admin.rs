//! Administration straight on the stores (safe while servers run on them: SQLite WAL
//! serialises the writers, and one collector runs at a time): accounts and tokens, garbage
//! collection and the storage check.

use cairn_store::{Access, Accounts};
use std::sync::Arc;

use anyhow::{bail, Result};
use cairn_service::gc::{self, GcError};
use cairn_store::access::NewKey;
use cairn_store::model::Account;
use cairn_store::packs::Packs;
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
        .create_key(&NewKey::all(account.id), &token.hash, &token.prefix)
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

pub async fn list_accounts(store: &dyn Accounts, as_json: bool) -> Result<()> {
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
    store: &dyn Accounts,
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
        .create_key(&NewKey::all(account.id), &token.hash, &token.prefix)
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

pub async fn revoke_token(store: &dyn Access, prefix_or_id: &str) -> Result<()> {
    let info = store.revoke_token(prefix_or_id).await?;
    println!("revoked token {} ({}…)", info.id, info.prefix);
    Ok(())
}

/// `cairn gc`: one collection, run as this command.
pub async fn gc(
    store: Arc<dyn MetadataStore>,
    packs: Packs,
    dry_run: bool,
    as_json: bool,
) -> Result<bool> {
    let report = match gc::collect(store, packs, dry_run).await {
        Ok(report) => report,
        Err(e @ GcError::Busy) => bail!("{e}; try again later"),
        Err(e) => return Err(e.into()),
    };
    if as_json {
        println!("{}", serde_json::to_value(&report)?);
        return Ok(true);
    }
    let would = if dry_run { "would be " } else { "" };
    println!(
        "{} live roots, {} live blocks; {} dead blocks ({} bytes)",
        report.live_roots, report.live_blocks, report.dead_blocks, report.dead_bytes
    );
    println!(
        "packs {would}deleted: {}, {would}compacted: {} ({} live bytes copied)",
        report.packs_deleted, report.packs_compacted, report.bytes_copied
    );
    println!("bytes {would}reclaimed: {}", report.bytes_reclaimed);
    if report.missing_blocks > 0 {
        println!(
            "{} blocks of live DAGs are missing: run `cairn fsck`",
            report.missing_blocks
        );
    }
    Ok(true)
}

/// `cairn fsck [--deep]`: `false` (exit 1) when anything is wrong. Orphan packs are a note.
pub async fn fsck(
    store: Arc<dyn MetadataStore>,
    packs: Packs,
    deep: bool,
    as_json: bool,
) -> Result<bool> {
    let report = if deep {
        gc::fsck::check_deep(store, packs).await?
    } else {
        gc::fsck::check(store, packs).await?
    };
    if as_json {
        println!("{}", serde_json::to_value(&report)?);
    } else {
        for problem in &report.problems {
            println!("{problem}");
        }
        let orphans = report.orphan_packs.as_deref().unwrap_or_default();
        for orphan in orphans {
            println!(
                "note: pack {} ({} bytes) is named by no index entry (written after the \
                 database's copy, or being written now)",
                orphan.name, orphan.bytes
            );
        }
        let orphans = match &report.orphan_packs {
            Some(orphans) => format!(", {} orphan packs", orphans.len()),
            None => String::new(),
        };
        println!(
            "{} live roots, {} blocks checked, {} problems{orphans}",
            report.live_roots,
            report.blocks_checked,
            report.problems.len()
        );
    }
    Ok(report.problems.is_empty())
}
