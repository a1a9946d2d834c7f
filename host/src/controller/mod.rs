//! The controller: informers fill the caches and enqueue Service keys; workers sync keys.
//!
//! kube-runtime's `Controller` does not fit (see docs): it never reconciles a deleted object,
//! gates only on its own cache, and lacks per-key backoff. So this wires kube-runtime's
//! `watcher` (with its backoff) to weir's caches and a client-go-style queue.
//!
//! Rule numbers R1–R10 and scenarios S01–S98 are those of `docs/upstream-endpointslices.md`.

pub mod cache;
pub mod consistency;
pub mod events;
pub mod informer;
pub mod packed;
pub mod shadow;
pub mod slice_sync;
pub mod slice_tracker;
pub mod slices;
pub mod slim_pod;
pub mod sync;
pub mod writer;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::{Api, Client, Resource};
use tokio_util::sync::CancellationToken;

use crate::client::Clients;
use crate::leader::WriteGate;
use crate::metrics::{Metrics, ResultLabel, WriteLabels};
use crate::queue::{RateLimiterConfig, Retry, WorkQueue};
use crate::runtime::ActiveGuest;
use crate::runtime::health::CallHealth;
use crate::selector::LabelSelector;
use cache::{Cache, CachedPod, key};
use consistency::ResetGate;
use informer::{ApiHealth, Watch, informer};
pub use informer::{DEFAULT_PAGE_SIZE, InitialList};
use sync::{StaleTracker, SyncError, Syncer};
use writer::{EventRecorder, Writer};

/// How the controller runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Concurrent syncs (upstream `--concurrent-endpoint-syncs`, default 5).
    pub workers: usize,
    /// Delay applied to pod-driven syncs so bursts coalesce (upstream default 0).
    pub batch_period: Duration,
    /// Watch one namespace only.
    pub namespace: Option<String>,
    /// Manage only the Services this selects.
    pub service_selector: Option<LabelSelector>,
    /// Compute decisions without writing.
    pub dry_run: bool,
    /// Policy configuration for the guest (JSON text).
    pub policy_config: String,
    /// How long in-flight syncs may take to finish at shutdown.
    pub shutdown_grace: Duration,
    /// Queue rate limiting.
    pub rate_limiter: RateLimiterConfig,
    /// A second guest to evaluate after every sync without writing (`--shadow-guest`), on a
    /// task of its own (see [`shadow`]).
    pub shadow: Option<crate::runtime::Guest>,
    /// The shadow guest's policy configuration (JSON text); `None` shares `policy_config`.
    pub shadow_config: Option<String>,
    /// Which outputs weir manages (`--manage`, `--max-endpoints-per-slice`).
    pub outputs: Outputs,
    /// Every Service is queued again after a random time between this and twice this
    /// (upstream informers' resync); zero never resyncs.
    pub resync_period: Duration,
    /// Not ready once no list or watch has succeeded for this long. The API server's
    /// resourceVersion is checked every quarter of it (at most every 10 s).
    pub readyz_api_timeout: Duration,
    /// Where the controller counts (shared with the admin endpoint and hot swap).
    pub metrics: Arc<Metrics>,
    /// Leader election: every write passes it, and workers start once it opens. The default
    /// is always open (no election).
    pub gate: WriteGate,
    /// How informers list the current state: watch-list, or pages of a bounded size.
    pub initial_list: InitialList,
}

/// Which objects weir writes for each Service (`--manage`), from one guest decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outputs {
    /// core/v1 Endpoints.
    pub endpoints: bool,
    /// discovery.k8s.io/v1 EndpointSlices.
    pub endpoint_slices: bool,
    /// Most endpoints weir puts in one slice (kube-controller-manager's
    /// `--max-endpoints-per-slice`, 1..=1000).
    pub max_endpoints_per_slice: usize,
}

impl Default for Outputs {
    fn default() -> Self {
        Outputs {
            endpoints: true,
            endpoint_slices: true,
            max_endpoints_per_slice: 100,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            workers: 5,
            batch_period: Duration::ZERO,
            namespace: None,
            service_selector: None,
            dry_run: false,
            policy_config: String::new(),
            shutdown_grace: Duration::from_secs(10),
            rate_limiter: RateLimiterConfig::default(),
            shadow: None,
            shadow_config: None,
            outputs: Outputs::default(),
            resync_period: Duration::from_secs(12 * 3600),
            readyz_api_timeout: Duration::from_secs(60),
            metrics: Arc::default(),
            gate: WriteGate::sole(),
            initial_list: InitialList::default(),
        }
    }
}

