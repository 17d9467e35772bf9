//! Events during the load (`--events`, issue 35): one webhook receiver on loopback, registered
//! for every account and every event type, and one `GET /api/events` stream per client, read
//! for the whole run. After the run and its check, every upload the clients saw finish must
//! have come once on each stream of its account and at least once to the receiver; what is
//! missing, or came twice on a stream, is an error.
//!
//! Also the server's memory per idle stream (`--idle-subscribers`): `VmRSS` before and after
//! opening streams that nothing is sent on but keep-alive comments.
//!
//! The receiver is a few lines of HTTP/1.1 over `tokio::net::TcpListener` (requests with a
//! `Content-Length`, keep-alive, `204` to each): enough for the server's webhook client, and
//! no server framework in a load generator's dependencies. It checks that each delivery
//! carries the Standard Webhooks headers and a JSON event; it does not verify signatures
//! (the server's own tests do, with the specification's library).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::client::{Target, Upload};
use crate::report::{memory, EventsReport, IdleReport, StreamFigures, WebhookFigures};
use crate::request::{exchange, Phase};
use crate::tally::{Kind, Tally};

/// What a run follows: both (issue 35's benchmark), or one side alone, to tell their costs
/// apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follow {
    Both,
    /// The `/api/events` streams, no webhook.
    Streams,
    /// The webhook receiver, no stream.
    Webhooks,
}

impl Follow {
    fn streams(self) -> bool {
        self != Follow::Webhooks
    }

    fn webhooks(self) -> bool {
        self != Follow::Streams
    }
}

/// Every event type a webhook can ask for (README, "Knowing when work is done").
pub const EVENT_TYPES: [&str; 6] = [
    "upload.completed",
    "upload.failed",
    "upload.deleted",
    "pin.pinned",
    "pin.failed",
    "pin.removed",
];

/// How long the streams have to open before the clients start without the late ones.
const OPEN_WITHIN: Duration = Duration::from_secs(60);
/// After the check: the longest wait for the last expected events, and how long nothing new
/// may arrive before the wait gives up early.
const SETTLE_AT_MOST: Duration = Duration::from_secs(90);
const SETTLE_QUIET: Duration = Duration::from_secs(20);
/// The longest header section the receiver reads, in lines and in bytes.
const HEADER_LINES: usize = 100;
const BODY_AT_MOST: usize = 1 << 20;

/// What a stream got; shared between its reader and the end of the run.
struct StreamLog {
    /// The token (account) index it reads as.
    account: usize,
    /// `(event type, upload id)` and how many times it came.
    seen: HashMap<(String, String), u32>,
    by_type: BTreeMap<String, u64>,
    /// The last event id read, for `Last-Event-ID` when the stream is opened again.
    last_id: Option<String>,
    reconnects: u64,
    dropped: u64,
    tally: Tally,
}

/// What the receiver got.
#[derive(Default)]
struct HookLog {
    /// `(event type, upload id)` and how many requests carried it.
    seen: HashMap<(String, String), u32>,
    by_type: BTreeMap<String, u64>,
    ids: HashSet<String>,
    refused: u64,
    tally: Tally,
}

/// Locks a log; a reader that panicked holding the lock leaves figures still worth reading.
fn lock<T>(log: &Mutex<T>) -> MutexGuard<'_, T> {
    log.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The webhooks and streams of a run, from before the clients start to after the check.
pub struct Watch {
    follow: Follow,
    phase: Phase,
    setup: Duration,
    webhooks: u64,
    connected: u64,
    streams: Vec<Arc<Mutex<StreamLog>>>,
    hooks: Arc<Mutex<HookLog>>,
    /// Events read and deliveries received so far: the settling wait watches it move.
    arrived: Arc<AtomicU64>,
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
    tally: Tally,
}

