//! The controller: informers fill the caches and queue Service keys; workers sync keys.
//!
//! A key's path, one way, a file a step (each calls down into pure code it owns nothing of:
//! [`store`], [`ledger`], `crate::reconcile`):
//!
//! 1. [`watch`] (`watch/mod.rs`): list and watch each resource, relist after a reset;
//! 2. [`reflect`](mod@reflect) (`reflect/mod.rs`): apply each change to the [`store`];
//! 3. `reflect/triggers.rs`: which Service keys the change queues, after what delay;
//! 4. `handle.rs`: [`Handle::enqueue_after`], where a standby queues nothing;
//! 5. `crate::queue`: the client-go work queue (dedup, delays, per-key backoff);
//! 6. `workers.rs`: a worker takes a key, syncs it, and retries or forgets it;
//! 7. [`sync`] (`sync/mod.rs`): the spine of one sync;
//! 8. `sync/request.rs`: read the store once, behind the [`ledger`]'s stale-cache guards;
//! 9. `crate::runtime::Guest::call`: the guest decides, within its deadline and memory cap;
//! 10. `sync/admit.rs`: admit both outputs' parts (`crate::reconcile::admit`);
//! 11. `sync/write.rs`: the Endpoints and the slices at once, each write recorded in the
//!     [`ledger`];
//! 12. [`writer`] (`writer.rs`): the API request, behind the leader's write gate.
//!
//! Nothing flows back up that path. weir's own writes come back through the watch; the
//! reflector tells them apart by asking the [`ledger`] (a narrow, read-only question). The
//! watch reports an API server reset through a callback that [`Controller::run`] wires to
//! clearing the ledger; the watch itself knows nothing of it.
//! The shadow guest ([`shadow`]) gets a copy of each decision off the path.
//!
//! kube-runtime's `Controller` does not fit (see docs): it never reconciles a deleted object,
//! gates only on its own cache, and lacks per-key backoff. So this wires kube-runtime's
//! `watcher` (with its backoff) to weir's caches and a client-go-style queue.
//!
//! Rule numbers R1–R10 and scenarios S01–S98 are those of `docs/upstream-endpointslices.md`.

mod handle;
pub mod ledger;
mod outputs;
pub mod reflect;
pub mod shadow;
pub mod store;
pub mod sync;
pub mod watch;
mod workers;
pub mod writer;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::{Api, Client, Resource};
use tokio_util::sync::CancellationToken;

use crate::client::Clients;
use crate::leader::WriteGate;
use crate::metrics::Metrics;
use crate::queue::{RateLimiterConfig, WorkQueue};
use crate::runtime::ActiveGuest;
use crate::runtime::health::CallHealth;
use crate::selector::LabelSelector;
pub use handle::Handle;
use ledger::Ledger;
pub use outputs::Outputs;
use reflect::{EndpointsObjects, Nodes, Pods, Services, Slices, reflect};
use store::Cache;
use sync::{SliceStats, Syncer};
use watch::consistency::ResetGate;
use watch::{ApiHealth, Watch, informer};
pub use watch::{DEFAULT_PAGE_SIZE, InitialList};
use workers::{enqueue_everything, recheck_after_resets, resync, sweep_leftovers, worker};
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
    /// Pods and Nodes are listed and watched in protobuf where the server serves it (their
    /// streaming lists; see [`watch::protobuf`]).
    pub read_in_protobuf: bool,
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
            read_in_protobuf: true,
        }
    }
}