/// A handle on a running controller, for the CLI, hot swap and tests.
#[derive(Clone)]
pub struct Handle {
    /// The caches.
    pub cache: Arc<Cache>,
    /// The work queue.
    pub queue: WorkQueue<String>,
    /// The active guest.
    pub guest: ActiveGuest,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Guest call outcomes per digest.
    pub health: Arc<CallHealth>,
    /// The sync machinery (shadow counters live there).
    pub syncer: Arc<Syncer>,
    /// The connection to the API server.
    pub api: Arc<ApiHealth>,
    /// The leader-election gate all writes pass.
    pub gate: WriteGate,
    /// The consistency epoch: closed while the caches may mix two API servers' state.
    pub consistency: Arc<ResetGate>,
    synced: Arc<AtomicBool>,
    readyz_api_timeout: Duration,
}

impl Handle {
    /// Whether every cache has synced and workers run.
    pub fn is_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// Why `/readyz` should fail, if it should: caches not synced yet, waiting for every
    /// informer to list afresh after an API server reset, or no successful list or watch for
    /// longer than `readyz_api_timeout`.
    pub fn readiness(&self) -> Result<(), String> {
        if !self.is_synced() {
            return Err("caches not synced".into());
        }
        if !self.consistency.is_open() {
            return Err(format!(
                "waiting for a consistent view of the API server after a reset (still listing: {})",
                self.consistency.waiting_for().join(", ")
            ));
        }
        let silent = self.api.since_contact();
        if silent > self.readyz_api_timeout {
            return Err(format!(
                "no successful list or watch of the API server for {}s",
                silent.as_secs()
            ));
        }
        Ok(())
    }

    /// Queues `key` for a sync. A standby queues nothing: it syncs every Service once it
    /// leads, so meanwhile its queue (and the workqueue metrics) stay empty.
    pub fn enqueue(&self, key: String) {
        if self.gate.is_leading() {
            self.queue.add(key);
        }
    }

    /// [`Handle::enqueue`] after `delay`.
    pub fn enqueue_after(&self, key: String, delay: Duration) {
        if self.gate.is_leading() {
            self.queue.add_after(key, delay);
        }
    }

    /// Enqueues every managed Service once (after a guest swap, the rules changed, and on
    /// every resync), and every key whose Endpoints still wait for deletion. Nothing on a
    /// standby (see [`Handle::enqueue`]).
    pub fn enqueue_all(&self) -> usize {
        if !self.gate.is_leading() {
            return 0;
        }
        let mut keys = self.cache.service_keys();
        keys.extend(self.cache.deletable_keys());
        let n = keys.len();
        for k in keys {
            self.queue.add(k);
        }
        n
    }
}

/// The Endpoints controller.
pub struct Controller {
    clients: Clients,
    config: Config,
    syncer: Arc<Syncer>,
    handle: Handle,
    /// The shadow guest's queue, which [`Controller::run`] serves.
    shadow_jobs: Option<tokio::sync::mpsc::Receiver<shadow::Job>>,
}

/// A change seen by an informer. Full objects are handled one at a time and never buffered,
/// so a relist of 150k pods does not hold 150k decoded Pods.
enum Change<K> {
    Apply(K),
    Delete(K),
    RelistStart,
    RelistItem(K),
    RelistDone,
}

impl Controller {
    /// A controller that talks to the API through `client` (for every request) and calls
    /// `guest`. `config.policy_config` becomes the configuration `guest` is called with.
    pub fn new(client: Client, guest: ActiveGuest, config: Config) -> Self {
        Self::with_clients(Clients::single(client), guest, config)
    }