impl Watch {
    /// Start the receiver, register it for every account the clients use, and open one stream
    /// per client; returns once every stream is open (or [`OPEN_WITHIN`] has passed).
    /// Whatever fails is counted as an error of the run.
    pub async fn start(
        http: &reqwest::Client,
        target: &Arc<Target>,
        clients: usize,
        follow: Follow,
    ) -> Self {
        let began = Instant::now();
        let phase = Phase {
            started: began,
            no_waits_after: began + OPEN_WITHIN,
            progress: Default::default(),
        };
        let (stop, stopped) = watch::channel(false);
        let hooks = Arc::new(Mutex::new(HookLog::default()));
        let arrived = Arc::new(AtomicU64::new(0));
        let mut tasks = JoinSet::new();
        let mut tally = Tally::default();

        let listener = match TcpListener::bind("127.0.0.1:0").await {
            Ok(_) if !follow.webhooks() => None,
            Ok(listener) => Some(listener),
            Err(e) => {
                let what = format!("binding the webhook receiver: {e}");
                phase.error(&mut tally, Kind::WebhookDelivery, 0, "bind", what);
                None
            }
        };
        let mut webhooks = 0;
        let receiver = listener.and_then(|l| Some((l.local_addr().ok()?, l)));
        if let Some((at, listener)) = receiver {
            tasks.spawn(receive(
                listener,
                hooks.clone(),
                arrived.clone(),
                phase.clone(),
                stopped.clone(),
            ));
            let accounts = target.tokens.len().min(clients);
            for account in 0..accounts {
                if register(http, target, account, at, &phase, &mut tally).await {
                    webhooks += 1;
                }
            }
        }

        // Streams never end by themselves: no overall timeout, only one to connect.
        let streaming = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        let (opened, mut open) = mpsc::channel(clients.max(1));
        let subscribers = if follow.streams() { clients } else { 0 };
        let mut streams = Vec::with_capacity(subscribers);
        for index in 0..subscribers {
            let account = index % target.tokens.len().max(1);
            let log = Arc::new(Mutex::new(StreamLog {
                account,
                seen: HashMap::new(),
                by_type: BTreeMap::new(),
                last_id: None,
                reconnects: 0,
                dropped: 0,
                tally: Tally::default(),
            }));
            streams.push(log.clone());
            tasks.spawn(subscribe(
                streaming.clone(),
                target.clone(),
                log,
                arrived.clone(),
                phase.clone(),
                stopped.clone(),
                opened.clone(),
            ));
        }
        drop(opened);
        let mut connected = 0;
        let deadline = tokio::time::Instant::now() + OPEN_WITHIN;
        while connected < subscribers as u64 {
            match tokio::time::timeout_at(deadline, open.recv()).await {
                Ok(Some(())) => connected += 1,
                // Every reader gave up, or the time is up: run with what is open.
                Ok(None) | Err(_) => break,
            }
        }
        Self {
            follow,
            phase,
            setup: began.elapsed(),
            webhooks,
            connected,
            streams,
            hooks,
            arrived,
            stop,
            tasks,
            tally,
        }
    }

