//! `/metrics`: the service's metric families in a `prometheus-client` registry, exposed in the
//! OpenMetrics text format (which Prometheus scrapes).
//!
//! Each part of the program keeps its own struct of families, registered once into the shared
//! [`Registry`] (see [`ServiceMetrics::register`]): another part adds its own the same way,
//! through [`Metrics::registry`], before the server starts. The names are part of the interface
//! (dashboards use them): `cairn_uploads_total`, `cairn_upload_bytes_total`,
//! `cairn_upload_duration_seconds`, `cairn_http_responses_total`,
//! `cairn_operation_duration_seconds` and `cairn_operations_queued`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use cairn_p2p::bitswap::Bitswap;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use crate::progress::{IpniStats, ProvideStats, ScrubStats};

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
    gc_runs: Counter,
    gc_bytes_reclaimed: Counter,
    gc_packs_deleted: Counter,
    gc_packs_compacted: Counter,
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
            gc_runs: Counter::default(),
            gc_bytes_reclaimed: Counter::default(),
            gc_packs_deleted: Counter::default(),
            gc_packs_compacted: Counter::default(),
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
        registry.register(
            "gc_runs",
            "Garbage collections completed by this node",
            metrics.gc_runs.clone(),
        );
        registry.register_with_unit(
            "gc_reclaimed",
            "Pack bytes deleted by garbage collection, less the bytes compaction rewrote",
            Unit::Bytes,
            metrics.gc_bytes_reclaimed.clone(),
        );
        registry.register(
            "gc_packs_deleted",
            "Packs garbage collection deleted because no live block was left in them",
            metrics.gc_packs_deleted.clone(),
        );
        registry.register(
            "gc_packs_compacted",
            "Mostly dead packs whose live blocks garbage collection moved to a new pack",
            metrics.gc_packs_compacted.clone(),
        );
        metrics
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueryLabel {
    kind: &'static str,
}

/// What the IPFS node's HTTP side counts, and what is read for it at each scrape. The node's
/// own counters (Bitswap, providing) are read by [`NodeCounters`].
pub struct NetworkMetrics {
    connected_peers: Gauge,
    provide_queue: Gauge,
    routing_queries: Family<QueryLabel, Counter>,
}

impl NetworkMetrics {
    fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            connected_peers: Gauge::default(),
            provide_queue: Gauge::default(),
            routing_queries: Family::default(),
        };
        for kind in ["providers", "peers"] {
            let _ = metrics.routing_queries.get_or_create(&QueryLabel { kind });
        }
        registry.register(
            "p2p_connected_peers",
            "Peers the IPFS node is connected to",
            metrics.connected_peers.clone(),
        );
        registry.register(
            "dht_provide_queue",
            "Completed uploads this node has still to provide to the DHT",
            metrics.provide_queue.clone(),
        );
        registry.register(
            "routing_queries",
            "Delegated routing queries answered, by kind (providers, peers)",
            metrics.routing_queries.clone(),
        );
        metrics
    }
}

/// The counters the IPFS node and the provider keep themselves, read at each scrape.
struct NodeCounters {
    bitswap: Bitswap,
    provides: Arc<ProvideStats>,
    ipni: Arc<IpniStats>,
}

impl std::fmt::Debug for NodeCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NodeCounters")
    }
}

