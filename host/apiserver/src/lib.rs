//! `weir-apiserver`: a small, faithful, in-memory Kubernetes API server.
//!
//! weir's demo, end-to-end tests and benchmarks run against it over real HTTP. It serves
//! namespaces, services, pods (with `status`), nodes, configmaps, endpoints and events
//! (core/v1), leases (coordination.k8s.io/v1) and endpointslices (discovery.k8s.io/v1) with
//! kube-apiserver's semantics for the verbs, watches, selectors, paging, conflicts and errors
//! that clients (kubectl, kube-rs) depend on, plus the garbage collector and the kubelet's part
//! in pod deletion. See `docs/apiserver.md`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), weir_apiserver::Error> {
//! let server = weir_apiserver::ApiServer::start(weir_apiserver::Config::default()).await?;
//! server.write_kubeconfig(std::path::Path::new("/tmp/kubeconfig"))?;
//! println!("serving at {}", server.url());
//! server.shutdown().await;
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

mod apply;
pub mod cli;
mod discovery;
mod gc;
mod http;
mod kubelet;
mod openapi;
mod patch;
mod proto;
mod resources;
pub mod review;
mod selector;
mod store;
mod util;
mod validation;
mod versions;
pub mod yaml_limits;

use store::{Store, WriteOpts};
use util::Rng;

/// Errors of the library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Binding or serving the socket failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// Seed data could not be parsed.
    #[error("parsing seed data: {0}")]
    Seed(String),
    /// A seed object was refused by the store.
    #[error("loading seed object {what}: {message}")]
    SeedObject {
        /// `kind namespace/name` of the object.
        what: String,
        /// The API error message.
        message: String,
    },
}

/// Fault injection settings. All off by default.
#[derive(Debug, Clone, PartialEq)]
pub struct Faults {
    /// Extra latency added to every API request (not to discovery or health endpoints).
    pub latency: Duration,
    /// Share (0.0–1.0) of API requests answered `500 InternalError`.
    pub error_rate: f64,
    /// Share (0.0–1.0) of API requests answered `429 TooManyRequests` with `Retry-After`.
    pub throttle_rate: f64,
    /// `Retry-After` seconds sent with injected 429s.
    pub retry_after_seconds: u64,
    /// The next N updates (PUT or PATCH) are answered `409 Conflict`.
    pub conflict_next_updates: u64,
    /// The next N watch requests are answered with a `410 Gone` (Expired) ERROR event.
    pub expire_next_watches: u64,
    /// Seed of the random source deciding which requests fail (deterministic per seed).
    pub seed: u64,
    /// Clients cut off from some resources, as by a network partition.
    pub partitions: Vec<Partition>,
}

/// Every request for `resource` from a client whose User-Agent contains `user_agent` is
/// answered `503 ServiceUnavailable`, as if the network between them were cut (used to make
/// one replica's Lease renewals fail while its other requests go through).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// A part of the client's User-Agent.
    pub user_agent: String,
    /// The resource's plural name, e.g. `"leases"`.
    pub resource: String,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            latency: Duration::ZERO,
            error_rate: 0.0,
            throttle_rate: 0.0,
            retry_after_seconds: 1,
            conflict_next_updates: 0,
            expire_next_watches: 0,
            seed: 0,
            partitions: Vec::new(),
        }
    }
}

