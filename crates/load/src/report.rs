//! The figures of a run, and how they are printed: a table per request kind, what was
//! acknowledged and read back, the server's memory, what the event streams and the webhook
//! receiver got (`--events`), the first distinct errors and losses, and the closing
//! `N errors, N lost` line. Also the idle subscribers' memory (`--idle-subscribers`).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::tally::{percentile, ErrorSample, Kind, KindTally};

/// Throughput and latency of one kind of request.
#[derive(Clone, Debug)]
pub struct KindStats {
    pub kind: Kind,
    /// Requests answered as expected.
    pub count: u64,
    pub per_second: f64,
    /// Body bytes both ways, in MB (10^6) per second.
    pub mb_per_second: f64,
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
    /// `429`s waited out (`Retry-After`) and sent again; not errors.
    pub rate_limited: u64,
    pub rate_limited_wait: Duration,
}

impl KindStats {
    pub fn new(kind: Kind, mut tally: KindTally, over: Duration) -> Self {
        tally.micros.sort_unstable();
        let at = |p| Duration::from_micros(percentile(&tally.micros, p).unwrap_or(0).into());
        let seconds = over.as_secs_f64().max(1e-3);
        Self {
            kind,
            count: tally.micros.len() as u64,
            per_second: tally.micros.len() as f64 / seconds,
            mb_per_second: tally.bytes as f64 / 1e6 / seconds,
            p50: at(50.0),
            p99: at(99.0),
            max: at(100.0),
            rate_limited: tally.rate_limited,
            rate_limited_wait: tally.rate_limited_wait,
        }
    }
}

/// What the server acknowledged during the run.
#[derive(Clone, Debug, Default)]
pub struct Acknowledged {
    pub posts: u64,
    pub tus: u64,
    pub archives: u64,
    pub archive_files: u64,
    pub bytes: u64,
}

/// The server's memory, from `/proc/PID/status`.
#[derive(Clone, Debug)]
pub struct ServerMemory {
    pub pid: u32,
    /// `VmHWM` before the run: the peak resident set of the process's life until then.
    pub peak_before: u64,
    /// `VmHWM` after the run and the check.
    pub peak: u64,
    /// `VmRSS` after the run and the check.
    pub resident_after: u64,
}

#[derive(Clone, Debug)]
pub struct Report {
    pub url: String,
    pub clients: usize,
    /// Distinct tokens the clients shared out.
    pub accounts: usize,
    /// From the start until the last client finished its last step.
    pub ran: Duration,
    /// The drain and the read-back after the run.
    pub checked_in: Duration,
    pub kinds: Vec<KindStats>,
    pub acknowledged: Acknowledged,
    /// Uploads whose operation was still unfinished when the run ended, and how long after it
    /// the last of them finished.
    pub drained: u64,
    pub drained_in: Duration,
    pub files_read: u64,
    pub errors: u64,
    /// Each distinct error (kind, status, code), earliest first.
    pub error_samples: Vec<ErrorSample>,
    /// Acknowledged uploads not readable byte for byte, or not listed as kept.
    pub lost: u64,
    pub lost_samples: Vec<String>,
    pub rate_limited: u64,
    pub server: Option<ServerMemory>,
    /// With `--events`: what the subscribers and the webhook receiver got.
    pub events: Option<EventsReport>,
}

/// What the account streams and the webhook receiver got during a run (`--events`), against
/// the uploads the clients saw finish (completed, or failed).
#[derive(Clone, Debug, Default)]
pub struct EventsReport {
    /// What was followed: the streams, the webhooks, or both (`--events`).
    pub followed_streams: bool,
    pub followed_webhooks: bool,
    /// Webhook endpoints registered: one per account, all pointing at the one receiver.
    pub webhooks: u64,
    /// `/api/events` streams: one per client.
    pub subscribers: u64,
    /// Streams open (headers answered) when the clients started.
    pub connected: u64,
    /// Registering the webhooks and opening the streams, before the clients started.
    pub setup: Duration,
    /// Uploads the clients saw finish, each of which must be on its account's stream(s) once
    /// and at the receiver at least once.
    pub finished_uploads: u64,
    pub streams: StreamFigures,
    pub webhook: WebhookFigures,
    /// After the check, how long the last expected event took to come (or the wait gave up).
    pub settled_in: Duration,
}

