//! Issue 38, "a thousand crashes": `cairn serve` SIGKILLed at a random moment of every round
//! while several clients send a mixed load (small and larger POSTs, TUS chunks, archives, pins
//! of stored content, deletes) and `cairn gc` collects beside it. A journal records every
//! acknowledgement (a 2xx answer); after each restart on the same stores, every acknowledged
//! upload not deleted reads back byte for byte, every acknowledged TUS offset is at most
//! HEAD's, and acknowledged deletes stay deleted. The end waits for queued work, checks
//! everything once more, and `cairn fsck` must be clean.
//!
//! `CAIRN_SOAK_ROUNDS` sets the rounds (defaults are CI's), `CAIRN_SOAK_SEED` replays the
//! choices of a run (the moments of the kills still differ); `scripts/soak` runs many more.

use cairn_harness::server;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairn_test_support::moto::Moto;
use cairn_test_support::postgres::Database;
use cairn_test_support::seaweedfs::SeaweedFs;
use cairn_test_support::xorshift::XorShift64;
use reqwest::StatusCode;
use serde_json::Value;
use server::{cairn, cid_of, content, start, tar_of, Running};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_loses_nothing_acknowledged_across_sigkills() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let backend = Backend {
        name: "sqlite",
        serve: Vec::new(),
        admin: vec!["--data-dir".into(), data.display().to_string()],
        data,
    };
    soak(&backend, rounds(20)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_and_s3_lose_nothing_acknowledged_across_sigkills() {
    // moto, which the suite installs anyway; `CAIRN_SOAK_S3=seaweedfs` (scripts/soak's long
    // runs) for a server built to store objects rather than to mock them.
    let (store, _s3): (String, Box<dyn std::any::Any>) =
        match std::env::var("CAIRN_SOAK_S3").as_deref() {
            Ok("seaweedfs") => {
                let seaweedfs = SeaweedFs::start(&["soak"]);
                (seaweedfs.bucket("soak"), Box::new(seaweedfs))
            }
            Ok("moto") | Err(_) => {
                let moto = Moto::start();
                (moto.bucket("soak"), Box::new(moto))
            }
            Ok(other) => panic!("CAIRN_SOAK_S3 is moto or seaweedfs, not {other}"),
        };
    let database = Database::create("soak");
    let dir = tempfile::tempdir().unwrap();
    let shared: Vec<String> = vec![
        "--database-url".into(),
        database.url.clone(),
        "--store".into(),
        store,
    ];
    let backend = Backend {
        name: "postgres+s3",
        serve: shared.clone(),
        admin: shared,
        data: dir.path().join("data"),
    };
    soak(&backend, rounds(5)).await;
}

fn rounds(default: usize) -> usize {
    std::env::var("CAIRN_SOAK_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(default)
}

/// Where a node keeps its state: what `serve` is given besides its data directory, and what
/// `cairn gc` and `cairn fsck` are given to find the same stores.
struct Backend {
    name: &'static str,
    data: PathBuf,
    serve: Vec<String>,
    admin: Vec<String>,
}

impl Backend {
    fn start(&self) -> Running {
        let mut args: Vec<&str> = vec![
            // The collector is the separate `cairn gc` each round starts.
            "--gc-interval",
            "0s",
            "--uploads-per-minute",
            "1000000",
            // The killed node's claims are taken over within a second by the next one.
            "--worker-lease-seconds",
            "1",
        ];
        args.extend(self.serve.iter().map(String::as_str));
        start(&self.data, &args)
    }

    fn admin(&self, command: &str) -> std::process::Command {
        let mut admin = cairn();
        admin.arg(command).args(&self.admin);
        admin
    }
}

/// The kinds of acknowledgement the summary counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Post,
    LargePost,
    Tus,
    Archive,
    Pin,
    Delete,
}

/// What an upload holds, as the client sent it (content is regenerated from its seed).
#[derive(Clone)]
enum Expected {
    File { len: usize, seed: u64, cid: String },
    Tree { files: Vec<(String, usize, u64)> },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Live,
    /// A DELETE was sent and not answered: either way is right until one is acknowledged.
    Deleting,
    /// Deleted, acknowledged in round `.0`.
    Deleted(usize),
}

/// An acknowledged upload or pin.
struct Entry {
    /// The upload id (a pin's `requestid`).
    id: String,
    kind: Kind,
    expected: Expected,
    /// The root as the server reported it, once it has.
    cid: Option<String>,
    state: State,
    /// Pins of it in flight: it is not deleted meanwhile, so the pin finds it stored.
    pinning: usize,
    /// A DELETE of it is in flight: another client does not send one too.
    deleting: bool,
    /// Counted lost or corrupted already (each entry counts once).
    failed: bool,
}

/// A TUS upload not finished yet.
struct TusUpload {
    id: String,
    url_path: String,
    len: usize,
    seed: u64,
    acknowledged: u64,
    failed: bool,
}

#[derive(Default)]
struct Journal {
    entries: Vec<Entry>,
    tus: Vec<TusUpload>,
    next_seed: u64,
    acknowledged: BTreeMap<Kind, u64>,
    /// Answers that acknowledged nothing, by request and status (`503` for a commit that
    /// lost the race with a collection is expected; the summary shows them all).
    refused: BTreeMap<String, u64>,
    lost: Vec<String>,
    corrupted: Vec<String>,
}

impl Journal {
    /// Every stream is a file to the server, whatever its first bytes: seed 22130 begins
    /// with gzip's two magic bytes, and is stored as the file it is.
    fn seed(&mut self) -> u64 {
        // xorshift seeds 2k and 2k+1 give one stream.
        self.next_seed += 2;
        self.next_seed
    }

    fn ack(&mut self, kind: Kind) {
        *self.acknowledged.entry(kind).or_default() += 1;
    }

    fn refused(&mut self, what: &str, status: StatusCode) {
        *self
            .refused
            .entry(format!("{what} {}", status.as_u16()))
            .or_default() += 1;
    }

    fn live(&self) -> usize {
        let live = |e: &&Entry| e.state == State::Live && !e.failed;
        self.entries.iter().filter(live).count()
    }
}

fn lose(failed: &mut bool, lost: &mut Vec<String>, what: String) {
    if !*failed {
        eprintln!("LOST {what}");
        *failed = true;
        lost.push(what);
    }
}

fn corrupt(failed: &mut bool, corrupted: &mut Vec<String>, what: String) {
    if !*failed {
        eprintln!("CORRUPTED {what}");
        *failed = true;
        corrupted.push(what);
    }
}

/// What the clients of one round share.
struct Round {
    number: usize,
    upload: String,
    token: String,
    http: reqwest::Client,
    journal: Mutex<Journal>,
    /// Set once the server is killed: clients stop at their next step.
    stop: AtomicBool,
}

impl Round {
    fn journal(&self) -> std::sync::MutexGuard<'_, Journal> {
        self.journal.lock().unwrap()
    }
}