/// Server configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on; port 0 picks a free port.
    pub addr: SocketAddr,
    /// Watch history kept per resource, in events. Watches from older resourceVersions get 410.
    pub history: usize,
    /// Interval of BOOKMARK events on watches that ask for them.
    pub bookmark_interval: Duration,
    /// Fault injection at start.
    pub faults: Faults,
    /// Objects to load at start (status kept, missing namespaces created).
    pub seed: Vec<Value>,
    /// How long after a namespace is marked for deletion its contents are deleted (the
    /// namespace controller's work; in a cluster it takes a moment too).
    pub namespace_deletion_delay: Duration,
    /// Upper bound on how long a terminating pod stays before the emulated kubelet removes it.
    /// `None` (the default): the whole grace period, as when containers ignore SIGTERM. Tests
    /// set a short value; the pod's `deletionTimestamp` still shows the full grace period.
    pub max_pod_grace_period: Option<Duration>,
    /// How long reading a request body may take before the request fails with 504 Timeout
    /// (kube-apiserver's `--request-timeout` default is 60 s), so a client that stalls
    /// mid-body does not hold a connection and its buffer forever.
    pub request_body_timeout: Duration,
    /// The resourceVersion the server starts at: its first write gets the next one. A server
    /// started ahead of (or behind) another one's last resourceVersion stands in for an API
    /// server restored from another etcd. Watches and `Exact` lists from before the start get
    /// 410 Gone: the history begins after the seed.
    pub initial_resource_version: u64,
    /// Whether watches accept `sendInitialEvents` (watch-list). `false` answers it with 422,
    /// as a kube-apiserver whose `WatchList` feature gate is off, to test clients' fallback.
    pub watch_list: bool,
    /// The tokens and policies TokenReview and SubjectAccessReview answer from.
    pub reviews: review::Reviews,
    /// Header-read timeout and connection cap of the listener.
    pub limits: weir_serve::Limits,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            history: 10_000,
            bookmark_interval: Duration::from_secs(1),
            faults: Faults::default(),
            seed: Vec::new(),
            namespace_deletion_delay: Duration::from_millis(500),
            max_pod_grace_period: None,
            request_body_timeout: Duration::from_secs(60),
            initial_resource_version: 0,
            watch_list: true,
            reviews: review::Reviews::default(),
            limits: weir_serve::Limits::default(),
        }
    }
}

/// Parses seed data: multi-document YAML, a JSON/YAML `List` (`kind: List` or any `*List`),
/// or a single object.
pub fn parse_seed(text: &str) -> Result<Vec<Value>, Error> {
    yaml_limits::check(text).map_err(|e| Error::Seed(e.to_string()))?;
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(text) {
        let v: Value =
            serde::Deserialize::deserialize(doc).map_err(|e| Error::Seed(e.to_string()))?;
        flatten_list(v, &mut out)?;
    }
    Ok(out)
}

fn flatten_list(v: Value, out: &mut Vec<Value>) -> Result<(), Error> {
    match v {
        Value::Null => Ok(()),
        Value::Object(ref m)
            if m.get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| k.ends_with("List")) =>
        {
            for item in m
                .get("items")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                flatten_list(item.clone(), out)?;
            }
            Ok(())
        }
        Value::Object(_) => {
            out.push(v);
            Ok(())
        }
        Value::Array(items) => {
            for i in items {
                flatten_list(i, out)?;
            }
            Ok(())
        }
        other => Err(Error::Seed(format!("expected an object, got {other}"))),
    }
}

#[derive(Debug)]
pub(crate) struct FaultState {
    pub faults: Faults,
    pub rng: Rng,
}

/// Verb counters of one resource.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerbCounts {
    /// POST requests.
    pub create: u64,
    /// PUT requests.
    pub update: u64,
    /// PATCH requests.
    pub patch: u64,
    /// DELETE requests.
    pub delete: u64,
}

/// A snapshot of request counters.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// All HTTP requests received.
    pub requests: u64,
    /// Watch requests received.
    pub watches: u64,
    /// Write requests per resource (`"endpoints"`, `"pods/status"` for the subresource, ...),
    /// counted when received, whether they succeeded or not.
    pub by_resource: BTreeMap<String, VerbCounts>,
    /// Write requests per client (User-Agent, `""` without one) and resource, counted like
    /// `by_resource`. At most [`MAX_CLIENTS`] clients are told apart; later ones count as
    /// `"(other)"`.
    pub by_client: BTreeMap<String, BTreeMap<String, ClientWrites>>,
}

/// How many distinct User-Agents [`Stats::by_client`] tells apart, so that clients inventing
/// User-Agents cannot grow the server's memory without bound.
pub const MAX_CLIENTS: usize = 256;

/// The writes one client sent for one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientWrites {
    /// How many.
    pub count: u64,
    /// When the first was received.
    pub first: std::time::Instant,
    /// When the last was received.
    pub last: std::time::Instant,
}

impl ClientWrites {
    fn merge(self, other: ClientWrites) -> ClientWrites {
        ClientWrites {
            count: self.count + other.count,
            first: self.first.min(other.first),
            last: self.last.max(other.last),
        }
    }
}

impl Stats {
    /// create + update + patch + delete requests for `resource` (e.g. `"endpoints"`,
    /// `"pods/status"`).
    pub fn writes(&self, resource: &str) -> u64 {
        self.by_resource
            .get(resource)
            .map(|c| c.create + c.update + c.patch + c.delete)
            .unwrap_or(0)
    }

