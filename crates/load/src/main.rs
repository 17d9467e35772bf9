//! `cairn-load`: the command line of the load test (`scripts/load`); see the library's docs.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use cairn_load::small_posts::{self, Target};
use clap::Parser;

/// Load a running Cairn with concurrent clients in a realistic mix, then check that every
/// acknowledged upload reads back byte for byte. Ends with `N errors, N lost`; exits 1 unless
/// both are 0.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// How long the clients run.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// How many clients run at once.
    #[arg(long, default_value_t = 200)]
    clients: usize,
    /// Upload host.
    #[arg(long, env = "CAIRN_URL", default_value = "http://127.0.0.1:8080")]
    url: String,
    /// Account host.
    #[arg(
        long,
        env = "CAIRN_ACCOUNT_URL",
        default_value = "http://127.0.0.1:8081"
    )]
    account_url: String,
    /// API token; give it several times (or a comma-separated CAIRN_TOKEN) and the clients
    /// share the tokens out, one account per client when there are enough.
    #[arg(
        long = "token",
        env = "CAIRN_TOKEN",
        hide_env_values = true,
        value_delimiter = ','
    )]
    tokens: Vec<String>,
    /// A file of tokens, one a line (added to --token).
    #[arg(long)]
    tokens_file: Option<PathBuf>,
    /// The server's process id: its peak memory (VmHWM) is reported.
    #[arg(long)]
    pid: Option<u32>,
    /// After the run, unfinished operations are waited for; if none finishes for this long,
    /// those left count as lost.
    #[arg(long, default_value_t = 120)]
    stall_seconds: u64,
    /// The longest one request may take before it counts as an error.
    #[arg(long, default_value_t = 60)]
    timeout_seconds: u64,
    /// Also follow events (issue 35): a webhook receiver on loopback registered for every
    /// account (all event types; the server needs `--webhook-allow-private true`) and one
    /// `/api/events` stream per client through the run; every finished upload must come once
    /// on its account's stream and at least once to the receiver, or it is an error.
    /// `--events streams` or `--events webhooks` follows one side alone.
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "both", value_name = "WHICH")]
    events: Option<Events>,
    /// Instead of the load: open N idle `/api/events` streams, twice, and report the server's
    /// VmRSS growth per stream (needs --pid).
    #[arg(long, value_name = "N")]
    idle_subscribers: Option<usize>,
    /// With --idle-subscribers: how long to wait after opening streams before reading VmRSS.
    #[arg(long, default_value_t = 5)]
    idle_seconds: u64,
    /// Instead of the load: only small uploads (2 KiB to 400 KiB, fresh bytes each), to Cairn
    /// (`--url`, tokens) or to Kubo's RPC API (`--kubo-url`), for --seconds (issue 52;
    /// `scripts/bench-small-uploads` alternates the two). Exits 1 on any error.
    #[arg(long, value_enum, value_name = "TARGET")]
    small_posts: Option<SmallPosts>,
    /// With --small-posts kubo: Kubo's RPC API.
    #[arg(long, default_value = "http://127.0.0.1:5001")]
    kubo_url: String,
    /// With --small-posts: print the report as one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum SmallPosts {
    Cairn,
    Kubo,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Events {
    Both,
    Streams,
    Webhooks,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> Result<bool> {
    let mut tokens: Vec<String> = args.tokens.into_iter().filter(|t| !t.is_empty()).collect();
    if let Some(path) = &args.tokens_file {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        tokens.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned),
        );
    }
    anyhow::ensure!(args.clients > 0, "--clients must be at least 1");
    let needs_tokens = !matches!(args.small_posts, Some(SmallPosts::Kubo));
    anyhow::ensure!(
        !needs_tokens || !tokens.is_empty(),
        "no API token: pass --token, set CAIRN_TOKEN, or give --tokens-file"
    );
    let runtime = tokio::runtime::Runtime::new().context("starting the runtime")?;
    if let Some(small_posts) = args.small_posts {
        let target = match small_posts {
            SmallPosts::Cairn => Target::Cairn {
                url: args.url,
                tokens,
            },
            SmallPosts::Kubo => Target::KuboRpc { url: args.kubo_url },
        };
        let mut config = small_posts::Config::new(target);
        config.clients = args.clients;
        config.duration = Duration::from_secs(args.seconds);
        config.request_timeout = Duration::from_secs(args.timeout_seconds);
        config.server_pid = args.pid;
        config.progress = !args.json;
        let report = runtime.block_on(small_posts::run(config));
        if args.json {
            println!("{}", report.json());
        } else {
            println!("{report}");
        }
        return Ok(report.errors == 0);
    }
    if let Some(n) = args.idle_subscribers {
        let pid = args
            .pid
            .context("--idle-subscribers reads the server's memory: give --pid")?;
        anyhow::ensure!(n > 0, "--idle-subscribers must be at least 1");
        let wait = Duration::from_secs(args.idle_seconds);
        let report = runtime.block_on(cairn_load::idle_subscribers(
            &args.url, &tokens, pid, n, wait,
        ));
        println!("{report}");
        return Ok(report.failed == 0);
    }
    let mut config = cairn_load::Config::new(&args.url, &args.account_url, tokens);
    config.clients = args.clients;
    config.duration = Duration::from_secs(args.seconds);
    config.stall = Duration::from_secs(args.stall_seconds);
    config.request_timeout = Duration::from_secs(args.timeout_seconds);
    config.server_pid = args.pid;
    config.progress = true;
    config.events = args.events.map(|events| match events {
        Events::Both => cairn_load::Follow::Both,
        Events::Streams => cairn_load::Follow::Streams,
        Events::Webhooks => cairn_load::Follow::Webhooks,
    });
    let report = runtime.block_on(cairn_load::run(config));
    println!("{report}");
    Ok(report.passed())
}
