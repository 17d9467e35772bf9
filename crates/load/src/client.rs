//! One simulated user: a loop of requests in a realistic mix until the run's end, keeping what
//! the server acknowledged (as seeds, not bytes) for the check afterwards.
//!
//! The mix, per step: a due poll of an unfinished archive or TUS upload first; otherwise 40%
//! small POSTs (2 KiB to 400 KiB; one in twenty re-sends an earlier file, which must get the
//! same CID), 10% archives (a tar of 2 to 6 files), 8% TUS uploads (256 KiB to 3 MiB in 2 to 5
//! PATCHes, sometimes a HEAD part-way as a resuming client asks, sometimes the "finish"
//! DELETE), 25% gateway reads of earlier uploads (mostly a `Range`), 17% listings of uploads and
//! operations, on either host.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use reqwest::multipart::{Form, Part};

use crate::content::{file_bytes, tar_of, tree, Rng, Seeds, TreeFile};
use crate::request::{exchange, Miss, Phase, Reply};
use crate::tally::{Kind, Tally};

/// What was uploaded: a file made from a seed, or the files of an extracted archive.
#[derive(Clone, Debug)]
pub enum Content {
    File { seed: u64, len: usize },
    Tree(Vec<TreeFile>),
}

/// How it was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    Post,
    Archive,
    Tus,
}

/// An upload the server acknowledged: a POST's `200`, or the `204` of a TUS upload's last
/// PATCH. From then on it must be readable, byte for byte.
#[derive(Clone, Debug)]
pub struct Upload {
    pub route: Route,
    /// The upload id, as listed by `/api/uploads`.
    pub id: String,
    /// Which of the run's tokens (accounts) uploaded it.
    pub token: usize,
    pub content: Content,
    pub cid: Option<String>,
    /// What to poll (operation id, or TUS upload id) while `cid` is unknown.
    pub operation: String,
    /// The operation failed: why.
    pub failed: Option<String>,
    /// When the server acknowledged it.
    pub acked: Instant,
}

/// Where a client sends its requests.
#[derive(Clone, Debug)]
pub struct Target {
    pub url: String,
    pub account_url: String,
    pub tokens: Vec<String>,
}

struct Pending {
    upload: Upload,
    next_poll: Instant,
    interval: Duration,
}

/// What a client leaves when the run ends.
pub struct ClientResult {
    pub tally: Tally,
    /// Every acknowledged upload, finished or not.
    pub uploads: Vec<Upload>,
}

pub struct Client {
    http: reqwest::Client,
    target: Arc<Target>,
    token: usize,
    rng: Rng,
    seeds: Arc<Seeds>,
    phase: Phase,
    tally: Tally,
    done: Vec<Upload>,
    pending: VecDeque<Pending>,
}

const FIRST_POLL: Duration = Duration::from_millis(200);
const LONGEST_POLL: Duration = Duration::from_secs(2);

impl Client {
    pub fn new(
        http: reqwest::Client,
        target: Arc<Target>,
        index: usize,
        seeds: Arc<Seeds>,
        phase: Phase,
    ) -> Self {
        Self {
            token: index % target.tokens.len().max(1),
            http,
            target,
            rng: Rng::new(seeds.next()),
            seeds,
            phase,
            tally: Tally::default(),
            done: Vec::new(),
            pending: VecDeque::new(),
        }
    }

    /// Run until `deadline`; the step under way when it passes is finished, so an upload is
    /// never left half-sent.
    pub async fn run(mut self, deadline: Instant) -> ClientResult {
        // Users do not all arrive in the same millisecond.
        let arrival = Duration::from_millis(self.rng.range(0, 1000));
        tokio::time::sleep(arrival).await;
        self.upload_limit().await;
        while Instant::now() < deadline {
            if self
                .pending
                .front()
                .is_some_and(|p| p.next_poll <= Instant::now())
            {
                self.poll().await;
                continue;
            }
            match self.rng.range(0, 100) {
                0..40 => self.post().await,
                40..50 => self.archive().await,
                50..58 => self.tus().await,
                58..83 => self.gateway_read().await,
                83..91 => self.list_uploads().await,
                _ => self.list_operations().await,
            }
        }
        let mut uploads = self.done;
        uploads.extend(self.pending.into_iter().map(|p| p.upload));
        ClientResult {
            tally: self.tally,
            uploads,
        }
    }