    /// A controller that talks to the API through `clients`: each output's informer and
    /// writes through its own, the rest through `clients.shared`.
    pub fn with_clients(clients: Clients, guest: ActiveGuest, config: Config) -> Self {
        guest.set_config(config.policy_config.clone());
        let cache = Arc::new(Cache::new(config.service_selector.clone()));
        let writer = if config.dry_run {
            Writer::DryRun
        } else {
            Writer::Api(Box::new(clients.clone()), config.gate.clone())
        };
        let health = Arc::new(CallHealth::default());
        let consistency = Arc::new(ResetGate::default());
        let (shadow, shadow_jobs) = match &config.shadow {
            Some(guest) => {
                let (shadow, jobs) = shadow::Shadow::new(
                    guest.clone(),
                    config.shadow_config.clone(),
                    config.metrics.clone(),
                );
                (Some(Arc::new(shadow)), Some(jobs))
            }
            None => (None, None),
        };
        let syncer = Arc::new(Syncer {
            consistency: consistency.clone(),
            cache: cache.clone(),
            guest: guest.clone(),
            writer: writer.clone(),
            events: EventRecorder::new(writer, Duration::from_secs(60)),
            trigger_times: Default::default(),
            stale: StaleTracker::default(),
            health: health.clone(),
            shadow,
            outputs: config.outputs,
            slice_tracker: Default::default(),
            slice_stats: slice_sync::SliceStats::registered(&config.metrics),
            metrics: config.metrics.clone(),
        });
        config.metrics.set_guest(&guest.current());
        let handle = Handle {
            cache,
            queue: WorkQueue::with_metrics(config.rate_limiter, config.metrics.queue("endpoint")),
            guest,
            metrics: config.metrics.clone(),
            health,
            syncer: syncer.clone(),
            api: Arc::new(ApiHealth::default()),
            gate: config.gate.clone(),
            consistency,
            synced: Arc::new(AtomicBool::new(false)),
            readyz_api_timeout: config.readyz_api_timeout,
        };
        Controller {
            clients,
            config,
            syncer,
            handle,
            shadow_jobs,
        }
    }