    /// After the run and its check: wait for the last events, stop, and compare what came
    /// with `finished` (the uploads the clients saw complete or fail). Every error (missing
    /// or repeated events, and those of the streams and the receiver) goes into `tally`.
    pub async fn finish(mut self, finished: &[Upload], tally: &mut Tally) -> EventsReport {
        // (type, upload id) each finished upload must raise, by account.
        let mut expected: HashMap<usize, Vec<(String, String)>> = HashMap::new();
        for upload in finished {
            let kind = if upload.failed.is_some() {
                "upload.failed"
            } else if upload.cid.is_some() {
                "upload.completed"
            } else {
                continue;
            };
            expected
                .entry(upload.token)
                .or_default()
                .push((kind.to_owned(), upload.id.clone()));
        }
        let settling = Instant::now();
        let mut last_count = self.arrived.load(Ordering::Relaxed);
        let mut last_change = Instant::now();
        while self.missing(&expected) > 0
            && settling.elapsed() < SETTLE_AT_MOST
            && last_change.elapsed() < SETTLE_QUIET
        {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let count = self.arrived.load(Ordering::Relaxed);
            if count != last_count {
                (last_count, last_change) = (count, Instant::now());
            }
        }
        let settled_in = settling.elapsed();
        let _ = self.stop.send(true);
        let stopping = tokio::time::Instant::now() + Duration::from_secs(10);
        while let Ok(Some(_)) = tokio::time::timeout_at(stopping, self.tasks.join_next()).await {}
        self.tasks.abort_all();

        let finished_uploads = expected.values().map(Vec::len).sum::<usize>() as u64;
        let mut streams = StreamFigures::default();
        let mut missing_on_streams = Vec::new();
        for log in &self.streams {
            let mut log = lock(log);
            let wanted = expected.get(&log.account).map_or(&[][..], Vec::as_slice);
            streams.expected += wanted.len() as u64;
            for key in wanted {
                match log.seen.get(key).copied().unwrap_or(0) {
                    0 => {
                        streams.missing += 1;
                        missing_on_streams.push((log.account, key.clone()));
                    }
                    1 => streams.seen_once += 1,
                    n => {
                        streams.repeated += 1;
                        let what = format!("{} {} came {n} times on a stream", key.0, key.1);
                        self.phase
                            .error(&mut self.tally, Kind::StreamEvent, 0, "repeated", what);
                    }
                }
            }
            let wanted: HashSet<&(String, String)> = wanted.iter().collect();
            streams.other += log
                .seen
                .iter()
                .filter(|(key, _)| !wanted.contains(key))
                .map(|(_, n)| u64::from(*n))
                .sum::<u64>();
            for (kind, n) in &log.by_type {
                *streams.by_type.entry(kind.clone()).or_default() += n;
            }
            streams.reconnects += log.reconnects;
            streams.dropped += log.dropped;
            tally.merge(std::mem::take(&mut log.tally));
        }
        for (account, (kind, id)) in missing_on_streams {
            let what = format!("{kind} of upload {id} never came on account {account}'s stream");
            self.phase
                .error(&mut self.tally, Kind::StreamEvent, 0, "missing", what);
        }

        let mut webhook = WebhookFigures::default();
        {
            let mut hooks = lock(&self.hooks);
            let all: Vec<&(String, String)> = match self.follow.webhooks() {
                true => expected.values().flatten().collect(),
                false => Vec::new(),
            };
            for key in &all {
                match hooks.seen.get(*key).copied().unwrap_or(0) {
                    0 => {
                        webhook.missing += 1;
                        let what = format!("{} of upload {} was never delivered", key.0, key.1);
                        self.phase.error(
                            &mut self.tally,
                            Kind::WebhookDelivery,
                            0,
                            "missing",
                            what,
                        );
                    }
                    1 => webhook.delivered += 1,
                    _ => {
                        webhook.delivered += 1;
                        webhook.repeated += 1;
                    }
                }
            }
            let all: HashSet<&(String, String)> = all.into_iter().collect();
            webhook.other = hooks
                .seen
                .iter()
                .filter(|(key, _)| !all.contains(key))
                .map(|(_, n)| u64::from(*n))
                .sum();
            webhook.by_type = hooks.by_type.clone();
            webhook.distinct = hooks.ids.len() as u64;
            webhook.refused = hooks.refused;
            tally.merge(std::mem::take(&mut hooks.tally));
        }
        tally.merge(self.tally);
        EventsReport {
            followed_streams: self.follow.streams(),
            followed_webhooks: self.follow.webhooks(),
            webhooks: self.webhooks,
            subscribers: self.streams.len() as u64,
            connected: self.connected,
            setup: self.setup,
            finished_uploads,
            streams,
            webhook,
            settled_in,
        }
    }

    /// Expected events not yet seen, on the streams and at the receiver.
    fn missing(&self, expected: &HashMap<usize, Vec<(String, String)>>) -> usize {
        let on_streams: usize = self
            .streams
            .iter()
            .map(|log| {
                let log = lock(log);
                let wanted = expected.get(&log.account).map_or(&[][..], Vec::as_slice);
                wanted.iter().filter(|k| !log.seen.contains_key(*k)).count()
            })
            .sum();
        if !self.follow.webhooks() {
            return on_streams;
        }
        let hooks = lock(&self.hooks);
        let at_receiver = expected
            .values()
            .flatten()
            .filter(|k| !hooks.seen.contains_key(*k))
            .count();
        on_streams + at_receiver
    }
}