/// An answer read whole, or `None` when the connection failed (the server was killed).
async fn send(
    request: reqwest::RequestBuilder,
) -> Option<(StatusCode, reqwest::header::HeaderMap, Vec<u8>)> {
    let response = request.send().await.ok()?;
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.bytes().await.ok()?;
    Some((status, headers, body.to_vec()))
}

async fn soak(backend: &Backend, rounds: usize) {
    let seed = std::env::var("CAIRN_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!(
        "soak on {}: {rounds} rounds, CAIRN_SOAK_SEED={seed}",
        backend.name
    );
    let began = Instant::now();
    let mut random = XorShift64::new(seed);
    let mut journal = Journal::default();
    let mut token = String::new();
    let (mut collections, mut collections_failed) = (0, 0);
    for number in 0..rounds {
        let mut running = backend.start();
        if number == 0 {
            token = running.token.clone();
            assert!(!token.is_empty(), "the first start creates the account");
        }
        if number > 0 {
            check(&running, &token, &mut journal, number, false).await;
        }
        let round = Arc::new(Round {
            number,
            upload: running.upload.clone(),
            token: token.clone(),
            http: client(),
            journal: Mutex::new(std::mem::take(&mut journal)),
            stop: AtomicBool::new(false),
        });
        let clients: Vec<_> = (0..3u64)
            .map(|c| {
                let round = round.clone();
                let rng = XorShift64::new(
                    seed ^ ((number as u64) << 8 | c).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                );
                tokio::spawn(async move { load(&round, rng).await })
            })
            .collect();
        // Killed anywhere from the first requests to well into the load; the collector starts
        // at a random moment before that.
        let kill_at = Duration::from_millis(50 + random.next_u64() % 2950);
        let gc_at = kill_at.mul_f64((random.next_u64() % 1000) as f64 / 1000.0);
        tokio::time::sleep(gc_at).await;
        let collector = backend
            .admin("gc")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        tokio::time::sleep(kill_at - gc_at).await;
        running.child.kill().unwrap(); // SIGKILL
        running.child.wait().unwrap();
        round.stop.store(true, Ordering::SeqCst);
        for client in clients {
            client.await.unwrap();
        }
        // The collector is left to finish: it runs on beside a dead node as beside a live one.
        let collected = tokio::task::spawn_blocking(move || collector.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        collections += 1;
        if !collected.status.success() {
            collections_failed += 1;
            eprintln!(
                "round {number}: cairn gc failed: {}",
                String::from_utf8_lossy(&collected.stderr)
            );
        }
        if number % 100 == 99 {
            // Long runs show how they go.
            let journal = round.journal();
            eprintln!(
                "soak: round {}, {} acknowledged, {} lost, {} corrupted, {:.0} s",
                number + 1,
                journal.acknowledged.values().sum::<u64>(),
                journal.lost.len(),
                journal.corrupted.len(),
                began.elapsed().as_secs_f64()
            );
        }
        journal = Arc::try_unwrap(round)
            .ok()
            .expect("the clients are done")
            .journal
            .into_inner()
            .unwrap();
    }

    // The end: one more start, not killed. Work of every kind is done once more (so the run
    // acknowledged each, however few its rounds), deletes in doubt are sent again, TUS
    // uploads are finished, and queued work (archives, TUS uploads) gets its CID.
    let running = backend.start();
    journal = every_kind_once(&running, &token, rounds, journal, &mut random).await;
    finish(&running, &token, &mut journal).await;
    check(&running, &token, &mut journal, rounds, true).await;
    let (status, _) = server::terminate(running);
    assert!(status.success(), "the last server stopped cleanly");
    let fsck = backend.admin("fsck").output().unwrap();
    let fsck_said = format!(
        "{}{}",
        String::from_utf8_lossy(&fsck.stdout),
        String::from_utf8_lossy(&fsck.stderr)
    );

    let acknowledged: u64 = journal.acknowledged.values().sum();
    let by_kind: Vec<String> = journal
        .acknowledged
        .iter()
        .map(|(kind, n)| format!("{kind:?} {n}"))
        .collect();
    let (lost, corrupted) = (journal.lost.len(), journal.corrupted.len());
    eprintln!(
        "soak: {rounds} rounds, {acknowledged} acknowledged ({}), {lost} lost, {corrupted} \
         corrupted, {:.1} s",
        by_kind.join(", "),
        began.elapsed().as_secs_f64()
    );
    eprintln!(
        "soak: on {}, seed {seed}, {:.2} s a round; answers that acknowledged nothing: {:?}; \
         {collections} collections, {collections_failed} failed",
        backend.name,
        began.elapsed().as_secs_f64() / rounds.max(1) as f64,
        journal.refused
    );
    assert_eq!(lost, 0, "lost: {:#?}", journal.lost);
    assert_eq!(corrupted, 0, "corrupted: {:#?}", journal.corrupted);
    assert!(fsck.status.success(), "cairn fsck: {fsck_said}");
    assert_eq!(
        collections_failed, 0,
        "every collection finishes or is killed"
    );
    // The load itself: work of every kind was acknowledged.
    assert_eq!(
        journal.acknowledged.len(),
        6,
        "some kind was never acknowledged: {by_kind:?}"
    );
}

/// Against a server that is not killed, each kind of work until it is acknowledged once more
/// (a few tries each: a pin needs a stored upload, a TUS upload several steps).
async fn every_kind_once(
    running: &server::Running,
    token: &str,
    number: usize,
    journal: Journal,
    random: &mut XorShift64,
) -> Journal {
    let round = Round {
        number,
        upload: running.upload.clone(),
        token: token.to_owned(),
        http: client(),
        journal: Mutex::new(journal),
        stop: AtomicBool::new(false),
    };
    let acknowledged = |kind| {
        round
            .journal()
            .acknowledged
            .get(&kind)
            .copied()
            .unwrap_or(0)
    };
    for kind in [
        Kind::Post,
        Kind::LargePost,
        Kind::Archive,
        Kind::Tus,
        Kind::Pin,
        Kind::Delete,
    ] {
        let before = acknowledged(kind);
        for _ in 0..50 {
            let done = match kind {
                Kind::Post => post_small(&round, random).await,
                Kind::LargePost => {
                    let seed = round.journal().seed();
                    post_file(&round, kind, 3 << 20, seed).await
                }
                Kind::Archive => post_archive(&round, random).await,
                Kind::Tus => tus_step(&round, random).await,
                Kind::Pin => pin(&round, random).await,
                Kind::Delete => delete(&round, random).await,
            };
            assert!(done.is_some(), "the server stopped answering ({kind:?})");
            if acknowledged(kind) > before {
                break;
            }
        }
        assert!(
            acknowledged(kind) > before,
            "{kind:?} was never acknowledged"
        );
    }
    round.journal.into_inner().unwrap()
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap()
}

/// One client's requests until the server is killed.
async fn load(round: &Round, mut rng: XorShift64) {
    while !round.stop.load(Ordering::SeqCst) {
        let pick = rng.next_u64() % 100;
        let too_many = round.journal().live() > 30;
        let going = if too_many || pick >= 80 {
            delete(round, &mut rng).await
        } else if pick < 30 {
            post_small(round, &mut rng).await
        } else if pick < 36 {
            let len = (2 << 20) + (rng.next_u64() % (2 << 20)) as usize;
            let seed = round.journal().seed();
            post_file(round, Kind::LargePost, len, seed).await
        } else if pick < 56 {
            tus_step(round, &mut rng).await
        } else if pick < 70 {
            post_archive(round, &mut rng).await
        } else {
            pin(round, &mut rng).await
        };
        if going.is_none() {
            return;
        }
    }
}

/// A small file, new or (one in four) the same bytes as an earlier upload, deleted or not:
/// the upload that finds its blocks indexed is the one a collection could race.
async fn post_small(round: &Round, rng: &mut XorShift64) -> Option<()> {
    let again = {
        let journal = round.journal();
        let files: Vec<_> = journal
            .entries
            .iter()
            .filter_map(|e| match e.expected {
                Expected::File { len, seed, .. } if len < 1 << 20 => Some((len, seed)),
                _ => None,
            })
            .collect();
        (rng.next_u64().is_multiple_of(4) && !files.is_empty())
            .then(|| files[rng.next_u64() as usize % files.len()])
    };
    let (len, seed) = match again {
        Some(again) => again,
        None => (
            1 + (rng.next_u64() % 300_000) as usize,
            round.journal().seed(),
        ),
    };
    post_file(round, Kind::Post, len, seed).await
}

/// `part` POSTed as an upload: the server's answer when it took it (`Some(None)` when it
/// refused, counted under `what`), `None` when the connection failed.
async fn post_upload(
    round: &Round,
    part: reqwest::multipart::Part,
    what: &'static str,
) -> Option<Option<Value>> {
    let (status, _, body) = send(
        round
            .http
            .post(format!("{}/api/upload", round.upload))
            .bearer_auth(&round.token)
            .multipart(reqwest::multipart::Form::new().part("file", part)),
    )
    .await?;
    if status != StatusCode::OK {
        round.journal().refused(what, status);
        return Some(None);
    }
    Some(Some(serde_json::from_slice(&body).unwrap()))
}

async fn post_file(round: &Round, kind: Kind, len: usize, seed: u64) -> Option<()> {
    let bytes = content(len, seed);
    // Hashing off the executor, whose threads the other clients and the kill's timer need.
    let (bytes, expected) = tokio::task::spawn_blocking(move || {
        let cid = cid_of(&bytes);
        (bytes, cid)
    })
    .await
    .unwrap();
    let part = reqwest::multipart::Part::bytes(bytes).file_name("file.bin");
    let Some(answer) = post_upload(round, part, "POST").await? else {
        return Some(());
    };
    let mut journal = round.journal();
    let cid = answer["cid"].as_str().map(str::to_owned);
    let id = answer["id"].as_str().unwrap().to_owned();
    journal.ack(kind);
    let mut entry = Entry {
        id: id.clone(),
        kind,
        expected: Expected::File {
            len,
            seed,
            cid: expected.clone(),
        },
        cid: cid.clone(),
        state: State::Live,
        pinning: 0,
        deleting: false,
        failed: false,
    };
    if cid.as_deref() != Some(&expected) {
        let Journal { corrupted, .. } = &mut *journal;
        corrupt(
            &mut entry.failed,
            corrupted,
            format!(
                "round {}: POST {id} answered {cid:?}, the bytes are {expected}",
                round.number
            ),
        );
    }
    journal.entries.push(entry);
    Some(())
}

/// A tar of two or three files, extracted on upload: acknowledged with `cid: null`, its CID
/// comes when a worker has extracted it.
async fn post_archive(round: &Round, rng: &mut XorShift64) -> Option<()> {
    let files: Vec<(String, usize, u64)> = (0..2 + rng.next_u64() % 2)
        .map(|i| {
            let len = 1 + (rng.next_u64() % 200_000) as usize;
            (format!("f{i}.bin"), len, round.journal().seed())
        })
        .collect();
    let bytes: Vec<Vec<u8>> = files
        .iter()
        .map(|(_, len, seed)| content(*len, *seed))
        .collect();
    let named: Vec<(&str, &[u8])> = files
        .iter()
        .zip(&bytes)
        .map(|((name, ..), b)| (name.as_str(), b.as_slice()))
        .collect();
    let part = reqwest::multipart::Part::bytes(tar_of(&named)).file_name("tree.tar");
    let Some(answer) = post_upload(round, part, "POST archive").await? else {
        return Some(());
    };
    let mut journal = round.journal();
    journal.ack(Kind::Archive);
    journal.entries.push(Entry {
        id: answer["id"].as_str().unwrap().to_owned(),
        kind: Kind::Archive,
        expected: Expected::Tree { files },
        cid: answer["cid"].as_str().map(str::to_owned),
        state: State::Live,
        pinning: 0,
        deleting: false,
        failed: false,
    });
    Some(())
}

fn tus(round: &Round, method: reqwest::Method, url: &str) -> reqwest::RequestBuilder {
    round
        .http
        .request(method, url)
        .bearer_auth(&round.token)
        .header("Tus-Resumable", "1.0.0")
}

/// A few chunks of a TUS upload, begun in this round or an earlier one, resumed from HEAD's
/// offset as a client does after losing its connection.
async fn tus_step(round: &Round, rng: &mut XorShift64) -> Option<()> {
    let waiting = round.journal().tus.pop();
    let mut upload = match waiting {
        Some(upload) => upload,
        None => {
            let len = 300_000 + (rng.next_u64() % 1_200_000) as usize;
            let (status, headers, _) = send(
                tus(
                    round,
                    reqwest::Method::POST,
                    &format!("{}/api/upload/tus", round.upload),
                )
                .header("Upload-Length", len.to_string()),
            )
            .await?;
            let mut journal = round.journal();
            if status != StatusCode::CREATED {
                journal.refused("TUS create", status);
                return Some(());
            }
            let location = headers["location"].to_str().unwrap();
            let (_, path) = location.split_once("/api/").unwrap();
            TusUpload {
                id: path.rsplit('/').next().unwrap().to_owned(),
                url_path: format!("/api/{path}"),
                len,
                seed: journal.seed(),
                acknowledged: 0,
                failed: false,
            }
        }
    };
    let going = tus_chunks(round, rng, &mut upload).await;
    if upload.acknowledged == upload.len as u64 {
        let (len, seed) = (upload.len, upload.seed);
        let cid = tokio::task::spawn_blocking(move || cid_of(&content(len, seed)))
            .await
            .unwrap();
        round.journal().entries.push(Entry {
            id: upload.id,
            kind: Kind::Tus,
            expected: Expected::File { len, seed, cid },
            cid: None,
            state: State::Live,
            pinning: 0,
            deleting: false,
            failed: upload.failed,
        });
    } else {
        round.journal().tus.push(upload);
    }
    going
}

async fn tus_chunks(round: &Round, rng: &mut XorShift64, upload: &mut TusUpload) -> Option<()> {
    let url = format!("{}{}", round.upload, upload.url_path);
    let (status, headers, _) = send(tus(round, reqwest::Method::HEAD, &url)).await?;
    if status != StatusCode::OK {
        round.journal().refused("TUS HEAD", status);
        return Some(());
    }
    let mut offset: u64 = headers["upload-offset"].to_str().unwrap().parse().unwrap();
    // HEAD's offset is the server's word too: a PATCH whose 204 the kill cut off counts.
    upload.acknowledged = upload.acknowledged.max(offset);
    let bytes = content(upload.len, upload.seed);
    for _ in 0..1 + rng.next_u64() % 3 {
        if offset == upload.len as u64 || round.stop.load(Ordering::SeqCst) {
            break;
        }
        let end = (offset as usize + 64 * 1024 + (rng.next_u64() % (192 * 1024)) as usize)
            .min(upload.len);
        let (status, headers, _) = send(
            tus(round, reqwest::Method::PATCH, &url)
                .header("Content-Type", "application/offset+octet-stream")
                .header("Upload-Offset", offset.to_string())
                .body(bytes[offset as usize..end].to_vec()),
        )
        .await?;
        if status != StatusCode::NO_CONTENT {
            round.journal().refused("TUS PATCH", status);
            return Some(());
        }
        offset = headers["upload-offset"].to_str().unwrap().parse().unwrap();
        upload.acknowledged = offset;
        round.journal().ack(Kind::Tus);
    }
    Some(())
}

/// A pin by CID of content stored already: it completes at once.
async fn pin(round: &Round, rng: &mut XorShift64) -> Option<()> {
    let target = {
        let mut journal = round.journal();
        let stored: Vec<usize> = (0..journal.entries.len())
            .filter(|&i| {
                let e = &journal.entries[i];
                e.state == State::Live && e.kind != Kind::Pin && e.cid.is_some() && !e.failed
            })
            .collect();
        if stored.is_empty() {
            return Some(());
        }
        let i = stored[rng.next_u64() as usize % stored.len()];
        journal.entries[i].pinning += 1;
        i
    };
    let (cid, expected) = {
        let journal = round.journal();
        let e = &journal.entries[target];
        (e.cid.clone().unwrap(), e.expected.clone())
    };
    let answer = send(
        round
            .http
            .post(format!("{}/pins", round.upload))
            .bearer_auth(&round.token)
            .json(&serde_json::json!({ "cid": cid, "name": "soak" })),
    )
    .await;
    let mut journal = round.journal();
    journal.entries[target].pinning -= 1;
    let (status, _, body) = answer?;
    if status != StatusCode::ACCEPTED {
        journal.refused("POST /pins", status);
        return Some(());
    }
    let answer: Value = serde_json::from_slice(&body).unwrap();
    journal.ack(Kind::Pin);
    if answer["status"] != "pinned" {
        journal.refused("POST /pins not pinned at once", status);
    }
    journal.entries.push(Entry {
        id: answer["requestid"].as_str().unwrap().to_owned(),
        kind: Kind::Pin,
        expected,
        cid: Some(cid),
        state: State::Live,
        pinning: 0,
        deleting: false,
        failed: false,
    });
    Some(())
}

/// Delete an upload or pin: one whose delete was left unanswered first, as a client retries.
async fn delete(round: &Round, rng: &mut XorShift64) -> Option<()> {
    let (i, url) = {
        let mut journal = round.journal();
        let doubtful = journal
            .entries
            .iter()
            .position(|e| e.state == State::Deleting && !e.deleting);
        let i = match doubtful {
            Some(i) => i,
            None => {
                let live: Vec<usize> = (0..journal.entries.len())
                    .filter(|&i| {
                        let e = &journal.entries[i];
                        e.state == State::Live && e.pinning == 0
                    })
                    .collect();
                if live.len() < 5 {
                    return Some(());
                }
                live[rng.next_u64() as usize % live.len()]
            }
        };
        let e = &mut journal.entries[i];
        e.state = State::Deleting;
        e.deleting = true;
        let url = match e.kind {
            Kind::Pin => format!("{}/pins/{}", round.upload, e.id),
            _ => format!("{}/api/uploads/{}", round.upload, e.id),
        };
        (i, url)
    };
    let answer = send(round.http.delete(url).bearer_auth(&round.token)).await;
    let mut journal = round.journal();
    journal.entries[i].deleting = false;
    let (status, _, _) = answer?;
    if status.is_success() {
        journal.entries[i].state = State::Deleted(round.number);
        journal.ack(Kind::Delete);
    } else {
        journal.refused("DELETE", status);
    }
    Some(())
}

/// Every upload the server lists for the account (live ones, in any status), by id.
async fn listed(running: &Running, token: &str) -> HashMap<String, Value> {
    let mut all = HashMap::new();
    let mut cursor = String::new();
    loop {
        let page = server::get_json(
            &format!("{}/api/uploads?limit=1000{cursor}", running.upload),
            token,
        )
        .await;
        for upload in page["uploads"]
            .as_array()
            .unwrap_or_else(|| panic!("{page}"))
        {
            all.insert(upload["id"].as_str().unwrap().to_owned(), upload.clone());
        }
        match page["nextCursor"].as_str() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => break,
        }
    }
    all
}

