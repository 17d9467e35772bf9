//! Load and soak test for a running Cairn: many concurrent clients in a realistic mix, then a
//! check that every upload the server acknowledged is there.
//!
//! - `small_posts.rs`: only small uploads, to Cairn or Kubo (`scripts/bench-small-uploads`).
//! - `client.rs`: one simulated user's loop (small POSTs, TUS uploads in chunks, tar archives,
//!   gateway reads with `Range`, listings, polling) and what it keeps of each acknowledged
//!   upload (a seed, never the bytes).
//! - `request.rs`: one request as a well-behaved client sends it: timed to the end of its body,
//!   a `429` waited out as `Retry-After` says, anything else unexpected an error by status and
//!   JSON code.
//! - `verify.rs`: after the run, operations polled until done, every upload read back through
//!   the gateway byte for byte and looked for in its account's listing.
//! - `events.rs` (`--events`, issue 35): a webhook receiver registered for every account and
//!   one `/api/events` stream per client through the run, then every finished upload looked
//!   for in what they got; and the server's memory per idle stream (`--idle-subscribers`).
//! - `content.rs`: the bytes, from seeds; tars. `tally.rs`: counting. `report.rs`: printing.
//!
//! Rate limits: the server limits each account (120 uploads and 1200 operation reads a minute
//! by default). A client over its account's limit gets `429` with `Retry-After`, and a real
//! user's client is expected to wait that long and try again: that is what the header is for,
//! and the server did what it promised. So `429`s are waited out and counted apart, never as
//! errors (one without `Retry-After` is an error). To load the server rather than its limiter,
//! give each client its own account (`Config::tokens`, shared out round-robin), as many real
//! users would be.

mod client;
mod content;
mod events;
mod report;
mod request;
pub mod small_posts;
mod tally;
mod verify;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

pub use events::{Follow, EVENT_TYPES};
pub use report::{
    Acknowledged, EventsReport, IdleReport, KindStats, Report, ServerMemory, StreamFigures,
    WebhookFigures,
};
pub use tally::{ErrorKey, ErrorSample, Kind};

use client::{Client, Content, Route, Target};
use report::memory;
use request::{Phase, Progress};
use tally::Tally;

/// What to run against, and for how long.
#[derive(Clone, Debug)]
pub struct Config {
    /// The upload host, e.g. `http://127.0.0.1:8080`.
    pub url: String,
    /// The account host, e.g. `http://127.0.0.1:8081`.
    pub account_url: String,
    /// API tokens; client `i` uses `tokens[i % tokens.len()]`.
    pub tokens: Vec<String>,
    pub clients: usize,
    /// How long clients start new steps; each finishes the step under way.
    pub duration: Duration,
    /// After the run, unfinished operations are polled until done; if none finishes for this
    /// long, those left are lost.
    pub stall: Duration,
    /// The longest any one request may take (a hang is an error, not a stuck run).
    pub request_timeout: Duration,
    /// The server's process, for its peak memory.
    pub server_pid: Option<u32>,
    /// Print a progress line to stderr every 10 s.
    pub progress: bool,
    /// Before the clients start, register a webhook receiver for every account and open one
    /// `/api/events` stream per client (or only one of the two); after the check, report what
    /// they got (issue 35).
    pub events: Option<Follow>,
}

impl Config {
    /// The defaults of `scripts/load`: 200 clients for 60 s.
    pub fn new(url: &str, account_url: &str, tokens: Vec<String>) -> Self {
        Self {
            url: url.trim_end_matches('/').to_owned(),
            account_url: account_url.trim_end_matches('/').to_owned(),
            tokens,
            clients: 200,
            duration: Duration::from_secs(60),
            stall: Duration::from_secs(120),
            request_timeout: Duration::from_secs(60),
            server_pid: None,
            progress: false,
            events: None,
        }
    }
}