    /// A handle that stays valid while the controller runs.
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    fn api<K>(&self, client: &Client) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        match &self.config.namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        }
    }

    /// Runs until `shutdown` is cancelled: informers first, workers once every cache synced,
    /// then the leftover sweep (spec §3, §4). On shutdown no new key is taken and in-flight
    /// syncs get `shutdown_grace` to finish.
    pub async fn run(mut self, shutdown: CancellationToken) {
        let handle = self.handle.clone();
        let outputs = self.config.outputs;
        let (synced_tx, mut synced_rx) = tokio::sync::mpsc::channel::<&'static str>(5);
        let mut informers = tokio::task::JoinSet::new();
        let mut pending: HashSet<&str> = ["services", "pods"].into();
        let syncer = self.syncer.clone();
        let watch = Watch {
            health: handle.api.clone(),
            gate: handle.consistency.clone(),
            check_every: (self.config.readyz_api_timeout / 4)
                .clamp(Duration::from_millis(100), Duration::from_secs(10)),
            // The new server's resourceVersions mean nothing against the old ones, and what
            // weir wrote to the old server will not come back from the new one.
            on_reset: Arc::new(move || {
                syncer.stale.clear();
                syncer.slice_tracker.clear();
            }),
            initial_list: self.config.initial_list,
        };
        informers.spawn(informer(
            self.api::<core::Service>(&self.clients.shared),
            services_handler(handle.clone()),
            synced_tx.clone(),
            "services",
            watch.clone(),
        ));
        informers.spawn(informer(
            self.api::<core::Pod>(&self.clients.shared),
            pods_handler(handle.clone(), self.config.batch_period),
            synced_tx.clone(),
            "pods",
            watch.clone(),
        ));
        if outputs.endpoints {
            pending.insert("endpoints");
            informers.spawn(informer(
                self.api::<core::Endpoints>(&self.clients.endpoints),
                endpoints_handler(handle.clone()),
                synced_tx.clone(),
                "endpoints",
                watch.clone(),
            ));
        }
        if outputs.endpoint_slices {
            pending.extend(["endpointslices", "nodes"]);
            informers.spawn(informer(
                self.api::<EndpointSlice>(&self.clients.endpoint_slices),
                slices_handler(handle.clone(), self.config.batch_period),
                synced_tx.clone(),
                "endpointslices",
                watch.clone(),
            ));
            informers.spawn(informer(
                Api::<core::Node>::all(self.clients.shared.clone()),
                nodes_handler(handle.clone()),
                synced_tx.clone(),
                "nodes",
                watch.clone(),
            ));
        }
        drop(synced_tx);

        // Workers start only when every cache is complete (spec §3.1): a Service synced
        // before the pod cache is warm would get empty Endpoints.
        while !pending.is_empty() {
            tokio::select! {
                _ = shutdown.cancelled() => {
                    informers.shutdown().await;
                    return;
                }
                Some(kind) = synced_rx.recv() => {
                    pending.remove(kind);
                    tracing::debug!(kind, "cache synced");
                }
            }
        }
        handle.synced.store(true, Ordering::Release);
        // A standby keeps its caches (and guest) warm here until it holds the lease.
        let standby = !handle.gate.is_leading();
        if standby {
            tracing::info!("caches synced; waiting for the leader-election lease");
        }
        tokio::select! {
            _ = shutdown.cancelled() => {
                informers.shutdown().await;
                return;
            }
            acquired = handle.gate.acquired() => if !acquired {
                informers.shutdown().await;
                return;
            }
        }
        // Events that came while this replica was not yet leading queued nothing (that may be
        // all of the initial lists, or some of them when the Lease came first): the leader
        // checks every Service now, as a restart would. The gate opened before this reads the
        // caches, so every later event queues its key itself.
        handle.enqueue_all();
        let leftovers = if outputs.endpoints {
            sweep_leftovers(&handle)
        } else {
            0
        };
        tracing::info!(
            services = handle.cache.service_keys().len(),
            pods = handle.cache.pod_count(),
            leftovers,
            workers = self.config.workers,
            dry_run = self.config.dry_run,
            "caches synced; starting workers"
        );

        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..self.config.workers.max(1) {
            workers.spawn(worker(
                self.syncer.clone(),
                handle.clone(),
                shutdown.clone(),
            ));
        }
        informers.spawn(resync(handle.clone(), self.config.resync_period));
        informers.spawn(recheck_after_resets(handle.clone()));
        if let (Some(shadow), Some(jobs)) = (self.syncer.shadow.clone(), self.shadow_jobs.take()) {
            let syncer = self.syncer.clone();
            informers.spawn(shadow.run(jobs, move |job, decision| {
                syncer.compare_shadow(&job, decision)
            }));
        }
        shutdown.cancelled().await;
        tracing::info!("shutting down: finishing in-flight syncs");
        handle.queue.shut_down();
        let drained = tokio::time::timeout(self.config.shutdown_grace, async {
            while workers.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(grace = ?self.config.shutdown_grace, "in-flight syncs did not finish in time; abandoning them");
            workers.shutdown().await;
        }
        informers.shutdown().await;
    }
}

/// Enqueues every cached Endpoints without the leader-election annotation, and allows deleting
/// those without a Service, so they get deleted (spec §4). This is the only time weir deletes
/// Endpoints it did not see a Service for. Returns how many were enqueued.
fn sweep_leftovers(handle: &Handle) -> usize {
    let mut n = 0;
    for (k, leader) in handle.cache.endpoints_keys() {
        if !leader {
            if !handle.cache.has_service(&k) {
                handle.cache.mark_deletable(&k);
            }
            handle.queue.add(k);
            n += 1;
        }
    }
    n
}

/// Queues every Service again after `period` to twice `period` (random, so replicas and
/// restarts spread out), for ever: a key dropped after its retries, or a change an event did not
/// report, gets another sync (upstream informers' resync, spec §3.6).
async fn resync(handle: Handle, period: Duration) {
    if period.is_zero() {
        return;
    }
    loop {
        tokio::time::sleep(period.mul_f64(1.0 + fastrand::f64())).await;
        let n = handle.enqueue_all();
        tracing::debug!(keys = n, "periodic resync");
    }
}

/// Once the caches are consistent again after a reset, checks every Service, as at start:
/// the relists queued what changed, but a key whose sync was refused meanwhile is owed one.
async fn recheck_after_resets(handle: Handle) {
    // Epochs, not the gate's state: a reset that closed and reopened the gate between two
    // looks is still seen.
    let mut epochs = handle.consistency.subscribe_epochs();
    while epochs.changed().await.is_ok() {
        handle.consistency.opened().await;
        let n = handle.enqueue_all();
        tracing::info!(
            keys = n,
            "consistent view of the API server again; checking every Service"
        );
    }
}