    /// Counters for `resource`.
    pub fn verbs(&self, resource: &str) -> VerbCounts {
        self.by_resource.get(resource).copied().unwrap_or_default()
    }

    /// The writes for any of `resources` sent by the clients whose User-Agent contains
    /// `user_agent`, together; `None` if there were none.
    pub fn client_writes(&self, user_agent: &str, resources: &[&str]) -> Option<ClientWrites> {
        self.by_client
            .iter()
            .filter(|(agent, _)| agent.contains(user_agent))
            .flat_map(|(_, by_resource)| {
                resources
                    .iter()
                    .filter_map(|r| by_resource.get(*r).copied())
            })
            .reduce(ClientWrites::merge)
    }

    /// The User-Agents that sent any write for any of `resources`.
    pub fn writers(&self, resources: &[&str]) -> Vec<String> {
        self.by_client
            .iter()
            .filter(|(_, by_resource)| resources.iter().any(|r| by_resource.contains_key(*r)))
            .map(|(agent, _)| agent.clone())
            .collect()
    }
}

#[derive(Debug, Default)]
pub(crate) struct StatsInner {
    pub requests: AtomicU64,
    pub watches: AtomicU64,
    pub by_resource: Mutex<BTreeMap<String, VerbCounts>>,
    pub by_client: Mutex<BTreeMap<String, BTreeMap<String, ClientWrites>>>,
    /// Every request as received, once [`RunningApiServer::record_requests`] turned it on.
    pub log: Mutex<Option<Vec<RequestRecord>>>,
}

/// Most requests [`RunningApiServer::requests`] keeps; later ones are not recorded, so a
/// forgotten log cannot grow without bound.
pub const REQUEST_LOG_CAP: usize = 1_000_000;

/// One API request as the server received it (see [`RunningApiServer::record_requests`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// When its head arrived.
    pub at: std::time::Instant,
    /// `GET`, `POST`, ...
    pub method: String,
    /// The URL path, without the query.
    pub path: String,
    /// Its `watch=true` query: the start of a watch.
    pub watch: bool,
    /// Its `User-Agent` header, if any.
    pub user_agent: Option<String>,
}

impl StatsInner {
    /// Appends to the request log, if it is on and not full.
    pub(crate) fn log(&self, record: impl FnOnce() -> RequestRecord) {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(log) = log.as_mut()
            && log.len() < REQUEST_LOG_CAP
        {
            log.push(record());
        }
    }
}

/// State shared by all request handlers.
#[derive(Debug)]
pub(crate) struct Shared {
    pub store: Mutex<Store>,
    pub faults: Mutex<FaultState>,
    pub stats: StatsInner,
    /// Bumped to drop every open watch.
    pub drop_watches: tokio::sync::watch::Sender<u64>,
    pub bookmark_interval: Duration,
    pub addr: SocketAddr,
    pub request_body_timeout: Duration,
    pub watch_list: bool,
    pub reviews: review::Reviews,
}