impl Collector for NodeCounters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let bitswap = self.bitswap.metrics();
        let provides = &self.provides;
        let ipni = &self.ipni;
        let counters = [
            (
                "bitswap_blocks_sent",
                "Blocks sent over Bitswap",
                read(&bitswap.blocks_sent),
            ),
            (
                "bitswap_bytes_sent",
                "Bytes of blocks sent over Bitswap",
                read(&bitswap.bytes_sent),
            ),
            (
                "bitswap_blocks_received",
                "Blocks received over Bitswap",
                read(&bitswap.blocks_received),
            ),
            (
                "bitswap_bytes_received",
                "Bytes of blocks received over Bitswap",
                read(&bitswap.bytes_received),
            ),
            (
                "bitswap_peers_cut_off",
                "Peers disconnected for going over a Bitswap limit",
                read(&bitswap.peers_cut_off),
            ),
            (
                "dht_provides",
                "CIDs provided to the DHT (roots, or every block with --provide-strategy all)",
                read(&provides.provided),
            ),
            (
                "dht_reprovide_sweeps",
                "Passes of the reprovide cycle that provided everything stored again",
                read(&provides.sweeps),
            ),
            (
                "dht_provide_lookups",
                "DHT lookups made to provide: one per CID provided alone, a few per region swept",
                read(&provides.lookups),
            ),
            (
                "dht_provider_records_sent",
                "Provider records sent to DHT peers by the region sweeps",
                read(&provides.records_sent),
            ),
            (
                "dht_reprovide_regions",
                "Keyspace regions the reprovide cycle has swept",
                read(&provides.regions),
            ),
            (
                "ipni_advertisements_published",
                "IPNI advertisements of roots this node published",
                read(&ipni.advertisements),
            ),
            (
                "ipni_removals_published",
                "IPNI removal advertisements this node published",
                read(&ipni.removals),
            ),
            (
                "ipni_multihashes_advertised",
                "Block multihashes listed in this node's IPNI advertisements",
                read(&ipni.multihashes),
            ),
            (
                "ipni_announces_sent",
                "Announces of this node's IPNI head that an indexer took",
                read(&ipni.announces_sent),
            ),
            (
                "ipni_announces_failed",
                "Announces of this node's IPNI head that failed or were refused",
                read(&ipni.announces_failed),
            ),
        ];
        for (name, help, value) in counters {
            let counter = ConstCounter::new(value);
            counter.encode(encoder.encode_descriptor(
                name,
                help,
                None,
                counter.metric_type(),
            )?)?;
        }
        let gauges = [
            (
                "dht_provides_waiting_for_peers",
                "Provides that reached no DHT peer, waiting for peers",
                read(&provides.waiting_for_peers),
            ),
            (
                "dht_last_reprovide_duration_seconds",
                "How long the last pass of the reprovide cycle took",
                read(&provides.last_sweep_seconds),
            ),
        ];
        for (name, help, value) in gauges {
            let gauge = ConstGauge::new(value as i64);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        Ok(())
    }
}

/// Scrubbing's counts ([`ScrubStats`]), read at each scrape.
#[derive(Debug)]
struct ScrubCounters(Arc<ScrubStats>);

impl Collector for ScrubCounters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let stats = &self.0;
        let counters = [
            (
                "scrub_blocks",
                "Stored blocks scrubbing read and checked against their CIDs",
                None,
                read(&stats.blocks_checked),
            ),
            (
                "scrub",
                "Stored bytes scrubbing read and checked",
                Some(Unit::Bytes),
                read(&stats.bytes_checked),
            ),
            (
                "scrub_damaged_blocks",
                "Stored blocks scrubbing found unreadable or not matching their CIDs",
                None,
                read(&stats.damaged_found),
            ),
            (
                "scrub_repaired_blocks",
                "Damaged blocks fetched again from peers and stored anew",
                None,
                read(&stats.repaired),
            ),
        ];
        for (name, help, unit, value) in counters {
            let counter = ConstCounter::new(value);
            counter.encode(encoder.encode_descriptor(
                name,
                help,
                unit.as_ref(),
                counter.metric_type(),
            )?)?;
        }
        Ok(())
    }
}

/// The registry behind `/metrics` and the service's own families.
pub struct Metrics {
    registry: Mutex<Registry>,
    service: ServiceMetrics,
    network: NetworkMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("cairn");
        let service = ServiceMetrics::register(&mut registry);
        let network = NetworkMetrics::register(&mut registry);
        Self {
            registry: Mutex::new(registry),
            service,
            network,
        }
    }
}

impl Metrics {
    /// The registry, for another part of the program to register its families into.
    pub fn registry(&self) -> MutexGuard<'_, Registry> {
        // A poisoned lock only means a panic mid-registration; the registry is still usable.
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn gc_finished(&self, report: &crate::gc::report::GcReport) {
        let service = &self.service;
        service.gc_runs.inc();
        service.gc_bytes_reclaimed.inc_by(report.bytes_reclaimed);
        service.gc_packs_deleted.inc_by(report.packs_deleted);
        service.gc_packs_compacted.inc_by(report.packs_compacted);
    }

    /// `/metrics` shows what scrubbing counts in `stats`, read at each scrape.
    pub fn watch_scrub(&self, stats: Arc<ScrubStats>) {
        self.registry()
            .register_collector(Box::new(ScrubCounters(stats)));
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

    /// Show the IPFS node's own counters from now on.
    pub fn watch_node(&self, bitswap: Bitswap, provides: Arc<ProvideStats>, ipni: Arc<IpniStats>) {
        self.registry().register_collector(Box::new(NodeCounters {
            bitswap,
            provides,
            ipni,
        }));
    }

    pub fn routing_query(&self, kind: &'static str) {
        self.network
            .routing_queries
            .get_or_create(&QueryLabel { kind })
            .inc();
    }

    /// What is read for the node at a scrape: its connections and its provide queue.
    pub fn node_now(&self, connected_peers: usize, provide_queue: u64) {
        self.network.connected_peers.set(connected_peers as i64);
        self.network.provide_queue.set(provide_queue as i64);
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
