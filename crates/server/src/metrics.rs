//! `/metrics`: the service's metric families in a `prometheus-client` registry, exposed in the
//! OpenMetrics text format (which Prometheus scrapes).
//!
//! Each part of the program keeps its own struct of families, registered once into the shared
//! [`Registry`] (see [`ServiceMetrics::register`]): another part adds its own the same way,
//! through [`Metrics::registry`], before the server starts. The names are part of the interface
//! (dashboards use them): `cairn_uploads_total`, `cairn_upload_bytes_total`,
//! `cairn_upload_duration_seconds`, `cairn_http_responses_total`,
//! `cairn_operation_duration_seconds` and `cairn_operations_queued`.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// Upper bounds of the duration histograms, in seconds.
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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabel {
    code: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: &'static str,
}

/// Makes each label set's histogram with the shared buckets.
#[derive(Clone)]
struct DurationHistogram;

impl MetricConstructor<Histogram> for DurationHistogram {
    fn new_metric(&self) -> Histogram {
        Histogram::new(DURATION_BUCKETS)
    }
}

/// What the HTTP service and its workers count.
pub struct ServiceMetrics {
    uploads: Family<KindLabel, Counter>,
    upload_bytes: Counter,
    upload_duration: Histogram,
    responses: Family<CodeLabel, Counter>,
    /// Worker time per finished operation, by terminal status.
    operation_duration: Family<StatusLabel, Histogram, DurationHistogram>,
    /// Read from the store at each scrape.
    operations_queued: Family<StatusLabel, Gauge>,
}

impl ServiceMetrics {
    /// The families, registered under `registry` (whose prefix is `cairn`).
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            uploads: Family::default(),
            upload_bytes: Counter::default(),
            upload_duration: Histogram::new(DURATION_BUCKETS),
            responses: Family::default(),
            operation_duration: Family::new_with_constructor(DurationHistogram),
            operations_queued: Family::default(),
        };
        // Every kind is listed from the start, at zero.
        for kind in UploadKind::ALL {
            let _ = metrics
                .uploads
                .get_or_create(&KindLabel { kind: kind.label() });
        }
        registry.register(
            "uploads",
            "Uploads stored, by kind",
            metrics.uploads.clone(),
        );
        registry.register(
            "upload_bytes",
            "Bytes received in stored uploads",
            metrics.upload_bytes.clone(),
        );
        registry.register_with_unit(
            "upload_duration",
            "Time from request to stored upload",
            Unit::Seconds,
            metrics.upload_duration.clone(),
        );
        registry.register(
            "http_responses",
            "HTTP responses, by status code",
            metrics.responses.clone(),
        );
        registry.register_with_unit(
            "operation_duration",
            "Worker time per finished operation",
            Unit::Seconds,
            metrics.operation_duration.clone(),
        );
        registry.register(
            "operations_queued",
            "Operations not yet completed or failed",
            metrics.operations_queued.clone(),
        );
        metrics
    }
}

/// The registry behind `/metrics` and the service's own families.
pub struct Metrics {
    registry: Mutex<Registry>,
    service: ServiceMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("cairn");
        let service = ServiceMetrics::register(&mut registry);
        Self {
            registry: Mutex::new(registry),
            service,
        }
    }
}

impl Metrics {
    /// The registry, for another part of the program to register its families into.
    pub fn registry(&self) -> MutexGuard<'_, Registry> {
        // A poisoned lock only means a panic mid-registration; the registry is still usable.
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn upload_stored(&self, kind: UploadKind, bytes: u64, took: Duration) {
        let service = &self.service;
        service
            .uploads
            .get_or_create(&KindLabel { kind: kind.label() })
            .inc();
        service.upload_bytes.inc_by(bytes);
        service.upload_duration.observe(took.as_secs_f64());
    }

    pub fn operation_finished(&self, status: &'static str, took: Duration) {
        self.service
            .operation_duration
            .get_or_create(&StatusLabel { status })
            .observe(took.as_secs_f64());
    }

    pub fn response(&self, status: u16) {
        self.service
            .responses
            .get_or_create(&CodeLabel { code: status })
            .inc();
    }

    /// The exposition text; `queue` is (status, count) of operations not yet terminal.
    pub fn render(&self, queue: &[(&'static str, u64)]) -> String {
        let queued = &self.service.operations_queued;
        // Only the statuses that have operations now, as the store counts them.
        queued.clear();
        for &(status, n) in queue {
            queued.get_or_create(&StatusLabel { status }).set(n as i64);
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry());
        out
    }
}

/// The content type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_keep_their_names_and_another_part_can_register_its_own() {
        let metrics = Metrics::default();
        metrics.upload_stored(UploadKind::Car, 5, Duration::from_millis(20));
        metrics.operation_finished("completed", Duration::from_secs(2));
        metrics.response(429);
        let peers = Gauge::<i64>::default();
        metrics
            .registry()
            .register("p2p_connected_peers", "Peers connected", peers.clone());
        peers.set(3);
        let text = metrics.render(&[("pending", 4)]);
        for line in [
            "cairn_uploads_total{kind=\"car\"} 1",
            "cairn_uploads_total{kind=\"file\"} 0",
            "cairn_upload_bytes_total 5",
            "cairn_upload_duration_seconds_bucket{le=\"0.05\"} 1",
            "cairn_upload_duration_seconds_count 1",
            "cairn_http_responses_total{code=\"429\"} 1",
            "cairn_operation_duration_seconds_sum{status=\"completed\"} 2.0",
            "cairn_operation_duration_seconds_count{status=\"completed\"} 1",
            "cairn_operations_queued{status=\"pending\"} 4",
            "cairn_p2p_connected_peers 3",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} in:\n{text}");
        }
        let text = metrics.render(&[]);
        assert!(!text.contains("cairn_operations_queued{"), "{text}");
    }
}