/// The subscribers' side, summed over every stream.
#[derive(Clone, Debug, Default)]
pub struct StreamFigures {
    /// Every event read, by type.
    pub by_type: BTreeMap<String, u64>,
    /// For each stream, its account's finished uploads: summed.
    pub expected: u64,
    /// Expected events read exactly once on a stream.
    pub seen_once: u64,
    /// Expected events a stream never sent (errors).
    pub missing: u64,
    /// Expected events a stream sent more than once (errors).
    pub repeated: u64,
    /// Events of uploads no client saw finish (an upload whose answer was lost, a deletion).
    pub other: u64,
    /// Streams that ended and were opened again with `Last-Event-ID`.
    pub reconnects: u64,
    /// Of those, ended by the server's `dropped` event (the reader fell behind).
    pub dropped: u64,
}

/// The webhook receiver's side.
#[derive(Clone, Debug, Default)]
pub struct WebhookFigures {
    /// Requests received (each attempt of each delivery), by event type.
    pub by_type: BTreeMap<String, u64>,
    /// Distinct `webhook-id`s among them.
    pub distinct: u64,
    /// Finished uploads delivered at least once.
    pub delivered: u64,
    /// Finished uploads never delivered (errors).
    pub missing: u64,
    /// Finished uploads delivered more than once (allowed: at least once).
    pub repeated: u64,
    /// Deliveries of uploads no client saw finish.
    pub other: u64,
    /// Requests not as Standard Webhooks says (no signature headers, not a JSON event):
    /// answered 400, counted as errors.
    pub refused: u64,
}

/// The server's resident memory as idle `/api/events` streams are opened
/// (`--idle-subscribers`).
#[derive(Clone, Debug, Default)]
pub struct IdleReport {
    pub pid: u32,
    /// Streams opened in each round.
    pub per_round: usize,
    /// How long each round waited, once its streams were open, before reading `VmRSS`.
    pub waited: Duration,
    /// `VmRSS` before the first round.
    pub before: u64,
    /// `VmRSS` after each round (all the streams of the earlier rounds still open).
    pub after_rounds: Vec<u64>,
    /// `VmRSS` once every stream was closed again (and the wait).
    pub closed: u64,
    /// `VmHWM` at the end.
    pub peak: u64,
    /// Streams that did not open (errors).
    pub failed: u64,
}

impl IdleReport {
    /// `VmRSS` growth per stream in round `i`, in bytes.
    pub fn per_subscriber(&self, i: usize) -> Option<f64> {
        let after = *self.after_rounds.get(i)?;
        let before = if i == 0 {
            self.before
        } else {
            self.after_rounds[i - 1]
        };
        Some((after as f64 - before as f64) / self.per_round.max(1) as f64)
    }
}