/// Run the load, check what it acknowledged, and report. Never fails: whatever goes wrong is
/// counted in the report.
pub async fn run(config: Config) -> Report {
    let peak_before = config.server_pid.and_then(|pid| memory(pid, "VmHWM"));
    let target = Arc::new(Target {
        url: config.url.trim_end_matches('/').to_owned(),
        account_url: config.account_url.trim_end_matches('/').to_owned(),
        tokens: config.tokens.clone(),
    });
    let http = |config: &Config| request::http_client(config.request_timeout);
    // Set up before the clock starts: every stream open before the first upload, so each
    // upload's event has a reader.
    let watch = match config.events {
        Some(follow) => {
            let http = http(&config);
            let watch = events::Watch::start(&http, &target, config.clients, follow).await;
            if config.progress {
                eprintln!("events: webhooks registered, streams open; starting the clients");
            }
            Some(watch)
        }
        None => None,
    };
    let started = Instant::now();
    let deadline = started + config.duration;
    let progress = Arc::new(Progress::default());
    let phase = Phase {
        started,
        no_waits_after: deadline,
        progress: progress.clone(),
    };
    let seeds = Arc::new(content::Seeds::new());

    let mut clients = JoinSet::new();
    for index in 0..config.clients {
        let client = Client::new(
            http(&config),
            target.clone(),
            index,
            seeds.clone(),
            phase.clone(),
        );
        clients.spawn(client.run(deadline));
    }
    let ticker = config
        .progress
        .then(|| progress.print_every_10s(started, String::new()));

    let mut tally = Tally::default();
    let mut uploads = Vec::new();
    while let Some(joined) = clients.join_next().await {
        match joined {
            Ok(result) => {
                tally.merge(result.tally);
                uploads.extend(result.uploads);
            }
            Err(e) => phase.error(&mut tally, Kind::Post, 0, "panic", format!("a client: {e}")),
        }
    }
    let ran = started.elapsed();
    if let Some(ticker) = ticker {
        ticker.abort();
    }
    if config.progress {
        eprintln!(
            "{:>4.0} s: run over; checking {} acknowledged uploads",
            ran.as_secs_f64(),
            uploads.len()
        );
    }

    let acknowledged = acknowledged(&uploads);
    let checking = Instant::now();
    let checked = verify::check(http(&config), target, uploads, config.stall, started).await;
    let checked_in = checking.elapsed();
    tally.merge(checked.tally);
    let events = match watch {
        Some(watch) => {
            if config.progress {
                eprintln!("events: waiting for the last ones");
            }
            Some(watch.finish(&checked.finished, &mut tally).await)
        }
        None => None,
    };

    let mut kinds: Vec<KindStats> = Kind::ALL
        .iter()
        .filter_map(|&kind| {
            let (counted, over) = match kind {
                Kind::Verify => (checked.reads.kinds.get(&kind).cloned(), checked.read_in),
                // Also done while draining.
                Kind::Poll | Kind::AckToCid => {
                    (tally.kinds.remove(&kind), ran + checked.drained_in)
                }
                _ => (tally.kinds.remove(&kind), ran),
            };
            counted.map(|counted| KindStats::new(kind, counted, over))
        })
        .collect();
    kinds.retain(|k| k.count > 0 || k.rate_limited > 0);
    let mut error_samples: Vec<ErrorSample> = tally.errors.values().cloned().collect();
    error_samples.sort_by(|a, b| a.first_at.total_cmp(&b.first_at));
    let server = config.server_pid.and_then(|pid| {
        Some(ServerMemory {
            pid,
            peak_before: peak_before?,
            peak: memory(pid, "VmHWM")?,
            resident_after: memory(pid, "VmRSS")?,
        })
    });
    Report {
        url: config.url.clone(),
        clients: config.clients,
        accounts: config.tokens.len().min(config.clients),
        ran,
        checked_in,
        rate_limited: kinds.iter().map(|k| k.rate_limited).sum(),
        kinds,
        acknowledged,
        drained: checked.drained,
        drained_in: checked.drained_in,
        files_read: checked.files_read,
        errors: tally.error_count(),
        error_samples,
        lost: checked.lost.len() as u64,
        lost_samples: report::shown_losses(checked.lost.values()),
        server,
        events,
    }
}

/// `--idle-subscribers`: the server's memory per idle `/api/events` stream; see
/// [`IdleReport`]. Two rounds of `per_round` streams, each read `wait` after it opened.
pub async fn idle_subscribers(
    url: &str,
    tokens: &[String],
    pid: u32,
    per_round: usize,
    wait: Duration,
) -> IdleReport {
    events::idle_subscribers(url, tokens, pid, per_round, 2, wait).await
}

fn acknowledged(uploads: &[client::Upload]) -> Acknowledged {
    let mut a = Acknowledged::default();
    for upload in uploads {
        match upload.route {
            Route::Post => a.posts += 1,
            Route::Tus => a.tus += 1,
            Route::Archive => a.archives += 1,
        }
        match &upload.content {
            Content::File { len, .. } => a.bytes += *len as u64,
            Content::Tree(files) => {
                a.archive_files += files.len() as u64;
                a.bytes += files.iter().map(|f| f.len as u64).sum::<u64>();
            }
        }
    }
    a
}
