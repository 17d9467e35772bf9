//! The figures of a run, and how they are printed: a table per request kind, what was
//! acknowledged and read back, the server's memory, the first distinct errors and losses, and
//! the closing `N errors, N lost` line.

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

fn ms(d: Duration) -> f64 {
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

pub(crate) fn shown_losses<'a>(lost: impl Iterator<Item = &'a String>) -> Vec<String> {
    lost.take(SHOWN).cloned().collect()
}
