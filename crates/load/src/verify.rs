//! After the run: every acknowledged upload must be there. Unfinished operations are polled
//! until done (while the server keeps finishing them), then each upload is read back whole through the
//! gateway (an archive file by file, by its path) and compared byte for byte, and each must be
//! listed by its account's `/api/uploads` as kept.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::client::{poll_with, Content, Polled, Target, Upload};
use crate::content::file_bytes;
use crate::request::{exchange, Miss, Phase};
use crate::tally::{Kind, Tally};

/// How many checks run at once.
const CHECKERS: usize = 16;

#[derive(Debug, Default)]
pub struct Checked {
    /// Polls and listings: their failures are errors like any other request's.
    pub tally: Tally,
    /// The read-back: its failures are losses, not errors.
    pub reads: Tally,
    /// Lost uploads: `(account token index, upload id)` and why.
    pub lost: BTreeMap<(usize, String), String>,
    pub files_read: u64,
    /// Uploads the drain had to wait for, and how long it took.
    pub drained: u64,
    pub drained_in: Duration,
    /// How long the read-back took.
    pub read_in: Duration,
    /// Every upload whose operation finished (its CID known, or its failure), as the clients
    /// and the drain saw it: what the event streams must have sent (`--events`).
    pub finished: Vec<Upload>,
}

pub async fn check(
    http: reqwest::Client,
    target: Arc<Target>,
    uploads: Vec<Upload>,
    stall: Duration,
    started: Instant,
) -> Checked {
    let mut checked = Checked::default();
    let uploads = finish_operations(&http, &target, uploads, stall, started, &mut checked).await;

    // Read back, in CHECKERS groups at once.
    let reading = Instant::now();
    let read_phase = Phase {
        started,
        // Gateway reads are not rate limited; a 429 would be an error here.
        no_waits_after: Instant::now(),
        progress: Default::default(),
    };
    let mut groups: Vec<Vec<Upload>> = vec![Vec::new(); CHECKERS];
    for (i, upload) in uploads.iter().enumerate() {
        groups[i % CHECKERS].push(upload.clone());
    }
    let mut readers = JoinSet::new();
    for group in groups {
        let (http, target, phase) = (http.clone(), target.clone(), read_phase.clone());
        readers.spawn(async move {
            let mut tally = Tally::default();
            let mut lost = Vec::new();
            let mut files = 0;
            for upload in group {
                match read_back(&http, &target, &phase, &mut tally, &upload, &mut files).await {
                    Ok(()) => {}
                    Err(why) => lost.push(((upload.token, upload.id.clone()), why)),
                }
            }
            (tally, lost, files)
        });
    }
    while let Some(joined) = readers.join_next().await {
        match joined {
            Ok((tally, lost, files)) => {
                checked.reads.merge(tally);
                checked.lost.extend(lost);
                checked.files_read += files;
            }
            Err(e) => {
                let what = format!("a checker stopped: {e}");
                read_phase.error(&mut checked.tally, Kind::Verify, 0, "panic", what);
            }
        }
    }

    checked.read_in = reading.elapsed();
    check_listed(&http, &target, &uploads, started, &mut checked).await;
    checked.finished = uploads;
    checked
}