async fn worker(syncer: Arc<Syncer>, handle: Handle, shutdown: CancellationToken) {
    let metrics = &handle.metrics;
    while let Some(k) = handle.queue.get().await {
        // No sync starts from caches that may mix two API servers (see `consistency`).
        if !handle.consistency.is_open() {
            tokio::select! {
                _ = handle.consistency.opened() => {}
                _ = shutdown.cancelled() => {
                    handle.queue.done(&k);
                    return;
                }
            }
        }
        let started = std::time::Instant::now();
        let result = syncer.sync(&k).await;
        if matches!(result, Err(SyncError::Inconsistent(_))) {
            // A reset came during the sync: it waits for the gate again, without a retry
            // counted against it.
            tracing::debug!(key = %k, "sync abandoned: the API server was reset during it");
            handle.queue.add(k.clone());
            handle.queue.done(&k);
            continue;
        }
        metrics
            .sync_duration
            .observe(started.elapsed().as_secs_f64());
        let write = |action, result| {
            metrics
                .writes
                .get_or_create(&WriteLabels { action, result })
                .inc();
        };
        let sync_result = match &result {
            Ok(_) => "success",
            Err(e) => e.result_label(),
        };
        metrics
            .syncs
            .get_or_create(&ResultLabel {
                result: sync_result,
            })
            .inc();
        match result {
            // Its Endpoints write, if any, was logged and counted by the sync.
            Ok(_) => handle.queue.forget(&k),
            Err(e) => {
                if let SyncError::Write { action, .. } = &e {
                    write(action, "error");
                }
                record_failure(&handle, &k, &e)
            }
        }
        handle.queue.done(&k);
    }
}

fn record_failure(handle: &Handle, k: &str, e: &SyncError) {
    match handle.queue.retry_or_drop(k.to_string()) {
        // Right after weir's own write the watch has often not delivered it yet; the event
        // that does queues the key again. Routine under churn (counted as `stale` in
        // `weir_syncs_total`), so not a warning; one that exhausts its retries still is.
        Retry::Scheduled(delay) if e.is_stale() => {
            tracing::debug!(key = %k, reason = %e, retry_in = ?delay, "sync deferred until the cache catches up")
        }
        Retry::Scheduled(delay) => {
            tracing::warn!(key = %k, error = %e, retry_in = ?delay, "sync failed")
        }
        Retry::Dropped { requeues } => {
            handle.metrics.keys_dropped.inc();
            tracing::error!(key = %k, error = %e, requeues, "dropping service out of the queue");
        }
    }
}

fn names<K: Resource>(o: &K) -> (String, String) {
    (
        o.meta().namespace.clone().unwrap_or_default(),
        o.meta().name.clone().unwrap_or_default(),
    )
}

fn services_handler(h: Handle) -> impl FnMut(Change<core::Service>) {
    let mut seen: Option<HashSet<String>> = None;
    move |change| {
        let apply = |svc: &core::Service| {
            let (ns, name) = names(svc);
            if h.cache.apply_service(svc) {
                h.enqueue(key(&ns, &name));
            }
            key(&ns, &name)
        };
        match change {
            Change::Apply(svc) => {
                apply(&svc);
            }
            Change::Delete(svc) => {
                let (ns, name) = names(&svc);
                h.cache.delete_service(&ns, &name);
                h.enqueue(key(&ns, &name));
            }
            Change::RelistStart => seen = Some(HashSet::new()),
            Change::RelistItem(svc) => {
                let k = apply(&svc);
                seen.get_or_insert_with(HashSet::new).insert(k);
            }
            Change::RelistDone => {
                let seen = seen.take().unwrap_or_default();
                for k in h.cache.retain_services(&seen) {
                    h.enqueue(k);
                }
            }
        }
    }
}

