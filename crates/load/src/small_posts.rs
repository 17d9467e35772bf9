//! `--small-posts` (issue 52): small uploads alone, against Cairn or Kubo's RPC API, so the two
//! can be compared with the same generator. Each client loops until the end: a fresh file
//! (2 KiB to 400 KiB, log-uniform, bytes no upload has had, made before the clock starts), one
//! multipart POST, its CID looked for in the answer. Nothing is read back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::multipart::{Form, Part};
use tokio::task::JoinSet;

use crate::content::{file_bytes, Rng, Seeds};
use crate::report::{memory, ms, KindStats};
use crate::request::{exchange, http_client, Phase, Progress};
use crate::tally::{ErrorSample, Kind, Tally};

/// The smallest and largest (exclusive) upload, as the realistic mix's small POSTs.
const SIZES: (usize, usize) = (2 << 10, 400 << 10);

/// Where the uploads go.
#[derive(Clone, Debug)]
pub enum Target {
    /// `POST {url}/api/upload` (field `file`) with a bearer token; client `i` uses
    /// `tokens[i % tokens.len()]`. The answer's `cid` is the CID.
    Cairn { url: String, tokens: Vec<String> },
    /// Kubo's `POST {url}/api/v0/add` (field `file`) with its defaults (CIDv0, pinned). The
    /// answer's `Hash` is the CID.
    KuboRpc { url: String },
}

impl Target {
    pub fn name(&self) -> &'static str {
        match self {
            Target::Cairn { .. } => "cairn",
            Target::KuboRpc { .. } => "kubo",
        }
    }

    fn upload_url(&self) -> String {
        match self {
            Target::Cairn { url, .. } => format!("{}/api/upload", url.trim_end_matches('/')),
            Target::KuboRpc { url } => format!("{}/api/v0/add", url.trim_end_matches('/')),
        }
    }

    fn token(&self, client: usize) -> Option<&str> {
        match self {
            Target::Cairn { tokens, .. } if !tokens.is_empty() => {
                Some(&tokens[client % tokens.len()])
            }
            _ => None,
        }
    }

    /// The CID in a successful answer.
    fn cid(&self, body: &[u8]) -> Option<String> {
        match self {
            Target::Cairn { .. } => {
                let json: serde_json::Value = serde_json::from_slice(body).ok()?;
                json["cid"].as_str().map(str::to_owned)
            }
            // One JSON object per line, one per added entry: a lone file's is its only line.
            Target::KuboRpc { .. } => String::from_utf8_lossy(body).lines().rev().find_map(|l| {
                let json: serde_json::Value = serde_json::from_str(l).ok()?;
                json["Hash"].as_str().map(str::to_owned)
            }),
        }
        .filter(|cid| !cid.is_empty())
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    pub target: Target,
    pub clients: usize,
    /// How long clients start new uploads; each finishes the one under way.
    pub duration: Duration,
    pub request_timeout: Duration,
    /// The server's process, for its peak memory.
    pub server_pid: Option<u32>,
    /// Print a progress line to stderr every 10 s.
    pub progress: bool,
}