/// The Endpoints controller.
pub struct Controller {
    clients: Clients,
    config: Config,
    syncer: Arc<Syncer>,
    /// weir's own writes: the syncs record them, the reflector asks about them.
    ledger: Arc<Ledger>,
    handle: Handle,
    /// The shadow guest's queue, which [`Controller::run`] serves.
    shadow_jobs: Option<tokio::sync::mpsc::Receiver<shadow::Job>>,
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
        let ledger = Arc::new(Ledger::default());
        let syncer = Arc::new(Syncer {
            consistency: consistency.clone(),
            cache: cache.clone(),
            guest: guest.clone(),
            writer: writer.clone(),
            events: EventRecorder::new(writer, Duration::from_secs(60)),
            trigger_times: Default::default(),
            ledger: ledger.clone(),
            health: health.clone(),
            shadow: shadow.clone(),
            outputs: config.outputs,
            slice_stats: SliceStats::registered(&config.metrics),
            metrics: config.metrics.clone(),
        });
        guest.current().report_active(&config.metrics);
        let handle = Handle {
            cache,
            queue: WorkQueue::with_metrics(config.rate_limiter, config.metrics.queue("endpoint")),
            guest,
            metrics: config.metrics.clone(),
            health,
            outputs: config.outputs,
            shadow,
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
            ledger,
            handle,
            shadow_jobs,
        }
    }

    /// A handle that stays valid while the controller runs.
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// The sync stage, for tests and tools that sync one key directly, outside the workers.
    pub fn syncer(&self) -> Arc<Syncer> {
        self.syncer.clone()
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
        let ledger = self.ledger.clone();
        let watch = Watch {
            health: handle.api.clone(),
            gate: handle.consistency.clone(),
            check_every: (self.config.readyz_api_timeout / 4)
                .clamp(Duration::from_millis(100), Duration::from_secs(10)),
            // The new server's resourceVersions mean nothing against the old ones, and what
            // weir wrote to the old server will not come back from the new one.
            on_reset: Arc::new(move || ledger.clear()),
            initial_list: self.config.initial_list,
        };
        informers.spawn(informer(
            self.api::<core::Service>(&self.clients.shared),
            reflect(Services {
                handle: handle.clone(),
                ledger: self.ledger.clone(),
            }),
            synced_tx.clone(),
            "services",
            watch.clone(),
            None,
        ));
        informers.spawn(informer(
            self.api::<store::wire_pod::WirePod>(&self.clients.shared),
            reflect(Pods {
                handle: handle.clone(),
                batch: self.config.batch_period,
            }),
            synced_tx.clone(),
            "pods",
            watch.clone(),
            // The pods, tens of thousands, are most of what the informers read.
            self.config
                .read_in_protobuf
                .then_some(watch::protobuf::of_api::<store::wire_pod::protobuf::Pod, _>),
        ));
        if outputs.endpoints {
            pending.insert("endpoints");
            informers.spawn(informer(
                self.api::<core::Endpoints>(&self.clients.endpoints),
                reflect(EndpointsObjects {
                    handle: handle.clone(),
                    ledger: self.ledger.clone(),
                }),
                synced_tx.clone(),
                "endpoints",
                watch.clone(),
                None,
            ));
        }
        if outputs.endpoint_slices {
            pending.extend(["endpointslices", "nodes"]);
            informers.spawn(informer(
                self.api::<EndpointSlice>(&self.clients.endpoint_slices),
                reflect(Slices {
                    handle: handle.clone(),
                    ledger: self.ledger.clone(),
                    batch: self.config.batch_period,
                }),
                synced_tx.clone(),
                "endpointslices",
                watch.clone(),
                None,
            ));
            informers.spawn(informer(
                Api::<store::wire_node::WireNode>::all(self.clients.shared.clone()),
                reflect(Nodes(handle.clone())),
                synced_tx.clone(),
                "nodes",
                watch.clone(),
                self.config
                    .read_in_protobuf
                    .then_some(watch::protobuf::of_api::<store::wire_node::protobuf::Node, _>),
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
        handle.set_synced();
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
        enqueue_everything(&handle, &self.ledger);
        let leftovers = if outputs.endpoints {
            sweep_leftovers(&handle, &self.ledger)
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
                reflect::triggers::slice_delay(self.config.batch_period),
                shutdown.clone(),
            ));
        }
        informers.spawn(resync(
            handle.clone(),
            self.ledger.clone(),
            self.config.resync_period,
        ));
        informers.spawn(recheck_after_resets(handle.clone(), self.ledger.clone()));
        if let (Some(shadow), Some(jobs)) = (handle.shadow.clone(), self.shadow_jobs.take()) {
            let metrics = self.config.metrics.clone();
            informers.spawn(shadow.run(jobs, move |job, decision| {
                shadow::compare::compare_shadow(outputs, &metrics, &job, decision)
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

#[cfg(test)]
mod tests;
