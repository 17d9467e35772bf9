//! What happened to an account's uploads and pins ([`Event`]s, in the order they committed),
//! the webhook endpoints that hear of them, and each event's [`Delivery`] to each endpoint:
//! the durable queue of sends, with every attempt recorded.
//!
//! Events are written by triggers on `operations` (`sql/dialect.rs`, `events_triggers`), in
//! the transaction that made the change: no write path can forget one, and none is raised for
//! a change that rolled back. Deliveries follow the events: one dispatcher at a time reads the
//! events after a cursor kept in the store ([`NewDeliveries`]), and a delivery's row is written
//! with its first attempt, the cursor moving in the same transaction; so an upload's commit
//! writes nothing for webhooks, and a batch of first attempts is one write.

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

/// A delivery a dispatcher has taken, with what it needs to send it.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    /// Its row; `None` before its first attempt, whose outcome writes the row.
    pub id: Option<i64>,
    pub webhook_id: String,
    pub attempts: u32,
    pub expires_at_ms: i64,
    pub url: String,
    pub secret: String,
    pub event: Event,
}

impl ClaimedDelivery {
    /// The `webhook-id` every attempt carries: one per event, so a receiver can tell a
    /// retry from a new event (as Standard Webhooks senders do, an event sent to two
    /// endpoints has the same id at both).
    pub fn message_id(&self) -> String {
        format!("msg_{}", self.event.id)
    }

    /// Where it stands after `attempt`: delivered, due again later, or failed once its 24
    /// hours are over.
    pub fn status_after(&self, attempt: &Attempt) -> DeliveryStatus {
        if attempt.succeeded() {
            DeliveryStatus::Delivered
        } else if self.next_attempt_ms(attempt) > self.expires_at_ms {
            DeliveryStatus::Failed
        } else {
            DeliveryStatus::Pending
        }
    }

    /// When it is due again after `attempt` failed.
    pub fn next_attempt_ms(&self, attempt: &Attempt) -> i64 {
        attempt.at_ms + attempt.duration_ms + retry_after_ms(self.attempts + 1)
    }
}

/// Deliveries no dispatcher has attempted yet: the events after the dispatch cursor
/// (`after`) up to `through`, each with every live endpoint subscribed to it (there may be
/// none: the events of accounts without endpoints). Recording their first attempts moves the
/// cursor to `through`.
#[derive(Debug, Clone, Default)]
pub struct NewDeliveries {
    pub after: i64,
    pub through: i64,
    pub deliveries: Vec<ClaimedDelivery>,
    /// The batch stopped at its limit: more events wait after `through`.
    pub full: bool,
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
    /// Uploads (not pins) the account keeps now, and pins by CID that are pinned: completed
    /// and not deleted.
    pub uploads: u64,
    pub pins: u64,
    /// Bytes of the uploads made in the period (pins not counted: nothing was uploaded).
    pub uploaded_bytes: u64,
    /// Bytes the gateway and Bitswap sent of the account's content in the period's month.
    pub served_bytes: u64,
}

/// A calendar month, UTC: what usage is counted over (`served_bytes.month` is its `YYYY-MM`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Month {
    year: i64,
    month: u32,
}

const DAY_MS: i64 = 24 * 3600 * 1000;

impl Month {
    /// The month `ms` (milliseconds since the epoch) falls in.
    pub fn of(ms: i64) -> Self {
        let (year, month, _) = civil_from_days(ms.div_euclid(DAY_MS));
        Self { year, month }
    }

    pub fn parse(text: &str) -> Option<Self> {
        let (year, month) = text.split_once('-')?;
        if year.len() != 4 || month.len() != 2 {
            return None;
        }
        let (year, month) = (year.parse().ok()?, month.parse().ok()?);
        ((1970..=9999).contains(&year) && (1..=12).contains(&month)).then_some(Self { year, month })
    }

    /// Its first millisecond, and the first of the next month.
    pub fn bounds_ms(self) -> (i64, i64) {
        let next = if self.month == 12 {
            (self.year + 1, 1)
        } else {
            (self.year, self.month + 1)
        };
        (
            days_from_civil(self.year, self.month, 1) * DAY_MS,
            days_from_civil(next.0, next.1, 1) * DAY_MS,
        )
    }
}

impl std::fmt::Display for Month {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}", self.year, self.month)
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (i64::from(month) + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a day counted since 1970-01-01 (the inverse of [`days_from_civil`]).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
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

    #[test]
    fn months_are_calendar_months() {
        let november = Month::parse("2026-11").unwrap();
        let (start, end) = november.bounds_ms();
        // 2026-11-01T00:00:00Z and 2026-12-01T00:00:00Z.
        assert_eq!((start, end), (1_793_491_200_000, 1_796_083_200_000));
        assert_eq!(november.to_string(), "2026-11");
        assert_eq!(Month::of(start), november);
        assert_eq!(Month::of(end - 1), november);
        let (_, end) = Month::parse("2024-12").unwrap().bounds_ms();
        assert_eq!(end, 1_735_689_600_000, "2025-01-01T00:00:00Z");
        let (start, end) = Month::parse("2024-02").unwrap().bounds_ms();
        assert_eq!((end - start) / DAY_MS, 29);
        for wrong in ["2026-13", "2026-1", "26-11", "2026/11", "2026-00", ""] {
            assert_eq!(Month::parse(wrong), None, "{wrong}");
        }
    }
}