impl Config {
    /// Issue 52's defaults: 200 clients for 30 s.
    pub fn new(target: Target) -> Self {
        Self {
            target,
            clients: 200,
            duration: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
            server_pid: None,
            progress: false,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Report {
    pub target: &'static str,
    pub url: String,
    pub clients: usize,
    /// Distinct tokens the clients shared out (0 for Kubo).
    pub accounts: usize,
    /// From the start until the last client finished its last upload.
    pub ran: Duration,
    /// Uploads answered with a CID: their latencies, the bytes sent (`mb_per_second`) and
    /// the `429`s waited out as `Retry-After` said (not errors).
    pub uploads: KindStats,
    pub errors: u64,
    /// Each distinct error (status, code), earliest first.
    pub error_samples: Vec<ErrorSample>,
    /// The server's `VmHWM` after the run, in bytes.
    pub server_peak_rss: Option<u64>,
}

/// Run the clients against `config.target` and report. Never fails: whatever goes wrong is
/// counted in the report.
pub async fn run(config: Config) -> Report {
    let target = Arc::new(config.target.clone());
    let started = Instant::now();
    let deadline = started + config.duration;
    let progress = Arc::new(Progress::default());
    let phase = Phase {
        started,
        no_waits_after: deadline,
        progress: progress.clone(),
    };
    let seeds = Arc::new(Seeds::new());
    let mut clients = JoinSet::new();
    for index in 0..config.clients {
        let client = Uploader {
            http: http_client(config.request_timeout),
            target: target.clone(),
            index,
            rng: Rng::new(seeds.next()),
            seeds: seeds.clone(),
            phase: phase.clone(),
            tally: Tally::default(),
        };
        clients.spawn(client.run(deadline));
    }
    let ticker = config
        .progress
        .then(|| progress.print_every_10s(started, format!("{} ", target.name())));
    let mut tally = Tally::default();
    while let Some(joined) = clients.join_next().await {
        match joined {
            Ok(theirs) => tally.merge(theirs),
            Err(e) => phase.error(&mut tally, Kind::Post, 0, "panic", format!("a client: {e}")),
        }
    }
    let ran = started.elapsed();
    if let Some(ticker) = ticker {
        ticker.abort();
    }
    let counted = tally.kinds.remove(&Kind::Post).unwrap_or_default();
    let uploads = KindStats::new(Kind::Post, counted, ran);
    let mut error_samples: Vec<ErrorSample> = tally.errors.values().cloned().collect();
    error_samples.sort_by(|a, b| a.first_at.total_cmp(&b.first_at));
    let accounts = match &config.target {
        Target::Cairn { tokens, .. } => tokens.len().min(config.clients),
        Target::KuboRpc { .. } => 0,
    };
    Report {
        target: config.target.name(),
        url: match &config.target {
            Target::Cairn { url, .. } | Target::KuboRpc { url } => url.clone(),
        },
        clients: config.clients,
        accounts,
        ran,
        uploads,
        errors: tally.error_count(),
        error_samples,
        server_peak_rss: config.server_pid.and_then(|pid| memory(pid, "VmHWM")),
    }
}

struct Uploader {
    http: reqwest::Client,
    target: Arc<Target>,
    index: usize,
    rng: Rng,
    seeds: Arc<Seeds>,
    phase: Phase,
    tally: Tally,
}

impl Uploader {
    async fn run(mut self, deadline: Instant) -> Tally {
        // Spread the first requests over a second, as `client::Client` does.
        tokio::time::sleep(Duration::from_millis(self.rng.range(0, 1000))).await;
        while Instant::now() < deadline {
            self.upload().await;
        }
        self.tally
    }

    async fn upload(&mut self) {
        let seed = self.seeds.next();
        let len = self.rng.size(SIZES.0, SIZES.1);
        // Made before `exchange` starts its clock.
        let bytes = Bytes::from(file_bytes(seed, len));
        let name = format!("file-{seed:016x}.bin");
        let url = self.target.upload_url();
        let token = self.target.token(self.index).map(str::to_owned);
        let sent = len as u64;
        // `exchange` counts only the answer's bytes on top of `sent`: take them off again, so
        // `bytes` is what was uploaded.
        let Ok(reply) = exchange(
            &self.http,
            &self.phase,
            &mut self.tally,
            Kind::Post,
            &[200],
            sent,
            |http| {
                // As `client::Client::post_file` sends it (Kubo takes a part without a type
                // as a file).
                let part = Part::stream_with_length(bytes.clone(), sent).file_name(name.clone());
                let request = http.post(&url).multipart(Form::new().part("file", part));
                match &token {
                    Some(token) => request.bearer_auth(token),
                    None => request,
                }
            },
        )
        .await
        else {
            return;
        };
        self.tally.kind(Kind::Post).bytes -= reply.body.len() as u64;
        if self.target.cid(&reply.body).is_none() {
            // A 200 without a CID: not an upload. Taken out of the latencies again.
            self.tally.kind(Kind::Post).micros.pop();
            self.tally.kind(Kind::Post).bytes -= sent;
            let body = String::from_utf8_lossy(&reply.body[..reply.body.len().min(200)]);
            let what = format!("POST {url}: no CID in {body}");
            self.phase
                .error(&mut self.tally, Kind::Post, 200, "no_cid", what);
        }
    }
}

impl Report {
    /// The figures as one JSON object (for `scripts/bench-small-uploads`).
    pub fn json(&self) -> serde_json::Value {
        let samples: Vec<serde_json::Value> = self
            .error_samples
            .iter()
            .map(|e| {
                serde_json::json!({
                    "status": e.key.status,
                    "code": e.key.code,
                    "count": e.count,
                    "first_at_s": e.first_at,
                    "first": e.first,
                })
            })
            .collect();
        serde_json::json!({
            "target": self.target,
            "url": self.url,
            "clients": self.clients,
            "accounts": self.accounts,
            "seconds": self.ran.as_secs_f64(),
            "uploads": self.uploads.count,
            "uploads_per_s": self.uploads.per_second,
            "mb_per_s": self.uploads.mb_per_second,
            "p50_ms": ms(self.uploads.p50),
            "p99_ms": ms(self.uploads.p99),
            "max_ms": ms(self.uploads.max),
            "errors": self.errors,
            "error_samples": samples,
            "rate_limited": self.uploads.rate_limited,
            "server_peak_rss": self.server_peak_rss,
        })
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let u = &self.uploads;
        writeln!(
            f,
            "{} clients ({} accounts) posting 2 KiB to 400 KiB to {} ({}) for {:.1} s",
            self.clients,
            self.accounts,
            self.url,
            self.target,
            self.ran.as_secs_f64()
        )?;
        writeln!(
            f,
            "{} uploads, {:.1}/s, {:.2} MB/s; p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; {} 429s \
             waited out",
            u.count,
            u.per_second,
            u.mb_per_second,
            ms(u.p50),
            ms(u.p99),
            ms(u.max),
            u.rate_limited
        )?;
        if let Some(peak) = self.server_peak_rss {
            writeln!(
                f,
                "server peak RSS (VmHWM) {:.1} MiB",
                peak as f64 / f64::from(1 << 20)
            )?;
        }
        for e in self.error_samples.iter().take(8) {
            writeln!(
                f,
                "  x{}: {} {} (first at {:.1} s: {})",
                e.count, e.key.status, e.key.code, e.first_at, e.first
            )?;
        }
        write!(f, "{} errors", self.errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cid_is_found_in_each_servers_answer_and_an_error_has_none() {
        let cairn = Target::Cairn {
            url: "http://c".into(),
            tokens: vec!["t".into()],
        };
        let kubo = Target::KuboRpc {
            url: "http://k/".into(),
        };
        assert_eq!(
            cairn
                .cid(br#"{"id":"u1","cid":"bafkqaaa","size":3}"#)
                .as_deref(),
            Some("bafkqaaa")
        );
        assert_eq!(cairn.cid(br#"{"id":"u1","cid":null}"#), None);
        let added = b"{\"Name\":\"f\",\"Hash\":\"QmA\",\"Size\":\"5011\"}\n";
        assert_eq!(kubo.cid(added).as_deref(), Some("QmA"));
        // An error after the headers comes as a line of its own, without a Hash.
        let failed = b"{\"Message\":\"write failed\",\"Code\":0,\"Type\":\"error\"}\n";
        assert_eq!(kubo.cid(failed), None);
        assert_eq!(kubo.upload_url(), "http://k/api/v0/add");
        assert_eq!(kubo.token(3), None);
        assert_eq!(cairn.token(3), Some("t"));
    }
}
