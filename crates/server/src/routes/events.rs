//! Live events as Server-Sent Events, on both hosts.
//!
//! - `GET /api/operations/{id}/events`: one upload or pin, from `receiving` (a TUS upload's
//!   bytes arriving) through `queued`, `extracting` or `importing`, and `storing`, to one
//!   `completed` or `failed`; then the stream ends. Progress ids name the state they show
//!   (`p<stage>-<bytes>`), so a reconnect with `Last-Event-ID` sends only what changed since;
//!   the final event's id is its event's in the account's log.
//! - `GET /api/events`: the account's events (`upload.completed`, `pin.pinned`, ...; `?types=`
//!   to choose) as they commit on any node, resumed after `Last-Event-ID` from the log (kept
//!   7 days). Without one, the stream starts with the next event.
//!
//! Both take the token as `?access_token=` too ([`StreamCaller`]): `EventSource` sends no
//! headers.
//!
//! Each stream writes through a queue of its own, [`QUEUED`] events deep: a reader that lets
//! it fill is sent a `dropped` event saying so, and the stream ends (it resumes with
//! `Last-Event-ID`), so a slow reader costs a bounded amount of memory.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use cairn_service::events::{operations_of, LiveEvent};
use cairn_store::events::{parse_types, Event, EventType};
use cairn_store::model::{Operation, OperationKind, OperationRef, OperationStatus};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc};

use super::operations::readable_operation;
use crate::auth::{need, Caller, StreamCaller};
use crate::error::ApiError;
use crate::rate_limit::Endpoint;
use crate::state::AppState;
use cairn_service::records::{error_object, event_body, OperationRecord};

/// Events a stream holds for a reader before the reader counts as too slow.
const QUEUED: usize = 64;
/// A comment this often keeps proxies from closing a quiet stream.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How often an operation's progress is read while it is unfinished (workers report every
/// 500 ms).
const PROGRESS_EVERY: Duration = Duration::from_millis(500);
/// Events read from the log per query when a stream catches up.
const PAGE: u32 = 200;

fn stream(events: mpsc::Receiver<SseEvent>) -> Response {
    let events = futures_util::stream::unfold(events, |mut events| async move {
        let event = events.recv().await?;
        Some((Ok::<_, Infallible>(event), events))
    });
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    // nginx holds a proxied answer in its buffers unless told not to: events would come late.
    response.headers_mut().insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    response
}

/// Queue `event` for the reader; `false` when the stream must end: the reader went away, or
/// let the queue fill (then it is told why, in the place kept for that).
fn push(out: &mpsc::Sender<SseEvent>, event: SseEvent) -> bool {
    if out.capacity() <= 1 {
        let dropped = json!({
            "error": "slow_reader",
            "message": format!(
                "this stream fell {QUEUED} events behind and was closed; reconnect with \
                 Last-Event-ID to continue after the last event received"
            ),
        });
        let _ = out.try_send(
            SseEvent::default()
                .event("dropped")
                .data(dropped.to_string()),
        );
        return false;
    }
    out.try_send(event).is_ok()
}