/// Every pin of the account (live ones, in any status), by `requestid`, as the uploads list
/// puts them: one request, however many were deleted (asking for each would meet the rate
/// limit on reads).
async fn listed_pins(running: &Running, token: &str) -> HashMap<String, Value> {
    let url = format!(
        "{}/pins?status=queued,pinning,pinned,failed&limit=1000",
        running.upload
    );
    // The count and the page come from one snapshot: they agree even while workers finish.
    let page = server::get_json(&url, token).await;
    let results = page["results"]
        .as_array()
        .unwrap_or_else(|| panic!("{page}"));
    assert_eq!(
        page["count"].as_u64(),
        Some(results.len() as u64),
        "one page, and its count"
    );
    let status = |pin: &Value| match pin["status"].as_str() {
        Some("pinned") => "completed",
        Some("failed") => "failed",
        _ => "pending",
    };
    results
        .iter()
        .map(|pin| {
            let id = pin["requestid"].as_str().unwrap().to_owned();
            let record = serde_json::json!({ "status": status(pin), "cid": pin["pin"]["cid"] });
            (id, record)
        })
        .collect()
}

/// Reads `cid` (and each file of a tree) back through the gateway: `Err` names what is
/// missing, `Ok(false)` that bytes differ.
async fn reads_back(
    http: &reqwest::Client,
    upload: &str,
    cid: &str,
    expected: &Expected,
) -> Result<bool, String> {
    let paths: Vec<(String, usize, u64)> = match expected {
        Expected::File { len, seed, .. } => vec![(cid.to_owned(), *len, *seed)],
        Expected::Tree { files } => files
            .iter()
            .map(|(name, len, seed)| (format!("{cid}/{name}"), *len, *seed))
            .collect(),
    };
    for (path, len, seed) in paths {
        let response = http
            .get(format!("{upload}/ipfs/{path}"))
            .send()
            .await
            .map_err(|e| format!("/ipfs/{path}: {e}"))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| format!("/ipfs/{path}: {e}"))?;
        if status != StatusCode::OK {
            return Err(format!("/ipfs/{path}: {status}"));
        }
        if body[..] != content(len, seed)[..] {
            return Ok(false);
        }
    }
    Ok(true)
}