/// The Services a pod event concerns, each with its delay: the batch period, so that bursts
/// coalesce (spec §2.6, §3.5; R1.14, R1.18).
fn pod_enqueues(
    services: &[Arc<crate::runtime::bindings::Service>],
    batch: Duration,
    old: Option<&CachedPod>,
    new: Option<&CachedPod>,
) -> Vec<(String, Duration)> {
    events::keys_for_pod(services, old, new)
        .into_iter()
        .map(|k| (k, batch))
        .collect()
}

fn pods_handler(h: Handle, batch: Duration) -> impl FnMut(Change<core::Pod>) {
    let mut seen: Option<HashSet<(String, String)>> = None;
    move |change| {
        let enqueue = |ns: &str, old: Option<&CachedPod>, new: Option<&CachedPod>| {
            // Until the caches are synced no worker runs, and every managed Service is queued
            // once its informer sees it; matching each pod of the first list against every
            // Service of its namespace would only repeat that (10k Services, 150k pods: 150M
            // selector checks).
            if !h.is_synced() {
                return;
            }
            for (k, delay) in pod_enqueues(&h.cache.services_in(ns), batch, old, new) {
                h.enqueue_after(k, delay);
            }
        };
        let apply = |pod: &core::Pod| {
            let new = CachedPod::from_pod(pod);
            let ns = new.namespace().to_string();
            let old = h.cache.apply_pod(new.clone());
            enqueue(&ns, old.as_ref(), Some(&new));
        };
        match change {
            Change::Apply(pod) => apply(&pod),
            Change::Delete(pod) => {
                let (ns, name) = names(&pod);
                let old = h
                    .cache
                    .delete_pod(&ns, &name)
                    .unwrap_or_else(|| CachedPod::from_pod(&pod));
                enqueue(&ns, Some(&old), None);
            }
            Change::RelistStart => seen = Some(HashSet::new()),
            Change::RelistItem(pod) => {
                apply(&pod);
                seen.get_or_insert_with(HashSet::new).insert(names(&pod));
            }
            Change::RelistDone => {
                let seen = seen.take().unwrap_or_default();
                for (ns, name) in h.cache.pod_keys() {
                    if !seen.contains(&(ns.clone(), name.clone()))
                        && let Some(old) = h.cache.delete_pod(&ns, &name)
                    {
                        enqueue(&ns, Some(&old), None);
                    }
                }
            }
        }
    }
}

fn endpoints_handler(h: Handle) -> impl FnMut(Change<core::Endpoints>) {
    let mut seen: Option<HashSet<String>> = None;
    move |change| {
        let apply = |ep: core::Endpoints| {
            let (ns, name) = names(&ep);
            let k = key(&ns, &name);
            let rv = ep.metadata.resource_version.clone();
            let old = h.cache.apply_endpoints(ep);
            // D3: an Endpoints changed by anyone but weir is re-synced, so hand edits are
            // restored at once. weir's own write coming back is not: that sync would find
            // nothing to do, and it would race the watch of the slices written in the same
            // sync and fail as stale. Before the first sync the leftover sweep covers every
            // object instead.
            let own = h.syncer.stale.is_own_write(&k, rv.as_deref());
            if h.is_synced() && !own && old.is_none_or(|old_rv| old_rv != rv) {
                h.enqueue(k.clone());
            }
            k
        };
        match change {
            Change::Apply(ep) => {
                apply(ep);
            }
            Change::Delete(ep) => {
                let (ns, name) = names(&ep);
                let k = key(&ns, &name);
                h.cache.delete_endpoints(&k);
                h.enqueue(k);
            }
            Change::RelistStart => seen = Some(HashSet::new()),
            Change::RelistItem(ep) => {
                let k = apply(ep);
                seen.get_or_insert_with(HashSet::new).insert(k);
            }
            Change::RelistDone => {
                let seen = seen.take().unwrap_or_default();
                for (k, _) in h.cache.endpoints_keys() {
                    if !seen.contains(&k) {
                        h.cache.delete_endpoints(&k);
                        h.enqueue(k);
                    }
                }
            }
        }
    }
}

/// Delay of slice-driven syncs: at least a second, so a burst of slice events (and the watch
/// catching up with weir's own writes) coalesces into one sync (upstream R1.15e).
fn slice_delay(batch: Duration) -> Duration {
    batch.max(Duration::from_secs(1))
}

