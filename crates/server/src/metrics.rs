//! `/metrics` in the Prometheus text format: uploads, bytes, upload durations, responses by
//! status, and the operation queue depth (read from the store at scrape time).
//!
//! A handful of atomics does not justify a metrics framework; the exposition format is simple.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the upload duration histogram, in seconds.
const DURATION_BUCKETS: [f64; 10] = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// What kind of upload was stored.
#[derive(Clone, Copy, Debug)]
pub enum UploadKind {
    File,
    Car,
    PreservedArchive,
}

impl UploadKind {
    const ALL: [Self; 3] = [Self::File, Self::Car, Self::PreservedArchive];

    fn label(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Car => "car",
            Self::PreservedArchive => "preserved_archive",
        }
    }
}

#[derive(Default)]
pub struct Metrics {
    uploads: [AtomicU64; 3],
    upload_bytes: AtomicU64,
    /// Cumulative counts per bucket, then +Inf.
    duration_buckets: [AtomicU64; DURATION_BUCKETS.len() + 1],
    duration_micros: AtomicU64,
    responses: Mutex<BTreeMap<u16, u64>>,
    /// Finished operations by terminal status: (count, total seconds).
    operations: Mutex<BTreeMap<&'static str, (u64, f64)>>,
}

impl Metrics {
    pub fn upload_stored(&self, kind: UploadKind, bytes: u64, took: Duration) {
        self.uploads[kind as usize].fetch_add(1, Ordering::Relaxed);
        self.upload_bytes.fetch_add(bytes, Ordering::Relaxed);
        let seconds = took.as_secs_f64();
        for (bucket, bound) in self.duration_buckets.iter().zip(DURATION_BUCKETS) {
            if seconds <= bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.duration_buckets[DURATION_BUCKETS.len()].fetch_add(1, Ordering::Relaxed);
        self.duration_micros
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }

    pub fn operation_finished(&self, status: &'static str, took: Duration) {
        let mut operations = self.operations.lock().unwrap_or_else(|e| e.into_inner());
        let entry = operations.entry(status).or_default();
        entry.0 += 1;
        entry.1 += took.as_secs_f64();
    }

    pub fn response(&self, status: u16) {
        let mut responses = self.responses.lock().unwrap_or_else(|e| e.into_inner());
        *responses.entry(status).or_default() += 1;
    }

    /// The exposition text; `queue` is (status, count) of operations not yet terminal.
    pub fn render(&self, queue: &[(&str, u64)]) -> String {
        let mut out = String::new();
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        out.push_str("# HELP cairn_uploads_total Uploads stored, by kind.\n");
        out.push_str("# TYPE cairn_uploads_total counter\n");
        for kind in UploadKind::ALL {
            let _ = writeln!(
                out,
                "cairn_uploads_total{{kind=\"{}\"}} {}",
                kind.label(),
                get(&self.uploads[kind as usize])
            );
        }
        out.push_str("# HELP cairn_upload_bytes_total Bytes received in stored uploads.\n");
        out.push_str("# TYPE cairn_upload_bytes_total counter\n");
        let _ = writeln!(out, "cairn_upload_bytes_total {}", get(&self.upload_bytes));
        out.push_str("# HELP cairn_upload_duration_seconds Time from request to stored upload.\n");
        out.push_str("# TYPE cairn_upload_duration_seconds histogram\n");
        for (bucket, bound) in self.duration_buckets.iter().zip(DURATION_BUCKETS) {
            let _ = writeln!(
                out,
                "cairn_upload_duration_seconds_bucket{{le=\"{bound}\"}} {}",
                get(bucket)
            );
        }
        let count = get(&self.duration_buckets[DURATION_BUCKETS.len()]);
        let _ = writeln!(
            out,
            "cairn_upload_duration_seconds_bucket{{le=\"+Inf\"}} {count}"
        );
        let _ = writeln!(
            out,
            "cairn_upload_duration_seconds_sum {}",
            get(&self.duration_micros) as f64 / 1e6
        );
        let _ = writeln!(out, "cairn_upload_duration_seconds_count {count}");
        out.push_str("# HELP cairn_http_responses_total HTTP responses, by status code.\n");
        out.push_str("# TYPE cairn_http_responses_total counter\n");
        let responses = self.responses.lock().unwrap_or_else(|e| e.into_inner());
        for (status, n) in responses.iter() {
            let _ = writeln!(out, "cairn_http_responses_total{{code=\"{status}\"}} {n}");
        }
        out.push_str(
            "# HELP cairn_operation_duration_seconds Worker time per finished operation.\n",
        );
        out.push_str("# TYPE cairn_operation_duration_seconds summary\n");
        let operations = self.operations.lock().unwrap_or_else(|e| e.into_inner());
        for (status, (count, seconds)) in operations.iter() {
            let _ = writeln!(
                out,
                "cairn_operation_duration_seconds_sum{{status=\"{status}\"}} {seconds}"
            );
            let _ = writeln!(
                out,
                "cairn_operation_duration_seconds_count{{status=\"{status}\"}} {count}"
            );
        }
        out.push_str("# HELP cairn_operations_queued Operations not yet completed or failed.\n");
        out.push_str("# TYPE cairn_operations_queued gauge\n");
        for (status, n) in queue {
            let _ = writeln!(out, "cairn_operations_queued{{status=\"{status}\"}} {n}");
        }
        out
    }
}