/// `POST /api/webhooks` for `account`, pointing at the receiver; `true` once made.
async fn register(
    http: &reqwest::Client,
    target: &Target,
    account: usize,
    receiver: SocketAddr,
    phase: &Phase,
    tally: &mut Tally,
) -> bool {
    let url = format!("{}/api/webhooks", target.account_url);
    let token = target.tokens.get(account).map_or("", String::as_str);
    let body = serde_json::json!({
        "url": format!("http://{receiver}/hooks"),
        "events": EVENT_TYPES,
        "description": "cairn-load --events",
    });
    let Ok(reply) = exchange(http, phase, tally, Kind::WebhookCreate, &[201], 0, |http| {
        http.post(&url).bearer_auth(token).json(&body)
    })
    .await
    else {
        return false;
    };
    let secret = reply
        .json()
        .and_then(|json| json["secret"].as_str().map(str::to_owned));
    if !secret.is_some_and(|s| s.starts_with("whsec_")) {
        let what = format!("{url}: 201 without a whsec_ secret");
        phase.error(tally, Kind::WebhookCreate, 201, "bad_answer", what);
        return false;
    }
    true
}

/// One client's `GET /api/events`, read until the run ends; opened again with
/// `Last-Event-ID` if the server ends it. Says on `opened` when it first answers.
async fn subscribe(
    http: reqwest::Client,
    target: Arc<Target>,
    log: Arc<Mutex<StreamLog>>,
    arrived: Arc<AtomicU64>,
    phase: Phase,
    mut stopped: watch::Receiver<bool>,
    opened: mpsc::Sender<()>,
) {
    let url = format!("{}/api/events", target.url);
    let account = lock(&log).account;
    let token = target.tokens.get(account).cloned().unwrap_or_default();
    let mut opened = Some(opened);
    loop {
        let last_id = lock(&log).last_id.clone();
        let asked = Instant::now();
        let mut request = http
            .get(&url)
            .bearer_auth(&token)
            .header("accept", "text/event-stream");
        if let Some(id) = &last_id {
            request = request.header("last-event-id", id);
        }
        let answered = tokio::select! {
            answered = request.send() => answered,
            _ = stopped.wait_for(|stop| *stop) => return,
        };
        let mut response = match answered {
            Ok(response) if response.status() == 200 => response,
            Ok(response) => {
                let status = response.status();
                let wait = response
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
                let body = response.text().await.unwrap_or_default();
                {
                    let mut log = lock(&log);
                    if status == 429 && wait.is_some() {
                        // As `exchange` counts one: waited out, not an error.
                        log.tally.kind(Kind::Subscribe).rate_limited += 1;
                    } else {
                        let what = format!("GET {url}: {status}: {body}");
                        phase.error(&mut log.tally, Kind::Subscribe, status.as_u16(), "-", what);
                    }
                }
                // Waited out as any client would, then tried again.
                let wait = Duration::from_secs(wait.unwrap_or(1).max(1));
                tokio::select! {
                    () = tokio::time::sleep(wait) => continue,
                    _ = stopped.wait_for(|stop| *stop) => return,
                }
            }
            Err(e) => {
                let what = format!("GET {url}: {e}");
                phase.error(&mut lock(&log).tally, Kind::Subscribe, 0, "transport", what);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                    _ = stopped.wait_for(|stop| *stop) => return,
                }
            }
        };
        lock(&log)
            .tally
            .answered(Kind::Subscribe, asked.elapsed(), 0);
        if let Some(opened) = opened.take() {
            let _ = opened.send(()).await;
        }
        let mut parser = SseParser::default();
        let mut dropped = false;
        let ended = loop {
            let chunk = tokio::select! {
                chunk = response.chunk() => chunk,
                _ = stopped.wait_for(|stop| *stop) => return,
            };
            match chunk {
                Ok(Some(bytes)) => {
                    for event in parser.feed(&bytes) {
                        dropped |= event.kind == "dropped";
                        record_stream_event(&log, &phase, &event);
                        arrived.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Ok(None) => break "ended".to_owned(),
                Err(e) => break format!("broke: {e}"),
            }
        };
        let mut log = lock(&log);
        log.reconnects += 1;
        if dropped {
            log.dropped += 1;
        } else {
            // The server ends a stream only when its reader fell behind (`dropped`).
            let what = format!("GET {url}: the stream {ended} without `dropped`");
            phase.error(&mut log.tally, Kind::Subscribe, 200, "stream_ended", what);
        }
    }
}

fn record_stream_event(log: &Mutex<StreamLog>, phase: &Phase, event: &SseEvent) {
    let mut log = lock(log);
    if event.kind == "dropped" {
        return;
    }
    if event.id.is_some() {
        log.last_id = event.id.clone();
    }
    let Some(parsed) = parse_event(&event.data) else {
        let what = format!("an event that is not a JSON event: {:.200}", event.data);
        phase.error(&mut log.tally, Kind::StreamEvent, 200, "bad_event", what);
        return;
    };
    if parsed.kind != event.kind {
        let what = format!(
            "`event: {}` with a body of type {}",
            event.kind, parsed.kind
        );
        phase.error(&mut log.tally, Kind::StreamEvent, 200, "bad_event", what);
    }
    log.tally
        .answered(Kind::StreamEvent, parsed.delay, event.data.len() as u64);
    *log.by_type.entry(parsed.kind.clone()).or_default() += 1;
    *log.seen.entry((parsed.kind, parsed.upload)).or_default() += 1;
}

/// An event body (`{"type", "timestamp", "data": {"id", ...}}`) as the streams and the
/// webhooks send it.
struct ParsedEvent {
    kind: String,
    /// `data.id`: the upload's id (a pin's `requestid` for pin events).
    upload: String,
    /// From its `timestamp` until now.
    delay: Duration,
}

fn parse_event(text: &str) -> Option<ParsedEvent> {
    let json: serde_json::Value = serde_json::from_str(text).ok()?;
    let kind = json["type"].as_str()?.to_owned();
    let upload = json["data"]["id"]
        .as_str()
        .or(json["data"]["requestid"].as_str())?
        .to_owned();
    let at = parse_timestamp(json["timestamp"].as_str()?)?;
    let delay = SystemTime::now().duration_since(at).unwrap_or_default();
    Some(ParsedEvent {
        kind,
        upload,
        delay,
    })
}

/// `2026-11-27T18:24:10.123Z`, the form the server writes (UTC, milliseconds optional).
fn parse_timestamp(text: &str) -> Option<SystemTime> {
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let mut date = date.splitn(3, '-').map(str::parse::<i64>);
    let (year, month, day) = (date.next()?.ok()?, date.next()?.ok()?, date.next()?.ok()?);
    let (hms, fraction) = time.split_once('.').unwrap_or((time, ""));
    let mut hms = hms.splitn(3, ':').map(str::parse::<u64>);
    let (hour, minute, second) = (hms.next()?.ok()?, hms.next()?.ok()?, hms.next()?.ok()?);
    let millis: u64 = match fraction.len() {
        0 => 0,
        _ => format!("{fraction:0<3}").get(..3)?.parse().ok()?,
    };
    // Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's
    // `days_from_civil`).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = u64::try_from(era * 146_097 + doe - 719_468).ok()?;
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second;
    Some(UNIX_EPOCH + Duration::from_millis(seconds * 1000 + millis))
}

/// One Server-Sent Event (the fields this test reads).
#[derive(Debug, PartialEq)]
struct SseEvent {
    kind: String,
    data: String,
    id: Option<String>,
}

/// Server-Sent Events as the HTML standard parses them, over chunks cut anywhere: lines,
/// `field: value`, comments (`:`), an event dispatched at a blank line.
#[derive(Default)]
struct SseParser {
    line: Vec<u8>,
    kind: String,
    data: Vec<String>,
    id: Option<String>,
}

impl SseParser {
    fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &byte in bytes {
            if byte != b'\n' {
                self.line.push(byte);
                continue;
            }
            let mut line = std::mem::take(&mut self.line);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line);
            if line.is_empty() {
                if !self.data.is_empty() {
                    events.push(SseEvent {
                        kind: match std::mem::take(&mut self.kind) {
                            kind if kind.is_empty() => "message".to_owned(),
                            kind => kind,
                        },
                        data: std::mem::take(&mut self.data).join("\n"),
                        id: self.id.clone(),
                    });
                }
                self.kind.clear();
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((&line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => self.kind = value.to_owned(),
                "data" => self.data.push(value.to_owned()),
                "id" => self.id = Some(value.to_owned()),
                _ => {}
            }
        }
        events
    }
}

/// The receiver: accepts connections until stopped.
async fn receive(
    listener: TcpListener,
    log: Arc<Mutex<HookLog>>,
    arrived: Arc<AtomicU64>,
    phase: Phase,
    mut stopped: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopped.wait_for(|stop| *stop) => break,
        };
        match accepted {
            Ok((stream, _)) => {
                let (log, arrived, phase) = (log.clone(), arrived.clone(), phase.clone());
                connections.spawn(async move {
                    if let Err(e) = serve_connection(stream, &log, &arrived, &phase).await {
                        let what = format!("a webhook connection: {e}");
                        phase.error(&mut lock(&log).tally, Kind::WebhookDelivery, 0, "io", what);
                    }
                });
            }
            Err(e) => {
                let what = format!("accepting a webhook connection: {e}");
                phase.error(
                    &mut lock(&log).tally,
                    Kind::WebhookDelivery,
                    0,
                    "accept",
                    what,
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        // Finished connections are forgotten as they end.
        while connections.try_join_next().is_some() {}
    }
    connections.abort_all();
}

/// HTTP/1.1 requests on one connection, one after another, until the sender closes it.
async fn serve_connection(
    stream: TcpStream,
    log: &Mutex<HookLog>,
    arrived: &AtomicU64,
    phase: &Phase,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let request_line = line.trim_end().to_owned();
        let mut headers = HashMap::new();
        for _ in 0..HEADER_LINES {
            line.clear();
            if reader.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
            }
        }
        let length = headers
            .get("content-length")
            .and_then(|l| l.parse::<usize>().ok())
            .filter(|&l| l <= BODY_AT_MOST);
        let Some(length) = length else {
            let what = format!("{request_line}: no Content-Length (or over {BODY_AT_MOST})");
            phase.error(
                &mut lock(log).tally,
                Kind::WebhookDelivery,
                411,
                "length",
                what,
            );
            let answer =
                b"HTTP/1.1 411 Length Required\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
            reader.get_mut().write_all(answer).await?;
            return Ok(());
        };
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await?;
        let accepted = record_delivery(log, phase, &request_line, &headers, &body);
        arrived.fetch_add(1, Ordering::Relaxed);
        let answer: &[u8] = if accepted {
            b"HTTP/1.1 204 No Content\r\n\r\n"
        } else {
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n"
        };
        reader.get_mut().write_all(answer).await?;
    }
}