/// The Services a slice event concerns, each after [`slice_delay`] (R1.15).
fn slice_enqueues(
    tracker: &slice_tracker::SliceTracker,
    batch: Duration,
    old: Option<&EndpointSlice>,
    new: Option<&EndpointSlice>,
) -> Vec<(String, Duration)> {
    slices::keys_for_slice(tracker, old, new)
        .into_iter()
        .map(|k| (k, slice_delay(batch)))
        .collect()
}

fn slices_handler(h: Handle, batch: Duration) -> impl FnMut(Change<EndpointSlice>) {
    let mut seen: Option<HashSet<String>> = None;
    move |change| {
        let enqueue = |old: Option<&EndpointSlice>, new: Option<&EndpointSlice>| {
            for (k, delay) in slice_enqueues(&h.syncer.slice_tracker, batch, old, new) {
                h.enqueue_after(k, delay);
            }
            for k in h.syncer.slices_caught_up(old, new) {
                h.enqueue(k);
            }
        };
        let apply = |slice: EndpointSlice| {
            let (ns, name) = names(&slice);
            let new = std::sync::Arc::new(slice.clone());
            let old = h.cache.slices.apply(slice);
            enqueue(old.as_deref(), Some(&new));
            key(&ns, &name)
        };
        let delete = |ns: &str, name: &str, last: Option<EndpointSlice>| {
            let old = h.cache.slices.delete(ns, name);
            let old = old.as_deref().cloned().or(last);
            enqueue(old.as_ref(), None);
        };
        match change {
            Change::Apply(slice) => {
                apply(slice);
            }
            Change::Delete(slice) => {
                let (ns, name) = names(&slice);
                delete(&ns, &name, Some(slice));
            }
            Change::RelistStart => seen = Some(HashSet::new()),
            Change::RelistItem(slice) => {
                let k = apply(slice);
                seen.get_or_insert_with(HashSet::new).insert(k);
            }
            Change::RelistDone => {
                let seen = seen.take().unwrap_or_default();
                for k in h.cache.slices.keys() {
                    if !seen.contains(&k)
                        && let Some((ns, name)) = k.split_once('/')
                    {
                        delete(ns, name, None);
                    }
                }
            }
        }
    }
}

/// The Services a Node change re-syncs at once. Only topology-aware hints depend on Nodes
/// beyond each endpoint's zone, which upstream refreshes at the Service's next sync (R1.16,
/// S97). Upstream re-syncs only the Services whose hints became overloaded; weir keeps no
/// hint state in the host, so it re-syncs every Service asking for `auto` hints and the guest
/// writes only where the hints no longer hold (deviation D10).
fn node_enqueues(
    cache: &Cache,
    old: Option<&slices::NodeView>,
    new: Option<&slices::NodeView>,
) -> Vec<String> {
    if slices::NodeView::topology_changed(old, new) {
        cache.topology_hint_service_keys()
    } else {
        Vec::new()
    }
}

fn nodes_handler(h: Handle) -> impl FnMut(Change<core::Node>) {
    let mut seen: Option<HashSet<String>> = None;
    move |change| {
        let changed = |old: Option<&slices::NodeView>, new: Option<&slices::NodeView>| {
            if h.is_synced() {
                for k in node_enqueues(&h.cache, old, new) {
                    h.enqueue(k);
                }
            }
        };
        let apply = |node: &core::Node| {
            let name = node.metadata.name.clone().unwrap_or_default();
            let view = slices::NodeView::from_node(node);
            let old = h.cache.nodes.apply(&name, view.clone());
            changed(old.as_ref(), Some(&view));
            name
        };
        match change {
            Change::Apply(node) => {
                apply(&node);
            }
            Change::Delete(node) => {
                let name = node.metadata.name.clone().unwrap_or_default();
                let old = h.cache.nodes.delete(&name);
                changed(old.as_ref(), None);
            }
            Change::RelistStart => seen = Some(HashSet::new()),
            Change::RelistItem(node) => {
                let name = apply(&node);
                seen.get_or_insert_with(HashSet::new).insert(name);
            }
            Change::RelistDone => {
                let seen = seen.take().unwrap_or_default();
                for name in h.cache.nodes.names() {
                    if !seen.contains(&name) {
                        let old = h.cache.nodes.delete(&name);
                        changed(old.as_ref(), None);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