/// A `kB` field of `/proc/PID/status` (`VmHWM`, `VmRSS`), in bytes.
pub(crate) fn memory(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

impl Report {
    pub fn kind(&self, kind: Kind) -> Option<&KindStats> {
        self.kinds.iter().find(|k| k.kind == kind)
    }

    /// No error and nothing lost.
    pub fn passed(&self) -> bool {
        self.errors == 0 && self.lost == 0
    }
}

const SHOWN: usize = 8;

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} clients ({} accounts) against {} for {:.1} s, checked in {:.1} s",
            self.clients,
            self.accounts,
            self.url,
            self.ran.as_secs_f64(),
            self.checked_in.as_secs_f64()
        )?;
        writeln!(
            f,
            "{:<16} {:>8} {:>9} {:>8} {:>9} {:>9} {:>9} {:>7}",
            "kind", "count", "per s", "MB/s", "p50 ms", "p99 ms", "max ms", "429s"
        )?;
        for k in &self.kinds {
            writeln!(
                f,
                "{:<16} {:>8} {:>9.1} {:>8.2} {:>9.1} {:>9.1} {:>9.1} {:>7}",
                k.kind.name(),
                k.count,
                k.per_second,
                k.mb_per_second,
                ms(k.p50),
                ms(k.p99),
                ms(k.max),
                k.rate_limited
            )?;
        }
        let a = &self.acknowledged;
        writeln!(
            f,
            "acknowledged: {} POSTs, {} TUS uploads, {} archives ({} files), {:.1} MB; \
             {} still processing when the run ended, done {:.1} s later; read back: {} files",
            a.posts,
            a.tus,
            a.archives,
            a.archive_files,
            a.bytes as f64 / 1e6,
            self.drained,
            self.drained_in.as_secs_f64(),
            self.files_read
        )?;
        if self.rate_limited > 0 {
            writeln!(
                f,
                "rate limited: {} requests answered 429, waited out as Retry-After said and sent \
                 again (not errors)",
                self.rate_limited
            )?;
        }
        if let Some(server) = &self.server {
            writeln!(
                f,
                "server pid {}: peak RSS (VmHWM) {:.1} MiB ({:.1} MiB before the run), RSS now \
                 {:.1} MiB",
                server.pid,
                mib(server.peak),
                mib(server.peak_before),
                mib(server.resident_after)
            )?;
        }
        if let Some(events) = &self.events {
            write!(f, "{events}")?;
        }
        if !self.error_samples.is_empty() {
            writeln!(
                f,
                "errors ({} distinct, first {}):",
                self.error_samples.len(),
                SHOWN.min(self.error_samples.len())
            )?;
            for e in self.error_samples.iter().take(SHOWN) {
                writeln!(
                    f,
                    "  {} x{}: {} {} (first at {:.1} s: {})",
                    e.key.kind, e.count, e.key.status, e.key.code, e.first_at, e.first
                )?;
            }
        }
        if !self.lost_samples.is_empty() {
            writeln!(f, "lost (first {}):", self.lost_samples.len())?;
            for why in &self.lost_samples {
                writeln!(f, "  {why}")?;
            }
        }
        write!(f, "{} errors, {} lost", self.errors, self.lost)
    }
}

fn by_type(counts: &BTreeMap<String, u64>) -> String {
    let total: u64 = counts.values().sum();
    let each: Vec<String> = counts.iter().map(|(t, n)| format!("{t} {n}")).collect();
    format!("{total} ({})", each.join(", "))
}

impl fmt::Display for EventsReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "events: {} streams ({} open when the clients started), {} webhooks, set up in \
             {:.1} s; {} uploads finished as the clients saw them",
            self.subscribers,
            self.connected,
            self.webhooks,
            self.setup.as_secs_f64(),
            self.finished_uploads
        )?;
        let s = &self.streams;
        if self.followed_streams {
            writeln!(
                f,
                "  streams: {} events; {} of {} expected seen once, {} missing, {} more than \
                 once, {} of other uploads; {} reconnects ({} after `dropped`)",
                by_type(&s.by_type),
                s.seen_once,
                s.expected,
                s.missing,
                s.repeated,
                s.other,
                s.reconnects,
                s.dropped
            )?;
        }
        let w = &self.webhook;
        if !self.followed_webhooks {
            return Ok(());
        }
        writeln!(
            f,
            "  webhook: {} deliveries, {} distinct webhook-ids; {} of {} finished uploads \
             delivered, {} missing, {} more than once, {} of other uploads, {} refused; the last \
             expected event {:.1} s after the check",
            by_type(&w.by_type),
            w.distinct,
            w.delivered,
            self.finished_uploads,
            w.missing,
            w.repeated,
            w.other,
            w.refused,
            self.settled_in.as_secs_f64()
        )
    }
}

impl fmt::Display for IdleReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "idle /api/events streams, server pid {}: VmRSS {:.1} MiB before",
            self.pid,
            mib(self.before)
        )?;
        for (i, after) in self.after_rounds.iter().enumerate() {
            writeln!(
                f,
                "  +{} streams ({} open), {:.0} s later: VmRSS {:.1} MiB, {:+.1} KiB per stream",
                self.per_round,
                self.per_round * (i + 1),
                self.waited.as_secs_f64(),
                mib(*after),
                self.per_subscriber(i).unwrap_or(0.0) / 1024.0
            )?;
        }
        writeln!(
            f,
            "  all closed: VmRSS {:.1} MiB; peak (VmHWM) {:.1} MiB",
            mib(self.closed),
            mib(self.peak)
        )?;
        write!(f, "{} streams failed to open", self.failed)
    }
}

pub(crate) fn shown_losses<'a>(lost: impl Iterator<Item = &'a String>) -> Vec<String> {
    lost.take(SHOWN).cloned().collect()
}