impl Shared {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub(crate) fn lock_faults(&self) -> std::sync::MutexGuard<'_, FaultState> {
        self.faults.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Changes fault injection of a running server.
#[derive(Debug, Clone)]
pub struct FaultHandle(Arc<Shared>);

impl FaultHandle {
    /// Current settings.
    pub fn get(&self) -> Faults {
        self.0.lock_faults().faults.clone()
    }
    /// Replaces all settings (re-seeding the random source).
    pub fn set(&self, faults: Faults) {
        let mut f = self.0.lock_faults();
        f.rng = Rng::new(faults.seed);
        f.faults = faults;
    }
    /// Latency added to each API request.
    pub fn set_latency(&self, latency: Duration) {
        self.0.lock_faults().faults.latency = latency;
    }
    /// Share of API requests answered 500.
    pub fn set_error_rate(&self, rate: f64) {
        self.0.lock_faults().faults.error_rate = rate;
    }
    /// Share of API requests answered 429 with `Retry-After`.
    pub fn set_throttle_rate(&self, rate: f64) {
        self.0.lock_faults().faults.throttle_rate = rate;
    }
    /// Answer the next `n` updates (PUT/PATCH) with 409 Conflict.
    pub fn conflict_next_updates(&self, n: u64) {
        self.0.lock_faults().faults.conflict_next_updates = n;
    }
    /// Cuts clients whose User-Agent contains `user_agent` off from `resource` (plural): their
    /// requests for it get 503 until [`FaultHandle::heal`].
    pub fn partition(&self, user_agent: &str, resource: &str) {
        self.0.lock_faults().faults.partitions.push(Partition {
            user_agent: user_agent.into(),
            resource: resource.into(),
        });
    }
    /// Ends every partition.
    pub fn heal(&self) {
        self.0.lock_faults().faults.partitions.clear();
    }
    /// Answer the next `n` watch requests with 410 Gone.
    pub fn expire_next_watches(&self, n: u64) {
        self.0.lock_faults().faults.expire_next_watches = n;
    }
    /// Drop every open watch connection now (clients see the connection end abruptly).
    pub fn drop_watches(&self) {
        self.0.drop_watches.send_modify(|g| *g += 1);
    }
    /// Makes every watch on `resource` (plural, e.g. `"pods"`) that resumes from a
    /// resourceVersion before now get 410 Gone, as after an etcd compaction.
    pub fn compact(&self, resource: &str) {
        let mut s = self.0.lock();
        let rv = s.rv;
        for (i, def) in resources::RESOURCES.iter().enumerate() {
            if def.name == resource {
                s.res[i].history.clear();
                s.res[i].compacted = rv;
            }
        }
    }
}

/// Starts servers.
#[derive(Debug)]
pub struct ApiServer;

impl ApiServer {
    /// Binds `config.addr`, loads the seed and serves in a background task.
    pub async fn start(config: Config) -> Result<RunningApiServer, Error> {
        let mut store = Store::starting_at(config.history, 0x5eed, config.initial_resource_version);
        store.kubelet.max_grace = config.max_pod_grace_period;
        for v in &config.seed {
            load_seed_object(&mut store, v.clone())?;
        }
        // As kube-apiserver's watch cache, which starts from a list: no history before it.
        store.forget_history();
        let listener = tokio::net::TcpListener::bind(config.addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            store: Mutex::new(store),
            faults: Mutex::new(FaultState {
                rng: Rng::new(config.faults.seed),
                faults: config.faults.clone(),
            }),
            stats: StatsInner::default(),
            drop_watches: tokio::sync::watch::channel(0).0,
            bookmark_interval: config.bookmark_interval,
            addr,
            request_body_timeout: config.request_body_timeout,
            watch_list: config.watch_list,
            reviews: config.reviews.clone(),
        });
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let app = http::router(shared.clone());
        let task = tokio::spawn(weir_serve::serve(
            listener,
            app,
            config.limits,
            None,
            async {
                let _ = stop_rx.await;
            },
        ));
        let ns_task = tokio::spawn(namespace_controller(
            shared.clone(),
            config.namespace_deletion_delay,
        ));
        let gc_task = tokio::spawn(gc::run(shared.clone()));
        let kubelet_task = tokio::spawn(kubelet::run(shared.clone()));
        tracing::info!(%addr, "weir-apiserver listening");
        Ok(RunningApiServer {
            addr,
            shared,
            stop: Some(stop_tx),
            task,
            controllers: vec![ns_task, gc_task, kubelet_task],
        })
    }
}

/// Deletes the contents of terminating namespaces, `delay` after they were marked.
async fn namespace_controller(shared: Arc<Shared>, delay: Duration) {
    let mut rx = shared.lock().res[resources::NAMESPACES].tx.subscribe();
    while rx.changed().await.is_ok() {
        let terminating = shared.lock().res[resources::NAMESPACES]
            .objects
            .values()
            .any(|o| !o.value()["metadata"]["deletionTimestamp"].is_null());
        if !terminating {
            continue;
        }
        tokio::time::sleep(delay).await;
        if let Err(e) = shared.lock().finalize_namespaces() {
            tracing::warn!(error = %e.message, "namespace controller");
        }
    }
}

