//! Waiting for an operation to finish (`cairn upload --wait`): by its event stream
//! (`GET /api/operations/{id}/events`), showing each stage as it moves, resumed with
//! `Last-Event-ID` where it is cut; by polling where no stream can be had (an older server, a
//! proxy that buffers or keeps cutting it).

use std::time::Duration;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

use crate::client::Connection;

/// Streams cut in a row, with no event between, before polling takes over.
const CUTS_BEFORE_POLLING: u32 = 3;
/// Longer than the server's 15 s keep-alive: a stream this quiet is not reaching us.
const QUIET_LIMIT: Duration = Duration::from_secs(40);

impl Connection {
    /// The operation once it is completed or failed, as `GET /api/operations/{id}` answers.
    pub async fn wait(&self, id: &str) -> Result<Value> {
        let spinner = Stage::new(id);
        let finished = self.follow(id, &spinner).await;
        spinner.0.finish_and_clear();
        if let Err(e) = finished {
            tracing::debug!(error = %e, "following the event stream failed; polling");
        }
        // After the final event, one read gives the record in its usual shape; without a
        // stream, polling finds it.
        self.poll(id).await
    }

    /// Until the stream sends its final event; an error when it cannot be followed.
    async fn follow(&self, id: &str, spinner: &Stage) -> Result<()> {
        let url = format!("{}/api/operations/{id}/events", self.url);
        let mut last_id: Option<String> = None;
        let mut cuts = 0;
        while cuts < CUTS_BEFORE_POLLING {
            let mut request = self
                .authed(self.http.get(&url))?
                .header("Accept", "text/event-stream");
            if let Some(id) = &last_id {
                request = request.header("Last-Event-ID", id);
            }
            let mut response = request.send().await?;
            anyhow::ensure!(
                response.status().is_success(),
                "the event stream answered {}",
                response.status()
            );
            let mut events = EventStream::default();
            let mut moved = false;
            loop {
                let chunk = match tokio::time::timeout(QUIET_LIMIT, response.chunk()).await {
                    Ok(Ok(Some(chunk))) => chunk,
                    // Cut, ended or silent: resume after the last event.
                    Ok(Ok(None) | Err(_)) | Err(_) => break,
                };
                for event in events.push(&chunk) {
                    moved = true;
                    if event.id.is_some() {
                        last_id = event.id;
                    }
                    match event.kind.as_str() {
                        "progress" => spinner.show(&event.data),
                        "completed" | "failed" => return Ok(()),
                        // `dropped` (we read too slowly) and anything newer: resume.
                        _ => {}
                    }
                }
            }
            cuts = if moved { 1 } else { cuts + 1 };
        }
        anyhow::bail!("the event stream was cut {CUTS_BEFORE_POLLING} times without an event")
    }

    /// Polls until the operation is completed or failed, backing off up to 2 s.
    async fn poll(&self, id: &str) -> Result<Value> {
        let mut delay = Duration::from_millis(100);
        loop {
            let op = self.operation(id).await?;
            if matches!(op["status"].as_str(), Some("completed" | "failed")) {
                return Ok(op);
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }
}

/// The operation's stage on stderr (drawn only on a terminal).
struct Stage(ProgressBar);

impl Stage {
    fn new(id: &str) -> Self {
        let spinner = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{spinner} operation {prefix}: {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        spinner.set_style(style);
        spinner.set_prefix(id.to_owned());
        spinner.enable_steady_tick(Duration::from_millis(200));
        Self(spinner)
    }

    /// `{"stage", "bytes"?, "totalBytes"?}` as "importing 1.2 MB of 4.0 MB".
    fn show(&self, data: &str) {
        let Ok(progress) = serde_json::from_str::<Value>(data) else {
            return;
        };
        let mut message = progress["stage"].as_str().unwrap_or("working").to_owned();
        let size = |v: &Value| v.as_u64().map(|n| indicatif::DecimalBytes(n).to_string());
        match (size(&progress["bytes"]), size(&progress["totalBytes"])) {
            (Some(bytes), Some(total)) => message += &format!(" {bytes} of {total}"),
            (Some(bytes), None) => message += &format!(" {bytes}"),
            (None, Some(total)) => message += &format!(" ({total})"),
            (None, None) => {}
        }
        self.0.set_message(message);
    }
}

/// One Server-Sent Event.
#[derive(Debug, PartialEq)]
struct ServerEvent {
    kind: String,
    data: String,
    id: Option<String>,
}

/// Server-Sent Events from a stream's bytes as they arrive (the HTML standard's parsing,
/// without `retry`, which this client does not need).
#[derive(Default)]
struct EventStream {
    unread: Vec<u8>,
    kind: String,
    data: Vec<String>,
    id: Option<String>,
}

impl EventStream {
    /// The events that `chunk` completes.
    fn push(&mut self, chunk: &[u8]) -> Vec<ServerEvent> {
        self.unread.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = self.unread.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.unread.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() {
                    events.push(ServerEvent {
                        kind: std::mem::take(&mut self.kind),
                        data: std::mem::take(&mut self.data).join("\n"),
                        id: self.id.take(),
                    });
                }
                self.kind.clear();
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value).to_owned();
            match field {
                "event" => self.kind = value,
                "data" => self.data.push(value),
                "id" => self.id = Some(value),
                // A comment (the keep-alive) or a field this client does not use.
                _ => {}
            }
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_are_read_whole_and_comments_are_skipped() {
        let text = b": keep-alive\n\nid: p3-10\nevent: progress\ndata: {\"stage\":\"importing\"}\n\r\nevent: completed\nid: 7\ndata: {\"cid\":\"bafy\"}\n\n";
        let mut stream = EventStream::default();
        let mut events = Vec::new();
        for piece in text.chunks(5) {
            events.extend(stream.push(piece));
        }
        assert_eq!(
            events,
            [
                ServerEvent {
                    kind: "progress".into(),
                    data: "{\"stage\":\"importing\"}".into(),
                    id: Some("p3-10".into()),
                },
                ServerEvent {
                    kind: "completed".into(),
                    data: "{\"cid\":\"bafy\"}".into(),
                    id: Some("7".into()),
                },
            ]
        );
    }
}