/// After a restart: what was acknowledged is there, and what was deleted is not (both by
/// the lists of uploads and pins, one request each). `last`: queued work must have finished.
async fn check(running: &Running, token: &str, journal: &mut Journal, round: usize, last: bool) {
    let http = client();
    let listed = listed(running, token).await;
    let pins = listed_pins(running, token).await;
    let Journal {
        entries,
        tus,
        lost,
        corrupted,
        ..
    } = journal;
    for e in entries.iter_mut().filter(|e| !e.failed) {
        let what = format!("round {round}: {:?} {}", e.kind, e.id);
        // Pins are listed on their own route; the uploads list leaves them out.
        let record = match e.kind {
            Kind::Pin => pins.get(&e.id).cloned(),
            _ => listed.get(&e.id).cloned(),
        };
        match (e.state, record) {
            (State::Deleting, _) => {}
            (State::Deleted(_), None) => {}
            (State::Deleted(r), Some(_)) => lose(
                &mut e.failed,
                lost,
                format!("{what}: deleted in round {r}, it is back"),
            ),
            (State::Live, None) => lose(&mut e.failed, lost, format!("{what}: no such upload")),
            (State::Live, Some(record)) => match record["status"].as_str() {
                Some("completed") => {
                    let cid = record["cid"].as_str().unwrap().to_owned();
                    if let Expected::File { cid: expected, .. } = &e.expected {
                        if &cid != expected {
                            let why =
                                format!("{what}: completed as {cid}, the bytes are {expected}");
                            corrupt(&mut e.failed, corrupted, why);
                            continue;
                        }
                    }
                    e.cid = Some(cid.clone());
                    match reads_back(&http, &running.upload, &cid, &e.expected).await {
                        Ok(true) => {}
                        Ok(false) => corrupt(
                            &mut e.failed,
                            corrupted,
                            format!("{what}: {cid} reads back other bytes"),
                        ),
                        Err(why) => lose(&mut e.failed, lost, format!("{what}: {why}")),
                    }
                }
                Some("failed") => lose(&mut e.failed, lost, format!("{what}: failed: {record}")),
                _ if last => lose(
                    &mut e.failed,
                    lost,
                    format!("{what}: never finished: {record}"),
                ),
                _ => {}
            },
        }
    }
    for upload in tus.iter_mut().filter(|u| !u.failed) {
        let what = format!("round {round}: TUS {}", upload.id);
        let response = http
            .head(format!("{}{}", running.upload, upload.url_path))
            .bearer_auth(token)
            .header("Tus-Resumable", "1.0.0")
            .send()
            .await
            .unwrap();
        match response.status() {
            StatusCode::OK => {}
            StatusCode::NOT_FOUND | StatusCode::GONE => {
                let why = format!("{what}: HEAD answered {}", response.status());
                lose(&mut upload.failed, lost, why);
                continue;
            }
            // Locked by the killed node's lease, say: asked again next round.
            other => {
                eprintln!("{what}: HEAD answered {other}");
                continue;
            }
        }
        let offset: u64 = response.headers()["upload-offset"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        if offset < upload.acknowledged {
            let why = format!(
                "{what}: HEAD says {offset}, {} were acknowledged",
                upload.acknowledged
            );
            lose(&mut upload.failed, lost, why);
        }
    }
    // A TUS upload lost is counted once, and not resumed.
    tus.retain(|u| !u.failed);
    // Uploads whose answer the kill cut off are the client's to forget: deleted, so that
    // what the node stores stays bounded however many rounds run.
    let known: HashSet<&str> = entries
        .iter()
        .map(|e| e.id.as_str())
        .chain(tus.iter().map(|u| u.id.as_str()))
        .collect();
    for id in listed.keys().filter(|id| !known.contains(id.as_str())) {
        let response = http
            .delete(format!("{}/api/uploads/{id}", running.upload))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::NO_CONTENT, "deleting {id}");
    }
    for id in pins.keys().filter(|id| !known.contains(id.as_str())) {
        let response = http
            .delete(format!("{}/pins/{id}", running.upload))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::ACCEPTED, "deleting pin {id}");
    }
}

