//! What each client counts as it goes (latencies, bytes, rate-limit waits, errors by status
//! and code), merged into one tally at the end.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// One kind of request a client makes; each gets its own throughput and latencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `GET {account_url}/api/upload-limit`, once per client, as the CLI does.
    UploadLimit,
    /// A plain file by `POST /api/upload` (multipart).
    Post,
    /// A tar of a few files by `POST /api/upload`, extracted by the server.
    Archive,
    TusCreate,
    TusPatch,
    /// `HEAD` on a TUS upload part-way, as a client resuming it asks for the offset.
    TusHead,
    /// `DELETE` on a complete TUS upload: the interface document's "finish" step.
    TusFinish,
    /// `GET /ipfs/{cid}[/path]` with a `Range` (now and then without one).
    GatewayRead,
    ListUploads,
    ListOperations,
    /// `GET /api/operations/{id}` for an archive or TUS upload until it is done.
    Poll,
    /// Not a request: from an archive's or TUS upload's acknowledgement to the poll that saw
    /// its CID: an upper bound, late by up to one polling interval (2 s at most) or by the
    /// client's own step under way (a `Retry-After` wait included).
    AckToCid,
    /// After the run: every acknowledged upload read back whole.
    Verify,
    /// `--events`: `POST {account_url}/api/webhooks`, once per account before the run.
    WebhookCreate,
    /// `--events`: `GET /api/events`, once per client before the run (and again after the
    /// stream ends): the time to its answer's headers.
    Subscribe,
    /// `--events`, not a request: an event read from an account's stream, timed from the
    /// event's `timestamp` (when its change committed, to the millisecond) to its arrival.
    StreamEvent,
    /// `--events`, not a request: a webhook delivery at the receiver, timed as
    /// [`Kind::StreamEvent`].
    WebhookDelivery,
}

impl Kind {
    pub const ALL: [Kind; 17] = [
        Kind::Post,
        Kind::Archive,
        Kind::TusCreate,
        Kind::TusPatch,
        Kind::TusHead,
        Kind::TusFinish,
        Kind::GatewayRead,
        Kind::ListUploads,
        Kind::ListOperations,
        Kind::Poll,
        Kind::AckToCid,
        Kind::UploadLimit,
        Kind::Verify,
        Kind::WebhookCreate,
        Kind::Subscribe,
        Kind::StreamEvent,
        Kind::WebhookDelivery,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::UploadLimit => "upload-limit",
            Kind::Post => "post",
            Kind::Archive => "archive",
            Kind::TusCreate => "tus-create",
            Kind::TusPatch => "tus-patch",
            Kind::TusHead => "tus-head",
            Kind::TusFinish => "tus-finish",
            Kind::GatewayRead => "gateway-range",
            Kind::ListUploads => "list-uploads",
            Kind::ListOperations => "list-operations",
            Kind::Poll => "poll",
            Kind::AckToCid => "ack-to-cid",
            Kind::Verify => "verify-read",
            Kind::WebhookCreate => "webhook-create",
            Kind::Subscribe => "subscribe",
            Kind::StreamEvent => "stream-event",
            Kind::WebhookDelivery => "webhook-delivery",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A distinct failure: the request kind, the HTTP status (0 when there was no answer) and the
/// JSON error code (or what went wrong on our side: `timeout`, `wrong_bytes`, ...).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ErrorKey {
    pub kind: Kind,
    pub status: u16,
    pub code: String,
}

/// How often one distinct failure happened, and the first time it did.
#[derive(Clone, Debug)]
pub struct ErrorSample {
    pub key: ErrorKey,
    pub count: u64,
    /// The request (method and URL) and the server's message, the first time.
    pub first: String,
    /// Seconds since the run started, the first time.
    pub first_at: f64,
}

#[derive(Clone, Debug, Default)]
pub struct KindTally {
    /// Latency of each answered request, in microseconds.
    pub micros: Vec<u32>,
    /// Body bytes sent and received.
    pub bytes: u64,
    /// `429`s answered with `Retry-After`, waited out and sent again.
    pub rate_limited: u64,
    pub rate_limited_wait: Duration,
}

#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub kinds: BTreeMap<Kind, KindTally>,
    pub errors: BTreeMap<ErrorKey, ErrorSample>,
}

impl Tally {
    pub fn kind(&mut self, kind: Kind) -> &mut KindTally {
        self.kinds.entry(kind).or_default()
    }

    pub fn answered(&mut self, kind: Kind, took: Duration, bytes: u64) {
        let tally = self.kind(kind);
        tally
            .micros
            .push(u32::try_from(took.as_micros()).unwrap_or(u32::MAX));
        tally.bytes += bytes;
    }

    pub fn error(&mut self, key: ErrorKey, first: String, first_at: f64) {
        self.errors
            .entry(key.clone())
            .or_insert(ErrorSample {
                key,
                count: 0,
                first,
                first_at,
            })
            .count += 1;
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().map(|e| e.count).sum()
    }

    pub fn merge(&mut self, other: Tally) {
        for (kind, theirs) in other.kinds {
            let ours = self.kind(kind);
            ours.micros.extend(theirs.micros);
            ours.bytes += theirs.bytes;
            ours.rate_limited += theirs.rate_limited;
            ours.rate_limited_wait += theirs.rate_limited_wait;
        }
        for (key, theirs) in other.errors {
            match self.errors.get_mut(&key) {
                Some(ours) => {
                    ours.count += theirs.count;
                    if theirs.first_at < ours.first_at {
                        ours.first = theirs.first;
                        ours.first_at = theirs.first_at;
                    }
                }
                None => {
                    self.errors.insert(key, theirs);
                }
            }
        }
    }
}

/// The nearest-rank percentile `p` (0..=100) of sorted values.
pub fn percentile(sorted: &[u32], p: f64) -> Option<u32> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&values, 50.0), Some(50));
        assert_eq!(percentile(&values, 99.0), Some(99));
        assert_eq!(percentile(&values, 100.0), Some(100));
        assert_eq!(percentile(&[7], 99.0), Some(7));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn merged_errors_add_up_and_keep_the_earliest_sample() {
        let key = ErrorKey {
            kind: Kind::Post,
            status: 500,
            code: "internal".into(),
        };
        let mut a = Tally::default();
        a.error(key.clone(), "late".into(), 5.0);
        let mut b = Tally::default();
        b.error(key.clone(), "early".into(), 1.0);
        b.error(key.clone(), "again".into(), 2.0);
        a.merge(b);
        assert_eq!(a.error_count(), 3);
        assert_eq!(a.errors[&key].first, "early");
    }
}