/// Count one delivery; `false` when it is not what Standard Webhooks says a delivery is.
fn record_delivery(
    log: &Mutex<HookLog>,
    phase: &Phase,
    request_line: &str,
    headers: &HashMap<String, String>,
    body: &[u8],
) -> bool {
    let mut log = lock(log);
    let signed = request_line.starts_with("POST ")
        && headers.get("webhook-id").is_some_and(|id| !id.is_empty())
        && headers
            .get("webhook-timestamp")
            .is_some_and(|t| t.parse::<u64>().is_ok())
        && headers
            .get("webhook-signature")
            .is_some_and(|s| s.split(' ').all(|one| one.starts_with("v1,")));
    let parsed = std::str::from_utf8(body).ok().and_then(parse_event);
    let (true, Some(parsed)) = (signed, parsed) else {
        log.refused += 1;
        let what = format!(
            "{request_line}: not a signed JSON event: {headers:?} {:.200}",
            String::from_utf8_lossy(body)
        );
        phase.error(&mut log.tally, Kind::WebhookDelivery, 400, "refused", what);
        return false;
    };
    if let Some(id) = headers.get("webhook-id") {
        log.ids.insert(id.clone());
    }
    log.tally
        .answered(Kind::WebhookDelivery, parsed.delay, body.len() as u64);
    *log.by_type.entry(parsed.kind.clone()).or_default() += 1;
    *log.seen.entry((parsed.kind, parsed.upload)).or_default() += 1;
    true
}

