//! What happened to an account's uploads and pins ([`Event`]s, in the order they committed),
//! the webhook endpoints that hear of them, and each event's [`Delivery`] to each endpoint:
//! the durable queue of sends, with every attempt recorded.
//!
//! Events are written by triggers on `operations` (`sql/dialect.rs`, `events_triggers`) and
//! deliveries by a trigger on `events`, in the transaction that made the change: no write
//! path can forget one, and none is queued for a change that rolled back.

use std::fmt;
use std::str::FromStr;

/// The kinds of event, as their names are written (`upload.completed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    UploadCompleted,
    UploadFailed,
    UploadDeleted,
    PinPinned,
    PinFailed,
    PinRemoved,
}

impl EventType {
    pub const ALL: [Self; 6] = [
        Self::UploadCompleted,
        Self::UploadFailed,
        Self::UploadDeleted,
        Self::PinPinned,
        Self::PinFailed,
        Self::PinRemoved,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::UploadCompleted => "upload.completed",
            Self::UploadFailed => "upload.failed",
            Self::UploadDeleted => "upload.deleted",
            Self::PinPinned => "pin.pinned",
            Self::PinFailed => "pin.failed",
            Self::PinRemoved => "pin.removed",
        }
    }

    /// Whether the event ends an operation's processing (rather than removing what it kept).
    pub const fn is_finish(self) -> bool {
        !matches!(self, Self::UploadDeleted | Self::PinRemoved)
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EventType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| {
                let known: Vec<&str> = Self::ALL.iter().map(|t| t.as_str()).collect();
                format!("unknown event type {s:?} (known: {})", known.join(", "))
            })
    }
}

/// A list of event types, as stored and as query strings write it (`a,b`); empty means every
/// type where a filter takes it.
pub fn parse_types(list: &str) -> Result<Vec<EventType>, String> {
    let mut types = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let t: EventType = name.parse()?;
        if !types.contains(&t) {
            types.push(t);
        }
    }
    Ok(types)
}

/// One change to one upload or pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The account's streams resume after it (`Last-Event-ID`); it grows in commit order.
    pub id: i64,
    pub account_id: i64,
    pub kind: EventType,
    pub operation_id: i64,
    pub created_at_ms: i64,
}

/// How long events are kept for a stream to resume over (the contract promises 24 hours).
pub const EVENTS_KEPT_MS: i64 = 7 * 24 * 3600 * 1000;

/// At most this many webhook endpoints per account.
pub const MAX_WEBHOOKS: usize = 16;

/// A webhook endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    /// `wh_` and random characters.
    pub id: String,
    pub account_id: i64,
    pub url: String,
    pub events: Vec<EventType>,
    pub description: String,
    /// `whsec_` and the base64 of the key (the Standard Webhooks form).
    pub secret: String,
    pub created_at_ms: i64,
}

impl Webhook {
    /// `events` as the table stores it, between commas, so a trigger matches a type with
    /// `LIKE '%,type,%'`.
    pub fn events_text(events: &[EventType]) -> String {
        let names: Vec<&str> = events.iter().map(|t| t.as_str()).collect();
        format!(",{},", names.join(","))
    }
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryStatus {
    /// Not yet taken by the endpoint: waiting for its next attempt.
    Pending,
    /// An attempt was answered with a 2xx.
    Delivered,
    /// No attempt succeeded for 24 hours (or the endpoint was deleted first).
    Failed,
}

impl DeliveryStatus {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Failed => "failed",
        }
    }
}

impl FromStr for DeliveryStatus {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "pending" => Ok(Self::Pending),
            "delivered" => Ok(Self::Delivered),
            "failed" => Ok(Self::Failed),
            other => Err(format!("unknown delivery status {other:?}")),
        }
    }
}

/// One event for one endpoint, and every attempt made to send it.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub id: i64,
    pub webhook_id: String,
    pub event: Event,
    pub status: DeliveryStatus,
    pub next_attempt_at_ms: Option<i64>,
    pub created_at_ms: i64,
    pub attempts: Vec<Attempt>,
}

/// One try at sending a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub at_ms: i64,
    pub duration_ms: i64,
    /// The endpoint's answer, when it answered.
    pub response_status: Option<u16>,
    /// Why it did not count: a status outside 2xx, a timeout, a refused connection.
    pub error: Option<String>,
}

impl Attempt {
    pub fn succeeded(&self) -> bool {
        self.response_status
            .is_some_and(|s| (200..300).contains(&s))
    }
}

/// A delivery a dispatcher has claimed, with what it needs to send it.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    pub id: i64,
    pub attempts: u32,
    pub expires_at_ms: i64,
    pub url: String,
    pub secret: String,
    pub event: Event,
}

/// When the attempt after `attempts` failed ones is due, counted from the last: the first
/// retry within about 5 s, the second within about 5 minutes, then longer (the schedule
/// Standard Webhooks' reference senders use), until the delivery's 24 hours run out.
pub fn retry_after_ms(attempts: u32) -> i64 {
    const SCHEDULE_S: [i64; 7] = [5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600];
    SCHEDULE_S[(attempts.max(1) as usize - 1).min(SCHEDULE_S.len() - 1)] * 1000
}

/// How long a delivery is retried for, from when it was queued (or retried by hand).
pub const DELIVERY_WINDOW_MS: i64 = 24 * 3600 * 1000;

/// What an account used: the usage route's figures other than its stored bytes and quota.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    /// Live uploads (not pins) and live pins.
    pub uploads: u64,
    pub pins: u64,
    /// Bytes of the uploads made in the period (pins not counted: nothing was uploaded).
    pub uploaded_bytes: u64,
    /// Bytes the gateway and Bitswap sent of the account's content in the period's month.
    pub served_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_read_back_as_written() {
        for t in EventType::ALL {
            assert_eq!(t.as_str().parse::<EventType>(), Ok(t));
        }
        assert_eq!(
            parse_types("pin.pinned, upload.completed,pin.pinned").unwrap(),
            [EventType::PinPinned, EventType::UploadCompleted]
        );
        let wrong = parse_types("upload.done").unwrap_err();
        assert!(
            wrong.contains("upload.done") && wrong.contains("pin.removed"),
            "{wrong}"
        );
        assert_eq!(
            Webhook::events_text(&[EventType::UploadFailed, EventType::PinRemoved]),
            ",upload.failed,pin.removed,"
        );
    }

    #[test]
    fn retries_back_off_as_promised() {
        assert_eq!(retry_after_ms(1), 5_000);
        assert_eq!(retry_after_ms(2), 300_000);
        assert!(retry_after_ms(3) > retry_after_ms(2));
        assert_eq!(retry_after_ms(50), retry_after_ms(7));
    }
}