/// The last, uninterrupted start: unanswered deletes sent again, unfinished TUS uploads sent
/// to the end, and queued work waited for (two minutes at most).
async fn finish(running: &Running, token: &str, journal: &mut Journal) {
    let http = client();
    let round = Round {
        number: usize::MAX,
        upload: running.upload.clone(),
        token: token.to_owned(),
        http: http.clone(),
        journal: Mutex::new(std::mem::take(journal)),
        stop: AtomicBool::new(false),
    };
    let mut rng = XorShift64::new(1);
    round.journal().tus.retain(|u| !u.failed);
    for _ in 0..1000 {
        let doubtful = round
            .journal()
            .entries
            .iter()
            .any(|e| e.state == State::Deleting);
        let unfinished = !round.journal().tus.is_empty();
        if doubtful {
            delete(&round, &mut rng).await.expect("the server is up");
        } else if unfinished {
            tus_step(&round, &mut rng).await.expect("the server is up");
        } else {
            break;
        }
    }
    *journal = round.journal.into_inner().unwrap();
    let Journal { tus, lost, .. } = journal;
    for mut upload in tus.drain(..) {
        let why = format!(
            "TUS {}: could not be finished at {}",
            upload.id, upload.acknowledged
        );
        lose(&mut upload.failed, lost, why);
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let listed = listed(running, token).await;
        let queued = journal.entries.iter().any(|e| {
            e.state == State::Live
                && !e.failed
                && listed
                    .get(&e.id)
                    .is_some_and(|r| r["status"] == "pending" || r["status"] == "processing")
        });
        if !queued || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
