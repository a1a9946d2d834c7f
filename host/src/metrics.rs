//! weir's Prometheus metrics: one [`Registry`] whose typed handles are created once at start
//! and handed to the parts that count (queue, workers, sync, swap, leader election). The admin
//! endpoint only encodes the registry.
//!
//! Names follow upstream where upstream has them: client-go's `workqueue_*` (label `name`,
//! buckets 1 µs ×10 ten times) and client-go's `leader_election_master_status`. weir's own
//! metrics carry the `weir_` prefix.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Label of a work queue (client-go's `name`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabel {
    /// `endpoint` for the Endpoints controller's queue.
    pub name: String,
}

/// Label of an outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    /// What happened (values listed with each metric).
    pub result: &'static str,
}

/// Labels of a write.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WriteLabels {
    /// `create`, `update` or `delete`.
    pub action: &'static str,
    /// `success`, `error` or `dry_run`.
    pub result: &'static str,
}

/// Label of a refusal.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    /// Why: a reason of the component that refused (a guest swap, a slice decision).
    pub reason: &'static str,
}

/// Label of an EndpointSlice change.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OperationLabel {
    /// `create`, `update` or `delete`.
    pub operation: &'static str,
}

/// Labels of `weir_guest_info`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GuestInfoLabels {
    /// SHA-256 of the active component.
    pub digest: String,
    /// The WIT world it implements.
    pub world: String,
}

/// Label of `leader_election_master_status`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LeaseLabel {
    /// The lease name.
    pub name: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// client-go's workqueue buckets: 1 µs to 1000 s, ×10 each (written out: repeated
/// multiplication would print as 9.999999999999999e-06).
fn queue_histogram() -> Histogram {
    Histogram::new([1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0])
}

/// Every metric weir exports. Clone the handles you need; they share their values.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    queue_depth: Family<QueueLabel, Gauge>,
    queue_adds: Family<QueueLabel, Counter>,
    queue_retries: Family<QueueLabel, Counter>,
    queue_latency: HistogramFamily<QueueLabel>,
    queue_work: HistogramFamily<QueueLabel>,
    queue_unfinished: Family<QueueLabel, Gauge<f64, std::sync::atomic::AtomicU64>>,
    queue_longest: Family<QueueLabel, Gauge<f64, std::sync::atomic::AtomicU64>>,
    /// Syncs by `result`: `success`, `stale` (cache older than our own write) or `error`.
    pub syncs: Family<ResultLabel, Counter>,
    /// Duration of one sync, whatever its result.
    pub sync_duration: Histogram,
    /// Endpoints writes by action and result.
    pub writes: Family<WriteLabels, Counter>,
    /// Keys dropped after the retry budget.
    pub keys_dropped: Counter,
    /// Guest calls by `result`: `ok`, `error` (the guest returned one), `timeout`,
    /// `out_of_memory`, `trap`, or `invalid` (its decision broke the contract).
    pub guest_calls: Family<ResultLabel, Counter>,
    /// Duration of one guest call (instantiate, call, lift).
    pub guest_call_duration: Histogram,
    /// Shadow comparisons by `result`: `same`, `different` or `failed`; syncs compared with
    /// no shadow call: `skipped` (its queue was full) or `suspended`.
    pub shadow: Family<ResultLabel, Counter>,
    /// 1 while the shadow guest is suspended for timing out, else 0.
    pub shadow_suspended: Gauge,
    /// Suspensions of the shadow guest.
    pub shadow_suspensions: Counter,
    /// Guests made active by hot swap.
    pub guest_swaps: Counter,
    /// Guest candidates refused, by reason.
    pub guest_swap_refusals: Family<ReasonLabel, Counter>,
    /// Automatic rollbacks.
    pub guest_rollbacks: Counter,
    guest_info: Family<GuestInfoLabels, Gauge>,
    leader: Family<LeaseLabel, Gauge>,
    /// Pods in the controller's cache.
    pub cache_pods: Gauge,
    slice_changes: Family<OperationLabel, Counter>,
    slice_refusals: Family<ReasonLabel, Counter>,
    /// Syncs retried because the EndpointSlice cache predates weir's own writes.
    pub slice_stale_syncs: Counter,
    /// Guests made active that cannot render the EndpointSlices `--manage` asks for.
    pub guest_slices_unsupported: Counter,
    /// 1 while the active guest renders EndpointSlices (weir:endpoints@0.2.0), else 0.
    pub guest_renders_slices: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// What `weir_guest_info` and `weir_guest_renders_slices` say of the active guest.
#[derive(Debug, Clone, Copy)]
pub struct GuestInfo<'a> {
    /// The SHA-256 of its bytes.
    pub digest: &'a str,
    /// The world it implements, `PACKAGE/WORLD`.
    pub world: &'a str,
    /// Whether it renders EndpointSlices.
    pub renders_slices: bool,
}