fn last_event_id(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    headers
        .get("last-event-id")
        .map(|value| {
            value
                .to_str()
                .map(|id| id.trim().to_owned())
                .map_err(|_| ApiError::BadRequest("Last-Event-ID is not text".into()))
        })
        .transpose()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsParams {
    types: Option<String>,
    /// Taken by [`StreamCaller`], named here so it is not refused as unknown.
    #[serde(rename = "access_token")]
    _access_token: Option<String>,
}

/// `GET /api/events`.
pub async fn account_events(
    State(state): State<AppState>,
    StreamCaller(Caller(account, ..)): StreamCaller<need::Read>,
    headers: HeaderMap,
    params: Result<Query<EventsParams>, QueryRejection>,
) -> Result<Response, ApiError> {
    state
        .limiter
        .check(account.id, Endpoint::Operations)
        .await?;
    let Query(params) = params.map_err(ApiError::from)?;
    let types = parse_types(params.types.as_deref().unwrap_or(""))
        .map_err(|e| ApiError::BadRequest(format!("types: {e}")))?;
    let after = match last_event_id(&headers)? {
        Some(id) => Some(id.parse::<i64>().map_err(|_| {
            ApiError::BadRequest(format!(
                "Last-Event-ID {id:?} is not an id this stream sent (a number)"
            ))
        })?),
        None => None,
    };
    // Subscribed before the log is read: what commits meanwhile arrives here, or is in the
    // read (and is skipped the second time by its id).
    let live = state.service.events.subscribe(account.id);
    let after = match after {
        Some(after) => after,
        None => state.service.store.last_event_id().await?,
    };
    let (out, events) = mpsc::channel(QUEUED);
    tokio::spawn(follow_account(state, account.id, types, after, live, out));
    Ok(stream(events))
}

async fn follow_account(
    state: AppState,
    account_id: i64,
    types: Vec<EventType>,
    mut after: i64,
    mut live: broadcast::Receiver<Arc<LiveEvent>>,
    out: mpsc::Sender<SseEvent>,
) {
    // The bus hands this stream its account's events only.
    let wanted = |event: &Event| types.is_empty() || types.contains(&event.kind);
    let mut catch_up = true;
    loop {
        if catch_up {
            // From the log, until it has nothing newer.
            loop {
                let page = match state
                    .service
                    .store
                    .events_after(account_id, after, &types, PAGE)
                    .await
                {
                    Ok(page) => page,
                    Err(e) => {
                        tracing::warn!(error = %e, "an event stream could not read the log");
                        return;
                    }
                };
                let full = page.len() == PAGE as usize;
                let operations = operations_of(state.service.store.as_ref(), page.iter()).await;
                for event in page {
                    if !send_event(&state, &out, &event, operations.get(&event.id)).await {
                        return;
                    }
                    after = event.id;
                }
                if !full {
                    break;
                }
            }
            catch_up = false;
        }
        tokio::select! {
            received = live.recv() => match received {
                Ok(live) => {
                    let event = &live.event;
                    if event.id > after && wanted(event) {
                        if !send_event(&state, &out, event, live.operation.as_ref()).await {
                            return;
                        }
                        after = event.id;
                    }
                }
                // Fell behind the node's buffer: the log has what was missed.
                Err(broadcast::error::RecvError::Lagged(_)) => catch_up = true,
                Err(broadcast::error::RecvError::Closed) => return,
            },
            () = out.closed() => return,
        }
    }
}

/// Send `event` with its upload or pin (read here when the caller could not).
async fn send_event(
    state: &AppState,
    out: &mpsc::Sender<SseEvent>,
    event: &Event,
    operation: Option<&Operation>,
) -> bool {
    let read;
    let op = match operation {
        Some(op) => op,
        None => {
            read = state
                .service
                .store
                .operation(event.account_id, &OperationRef::Id(event.operation_id))
                .await;
            let Ok(Some(op)) = &read else {
                tracing::warn!(event = event.id, "an event's operation could not be read");
                return false;
            };
            op
        }
    };
    push(
        out,
        SseEvent::default()
            .id(event.id.to_string())
            .event(event.kind.as_str())
            .data(event_body(event, op).to_string()),
    )
}

/// `GET /api/operations/{id}/events`: readable by whoever may read the operation.
pub async fn operation_events(
    State(state): State<AppState>,
    StreamCaller(caller): StreamCaller<need::UploadOrRead>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let op = readable_operation(&state, &caller, &id).await?;
    let last = last_event_id(&headers)?;
    // A reader back for more after the final event: `204` is what tells an `EventSource`
    // not to reconnect (an empty stream would have it reconnect every few seconds).
    if op.status.is_terminal()
        && last.as_deref() == Some(final_event_id(&state, &op).await.as_str())
    {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let live = state.service.events.subscribe(op.account_id);
    let (out, events) = mpsc::channel(QUEUED);
    tokio::spawn(follow_operation(state, op, last, live, out));
    Ok(stream(events))
}

async fn follow_operation(
    state: AppState,
    mut op: Operation,
    mut last: Option<String>,
    mut live: broadcast::Receiver<Arc<LiveEvent>>,
    out: mpsc::Sender<SseEvent>,
) {
    loop {
        if op.status.is_terminal() {
            finish(&state, &op, last.as_deref(), &out).await;
            return;
        }
        let progress = progress(&state, &op).await;
        let id = progress.id();
        if last.as_deref() != Some(id.as_str()) {
            let event = SseEvent::default()
                .id(id.clone())
                .event("progress")
                .data(progress.json().to_string());
            if !push(&out, event) {
                return;
            }
            last = Some(id);
        }
        // The next look: after a while, or at once when the log says it finished.
        let wait = tokio::time::sleep(PROGRESS_EVERY);
        tokio::pin!(wait);
        loop {
            tokio::select! {
                () = &mut wait => break,
                received = live.recv() => match received {
                    Ok(live) if live.event.operation_id == op.id => break,
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                () = out.closed() => return,
            }
        }
        match state
            .service
            .store
            .operation(op.account_id, &OperationRef::Id(op.id))
            .await
        {
            Ok(Some(now)) => op = now,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, operation = op.id, "an operation stream could not read it");
                return;
            }
        }
    }
}

/// The final event, unless the reader has it already (`last`).
async fn finish(
    state: &AppState,
    op: &Operation,
    last: Option<&str>,
    out: &mpsc::Sender<SseEvent>,
) {
    let id = final_event_id(state, op).await;
    if last == Some(id.as_str()) {
        return;
    }
    let event = match op.status {
        OperationStatus::Completed => SseEvent::default()
            .event("completed")
            .data(json!(OperationRecord::from(op.clone())).to_string()),
        _ => {
            let error = error_object(op)
                .unwrap_or_else(|| json!({"error": "internal", "message": "the operation failed"}));
            SseEvent::default().event("failed").data(error.to_string())
        }
    };
    push(out, event.id(id));
}

/// The id of a finished operation's final event.
async fn final_event_id(state: &AppState, op: &Operation) -> String {
    let finished = state.service.store.operation_events(op.id).await;
    match finished {
        Ok(events) => events
            .iter()
            .find(|e| e.kind.is_finish())
            .map(|e| e.id.to_string()),
        Err(e) => {
            tracing::warn!(error = %e, operation = op.id, "an operation stream could not read its events");
            None
        }
    }
    // Finished before the log existed (an earlier release): named by the operation.
    .unwrap_or_else(|| format!("op{}", op.id))
}

/// Where an unfinished operation is.
struct Progress {
    stage: Stage,
    bytes: Option<u64>,
    total: Option<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Receiving,
    Queued,
    Extracting,
    Importing,
    Storing,
}

impl Stage {
    const fn as_str(self) -> &'static str {
        match self {
            Self::Receiving => "receiving",
            Self::Queued => "queued",
            Self::Extracting => "extracting",
            Self::Importing => "importing",
            Self::Storing => "storing",
        }
    }
}