fn load_seed_object(store: &mut Store, v: Value) -> Result<(), Error> {
    let kind = v["kind"].as_str().unwrap_or("").to_string();
    let api_version = v["apiVersion"].as_str().unwrap_or("").to_string();
    let ns = v["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_string();
    let name = v["metadata"]["name"].as_str().unwrap_or("").to_string();
    let what = format!("{kind} {ns}/{name}");
    let r = resources::RESOURCES
        .iter()
        .position(|d| d.kind == kind && d.api_version() == api_version)
        .ok_or_else(|| Error::SeedObject {
            what: what.clone(),
            message: format!("unsupported kind {api_version}/{kind}"),
        })?;
    let def = &resources::RESOURCES[r];
    let res = if r == resources::NAMESPACES && store.get(r, "", &name).is_some() {
        return Ok(());
    } else {
        store.create(
            r,
            def.namespaced.then_some(ns.as_str()),
            v,
            WriteOpts {
                dry_run: false,
                seed: true,
            },
        )
    };
    res.map(|_| ()).map_err(|e| Error::SeedObject {
        what,
        message: e.message,
    })
}

/// A running server.
#[derive(Debug)]
pub struct RunningApiServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    /// Namespace controller, garbage collector, kubelet.
    controllers: Vec<tokio::task::JoinHandle<()>>,
}

/// Direct in-process access to the stored objects (for tests).
#[derive(Debug, Clone)]
pub struct StoreHandle(Arc<Shared>);

impl StoreHandle {
    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.0.lock().rv
    }
    /// Gets an object by resource plural (`"pods"`, `"leases"`), namespace (empty for
    /// cluster-scoped) and name.
    pub fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<Value> {
        let r = resources::RESOURCES
            .iter()
            .position(|d| d.name == resource)?;
        self.0.lock().get(r, namespace, name).map(|o| o.value())
    }
    /// Number of stored objects of a resource.
    pub fn count(&self, resource: &str) -> usize {
        resources::RESOURCES
            .iter()
            .position(|d| d.name == resource)
            .map(|r| self.0.lock().res[r].objects.len())
            .unwrap_or(0)
    }
    /// Loads objects as the seed does (status kept, missing namespaces created).
    pub fn load(&self, objects: Vec<Value>) -> Result<(), Error> {
        let mut s = self.0.lock();
        for v in objects {
            load_seed_object(&mut s, v)?;
        }
        Ok(())
    }
}

impl RunningApiServer {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kubeconfig whose cluster, user and context are all named `weir` (no auth).
    pub fn kubeconfig_yaml(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: weir\n  cluster:\n    server: {}\ncontexts:\n- name: weir\n  context:\n    cluster: weir\n    user: weir\n    namespace: default\ncurrent-context: weir\nusers:\n- name: weir\n  user: {{}}\npreferences: {{}}\n",
            self.url()
        )
    }

    /// Writes [`Self::kubeconfig_yaml`] to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig_yaml())
    }

    /// Changes fault injection at run time.
    pub fn faults(&self) -> FaultHandle {
        FaultHandle(self.shared.clone())
    }

    /// Request counters.
    pub fn stats(&self) -> Stats {
        let s = &self.shared.stats;
        Stats {
            requests: s.requests.load(Ordering::Relaxed),
            watches: s.watches.load(Ordering::Relaxed),
            by_resource: s
                .by_resource
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            by_client: s
                .by_client
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }

    /// Starts recording every request (time, method, path, watch, User-Agent) from now on,
    /// for tests that check how a client paces its requests; see [`Self::requests`].
    pub fn record_requests(&self) {
        let mut log = self
            .shared
            .stats
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        log.get_or_insert_with(Vec::new);
    }

    /// The requests recorded since [`Self::record_requests`], in arrival order (at most
    /// [`REQUEST_LOG_CAP`]); empty if recording is off.
    pub fn requests(&self) -> Vec<RequestRecord> {
        let log = self
            .shared
            .stats
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        log.clone().unwrap_or_default()
    }

    /// Direct access to the stored objects.
    pub fn store(&self) -> StoreHandle {
        StoreHandle(self.shared.clone())
    }

    /// Stops serving: open watches are ended, then the listener closes.
    pub async fn shutdown(mut self) {
        for c in &self.controllers {
            c.abort();
        }
        self.shared.drop_watches.send_modify(|g| *g += 1);
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if tokio::time::timeout(Duration::from_secs(5), &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_formats() {
        let y = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: b}}\n";
        assert_eq!(parse_seed(y).unwrap().len(), 2);
        let j = r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"c"}}]}"#;
        assert_eq!(parse_seed(j).unwrap().len(), 1);
    }
}
