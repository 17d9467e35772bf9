//! `cairn`: the service and its command line.
//!
//! - `serve` runs both hosts on the embedded store (`serve.rs`, `config.rs`);
//! - `account` and `token` administer the store directly (`admin.rs`);
//! - `key` manages an account's API keys over the API (`keys.rs`);
//! - `name` manages the account's IPNS names, and resolves any name with its record verified
//!   here (`names.rs`);
//! - `backup` and `restore` copy the embedded store while it serves, and put a copy back
//!   (`backup.rs`);
//! - `cid` and `car` work offline with the same engine the server uses (`local.rs`,
//!   `spill.rs`), so a CID computed here is the CID the service returns.
//!
//! Exit status: 0 success, 1 the operation failed, 2 usage error. Errors are one line on
//! stderr with the chain of causes.

mod admin;
mod backup;
mod client;
mod config;
mod follow;
mod get;
mod kept;
mod keys;
mod local;
mod local_car;
mod memory;
mod names;
mod serve;
mod spill;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use cairn_store::AccountLimits;
use cairn_store::MetadataStore;
use cairn_unixfs::{DiscardBlocks, Profile};
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cairn", version, about = "Content upload service for IPFS")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the upload host and the account host.
    Serve {
        /// TOML file with the same settings (data-dir, listen, account-listen, ...).
        #[arg(long, env = "CAIRN_CONFIG")]
        config: Option<PathBuf>,
        #[command(flatten)]
        // Boxed: the settings are most of the enum's size.
        settings: Box<config::Settings>,
    },
    /// Manage accounts.
    #[command(subcommand)]
    Account(AccountCommand),
    /// Manage API tokens (administration, on the store: every token can do everything).
    #[command(subcommand)]
    Token(TokenCommand),
    /// Manage the account's API keys, each limited to what it may do (over the API).
    #[command(subcommand)]
    Key(KeyCommand),
    /// IPNS names: stable `/ipns/` addresses the service signs, pointed at new content as it
    /// changes.
    #[command(subcommand)]
    Name(NameCommand),
    /// Print the root CID of a file or directory (like `ipfs add -r --only-hash`).
    Cid {
        path: PathBuf,
        #[arg(long, default_value = "unixfs-v1-2025", value_parser = parse_profile)]
        profile: Profile,
    },
    /// Upload files, directories and archives (POST within the account's limit, else TUS,
    /// resuming an interrupted upload when run again).
    Upload {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// For archives: extract (default) or preserve.
        #[arg(long)]
        archive_mode: Option<String>,
        /// Tag each upload with a key-value, to find it again (`--kv user=42`; repeatable).
        #[arg(long = "kv", value_parser = parse_keyvalue)]
        keyvalues: Vec<(String, String)>,
        /// Wait for each operation to finish and print its CID.
        #[arg(long)]
        wait: bool,
        #[arg(long)]
        json: bool,
        #[arg(long, default_value = "unixfs-v1-2025", value_parser = parse_profile)]
        profile: Profile,
        /// Bytes per TUS PATCH.
        #[arg(long, default_value_t = 8 << 20, hide = true)]
        chunk_size: usize,
        /// Then point this IPNS name (k51... or its label) at the upload (one path; waits
        /// for its CID).
        #[arg(long, value_name = "NAME")]
        publish: Option<String>,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
    /// Show an operation (by operation id or upload id).
    Status {
        id: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
    /// Fetch a CID as a verified CAR and unpack it (to ./CID, or -o PATH).
    Get {
        cid: String,
        #[arg(short, long)]
        output: Option<PathBuf>,
        #[arg(long)]
        json: bool,
        /// Most bytes of file content to write (the free space also binds) [default: 1 TiB].
        #[arg(long)]
        max_bytes: Option<u64>,
        /// Most files, directories and symlinks to write [default: 1000000].
        #[arg(long)]
        max_entries: Option<u64>,
        /// Fetch over Bitswap instead of the gateway: from the `--peer`s, or from the
        /// providers the service's delegated router names.
        #[arg(long)]
        p2p: bool,
        /// A peer to fetch from over Bitswap (a multiaddr with `/p2p/`); implies `--p2p`.
        #[arg(long = "peer")]
        peers: Vec<String>,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
    /// List the account's uploads, newest first.
    Uploads {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
    /// Delete uploads, by upload id or by root CID (every upload of it); their bytes no
    /// longer count against the quota.
    Rm {
        #[arg(required = true)]
        targets: Vec<String>,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
    /// Keep a CID that is on the IPFS network (the service fetches it over Bitswap).
    Pin {
        cid: String,
        #[arg(long)]
        name: Option<String>,
        /// A peer that has the content (a multiaddr with `/p2p/`), dialled first.
        #[arg(long = "origin")]
        origins: Vec<String>,
        /// Wait until it is pinned or has failed.
        #[arg(long)]
        wait: bool,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
    /// List everything the account keeps as pins (uploads included), newest first.
    Pins {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
    /// Remove a pin, by request id or by CID (every pin of it).
    Unpin {
        target: String,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
    /// Remove blocks no upload or pin keeps any more, and compact mostly dead packs (safe while
    /// servers run on the same store).
    Gc {
        /// Report what would be removed; change nothing.
        #[arg(long)]
        dry_run: bool,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        storage: StorageArgs,
    },
    /// Check that every live upload's and pin's DAG is whole and every stored block hashes to
    /// its CID (reads every stored byte); exit 1 with the list of problems otherwise.
    Fsck {
        /// Also check the pack store against the index: every pack it names is there and
        /// long enough, and packs it does not name are listed (after a restore).
        #[arg(long)]
        deep: bool,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        storage: StorageArgs,
    },
    /// Copy the embedded store to DEST while it serves: a consistent copy of the database,
    /// the packs it references, the node and names keys, and a manifest of checksums.
    /// `--verify DEST` checks a backup instead (exit 1, naming the first file that differs).
    Backup {
        dest: PathBuf,
        /// Check the backup DEST against its manifest; copy nothing.
        #[arg(long)]
        verify: bool,
        #[arg(long, env = "CAIRN_DATA_DIR", default_value = config::DEFAULT_DATA_DIR)]
        data_dir: PathBuf,
        /// The names key, as given to `cairn serve` [default: DATA_DIR/names.key].
        #[arg(long, env = "CAIRN_NAMES_KEY")]
        names_key: Option<PathBuf>,
        /// Refused: a database elsewhere is backed up with its own tools (README, "Backup and
        /// restore").
        #[arg(long, env = "CAIRN_DATABASE_URL", hide = true)]
        database_url: Option<String>,
        /// Refused: a bucket is backed up with its own tools (README, "Backup and restore").
        #[arg(long, env = "CAIRN_STORE", hide = true)]
        store: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Restore a backup made by `cairn backup` into a new or empty data directory, once it
    /// verifies against its manifest.
    Restore {
        src: PathBuf,
        #[arg(long, required = true)]
        data_dir: PathBuf,
    },
    /// List a directory CID (or CID/path).
    Ls {
        target: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
    /// What the account keeps, and what it uploaded and was served in a month.
    Usage {
        /// A calendar month, YYYY-MM [default: this one].
        #[arg(long)]
        period: Option<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
    /// Pack a file or directory into a CAR v1 file (root first, depth-first order).
    Car {
        path: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
        #[arg(long, default_value = "unixfs-v1-2025", value_parser = parse_profile)]
        profile: Profile,
    },
}

#[derive(Subcommand)]
enum AccountCommand {
    /// Create an account and its first token.
    Create {
        name: String,
        /// Largest single POST upload, in bytes [default: 104857600].
        #[arg(long)]
        upload_limit: Option<u64>,
        /// Stored-bytes quota [default: unlimited].
        #[arg(long)]
        quota: Option<u64>,
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        json: bool,
    },
    /// List accounts with their limits and stored bytes.
    List {
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        json: bool,
    },
    /// Change an account's upload limit or quota (`--quota none` removes it).
    Set {
        name: String,
        #[arg(long)]
        upload_limit: Option<u64>,
        #[arg(long)]
        quota: Option<String>,
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Create a key; prints its secret once.
    Create {
        /// What it may do: upload, read, delete, pins, keys, names, all (comma-separated).
        #[arg(long = "scope", required = true, value_delimiter = ',')]
        scopes: Vec<String>,
        /// How long it lives (`24h`, `30days`) [default: until revoked].
        #[arg(long)]
        expires: Option<humantime::Duration>,
        /// Uploads it may begin.
        #[arg(long)]
        max_uses: Option<u64>,
        /// A browser origin it may be used from (`https://app.example`); repeatable.
        #[arg(long = "origin")]
        origins: Vec<String>,
        /// The largest upload it may send, in bytes.
        #[arg(long)]
        max_upload_bytes: Option<u64>,
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
    /// List the account's keys (never their secrets).
    List {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
    /// Revoke a key by id: refused from then on, on every node.
    Revoke {
        id: String,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
}

#[derive(Subcommand)]
enum NameCommand {
    /// Make a name pointing at CID; prints it (k51..., which any gateway serves under
    /// `/ipns/`), its label, value, sequence and expiry.
    Create {
        cid: String,
        /// A label to use for the name in the other commands (letters, digits, `-_.`).
        #[arg(long = "name", value_name = "LABEL")]
        label: Option<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
    /// Point a name (k51... or its label) at CID: a new record, its sequence one higher.
    Publish {
        name: String,
        cid: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
    /// Print what a name points at (`/ipfs/...`), from its signed record, verified here:
    /// a record whose signature or validity fails is refused.
    Resolve {
        /// A name (k51...), or a label of the account's.
        name: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
    /// List the account's names: name, label, value, sequence, expiry.
    List {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
    /// Delete a name (k51... or its label): the service stops signing and republishing it.
    Delete {
        name: String,
        #[command(flatten)]
        connection: client::ConnectionArgs,
    },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Create a token for an account; prints it once.
    Create {
        #[arg(long)]
        account: String,
        #[command(flatten)]
        store: StoreArgs,
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by id or by its prefix.
    Revoke {
        token_prefix_or_id: String,
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// Which metadata store the admin commands act on.
#[derive(Args)]
struct StoreArgs {
    #[arg(long, env = "CAIRN_DATA_DIR", default_value = config::DEFAULT_DATA_DIR)]
    data_dir: PathBuf,
    /// `postgres://...` or `sqlite://PATH` [default: DATA_DIR/cairn.db].
    #[arg(long, env = "CAIRN_DATABASE_URL")]
    database_url: Option<String>,
}

impl StoreArgs {
    async fn open(&self) -> Result<Arc<dyn MetadataStore>> {
        serve::open_store(self.database_url.as_deref(), &self.data_dir).await
    }
}

/// The metadata store and the content store, for the admin commands that read content.
#[derive(Args)]
struct StorageArgs {
    #[command(flatten)]
    metadata: StoreArgs,
    /// Content store shared by several nodes (`s3://...`), as `cairn serve --store`
    /// [default: DATA_DIR].
    #[arg(long, env = "CAIRN_STORE")]
    store: Option<String>,
}

impl StorageArgs {
    async fn open(&self) -> Result<(Arc<dyn MetadataStore>, cairn_store::packs::Packs)> {
        let (packs, _, _) = serve::open_content(self.store.as_deref(), &self.metadata.data_dir)?;
        Ok((self.metadata.open().await?, packs))
    }
}

/// `key=value`, split at the first `=`.
fn parse_keyvalue(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("{text:?} is not key=value"))
}

fn parse_profile(name: &str) -> Result<Profile, String> {
    name.parse()
        .map_err(|e: cairn_unixfs::profile::UnknownProfile| e.to_string())
}

/// Exit status: 0 success, 1 the operation failed, 2 usage or connection error.
fn main() -> ExitCode {
    memory::keep_freed_memory_returnable();
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(err) => {
            eprintln!("error: {}", one_line(&err));
            let usage_or_connection = err.chain().any(|cause| {
                cause.is::<client::UsageError>()
                    || cause
                        .downcast_ref::<reqwest::Error>()
                        .is_some_and(|e| e.is_connect())
            });
            ExitCode::from(if usage_or_connection { 2 } else { 1 })
        }
    }
}

/// The error and its causes on one line, each cause once: libraries often repeat their source's
/// message in their own ("database: error returned from database: X: X").
fn one_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// Runs a command; `Ok(false)` when it ran but what it did failed (exit status 1).
fn run(command: Command) -> Result<bool> {
    match command {
        Command::Cid { path, profile } => {
            let root = local::import_path(&path, &profile, &mut DiscardBlocks)?;
            println!("{}", root.cid);
            Ok(true)
        }
        Command::Car {
            path,
            output,
            profile,
        } => {
            let root = local_car::write_car(&path, &output, &profile)?;
            eprintln!("wrote {}", output.display());
            println!("{root}");
            Ok(true)
        }
        Command::Backup {
            dest,
            verify: true,
            json,
            ..
        } => backup::verify(&dest, json),
        Command::Restore { src, data_dir } => backup::restore(&src, &data_dir).map(|()| true),
        command => runtime()?.block_on(run_async(command)),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

async fn run_async(command: Command) -> Result<bool> {
    match command {
        Command::Upload {
            paths,
            archive_mode,
            keyvalues,
            wait,
            json,
            profile,
            chunk_size,
            publish,
            connection,
        } => {
            let options = client::UploadOptions {
                archive_mode,
                keyvalues: keyvalues.into_iter().collect(),
                wait,
                json,
                profile,
                chunk_size,
                publish,
            };
            client::upload(&connection.connect()?, &paths, &options).await
        }
        Command::Status {
            id,
            json,
            connection,
        } => client::status(&connection.connect()?, &id, json).await,
        Command::Get {
            cid,
            output,
            json,
            max_bytes,
            max_entries,
            p2p,
            peers,
            connection,
        } => {
            let defaults = get::GetLimits::default();
            let limits = get::GetLimits {
                max_bytes: max_bytes.unwrap_or(defaults.max_bytes),
                max_entries: max_entries.unwrap_or(defaults.max_entries),
                ..defaults
            };
            let source = if p2p || !peers.is_empty() {
                let peers = peers
                    .iter()
                    .map(|p| {
                        p.parse()
                            .with_context(|| format!("--peer {p:?} is not a multiaddr"))
                    })
                    .collect::<Result<_>>()?;
                get::Source::Bitswap { peers }
            } else {
                get::Source::Gateway
            };
            let written = get::get(&connection.connect()?, &cid, output, limits, source).await?;
            if json {
                let path = written.display().to_string();
                println!("{}", serde_json::json!({"cid": cid, "path": path}));
            } else {
                println!("{}", written.display());
            }
            Ok(true)
        }
        Command::Key(KeyCommand::Create {
            scopes,
            expires,
            max_uses,
            origins,
            max_upload_bytes,
            name,
            json,
            connection,
        }) => {
            let request = keys::KeyRequest {
                name,
                scopes,
                expires: expires.map(Into::into),
                max_uses,
                origins,
                max_upload_bytes,
            };
            keys::create(&connection.connect()?, request, json)
                .await
                .map(|()| true)
        }
        Command::Key(KeyCommand::List { json, connection }) => {
            keys::list(&connection.connect()?, json)
                .await
                .map(|()| true)
        }
        Command::Key(KeyCommand::Revoke { id, connection }) => {
            keys::revoke(&connection.connect()?, &id)
                .await
                .map(|()| true)
        }
        Command::Name(NameCommand::Create {
            cid,
            label,
            json,
            connection,
        }) => names::create(&connection.connect()?, &cid, label, json)
            .await
            .map(|()| true),
        Command::Name(NameCommand::Publish {
            name,
            cid,
            json,
            connection,
        }) => names::publish(&connection.connect()?, &name, &cid, json)
            .await
            .map(|()| true),
        Command::Name(NameCommand::Resolve {
            name,
            json,
            connection,
        }) => names::resolve(&connection.connect()?, &name, json)
            .await
            .map(|()| true),
        Command::Name(NameCommand::List { json, connection }) => {
            names::list(&connection.connect()?, json)
                .await
                .map(|()| true)
        }
        Command::Name(NameCommand::Delete { name, connection }) => {
            names::delete(&connection.connect()?, &name)
                .await
                .map(|()| true)
        }
        Command::Uploads { json, connection } => kept::uploads(&connection.connect()?, json)
            .await
            .map(|()| true),
        Command::Rm {
            targets,
            connection,
        } => kept::rm(&connection.connect()?, &targets)
            .await
            .map(|()| true),
        Command::Pin {
            cid,
            name,
            origins,
            wait,
            json,
            connection,
        } => kept::pin(&connection.connect()?, &cid, name, origins, wait, json).await,
        Command::Pins { json, connection } => kept::pins(&connection.connect()?, json)
            .await
            .map(|()| true),
        Command::Unpin { target, connection } => kept::unpin(&connection.connect()?, &target)
            .await
            .map(|()| true),
        Command::Ls {
            target,
            json,
            connection,
        } => client::ls(&connection.connect()?, &target, json)
            .await
            .map(|()| true),
        Command::Usage {
            period,
            json,
            connection,
        } => client::usage(&connection.connect()?, period.as_deref(), json)
            .await
            .map(|()| true),
        Command::Serve { config, settings } => {
            init_logging();
            serve::run(config::ServeConfig::resolve(config.as_deref(), *settings)?).await?;
            Ok(true)
        }
        Command::Account(AccountCommand::Create {
            name,
            upload_limit,
            quota,
            store,
            json,
        }) => {
            let limits = AccountLimits {
                upload_limit: upload_limit.unwrap_or(AccountLimits::default().upload_limit),
                quota,
            };
            admin::create_account(store.open().await?.as_ref(), &name, limits, json).await?;
            Ok(true)
        }
        Command::Account(AccountCommand::List { store, json }) => {
            admin::list_accounts(store.open().await?.as_ref(), json).await?;
            Ok(true)
        }
        Command::Account(AccountCommand::Set {
            name,
            upload_limit,
            quota,
            store,
            json,
        }) => admin::set_limits(
            store.open().await?.as_ref(),
            &name,
            upload_limit,
            quota,
            json,
        )
        .await
        .map(|()| true),
        Command::Token(TokenCommand::Create {
            account,
            store,
            json,
        }) => admin::create_token(store.open().await?.as_ref(), &account, json)
            .await
            .map(|()| true),
        Command::Token(TokenCommand::Revoke {
            token_prefix_or_id,
            store,
        }) => admin::revoke_token(store.open().await?.as_ref(), &token_prefix_or_id)
            .await
            .map(|()| true),
        Command::Gc {
            dry_run,
            json,
            storage,
        } => {
            let (store, packs) = storage.open().await?;
            admin::gc(store, packs, dry_run, json).await
        }
        Command::Fsck {
            deep,
            json,
            storage,
        } => {
            let (store, packs) = storage.open().await?;
            admin::fsck(store, packs, deep, json).await
        }
        Command::Backup {
            dest,
            verify: false,
            data_dir,
            names_key,
            database_url,
            store,
            json,
        } => {
            if database_url.is_some() || store.is_some() {
                anyhow::bail!(
                    "cairn backup copies the embedded store (DATA_DIR); with a database URL \
                     or a bucket, follow the README's \"Backup and restore\""
                );
            }
            let source = backup::Source {
                data_dir,
                names_key,
            };
            backup::backup(&source, &dest, json).await.map(|()| true)
        }
        Command::Cid { .. }
        | Command::Car { .. }
        | Command::Backup { verify: true, .. }
        | Command::Restore { .. } => unreachable!("handled synchronously"),
    }
}

/// Structured logs on stderr; `RUST_LOG` filters, `CAIRN_LOG_FORMAT=json` for JSON lines.
fn init_logging() {
    // libp2p's own info lines are noise to a user, and Kademlia warns that it cannot
    // bootstrap whenever it knows no peer, which a node on loopback never does.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("info,libp2p=warn,libp2p_kad::behaviour=error")
    });
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    if std::env::var("CAIRN_LOG_FORMAT").as_deref() == Ok("json") {
        builder.json().init();
    } else {
        builder.init();
    }
}

#[cfg(test)]
mod one_line_tests {
    use super::one_line;

    #[derive(Debug)]
    struct Repeating(std::io::Error);

    impl std::fmt::Display for Repeating {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "database: {}", self.0)
        }
    }

    impl std::error::Error for Repeating {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn each_cause_is_said_once() {
        let err = anyhow::Error::new(Repeating(std::io::Error::other("no such database")))
            .context("connecting to PostgreSQL at db:5432/cairn");
        assert_eq!(
            one_line(&err),
            "connecting to PostgreSQL at db:5432/cairn: database: no such database"
        );
    }
}
