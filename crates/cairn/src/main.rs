//! `cairn`: the service and its command line.
//!
//! - `serve` runs both hosts on the embedded store (`serve.rs`, `config.rs`);
//! - `account` and `token` administer the store directly (`admin.rs`);
//! - `cid` and `car` work offline with the same engine the server uses (`local.rs`,
//!   `spill.rs`), so a CID computed here is the CID the service returns.
//!
//! Exit status: 0 success, 1 the operation failed, 2 usage error. Errors are one line on
//! stderr with the chain of causes.

mod admin;
mod config;
mod local;
mod serve;
mod spill;

use std::fs;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use cairn_car::{export_dfs, CarWriter};
use cairn_store::sqlite::SqliteStore;
use cairn_store::AccountLimits;
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
        settings: config::Settings,
    },
    /// Manage accounts.
    #[command(subcommand)]
    Account(AccountCommand),
    /// Manage API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Print the root CID of a file or directory (like `ipfs add -r --only-hash`).
    Cid {
        path: PathBuf,
        #[arg(long, default_value = "unixfs-v1-2025", value_parser = parse_profile)]
        profile: Profile,
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
    /// `sqlite://PATH` (PostgreSQL is not supported yet).
    #[arg(long, env = "CAIRN_DATABASE_URL")]
    database_url: Option<String>,
}

impl StoreArgs {
    async fn open(&self) -> Result<SqliteStore> {
        match &self.database_url {
            None => serve::open_store(&self.data_dir).await,
            Some(url) => match url.strip_prefix("sqlite://") {
                Some(path) => Ok(SqliteStore::open(Path::new(path)).await?),
                None => bail!("unsupported --database-url {url:?}: only sqlite:// is supported"),
            },
        }
    }
}

fn parse_profile(name: &str) -> Result<Profile, String> {
    name.parse()
        .map_err(|e: cairn_unixfs::profile::UnknownProfile| e.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(1)
        }
    }
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Cid { path, profile } => {
            let root = local::import_path(&path, &profile, &mut DiscardBlocks)?;
            println!("{}", root.cid);
            Ok(())
        }
        Command::Car {
            path,
            output,
            profile,
        } => {
            let root = write_car(&path, &output, &profile)?;
            println!("{root}");
            Ok(())
        }
        command => runtime()?.block_on(run_async(command)),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

async fn run_async(command: Command) -> Result<()> {
    match command {
        Command::Serve { config, settings } => {
            init_logging();
            serve::run(config::ServeConfig::resolve(config.as_deref(), settings)?).await
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
            admin::create_account(&store.open().await?, &name, limits, json).await
        }
        Command::Account(AccountCommand::List { store, json }) => {
            admin::list_accounts(&store.open().await?, json).await
        }
        Command::Account(AccountCommand::Set {
            name,
            upload_limit,
            quota,
            store,
            json,
        }) => admin::set_limits(&store.open().await?, &name, upload_limit, quota, json).await,
        Command::Token(TokenCommand::Create {
            account,
            store,
            json,
        }) => admin::create_token(&store.open().await?, &account, json).await,
        Command::Token(TokenCommand::Revoke {
            token_prefix_or_id,
            store,
        }) => admin::revoke_token(&store.open().await?, &token_prefix_or_id).await,
        Command::Cid { .. } | Command::Car { .. } => unreachable!("handled synchronously"),
    }
}

/// Structured logs on stderr; `RUST_LOG` filters, `CAIRN_LOG_FORMAT=json` for JSON lines.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
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

/// Import `path` into a spill store, then write the CAR next to `output` and rename it into
/// place, so a failed run never leaves a partial CAR under the requested name.
fn write_car(path: &Path, output: &Path, profile: &Profile) -> Result<cairn_unixfs::Cid> {
    let mut spill = spill::SpillStore::new().context("creating a temporary file")?;
    let root = local::import_path(path, profile, &mut spill)?.cid;
    let dir = match output.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let temp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a file in {}", dir.display()))?;
    let mut car = CarWriter::new(BufWriter::new(temp), &[root])?;
    export_dfs(&root, &mut spill, &mut car)?;
    let temp = car
        .into_inner()
        .into_inner()
        .map_err(|e| e.into_error())
        .context("writing the CAR")?;
    temp.as_file().sync_all().context("writing the CAR")?;
    temp.persist(output)
        .with_context(|| format!("writing {}", output.display()))?;
    if let Ok(meta) = fs::metadata(output) {
        eprintln!("wrote {} ({} bytes)", output.display(), meta.len());
    }
    Ok(root)
}