impl Progress {
    fn id(&self) -> String {
        format!("p{}-{}", self.stage as u8, self.bytes.unwrap_or(0))
    }

    fn json(&self) -> Value {
        let mut progress = json!({"stage": self.stage.as_str()});
        if let Some(bytes) = self.bytes {
            progress["bytes"] = json!(bytes);
        }
        if let Some(total) = self.total {
            progress["totalBytes"] = json!(total);
        }
        progress
    }
}

async fn progress(state: &AppState, op: &Operation) -> Progress {
    if op.status == OperationStatus::Pending {
        if op.kind == OperationKind::TusUpload {
            if let Some(receiving) = tus_received(state, &op.upload_id).await {
                return receiving;
            }
        }
        return Progress {
            stage: Stage::Queued,
            bytes: None,
            total: Some(op.size).filter(|_| op.kind != OperationKind::Pin),
        };
    }
    // A worker's message begins with its stage (`worker.rs`, `pin.rs`).
    let word = op.status_message.split(':').next().unwrap_or("");
    if op.kind == OperationKind::Pin || word == "fetching" {
        let bytes = op
            .status_message
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok());
        return Progress {
            stage: Stage::Importing,
            bytes: bytes.or(Some(0)),
            total: None,
        };
    }
    let stage = match word {
        "extracting" => Stage::Extracting,
        "importing" => Stage::Importing,
        "storing" => Stage::Storing,
        // Claimed, and not reported yet: not guessed, since a guess could go back a stage.
        _ => Stage::Queued,
    };
    let bytes = (op.progress_percent / 100.0 * op.size as f64) as u64;
    Progress {
        stage,
        bytes: (stage != Stage::Queued).then_some(bytes.min(op.size)),
        total: Some(op.size),
    }
}

/// A TUS upload's bytes so far, while they are still arriving.
async fn tus_received(state: &AppState, upload_id: &str) -> Option<Progress> {
    let upload = state.service.store.tus_upload(upload_id).await.ok()??;
    if upload.state != cairn_store::model::TusState::Receiving {
        return None;
    }
    let (bytes, id) = (state.service.tus_bytes.clone(), upload_id.to_owned());
    let offset = tokio::task::spawn_blocking(move || bytes.offset(&id))
        .await
        .ok()?
        .ok()?;
    Some(Progress {
        stage: Stage::Receiving,
        bytes: Some(offset),
        total: upload.length,
    })
}