/// Poll every upload whose operation was not finished when the run ended, until all are, or
/// until none has finished for `stall` (then those left are lost). A backlog the workers are
/// still getting through is waited for, however long it takes; a stuck queue is not.
async fn finish_operations(
    http: &reqwest::Client,
    target: &Arc<Target>,
    uploads: Vec<Upload>,
    stall: Duration,
    started: Instant,
    checked: &mut Checked,
) -> Vec<Upload> {
    let phase = Phase {
        started,
        // The drain has no fixed end; a 429 is waited out however long it asks (within reason).
        no_waits_after: Instant::now() + Duration::from_secs(3600),
        progress: Default::default(),
    };
    let (mut finished, unfinished): (Vec<_>, Vec<_>) = uploads
        .into_iter()
        .partition(|u| u.cid.is_some() || u.failed.is_some());
    checked.drained = unfinished.len() as u64;
    let mut groups: Vec<Vec<Upload>> = vec![Vec::new(); CHECKERS];
    for (i, upload) in unfinished.into_iter().enumerate() {
        groups[i % CHECKERS].push(upload);
    }
    // When an operation last finished, in milliseconds since the drain began.
    let drain_began = Instant::now();
    let last_finished = Arc::new(AtomicU64::new(0));
    let stalled = {
        let last_finished = last_finished.clone();
        move || {
            let last = Duration::from_millis(last_finished.load(Ordering::Relaxed));
            drain_began.elapsed().saturating_sub(last) > stall
        }
    };
    let mut pollers = JoinSet::new();
    for mut group in groups {
        let (http, target, phase) = (http.clone(), target.clone(), phase.clone());
        let (last_finished, stalled) = (last_finished.clone(), stalled.clone());
        pollers.spawn(async move {
            let mut tally = Tally::default();
            let mut done = Vec::new();
            while !group.is_empty() && !stalled() {
                let mut waiting = Vec::new();
                for upload in group {
                    let url = format!("{}/api/operations/{}", target.url, upload.operation);
                    let token = target.tokens.get(upload.token).map_or("", String::as_str);
                    match poll_with(&http, &phase, &mut tally, &url, token, &upload).await {
                        Polled::Finished(upload) => {
                            done.push(upload);
                            let now = drain_began.elapsed().as_millis() as u64;
                            last_finished.fetch_max(now, Ordering::Relaxed);
                        }
                        Polled::Waiting => waiting.push(upload),
                    }
                }
                group = waiting;
                if !group.is_empty() {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
            (tally, done, group)
        });
    }
    while let Some(joined) = pollers.join_next().await {
        match joined {
            Ok((tally, done, never)) => {
                checked.tally.merge(tally);
                finished.extend(done);
                for upload in never {
                    let why = format!(
                        "operation {} unfinished, and no operation finished for {} s",
                        upload.operation,
                        stall.as_secs()
                    );
                    checked.lost.insert((upload.token, upload.id.clone()), why);
                }
            }
            Err(e) => {
                let what = format!("a poller stopped: {e}");
                phase.error(&mut checked.tally, Kind::Poll, 0, "panic", what);
            }
        }
    }
    checked.drained_in = drain_began.elapsed();
    finished
}

/// Read an upload back whole: the file, or each file of the archive by its path.
async fn read_back(
    http: &reqwest::Client,
    target: &Target,
    phase: &Phase,
    tally: &mut Tally,
    upload: &Upload,
    files: &mut u64,
) -> Result<(), String> {
    if let Some(why) = &upload.failed {
        return Err(why.clone());
    }
    let Some(cid) = &upload.cid else {
        return Err("no CID".to_owned());
    };
    let wanted: Vec<(String, u64, usize)> = match &upload.content {
        Content::File { seed, len } => vec![(String::new(), *seed, *len)],
        Content::Tree(tree) => tree
            .iter()
            .map(|f| (format!("/{}", f.path), f.seed, f.len))
            .collect(),
    };
    for (path, seed, len) in wanted {
        let url = format!("{}/ipfs/{cid}{path}", target.url);
        let reply = exchange(http, phase, tally, Kind::Verify, &[200], 0, |http| {
            http.get(&url)
        })
        .await
        .map_err(|miss| match miss {
            Miss::Failed(why) => why,
            Miss::GaveUp => format!("GET {url}: rate limited"),
        })?;
        *files += 1;
        if reply.body[..] != file_bytes(seed, len)[..] {
            return Err(format!(
                "GET {url}: {} bytes, not the {len} uploaded",
                reply.body.len()
            ));
        }
    }
    Ok(())
}

/// Every acknowledged upload must be listed by its account as kept (`pinned`).
async fn check_listed(
    http: &reqwest::Client,
    target: &Target,
    uploads: &[Upload],
    started: Instant,
    checked: &mut Checked,
) {
    let phase = Phase {
        started,
        no_waits_after: Instant::now() + Duration::from_secs(120),
        progress: Default::default(),
    };
    let mut by_token: HashMap<usize, Vec<&Upload>> = HashMap::new();
    for upload in uploads.iter().filter(|u| u.failed.is_none()) {
        by_token.entry(upload.token).or_default().push(upload);
    }
    for (token_index, expected) in by_token {
        let token = target.tokens.get(token_index).map_or("", String::as_str);
        let Some(listed) = list_all(http, target, &phase, &mut checked.tally, token).await else {
            continue;
        };
        for upload in expected {
            let why = match listed.get(&upload.id) {
                Some(true) => continue,
                Some(false) => "listed by /api/uploads, but not as kept (pinned: false)",
                None => "not listed by /api/uploads",
            };
            checked
                .lost
                .entry((token_index, upload.id.clone()))
                .or_insert_with(|| format!("upload {}: {why}", upload.id));
        }
    }
}

/// Every upload the account lists: id and whether it is kept. `None` when a page failed
/// (counted as an error).
async fn list_all(
    http: &reqwest::Client,
    target: &Target,
    phase: &Phase,
    tally: &mut Tally,
    token: &str,
) -> Option<HashMap<String, bool>> {
    let mut listed = HashMap::new();
    let url = format!("{}/api/uploads", target.url);
    let mut cursor: Option<String> = None;
    loop {
        let reply = exchange(http, phase, tally, Kind::ListUploads, &[200], 0, |http| {
            let request = http
                .get(&url)
                .bearer_auth(token)
                .query(&[("limit", "1000")]);
            match &cursor {
                Some(cursor) => request.query(&[("cursor", cursor)]),
                None => request,
            }
        })
        .await
        .ok()?;
        let Some(page) = reply.json() else {
            phase.error(
                tally,
                Kind::ListUploads,
                200,
                "bad_answer",
                reply.url.clone(),
            );
            return None;
        };
        for record in page["uploads"].as_array().into_iter().flatten() {
            if let Some(id) = record["id"].as_str() {
                listed.insert(id.to_owned(), record["pinned"] == true);
            }
        }
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Some(listed),
        }
    }
}