/// `--idle-subscribers`: the server's `VmRSS` before and after `rounds` rounds of
/// `per_round` idle `/api/events` streams (shared out over `tokens`), each round left
/// `wait` before reading; then after closing them all.
pub async fn idle_subscribers(
    url: &str,
    tokens: &[String],
    pid: u32,
    per_round: usize,
    rounds: usize,
    wait: Duration,
) -> IdleReport {
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .unwrap_or_default();
    let url = format!("{}/api/events", url.trim_end_matches('/'));
    let rss = || memory(pid, "VmRSS").unwrap_or(0);
    let mut report = IdleReport {
        pid,
        per_round,
        waited: wait,
        ..IdleReport::default()
    };
    // What the first stream of the process costs once (the route's code paths, buffers the
    // allocator keeps) is not a per-stream cost: a few streams opened and closed first.
    let warm = open_streams(&http, &url, tokens, 0, per_round.min(8)).await;
    drop(warm);
    tokio::time::sleep(wait).await;
    report.before = rss();
    let mut open = Vec::new();
    for round in 0..rounds {
        let opened = open_streams(&http, &url, tokens, round * per_round, per_round).await;
        report.failed += (per_round - opened.len()) as u64;
        open.extend(opened);
        tokio::time::sleep(wait).await;
        report.after_rounds.push(rss());
    }
    drop(open);
    tokio::time::sleep(wait).await;
    report.closed = rss();
    report.peak = memory(pid, "VmHWM").unwrap_or(0);
    report
}

