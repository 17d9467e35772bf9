//! One request as a well-behaved client sends it: timed until its body is read, a `429` waited
//! out for as long as `Retry-After` says and sent again, and anything else unexpected counted
//! as an error by kind, status and JSON error code.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::header::HeaderMap;
use reqwest::StatusCode;

use crate::tally::{ErrorKey, Kind, Tally};

/// Counters the progress line reads while the clients run.
#[derive(Debug, Default)]
pub struct Progress {
    pub requests: AtomicU64,
    pub errors: AtomicU64,
    pub rate_limited: AtomicU64,
}

impl Progress {
    /// Prints the counters to stderr every 10 s from `started`, each line led by `label`,
    /// until the task is aborted.
    pub fn print_every_10s(
        self: &Arc<Self>,
        started: Instant,
        label: String,
    ) -> tokio::task::JoinHandle<()> {
        let progress = self.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(10));
            every.tick().await;
            loop {
                every.tick().await;
                eprintln!(
                    "{label}{:>4.0} s: {} requests, {} errors, {} rate limited",
                    started.elapsed().as_secs_f64(),
                    progress.requests.load(Ordering::Relaxed),
                    progress.errors.load(Ordering::Relaxed),
                    progress.rate_limited.load(Ordering::Relaxed),
                );
            }
        })
    }
}

/// A client as every simulated user has its own: requests time out after `timeout`.
pub fn http_client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(10))
        .build()
        // Only a TLS backend or the system's resolver configuration can fail to load, and
        // this crate has neither.
        .unwrap_or_default()
}

/// What every request of a phase shares: when the run started (for the time of an error), the
/// moment after which no `Retry-After` wait begins, and the progress counters.
#[derive(Clone, Debug)]
pub struct Phase {
    pub started: Instant,
    pub no_waits_after: Instant,
    pub progress: Arc<Progress>,
}

impl Phase {
    pub fn seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Count a failure found by looking at an answer (wrong bytes, a wrong offset, ...).
    pub fn error(&self, tally: &mut Tally, kind: Kind, status: u16, code: &str, what: String) {
        self.progress.errors.fetch_add(1, Ordering::Relaxed);
        let key = ErrorKey {
            kind,
            status,
            code: code.to_owned(),
        };
        tally.error(key, what, self.seconds());
    }
}

#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub url: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// Why there is no reply.
#[derive(Debug)]
pub enum Miss {
    /// Counted as an error; the text says what happened.
    Failed(String),
    /// Rate limited, and waiting would have gone past the phase's end: dropped (once the phase
    /// is over), not an error.
    GaveUp,
}

/// Send the request `build` makes (again after each `429`), expecting one of `expect`.
/// `sent` is the body's length, counted into the kind's bytes.
pub async fn exchange(
    http: &reqwest::Client,
    phase: &Phase,
    tally: &mut Tally,
    kind: Kind,
    expect: &[u16],
    sent: u64,
    build: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
) -> Result<Reply, Miss> {
    loop {
        let request = match build(http).build() {
            Ok(request) => request,
            Err(e) => {
                let what = format!("building the request: {e}");
                phase.error(tally, kind, 0, "request", what.clone());
                return Err(Miss::Failed(what));
            }
        };
        let what = format!("{} {}", request.method(), request.url());
        let start = Instant::now();
        phase.progress.requests.fetch_add(1, Ordering::Relaxed);
        let answered = match http.execute(request).await {
            Ok(response) => {
                let status = response.status();
                let headers = response.headers().clone();
                let url = response.url().to_string();
                response.bytes().await.map(|body| Reply {
                    status,
                    headers,
                    body,
                    url,
                })
            }
            Err(e) => Err(e),
        };
        let reply = match answered {
            Ok(reply) => reply,
            Err(e) => {
                let code = if e.is_timeout() {
                    "timeout"
                } else if e.is_connect() {
                    "connect"
                } else {
                    "transport"
                };
                let what = format!(
                    "{what}: after {} ms: {}",
                    start.elapsed().as_millis(),
                    chain(&e)
                );
                phase.error(tally, kind, 0, code, what.clone());
                return Err(Miss::Failed(what));
            }
        };
        let took = start.elapsed();
        let status = reply.status.as_u16();
        if expect.contains(&status) {
            tally.answered(kind, took, sent + reply.body.len() as u64);
            return Ok(reply);
        }
        let (code, message) = error_body(&reply.body);
        if status == 429 {
            if let Some(wait) = retry_after(&reply.headers) {
                if Instant::now() + wait > phase.no_waits_after {
                    // A user told to come back after the run's end stops here: waits out the
                    // rest of the run rather than trying something else at once (which the
                    // limit would refuse just the same).
                    tokio::time::sleep_until(phase.no_waits_after.into()).await;
                    return Err(Miss::GaveUp);
                }
                phase.progress.rate_limited.fetch_add(1, Ordering::Relaxed);
                let counted = tally.kind(kind);
                counted.rate_limited += 1;
                counted.rate_limited_wait += wait;
                tokio::time::sleep(wait).await;
                continue;
            }
            // The contract promises `Retry-After` with every 429: without it a client cannot
            // know when to come back, so it is the server's error.
        }
        let what = format!("{what}: {message}");
        phase.error(tally, kind, status, &code, what.clone());
        return Err(Miss::Failed(format!("{status} {code}: {what}")));
    }
}

/// The contract's error body: its code and message (`-` and the raw text when not JSON, or
/// when the JSON has no `message`, as Kubo's `{"Message", "Code", "Type"}` has not).
fn error_body(body: &[u8]) -> (String, String) {
    let raw = || String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(json) => (
            json["error"].as_str().unwrap_or("-").to_owned(),
            json["message"].as_str().map_or_else(raw, str::to_owned),
        ),
        Err(_) => ("-".to_owned(), raw()),
    }
}

/// `Retry-After` in seconds (the form the server sends); at least a tenth of a second, so a
/// `0` does not turn into a busy loop.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds: u64 = headers
        .get("retry-after")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds).max(Duration::from_millis(100)))
}

/// An error and its causes on one line.
fn chain(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line
}