    fn token(&self) -> &str {
        self.target
            .tokens
            .get(self.token)
            .map_or("", String::as_str)
    }

    /// Either host: both serve `/api/operations` and `/api/uploads`.
    fn either_host(&mut self) -> String {
        if self.rng.chance(50) {
            self.target.url.clone()
        } else {
            self.target.account_url.clone()
        }
    }

    async fn send(
        &mut self,
        kind: Kind,
        expect: &[u16],
        sent: u64,
        build: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<Reply, Miss> {
        exchange(
            &self.http,
            &self.phase,
            &mut self.tally,
            kind,
            expect,
            sent,
            build,
        )
        .await
    }

    fn error(&mut self, kind: Kind, status: u16, code: &str, what: String) {
        self.phase.error(&mut self.tally, kind, status, code, what);
    }

    /// The answer as JSON, or an error counted against `kind`.
    fn json(&mut self, kind: Kind, reply: &Reply) -> Option<serde_json::Value> {
        let json = reply.json();
        if json.is_none() {
            let what = format!("{}: not JSON", reply.url);
            self.error(kind, reply.status.as_u16(), "bad_answer", what);
        }
        json
    }

    async fn upload_limit(&mut self) {
        let url = format!("{}/api/upload-limit", self.target.account_url);
        let token = self.token().to_owned();
        let Ok(reply) = self
            .send(Kind::UploadLimit, &[200], 0, |http| {
                http.get(&url).bearer_auth(&token)
            })
            .await
        else {
            return;
        };
        if let Some(json) = self.json(Kind::UploadLimit, &reply) {
            if json["limit"].as_u64().is_none() {
                let what = format!("{url}: no limit in {json}");
                self.error(Kind::UploadLimit, 200, "bad_answer", what);
            }
        }
    }

    async fn post(&mut self) {
        // Now and then a file sent before, as users do: it must come back with the same CID.
        let earlier = self.rng.chance(5).then(|| self.earlier_file()).flatten();
        let (seed, len, expected_cid) = match earlier {
            Some((seed, len, cid)) => (seed, len, Some(cid)),
            None => (self.seeds.next(), self.rng.size(2 << 10, 400 << 10), None),
        };
        let bytes = Bytes::from(file_bytes(seed, len));
        let name = format!("file-{seed:016x}.bin");
        let Some((url, json)) = self.post_file(Kind::Post, bytes, name).await else {
            return;
        };
        let (Some(id), Some(cid)) = (json["id"].as_str(), json["cid"].as_str()) else {
            let what = format!("{url}: no id or cid in {json}");
            return self.error(Kind::Post, 200, "bad_answer", what);
        };
        if json["size"].as_u64() != Some(len as u64) {
            let what = format!("{url}: sent {len} bytes, the answer says {}", json["size"]);
            self.error(Kind::Post, 200, "wrong_size", what);
        }
        if let Some(expected) = expected_cid.filter(|e| e != cid) {
            let what = format!("{url}: the same {len} bytes were {expected}, now {cid}");
            self.error(Kind::Post, 200, "cid_changed", what);
        }
        self.done.push(Upload {
            route: Route::Post,
            id: id.to_owned(),
            token: self.token,
            content: Content::File { seed, len },
            cid: Some(cid.to_owned()),
            operation: json["operationId"].to_string(),
            failed: None,
            acked: Instant::now(),
        });
    }

    fn earlier_file(&mut self) -> Option<(u64, usize, String)> {
        let files: Vec<_> = self
            .done
            .iter()
            .filter_map(|u| match (&u.content, &u.cid, u.route) {
                (Content::File { seed, len }, Some(cid), Route::Post) => {
                    Some((*seed, *len, cid.clone()))
                }
                _ => None,
            })
            .collect();
        if files.is_empty() {
            return None;
        }
        let pick = self.rng.range(0, files.len() as u64) as usize;
        files.into_iter().nth(pick)
    }

    async fn archive(&mut self) {
        let files = tree(&mut self.rng, &self.seeds);
        let tar = match tar_of(&files) {
            Ok(tar) => Bytes::from(tar),
            Err(e) => return self.error(Kind::Archive, 0, "tar", format!("writing a tar: {e}")),
        };
        let name = format!("site-{:016x}.tar", files[0].seed);
        let Some((url, json)) = self.post_file(Kind::Archive, tar, name).await else {
            return;
        };
        let (Some(id), Some(operation)) = (json["id"].as_str(), json["operationId"].as_i64())
        else {
            let what = format!("{url}: no id or operationId in {json}");
            return self.error(Kind::Archive, 200, "bad_answer", what);
        };
        self.acknowledged(Upload {
            route: Route::Archive,
            id: id.to_owned(),
            token: self.token,
            content: Content::Tree(files),
            cid: json["cid"].as_str().map(str::to_owned),
            operation: operation.to_string(),
            failed: None,
            acked: Instant::now(),
        });
    }

    /// POST `bytes` as the multipart file `name`: the upload URL and the JSON answer, or
    /// nothing (the miss is counted against `kind`).
    async fn post_file(
        &mut self,
        kind: Kind,
        bytes: Bytes,
        name: String,
    ) -> Option<(String, serde_json::Value)> {
        let len = bytes.len() as u64;
        let url = format!("{}/api/upload", self.target.url);
        let token = self.token().to_owned();
        let reply = self
            .send(kind, &[200], len, |http| {
                let part = Part::stream_with_length(bytes.clone(), len).file_name(name.clone());
                http.post(&url)
                    .bearer_auth(&token)
                    .multipart(Form::new().part("file", part))
            })
            .await
            .ok()?;
        let json = self.json(kind, &reply)?;
        Some((url, json))
    }

    /// An upload the server accepted: finished already, or to be polled.
    fn acknowledged(&mut self, upload: Upload) {
        if upload.cid.is_some() {
            self.done.push(upload);
        } else {
            self.schedule(Pending {
                upload,
                next_poll: Instant::now() + FIRST_POLL,
                interval: FIRST_POLL,
            });
        }
    }

    /// Keep the unfinished uploads in the order of their next poll.
    fn schedule(&mut self, pending: Pending) {
        let at = self
            .pending
            .iter()
            .position(|p| p.next_poll > pending.next_poll)
            .unwrap_or(self.pending.len());
        self.pending.insert(at, pending);
    }

    async fn tus(&mut self) {
        let seed = self.seeds.next();
        let len = self.rng.size(256 << 10, 3 << 20);
        let bytes = Bytes::from(file_bytes(seed, len));
        let token = self.token().to_owned();
        let url = format!("{}/api/upload/tus", self.target.url);
        let name = base64::engine::general_purpose::STANDARD.encode(format!("big-{seed:016x}.bin"));
        let Ok(created) = self
            .send(Kind::TusCreate, &[201], 0, |http| {
                http.post(&url)
                    .bearer_auth(&token)
                    .header("Tus-Resumable", "1.0.0")
                    .header("Upload-Length", len.to_string())
                    .header("Upload-Metadata", format!("filename {name}"))
            })
            .await
        else {
            return;
        };
        let Some(location) = created.header("location").map(str::to_owned) else {
            let what = format!("{url}: 201 without Location");
            return self.error(Kind::TusCreate, 201, "bad_answer", what);
        };
        let location = if location.starts_with('/') {
            format!("{}{location}", self.target.url)
        } else {
            location
        };
        let id = location.rsplit('/').next().unwrap_or_default().to_owned();

        let parts = self.rng.range(2, 6) as usize;
        let mut offset = 0;
        for part in 0..parts {
            let end = len * (part + 1) / parts;
            let chunk = bytes.slice(offset..end);
            let Ok(patched) = self
                .send(Kind::TusPatch, &[204], chunk.len() as u64, |http| {
                    http.patch(&location)
                        .bearer_auth(&token)
                        .header("Tus-Resumable", "1.0.0")
                        .header("Upload-Offset", offset.to_string())
                        .header("Content-Type", "application/offset+octet-stream")
                        .body(chunk.clone())
                })
                .await
            else {
                return;
            };
            let said = patched.header("upload-offset").map(str::to_owned);
            if said.as_deref() != Some(end.to_string().as_str()) {
                let what = format!("PATCH {location} at {offset}: expected {end}, got {said:?}");
                return self.error(Kind::TusPatch, 204, "wrong_offset", what);
            }
            offset = end;
            // A client that was interrupted asks where to resume.
            if offset < len && self.rng.chance(30) && !self.head(&location, offset, len).await {
                return;
            }
        }
        self.acknowledged(Upload {
            route: Route::Tus,
            id: id.clone(),
            token: self.token,
            content: Content::File { seed, len },
            cid: None,
            operation: id,
            failed: None,
            acked: Instant::now(),
        });
        if self.rng.chance(50) {
            // The interface document's "finish": idempotent on a complete upload.
            let _ = self
                .send(Kind::TusFinish, &[204], 0, |http| {
                    http.delete(&location)
                        .bearer_auth(&token)
                        .header("Tus-Resumable", "1.0.0")
                })
                .await;
        }
    }

    /// HEAD on an unfinished TUS upload: its offset must be what was acknowledged.
    async fn head(&mut self, location: &str, offset: usize, len: usize) -> bool {
        let token = self.token().to_owned();
        let Ok(reply) = self
            .send(Kind::TusHead, &[200], 0, |http| {
                http.head(location)
                    .bearer_auth(&token)
                    .header("Tus-Resumable", "1.0.0")
            })
            .await
        else {
            return false;
        };
        let said = (reply.header("upload-offset"), reply.header("upload-length"));
        if said != (Some(&offset.to_string()[..]), Some(&len.to_string()[..])) {
            let what = format!("HEAD {location}: acknowledged {offset} of {len}, it says {said:?}");
            self.error(Kind::TusHead, 200, "wrong_offset", what);
            return false;
        }
        true
    }

    /// Poll the oldest unfinished upload once.
    async fn poll(&mut self) {
        let Some(mut pending) = self.pending.pop_front() else {
            return;
        };
        let host = self.either_host();
        match poll_once(self, &host, &pending.upload).await {
            Polled::Finished(upload) => self.done.push(upload),
            Polled::Waiting => {
                pending.interval = (pending.interval * 3 / 2).min(LONGEST_POLL);
                pending.next_poll = Instant::now() + pending.interval;
                self.schedule(pending);
            }
        }
    }

    async fn gateway_read(&mut self) {
        let readable: Vec<usize> = (0..self.done.len())
            .filter(|&i| self.done[i].cid.is_some())
            .collect();
        if readable.is_empty() {
            return self.post().await;
        }
        let upload = &self.done[readable[self.rng.range(0, readable.len() as u64) as usize]];
        let cid = upload.cid.clone().unwrap_or_default();
        let (path, seed, len) = match &upload.content {
            Content::File { seed, len } => (String::new(), *seed, *len),
            Content::Tree(files) => {
                let file = &files[self.rng.range(0, files.len() as u64) as usize];
                (format!("/{}", file.path), file.seed, file.len)
            }
        };
        let url = format!("{}/ipfs/{cid}{path}", self.target.url);
        // Mostly a piece, as a video player or a resumed download asks; now and then all.
        let range = self.rng.chance(80).then(|| {
            let start = self.rng.range(0, len as u64) as usize;
            let end = (start + self.rng.size(1, 64 << 10)).min(len);
            start..end
        });
        let expect: &[u16] = if range.is_some() { &[206] } else { &[200] };
        let Ok(reply) = self
            .send(Kind::GatewayRead, expect, 0, |http| {
                let request = http.get(&url);
                match &range {
                    Some(r) => request.header("Range", format!("bytes={}-{}", r.start, r.end - 1)),
                    None => request,
                }
            })
            .await
        else {
            return;
        };
        let wanted = range.unwrap_or(0..len);
        let bytes = file_bytes(seed, wanted.end);
        if reply.body[..] != bytes[wanted.clone()] {
            let what = format!(
                "GET {url} bytes {wanted:?}: {} bytes came back, not the ones uploaded",
                reply.body.len()
            );
            self.error(
                Kind::GatewayRead,
                reply.status.as_u16(),
                "wrong_bytes",
                what,
            );
        }
    }

    async fn list_uploads(&mut self) {
        self.list(Kind::ListUploads, "uploads").await;
    }

    async fn list_operations(&mut self) {
        self.list(Kind::ListOperations, "operations").await;
    }

    /// A page of the account's uploads or operations, newest first; sometimes the next one.
    async fn list(&mut self, kind: Kind, what: &str) {
        let host = self.either_host();
        let token = self.token().to_owned();
        let url = format!("{host}/api/{what}");
        let mut cursor: Option<String> = None;
        for _ in 0..2 {
            let Ok(reply) = self
                .send(kind, &[200], 0, |http| {
                    let request = http.get(&url).bearer_auth(&token).query(&[("limit", "20")]);
                    match &cursor {
                        Some(cursor) => request.query(&[("cursor", cursor)]),
                        None => request,
                    }
                })
                .await
            else {
                return;
            };
            let Some(json) = self.json(kind, &reply) else {
                return;
            };
            if !json[what].is_array() {
                let message = format!("{url}: no {what} in the answer");
                return self.error(kind, 200, "bad_answer", message);
            }
            match json["nextCursor"].as_str() {
                Some(next) if self.rng.chance(30) => cursor = Some(next.to_owned()),
                _ => return,
            }
        }
    }
}

pub enum Polled {
    Finished(Upload),
    Waiting,
}

/// One look at an upload's operation: finished (completed with its CID, or failed, counted as
/// an error), or still waiting (including when the look itself failed: counted, tried later).
pub async fn poll_once(client: &mut Client, host: &str, upload: &Upload) -> Polled {
    let url = format!("{host}/api/operations/{}", upload.operation);
    let token = client.token().to_owned();
    poll_with(
        &client.http,
        &client.phase,
        &mut client.tally,
        &url,
        &token,
        upload,
    )
    .await
}

/// [`poll_once`] for any caller (the drain after the run has no `Client`).
pub async fn poll_with(
    http: &reqwest::Client,
    phase: &Phase,
    tally: &mut Tally,
    url: &str,
    token: &str,
    upload: &Upload,
) -> Polled {
    let Ok(reply) = exchange(http, phase, tally, Kind::Poll, &[200], 0, |http| {
        http.get(url).bearer_auth(token)
    })
    .await
    else {
        return Polled::Waiting;
    };
    let Some(op) = reply.json() else {
        phase.error(
            tally,
            Kind::Poll,
            200,
            "bad_answer",
            format!("{url}: not JSON"),
        );
        return Polled::Waiting;
    };
    let mut upload = upload.clone();
    match op["status"].as_str() {
        Some("completed") => match op["cid"].as_str() {
            Some(cid) => {
                upload.cid = Some(cid.to_owned());
                tally.answered(Kind::AckToCid, upload.acked.elapsed(), 0);
                Polled::Finished(upload)
            }
            None => {
                let what = format!("{url}: completed without a cid");
                phase.error(tally, Kind::Poll, 200, "bad_answer", what);
                upload.failed = Some("completed without a cid".to_owned());
                Polled::Finished(upload)
            }
        },
        Some("failed") => {
            // The server accepted the upload and then failed it: an error, and (since
            // nothing is readable) a loss at the check.
            let code = op["error"]["error"].as_str().unwrap_or("failed").to_owned();
            let message = op["error"]["message"].as_str().unwrap_or_default();
            let what = format!("{url}: operation failed: {message}");
            phase.error(tally, Kind::Poll, 200, &format!("op:{code}"), what.clone());
            upload.failed = Some(what);
            Polled::Finished(upload)
        }
        _ => Polled::Waiting,
    }
}