/// Open `n` streams at once (the `i`th with token `first + i`, round-robin) and keep each
/// read by a task of its own; those that opened, as tasks that end when dropped.
async fn open_streams(
    http: &reqwest::Client,
    url: &str,
    tokens: &[String],
    first: usize,
    n: usize,
) -> Vec<AbortOnDrop> {
    let mut opening = JoinSet::new();
    for i in 0..n {
        let token = tokens
            .get((first + i) % tokens.len().max(1))
            .cloned()
            .unwrap_or_default();
        let request = http
            .get(url)
            .bearer_auth(token)
            .header("accept", "text/event-stream");
        opening.spawn(async move {
            let mut response = request.send().await.ok()?;
            if response.status() != 200 {
                eprintln!("GET {}: {}", response.url(), response.status());
                return None;
            }
            Some(tokio::spawn(async move {
                // Keep-alive comments only: read and forgotten.
                while let Ok(Some(_)) = response.chunk().await {}
            }))
        });
    }
    let mut open = Vec::new();
    while let Some(joined) = opening.join_next().await {
        if let Ok(Some(reader)) = joined {
            open.push(AbortOnDrop(reader));
        }
    }
    open
}

/// A stream's reader, stopped (and its connection closed) when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_parsed_across_chunks_with_comments_and_crlf() {
        let text = ": keep-alive\n\nevent: upload.completed\r\nid: 7\ndata: {\"a\":\n\
                    data: 1}\n\nevent: dropped\ndata: x\n\n";
        let mut parser = SseParser::default();
        let mut events = Vec::new();
        for piece in text.as_bytes().chunks(5) {
            events.extend(parser.feed(piece));
        }
        assert_eq!(
            events,
            vec![
                SseEvent {
                    kind: "upload.completed".into(),
                    data: "{\"a\":\n1}".into(),
                    id: Some("7".into()),
                },
                SseEvent {
                    kind: "dropped".into(),
                    data: "x".into(),
                    id: Some("7".into()),
                },
            ]
        );
    }

    #[test]
    fn timestamps_are_read_as_the_server_writes_them() {
        let at = |text| {
            parse_timestamp(text)
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_millis())
        };
        assert_eq!(at("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(at("2000-03-01T00:00:01.5Z"), Some(951_868_801_500));
        assert_eq!(at("2026-11-27T18:24:10.123Z"), Some(1_795_803_850_123));
        assert_eq!(at("2026-11-27T18:24:10+01:00"), None);
    }
}
