//! The records clients read, as JSON, wherever they read them: an upload's result and its
//! listing, an operation's record, a pin's `PinStatus` (Pinning Service API), and an event's
//! body, which webhooks send and the account's stream carries. The HTTP routes answer them;
//! webhook deliveries are rendered here too, so nothing outside HTTP calls back into it.

use cairn_store::events::{Event, EventType};
use cairn_store::model::{ArchiveMode, Operation, OperationStatus, StoredAs};
use serde::Serialize;
use serde_json::{json, Map, Value};

/// A timestamp (milliseconds since the epoch) as the API writes them: RFC 3339, UTC.
pub fn rfc3339(ms: i64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_millis(time).to_string()
}

/// The operation record (`docs/contract.md` "Operation record").
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationRecord {
    id: i64,
    upload_id: String,
    operation: &'static str,
    status: &'static str,
    status_message: String,
    progress_percent: f64,
    cid: Option<String>,
    error: Option<serde_json::Value>,
    name: String,
    size: u64,
    mime_type: String,
    archive_mode: Option<&'static str>,
    /// What the bytes are stored as (`file`, `archive`, `car`); `null` until they were looked
    /// at (a TUS upload's until it is processed) and for pins.
    kind: Option<&'static str>,
    /// The archive format found (`zip`, `tar.gz`, ...), for an archive.
    archive_format: Option<String>,
    created_at: String,
    updated_at: String,
    completed_at: Option<String>,
}

impl From<Operation> for OperationRecord {
    fn from(op: Operation) -> Self {
        let error = error_object(&op);
        Self {
            id: op.id,
            upload_id: op.upload_id,
            operation: op.kind.as_str(),
            status: op.status.as_str(),
            status_message: op.status_message,
            progress_percent: op.progress_percent,
            cid: op.cid,
            error,
            name: op.name,
            size: op.size,
            mime_type: op.mime_type,
            archive_mode: op.archive_mode.map(ArchiveMode::as_str),
            kind: op.stored_as.map(StoredAs::as_str),
            archive_format: op.archive_format,
            created_at: rfc3339(op.created_at_ms),
            updated_at: rfc3339(op.updated_at_ms),
            completed_at: op.completed_at_ms.map(rfc3339),
        }
    }
}

/// The upload result of `POST /api/upload` (`docs/contract.md` "Upload result").
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UploadResult {
    id: String,
    cid: Option<String>,
    name: String,
    size: u64,
    mime_type: String,
    operation_id: i64,
    status: &'static str,
    /// What the bytes are stored as (`file`, `archive`, `car`), once looked at.
    kind: Option<&'static str>,
    /// The archive format found, for an archive.
    archive_format: Option<String>,
    created_at: String,
    /// What it is tagged with (`{}` when nothing).
    keyvalues: serde_json::Value,
    /// The upload link it was sent through, if any.
    link: Option<String>,
}

impl From<Operation> for UploadResult {
    fn from(op: Operation) -> Self {
        Self {
            id: op.upload_id,
            cid: op.cid,
            name: op.name,
            size: op.size,
            mime_type: op.mime_type,
            operation_id: op.id,
            status: op.status.as_str(),
            kind: op.stored_as.map(StoredAs::as_str),
            archive_format: op.archive_format,
            created_at: rfc3339(op.created_at_ms),
            keyvalues: (&op.keyvalues).into(),
            link: op.link_id,
        }
    }
}

/// A failed operation's error, in the shape of every error body.
pub fn error_object(op: &Operation) -> Option<serde_json::Value> {
    (op.error.as_ref()).map(|e| serde_json::json!({"error": e.code, "message": e.message}))
}

/// An upload as listed: the upload result of the contract, plus whether its content is kept.
#[derive(Serialize)]
pub struct UploadRecord {
    #[serde(flatten)]
    result: UploadResult,
    /// The content is stored and kept (the upload completed and is not deleted).
    pinned: bool,
    /// Why it failed, as the operation says (`null` unless it failed).
    error: Option<serde_json::Value>,
}

impl From<Operation> for UploadRecord {
    fn from(op: Operation) -> Self {
        Self {
            pinned: op.status == OperationStatus::Completed && op.deleted_at_ms.is_none(),
            error: error_object(&op),
            result: op.into(),
        }
    }
}

/// A `Pin` as the spec writes it.
#[derive(Serialize)]
struct PinJson {
    cid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    origins: Vec<String>,
    meta: Map<String, Value>,
}

/// A `PinStatus`.
#[derive(Serialize)]
pub struct PinStatus {
    requestid: String,
    status: &'static str,
    created: String,
    pin: PinJson,
    delegates: Vec<String>,
    info: Map<String, Value>,
}

/// The spec's names for an operation's statuses.
pub fn spec_status(status: OperationStatus) -> &'static str {
    match status {
        OperationStatus::Pending => "queued",
        OperationStatus::Processing => "pinning",
        OperationStatus::Completed => "pinned",
        OperationStatus::Failed => "failed",
    }
}

pub fn pin_status(op: Operation, delegates: &[String]) -> PinStatus {
    let mut info = Map::new();
    if let Some(error) = &op.error {
        info.insert("reason".into(), Value::String(error.message.clone()));
    }
    let Value::Object(meta) = Value::from(&op.keyvalues) else {
        unreachable!("key-values are a JSON object")
    };
    PinStatus {
        requestid: op.upload_id,
        status: spec_status(op.status),
        created: rfc3339(op.created_at_ms),
        pin: PinJson {
            cid: op.cid.unwrap_or_default(),
            name: Some(op.name).filter(|name| !name.is_empty()),
            origins: op.origins,
            meta,
        },
        delegates: delegates.to_vec(),
        info,
    }
}

/// An event's `data` in a webhook body and in `GET /api/events`: the upload's record (as
/// `GET /api/uploads/{id}` answers) or the pin's (a Pinning Service API `PinStatus`).
pub fn event_data(event: &Event, op: &Operation) -> Value {
    let value = match event.kind {
        EventType::PinPinned | EventType::PinFailed | EventType::PinRemoved => {
            serde_json::to_value(pin_status(op.clone(), &[]))
        }
        _ => serde_json::to_value(UploadRecord::from(op.clone())),
    };
    value.unwrap_or(Value::Null)
}

/// The body a webhook is sent, and an account stream's event `data`.
pub fn event_body(event: &Event, op: &Operation) -> Value {
    json!({
        "type": event.kind.as_str(),
        "timestamp": rfc3339(event.created_at_ms),
        "data": event_data(event, op),
    })
}