impl Metrics {
    /// A registry with every metric registered once.
    pub fn new() -> Self {
        let mut m = Metrics {
            registry: Registry::default(),
            queue_depth: Family::default(),
            queue_adds: Family::default(),
            queue_retries: Family::default(),
            queue_latency: Family::new_with_constructor(queue_histogram),
            queue_work: Family::new_with_constructor(queue_histogram),
            queue_unfinished: Family::default(),
            queue_longest: Family::default(),
            syncs: Family::default(),
            sync_duration: Histogram::new(exponential_buckets(0.001, 2.0, 15)),
            writes: Family::default(),
            keys_dropped: Counter::default(),
            guest_calls: Family::default(),
            guest_call_duration: Histogram::new(exponential_buckets(0.0001, 2.0, 14)),
            shadow: Family::default(),
            shadow_suspended: Gauge::default(),
            shadow_suspensions: Counter::default(),
            guest_swaps: Counter::default(),
            guest_swap_refusals: Family::default(),
            guest_rollbacks: Counter::default(),
            guest_info: Family::default(),
            leader: Family::default(),
            cache_pods: Gauge::default(),
            slice_changes: Family::default(),
            slice_refusals: Family::default(),
            slice_stale_syncs: Counter::default(),
            guest_slices_unsupported: Counter::default(),
            guest_renders_slices: Gauge::default(),
        };
        let r = &mut m.registry;
        r.register(
            "workqueue_depth",
            "Current depth of workqueue",
            m.queue_depth.clone(),
        );
        r.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            m.queue_adds.clone(),
        );
        r.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            m.queue_retries.clone(),
        );
        r.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            m.queue_latency.clone(),
        );
        r.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            m.queue_work.clone(),
        );
        r.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been \
             observed by work_duration. Large values indicate stuck threads.",
            m.queue_unfinished.clone(),
        );
        r.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            m.queue_longest.clone(),
        );
        r.register(
            "weir_syncs",
            "Service syncs by result: success, stale (cache older than weir's own write) or error",
            m.syncs.clone(),
        );
        r.register(
            "weir_sync_duration_seconds",
            "Duration of one Service sync: request, guest call, validation and write",
            m.sync_duration.clone(),
        );
        r.register(
            "weir_endpoints_writes",
            "Endpoints writes by action (create, update, delete) and result (success, error, \
             dry_run)",
            m.writes.clone(),
        );
        r.register(
            "weir_keys_dropped",
            "Service keys dropped after the maximum number of retries",
            m.keys_dropped.clone(),
        );
        r.register(
            "weir_guest_calls",
            "Guest reconcile calls by result: ok, error, timeout, out_of_memory, trap or invalid \
             (decision refused by validation)",
            m.guest_calls.clone(),
        );
        r.register(
            "weir_guest_call_duration_seconds",
            "Duration of one guest call, including instantiation",
            m.guest_call_duration.clone(),
        );
        r.register(
            "weir_shadow_comparisons",
            "Shadow guest evaluations by result: same, different or failed",
            m.shadow.clone(),
        );
        r.register(
            "weir_shadow_suspended",
            "1 while the shadow guest is suspended for timing out, else 0",
            m.shadow_suspended.clone(),
        );
        r.register(
            "weir_shadow_suspensions",
            "Suspensions of the shadow guest for timing out",
            m.shadow_suspensions.clone(),
        );
        r.register(
            "weir_guest_swaps",
            "Guests made active by hot swap",
            m.guest_swaps.clone(),
        );
        r.register(
            "weir_guest_swap_refusals",
            "Guest candidates refused, by reason",
            m.guest_swap_refusals.clone(),
        );
        r.register(
            "weir_guest_rollbacks",
            "Automatic rollbacks to the previous guest",
            m.guest_rollbacks.clone(),
        );
        r.register(
            "weir_guest_info",
            "The active guest: always 1, labelled with its digest and WIT world",
            m.guest_info.clone(),
        );
        r.register(
            "leader_election_master_status",
            "Whether this replica is the leader (1) or a standby (0), by lease name",
            m.leader.clone(),
        );
        r.register(
            "weir_cache_pods",
            "Pods in the controller's cache",
            m.cache_pods.clone(),
        );
        r.register(
            "weir_endpointslice_changes",
            "EndpointSlices created, updated or deleted, by operation",
            m.slice_changes.clone(),
        );
        r.register(
            "weir_endpointslice_refusals",
            "Guest EndpointSlice decisions refused before writing, by broken rule",
            m.slice_refusals.clone(),
        );
        r.register(
            "weir_endpointslice_stale_syncs",
            "Syncs retried because the EndpointSlice cache predates weir's own writes",
            m.slice_stale_syncs.clone(),
        );
        r.register(
            "weir_guest_slices_unsupported",
            "Guests made active that cannot render the EndpointSlices --manage asks for",
            m.guest_slices_unsupported.clone(),
        );
        r.register(
            "weir_guest_renders_slices",
            "1 when the active guest renders EndpointSlices (weir:endpoints@0.2.0), else 0",
            m.guest_renders_slices.clone(),
        );
        // Every shadow result exists from the start at 0, so `increase()` sees the first one
        // and dashboards find the series; the swap declares its refusal reasons likewise.
        for result in ["same", "different", "failed", "skipped", "suspended"] {
            let _ = m.shadow.get_or_create(&ResultLabel { result });
        }
        m
    }

    /// The handles of the work queue `name` (`endpoint` for the Endpoints controller).
    pub fn queue(&self, name: &str) -> QueueMetrics {
        let label = QueueLabel { name: name.into() };
        QueueMetrics {
            depth: self.queue_depth.get_or_create(&label).clone(),
            adds: self.queue_adds.get_or_create(&label).clone(),
            retries: self.queue_retries.get_or_create(&label).clone(),
            queue_duration: self.queue_latency.get_or_create(&label).clone(),
            work_duration: self.queue_work.get_or_create(&label).clone(),
            unfinished: self.queue_unfinished.get_or_create(&label).clone(),
            longest: self.queue_longest.get_or_create(&label).clone(),
        }
    }

    /// The counter of EndpointSlice `operation`s (`create`, `update`, `delete`).
    pub fn slice_change(&self, operation: &'static str) -> Counter {
        self.slice_changes
            .get_or_create(&OperationLabel { operation })
            .clone()
    }

    /// The counter of refused slice decisions for `reason`.
    pub fn slice_refusal(&self, reason: &'static str) -> Counter {
        self.slice_refusals
            .get_or_create(&ReasonLabel { reason })
            .clone()
    }

    /// Marks `guest` as the active guest in `weir_guest_info` (replacing the previous one) and
    /// in `weir_guest_renders_slices`. Called at start and at every swap or rollback, the only
    /// times the active guest changes.
    pub fn set_guest(&self, guest: &GuestInfo<'_>) {
        self.guest_info.clear();
        self.guest_info
            .get_or_create(&GuestInfoLabels {
                digest: guest.digest.into(),
                world: guest.world.into(),
            })
            .set(1);
        self.guest_renders_slices
            .set(i64::from(guest.renders_slices));
    }

    /// Sets `leader_election_master_status{name}`.
    pub fn set_leader(&self, lease: &str, leader: bool) {
        self.leader
            .get_or_create(&LeaseLabel { name: lease.into() })
            .set(i64::from(leader));
    }

    /// The value of a counter family member (for tests and logs).
    pub fn count(family: &Family<ResultLabel, Counter>, result: &'static str) -> u64 {
        family.get_or_create(&ResultLabel { result }).get()
    }

    /// Syncs of any result.
    pub fn syncs_total(&self) -> u64 {
        ["success", "stale", "error"]
            .into_iter()
            .map(|r| Self::count(&self.syncs, r))
            .sum()
    }

    /// Failed syncs (`stale` and `error`).
    pub fn sync_errors(&self) -> u64 {
        Self::count(&self.syncs, "stale") + Self::count(&self.syncs, "error")
    }

    /// Writes that succeeded or were printed in a dry run.
    pub fn writes_done(&self) -> u64 {
        let mut n = 0;
        for action in ["create", "update", "delete"] {
            for result in ["success", "dry_run"] {
                n += self
                    .writes
                    .get_or_create(&WriteLabels { action, result })
                    .get();
            }
        }
        n
    }

    /// Guest calls that trapped, timed out or ran out of memory.
    pub fn guest_faults(&self) -> u64 {
        ["timeout", "out_of_memory", "trap"]
            .into_iter()
            .map(|r| Self::count(&self.guest_calls, r))
            .sum()
    }

    /// The registry in Prometheus' classic text format (version 0.0.4).
    pub fn encode_text(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)?;
        Ok(out)
    }

    /// The registry in OpenMetrics text format (1.0.0).
    pub fn encode_openmetrics(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

/// The metrics of one work queue, in client-go's shape.
#[derive(Debug, Clone)]
pub struct QueueMetrics {
    /// Keys ready.
    pub depth: Gauge,
    /// Adds that queued a key.
    pub adds: Counter,
    /// Rate-limited re-adds.
    pub retries: Counter,
    /// Time from being queued to being handed out.
    pub queue_duration: Histogram,
    /// Time from being handed out to done.
    pub work_duration: Histogram,
    /// Sum of how long the keys in flight have been running (seconds).
    pub unfinished: Gauge<f64, std::sync::atomic::AtomicU64>,
    /// How long the longest key in flight has been running (seconds).
    pub longest: Gauge<f64, std::sync::atomic::AtomicU64>,
}

/// Handles registered nowhere: for queues built without a registry (tests, benches).
impl Default for QueueMetrics {
    fn default() -> Self {
        QueueMetrics {
            depth: Gauge::default(),
            adds: Counter::default(),
            retries: Counter::default(),
            queue_duration: queue_histogram(),
            work_duration: queue_histogram(),
            unfinished: Gauge::default(),
            longest: Gauge::default(),
        }
    }
}

impl QueueMetrics {
    /// Sets the in-flight gauges from the start times' ages.
    pub fn set_in_flight(&self, ages: impl Iterator<Item = Duration>) {
        let (mut sum, mut longest) = (0.0, 0.0f64);
        for age in ages {
            let secs = age.as_secs_f64();
            sum += secs;
            longest = longest.max(secs);
        }
        self.unfinished.set(sum);
        self.longest.set(longest);
    }
}
