//! `cairn serve`: both hosts on their listeners, with the embedded store.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use cairn_server::{account_app, listen, upload_app, AppState, ServerConfig};
use cairn_store::packs::Packs;
use cairn_store::postgres::PostgresStore;
use cairn_store::s3::{S3Blobs, S3TusBytes};
use cairn_store::sqlite::SqliteStore;
use cairn_store::staging::Staging;
use cairn_store::tus_bytes::{FileTusBytes, TusBytes};
use cairn_store::{tokens, AccountLimits, MetadataStore};
use tokio::net::TcpListener;

use crate::config::ServeConfig;

/// The metadata store: `database_url` (`postgres://...`, `sqlite://PATH`), or else the
/// embedded SQLite database in `data_dir`.
pub async fn open_store(
    database_url: Option<&str>,
    data_dir: &Path,
) -> Result<Arc<dyn MetadataStore>> {
    let Some(url) = database_url else {
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("data directory {} is not writable", data_dir.display()))?;
        let store = SqliteStore::open(&data_dir.join("cairn.db"))
            .await
            .with_context(|| format!("opening the database in {}", data_dir.display()))?;
        return Ok(Arc::new(store));
    };
    if let Some(path) = url.strip_prefix("sqlite://") {
        let store = SqliteStore::open(Path::new(path))
            .await
            .with_context(|| format!("opening the database {path}"))?;
        return Ok(Arc::new(store));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        // The URL may carry a password: name only the host in errors.
        let host = url.rsplit('@').next().unwrap_or_default();
        let store = PostgresStore::open(url)
            .await
            .with_context(|| format!("connecting to PostgreSQL at {host}"))?;
        return Ok(Arc::new(store));
    }
    bail!("unsupported database URL {url:?}: use postgres://... or sqlite://PATH")
}

pub async fn run(config: ServeConfig) -> Result<()> {
    let store = open_store(config.database_url.as_deref(), &config.data_dir).await?;
    let writable = || {
        format!(
            "data directory {} is not writable",
            config.data_dir.display()
        )
    };
    let mut server_config = ServerConfig {
        default_profile: config.profile.clone(),
        worker_lease: config.worker_lease,
        trust_forwarded_headers: config.trust_forwarded_headers,
        shared_store: config.store.is_some(),
        ..ServerConfig::default()
    };
    server_config.rate_limits.upload.quota = config.uploads_per_minute;
    let (packs, staging, tus_bytes): (_, _, Arc<dyn TusBytes>) = match &config.store {
        Some(url) => {
            let named = || format!("content store {}", url.split('?').next().unwrap_or(url));
            let blobs = |sub: &str| -> Result<Arc<S3Blobs>> {
                Ok(Arc::new(S3Blobs::open(url, sub).with_context(named)?))
            };
            let tus_bytes = S3TusBytes::open(url).with_context(named)?;
            (
                Packs::new(blobs("packs")?),
                Staging::new(blobs("staging")?),
                Arc::new(tus_bytes),
            )
        }
        None => (
            Packs::open(config.data_dir.join("packs")).with_context(writable)?,
            Staging::open(config.data_dir.join("staging")).with_context(writable)?,
            Arc::new(FileTusBytes::open(config.data_dir.join("tus")).with_context(writable)?),
        ),
    };
    if config.store.is_none() {
        // Packs written by uploads that never committed (a crash between fsync and commit).
        // Never on a shared store: another node's pack between its write and its commit looks
        // exactly like that (an S3 lifecycle rule cleans up there instead; see README).
        let referenced: HashSet<String> = store.pack_names().await?.into_iter().collect();
        let swept = packs
            .sweep(&referenced)
            .context("sweeping unreferenced packs")?;
        if swept > 0 {
            tracing::info!(swept, "removed packs left by interrupted uploads");
        }
    }
    let first_token = create_default_account(store.as_ref()).await?;

    let upload_listener = bind(config.listen).await?;
    let account_listener = bind(config.account_listen).await?;
    let state = AppState::new(store, packs, staging, tus_bytes, server_config);
    println!(
        "upload host listening on http://{}",
        upload_listener.local_addr()?
    );
    println!(
        "account host listening on http://{}",
        account_listener.local_addr()?
    );
    let data_dir = config.data_dir.display();
    match first_token {
        Some(token) => println!(
            "created account \"default\"; its API token (shown only this once):\n  {token}"
        ),
        None => println!(
            "get an API token with: cairn token create --account default --data-dir {data_dir}"
        ),
    }

    // One signal stops both hosts.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop_tx.send(true);
    });
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let workers = cairn_server::worker::spawn(state.clone(), config.workers, stop_rx.clone());
    tokio::spawn(sweep_expired_uploads(state.clone(), stop_rx.clone()));
    let header_timeout = state.config.header_timeout;
    let upload = listen::serve(
        upload_listener,
        upload_app(state.clone()),
        header_timeout,
        stopped(stop_rx.clone()),
    );
    let account = listen::serve(
        account_listener,
        account_app(state),
        header_timeout,
        stopped(stop_rx),
    );
    // In-flight requests finish before each server returns.
    let (upload, account) = tokio::join!(upload, account);
    upload.context("upload host")?;
    account.context("account host")?;
    // Workers stop at a safe point; an abandoned extraction resumes on the next start.
    for worker in workers {
        let _ = worker.await;
    }
    println!("stopped");
    Ok(())
}

/// Reclaim incomplete TUS uploads past their expiry, once a minute.
async fn sweep_expired_uploads(state: AppState, mut stop: tokio::sync::watch::Receiver<bool>) {
    loop {
        match cairn_server::tus::sweep_expired(&state).await {
            Ok(0) => {}
            Ok(swept) => tracing::info!(swept, "expired TUS uploads reclaimed"),
            Err(e) => tracing::warn!(error = %e, "sweeping expired TUS uploads failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_secs(60)) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

async fn bind(addr: std::net::SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))
}

/// On the very first start, an account to use right away.
async fn create_default_account(store: &dyn MetadataStore) -> Result<Option<String>> {
    if !store.list_accounts().await?.is_empty() {
        return Ok(None);
    }
    let account = match store
        .create_account("default", AccountLimits::default())
        .await
    {
        Ok(account) => account,
        // Another node starting at the same moment created it first.
        Err(cairn_store::StoreError::Conflict(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let token = tokens::generate();
    store
        .add_token(account.id, &token.hash, &token.prefix)
        .await?;
    Ok(Some(token.secret))
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = interrupt => {}
        _ = terminate => {}
    }
    tracing::info!("shutting down: finishing in-flight requests");
}
