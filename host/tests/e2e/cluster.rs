//! A cluster for end-to-end tests: the embedded API server in process (or the real
//! kube-apiserver, [`super::real`]), a kube client, the real controller, and polling waits
//! with deadlines (never fixed sleeps).
//!
//! Rule numbers R1–R10 and scenarios S01–S98 are those of `docs/upstream-endpointslices.md`.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1 as core;
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use weir::controller::{Config, Controller, Handle};
use weir::runtime::{ActiveGuest, Guest, Limits, Runtime};
use weir_apiserver::{ApiServer, RunningApiServer};

use super::real;

/// How long any condition may take before a test fails.
pub const DEADLINE: Duration = Duration::from_secs(30);

pub struct Cluster {
    server: Server,
    pub client: Client,
}

/// The API server a [`Cluster`] runs on.
enum Server {
    Embedded(RunningApiServer),
    Real(real::Session),
    /// A kube-apiserver of the test's own, which it may replace ([`Cluster::replace_empty`]).
    OwnReal(real::OwnHarness),
}

pub struct Running {
    pub handle: Handle,
    /// The sync stage, to sync one key directly.
    pub syncer: std::sync::Arc<weir::controller::sync::Syncer>,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    /// Stops the controller the way SIGTERM does and waits for it to exit.
    pub async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(DEADLINE, self.task)
            .await
            .expect("controller stops in time")
            .expect("controller task");
    }

    /// Waits until the caches synced and no key is queued or being processed.
    pub async fn idle(&self) {
        let handle = self.handle.clone();
        wait_for("controller idle", move || {
            let h = handle.clone();
            async move {
                h.is_synced()
                    && h.queue.is_empty()
                    && h.queue.stats().processing == 0
                    && h.queue.stats().delayed == 0
            }
        })
        .await;
    }
}

pub async fn default_guest() -> Guest {
    load_guest(weir::runtime::DEFAULT_GUEST.to_vec()).await
}

/// Loads `bytes` as a guest with the default limits.
pub async fn load_guest(bytes: Vec<u8>) -> Guest {
    runtime(Limits::default()).load_async(bytes).await.unwrap()
}

/// Where every test of this binary, and every `weir` process they start (`WEIR_CACHE_DIR`),
/// keeps compiled guests: wasmtime's compilation cache, as `--cache-dir` keeps it in a
/// deployment. A debug build spends seconds of CPU compiling the default guest, and tens of
/// seconds on the CEL or a Python guest; the tests are about the controller, so each guest
/// compiles once and the tests load it. The cache evicts past its size bound, and how it
/// behaves is tested in `host/tests/compile_cache.rs`.
pub fn compile_cache_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-compile-cache")
}

/// A runtime with `limits` on the tests' shared [`compile_cache_dir`].
pub fn runtime(limits: Limits) -> Runtime {
    Runtime::with_cache_dir(limits, &compile_cache_dir()).expect("the e2e compile cache opens")
}

impl Cluster {
    /// A cluster holding `objects` (and Node `node-1` unless they bring Nodes), on the server
    /// that [`real::SWITCH`] picks.
    pub async fn start(mut objects: Vec<Value>) -> Cluster {
        if !real::selected() {
            return Cluster::start_with(weir_apiserver::Config {
                seed: objects,
                ..Default::default()
            })
            .await;
        }
        with_default_node(&mut objects);
        let session = real::Session::start(objects).await;
        Cluster {
            client: session.client.clone(),
            server: Server::Real(session),
        }
    }

    /// [`Cluster::start`], on a server that [`Cluster::replace_empty`] can replace: on
    /// kube-apiserver, a harness of the test's own rather than the shared one.
    pub async fn start_replaceable(mut objects: Vec<Value>) -> Cluster {
        if !real::selected() {
            return Cluster::start(objects).await;
        }
        with_default_node(&mut objects);
        let own = real::OwnHarness::start(objects).await;
        Cluster {
            client: own.client.clone(),
            server: Server::OwnReal(own),
        }
    }

    /// Replaces the API server by an empty one at the same address (a server that lost its
    /// state): weir-apiserver is shut down and a new one started; kube-apiserver and its etcd
    /// are killed and a new kube-apiserver starts on a fresh etcd
    /// ([`real::OwnHarness::replace_empty`]). The new server holds only what a new cluster
    /// holds (its system namespaces). Returns once the new server runs (kube-apiserver may
    /// not answer yet).
    pub async fn replace_empty(self) -> Cluster {
        let server = match self.server {
            Server::Embedded(server) => {
                let addr = server.addr();
                server.shutdown().await;
                let server = ApiServer::start(weir_apiserver::Config {
                    addr,
                    ..Default::default()
                })
                .await
                .expect("the API server starts again on the same address");
                Server::Embedded(server)
            }
            Server::OwnReal(mut own) => {
                own.replace_empty().await;
                Server::OwnReal(own)
            }
            Server::Real(_) => panic!(
                "the shared kube-apiserver cannot be replaced: start with Cluster::start_replaceable"
            ),
        };
        Cluster {
            server,
            client: self.client,
        }
    }

    /// Writes to Endpoints and EndpointSlices the server running now received from clients
    /// whose User-Agent contains `user_agent` (weir's names its election identity).
    pub fn writes_by(&self, user_agent: &str) -> u64 {
        const RESOURCES: [&str; 2] = ["endpoints", "endpointslices"];
        match &self.server {
            Server::Embedded(server) => server
                .stats()
                .client_writes(user_agent, &RESOURCES)
                .map_or(0, |w| w.count),
            Server::OwnReal(own) => RESOURCES
                .iter()
                .map(|r| own.writes(r, Some(user_agent)).0)
                .sum(),
            Server::Real(_) => panic!("the shared harness's audit log is not told apart by client"),
        }
    }

    /// A cluster on weir-apiserver configured by `config`: a test that needs its options
    /// cannot run on the real server and is listed in `not-on-kube-apiserver.txt`.
    pub async fn start_with(mut config: weir_apiserver::Config) -> Cluster {
        assert!(
            !real::selected(),
            "this test configures weir-apiserver, so it cannot run on kube-apiserver; \
             list it in host/tests/e2e/not-on-kube-apiserver.txt"
        );
        with_default_node(&mut config.seed);
        let server = ApiServer::start(config).await.expect("API server starts");
        let kubeconfig = Kubeconfig::from_yaml(&server.kubeconfig_yaml()).unwrap();
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .unwrap();
        let client = Client::try_from(config).unwrap();
        Cluster {
            server: Server::Embedded(server),
            client,
        }
    }

    /// The embedded weir-apiserver, for a test of its fault injection or internals: such a
    /// test cannot run on the real server and is listed in `not-on-kube-apiserver.txt`.
    pub fn server(&self) -> &RunningApiServer {
        match &self.server {
            Server::Embedded(server) => server,
            Server::Real(_) | Server::OwnReal(_) => panic!(
                "this test needs weir-apiserver's internals, so it cannot run on kube-apiserver; \
                 list it in host/tests/e2e/not-on-kube-apiserver.txt"
            ),
        }
    }

    /// The embedded server and the client, for a test that replaces the server under a running
    /// controller; [`Cluster::embedded`] puts them together again.
    pub fn into_embedded(self) -> (RunningApiServer, Client) {
        match self.server {
            Server::Embedded(server) => (server, self.client),
            Server::Real(_) | Server::OwnReal(_) => {
                panic!("only weir-apiserver can be replaced under a test")
            }
        }
    }

    /// A cluster on an embedded server started by the test itself.
    pub fn embedded(server: RunningApiServer, client: Client) -> Cluster {
        Cluster {
            server: Server::Embedded(server),
            client,
        }
    }

    /// Writes an admin kubeconfig for the cluster's server to `path`.
    pub fn write_kubeconfig(&self, path: &std::path::Path) {
        match &self.server {
            Server::Embedded(server) => server.write_kubeconfig(path),
            Server::Real(session) => session.write_kubeconfig(path),
            Server::OwnReal(own) => own.write_kubeconfig(path),
        }
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()))
    }

    pub fn run(&self, guest: Guest, config: Config) -> Running {
        let controller = Controller::new(self.client.clone(), ActiveGuest::new(guest), config);
        let handle = controller.handle();
        let syncer = controller.syncer();
        let stop = CancellationToken::new();
        let task = tokio::spawn(controller.run(stop.clone()));
        Running {
            handle,
            syncer,
            stop,
            task,
        }
    }

    pub async fn run_default(&self) -> Running {
        self.run(default_guest().await, Config::default())
    }

    /// The stored Endpoints: straight from weir-apiserver's store, or read from kube-apiserver.
    pub async fn endpoints(&self, namespace: &str, name: &str) -> Option<core::Endpoints> {
        match &self.server {
            Server::Embedded(server) => server
                .store()
                .get("endpoints", namespace, name)
                .map(|v| serde_json::from_value(v).unwrap()),
            Server::Real(_) | Server::OwnReal(_) => {
                let api: kube::Api<core::Endpoints> =
                    kube::Api::namespaced(self.client.clone(), namespace);
                api.get_opt(name).await.expect("reading Endpoints")
            }
        }
    }

    /// The stored pod, straight from weir-apiserver's store, or read from kube-apiserver.
    pub async fn pod(&self, namespace: &str, name: &str) -> Option<core::Pod> {
        match &self.server {
            Server::Embedded(server) => server
                .store()
                .get("pods", namespace, name)
                .map(|v| serde_json::from_value(v).unwrap()),
            Server::Real(_) | Server::OwnReal(_) => {
                let api: kube::Api<core::Pod> =
                    kube::Api::namespaced(self.client.clone(), namespace);
                api.get_opt(name).await.expect("reading a pod")
            }
        }
    }

    /// Write requests to `resource` (`endpoints` or `endpointslices`) the server received
    /// since it started (kube-apiserver: since the test's turn began), whether they
    /// succeeded or not.
    pub fn writes(&self, resource: &str) -> u64 {
        match &self.server {
            Server::Embedded(server) => server.stats().writes(resource),
            Server::Real(session) => session.writes(resource).0,
            Server::OwnReal(own) => own.writes(resource, None).0,
        }
    }

    /// Of [`Cluster::writes`], the deletes.
    pub fn deletes(&self, resource: &str) -> u64 {
        match &self.server {
            Server::Embedded(server) => server.stats().verbs(resource).delete,
            Server::Real(session) => session.writes(resource).1,
            Server::OwnReal(own) => own.writes(resource, None).1,
        }
    }

    /// Waits until a pod deleted with a grace period is gone: weir-apiserver removes it when
    /// the period ends; on kube-apiserver, which has no kubelet, the test ends it the way a
    /// kubelet does once the containers stopped.
    pub async fn finish_graceful_deletion(&self, namespace: &str, name: &str) {
        match &self.server {
            Server::Real(session) => session.finish_graceful_deletion(namespace, name).await,
            Server::OwnReal(own) => {
                real::finish_graceful_deletion(&own.client, namespace, name).await
            }
            Server::Embedded(_) => {}
        }
        let deadline = tokio::time::Instant::now() + DEADLINE;
        while self.pod(namespace, name).await.is_some() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "pod {namespace}/{name} is still there"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Writes a pod that no Service selects and waits until `run`'s cache holds it. A watch
    /// delivers in order, so every pod change written before it has been observed too: a check
    /// that a change caused nothing can follow this without racing the watch.
    pub async fn pod_watch_caught_up(&self, run: &Running, marker: &str) {
        self.apply(pod(
            "app",
            marker,
            json!({"weir.test/marker": marker}),
            "10.255.0.1",
            true,
        ))
        .await;
        let handle = run.handle.clone();
        wait_for("the marker pod in the controller's cache", || {
            let found = handle
                .cache
                .pod_keys()
                .iter()
                .any(|(ns, name)| ns == "app" && name == marker);
            async move { found }
        })
        .await;
    }

    pub fn endpoints_writes(&self) -> u64 {
        self.writes("endpoints")
    }

    /// Waits until `namespace/name` has exactly these ready and not-ready IPs.
    pub async fn wait_ips(&self, namespace: &str, name: &str, ready: &[&str], not_ready: &[&str]) {
        self.wait_ips_within(DEADLINE, namespace, name, ready, not_ready)
            .await
    }

    /// [`Cluster::wait_ips`] with a window of `limit`, for a step that waits on slow work (a
    /// guest compilation) and may take longer than [`DEADLINE`] on a loaded machine.
    pub async fn wait_ips_within(
        &self,
        limit: Duration,
        namespace: &str,
        name: &str,
        ready: &[&str],
        not_ready: &[&str],
    ) {
        let want = (sorted(ready), sorted(not_ready));
        let mut last;
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let got = self.endpoints(namespace, name).await.map(|e| ips(&e));
            if got.as_ref() == Some(&want) {
                return;
            }
            last = got;
            assert!(
                tokio::time::Instant::now() < deadline,
                "{namespace}/{name}: wanted {want:?}, last saw {last:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn wait_gone(&self, namespace: &str, name: &str) {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        while self.endpoints(namespace, name).await.is_some() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{namespace}/{name} still exists"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn apply(&self, object: Value) {
        match &self.server {
            Server::Embedded(_) => apply(&self.client, object).await,
            Server::Real(session) => retry_apply(&object, || session.apply(&object)).await,
            Server::OwnReal(own) => retry_apply(&object, || own.apply(&object)).await,
        }
    }
}

/// Creates or replaces `object` (status included for pods) through the API, retrying while
/// the server injects faults.
pub async fn apply(client: &Client, object: Value) {
    retry_apply(&object, || try_apply(client, &object)).await
}

/// Runs `attempt` until it succeeds, failing the test after [`DEADLINE`].
async fn retry_apply<F, Fut>(object: &Value, mut attempt: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), kube::Error>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        match attempt().await {
            Ok(()) => return,
            Err(e) => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "cannot apply {}: {e}",
                    object["metadata"]["name"]
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

async fn try_apply(client: &Client, object: &Value) -> Result<(), kube::Error> {
    use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
    use kube::discovery::ApiResource;
    let kind = object["kind"].as_str().unwrap().to_string();
    let ns = object["metadata"]["namespace"].as_str().map(str::to_string);
    let name = object["metadata"]["name"].as_str().unwrap().to_string();
    let ar = match kind.as_str() {
        "Service" => ApiResource::erase::<core::Service>(&()),
        "Pod" => ApiResource::erase::<core::Pod>(&()),
        "Endpoints" => ApiResource::erase::<core::Endpoints>(&()),
        "Namespace" => ApiResource::erase::<core::Namespace>(&()),
        "Node" => ApiResource::erase::<core::Node>(&()),
        other => panic!("unsupported kind {other}"),
    };
    let api: Api<DynamicObject> = match &ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    let obj: DynamicObject = serde_json::from_value(object.clone()).unwrap();
    match api.get_opt(&name).await? {
        None => {
            api.create(&PostParams::default(), &obj).await?;
        }
        Some(existing) => {
            let mut obj = obj.clone();
            obj.metadata.resource_version = existing.metadata.resource_version;
            api.replace(&name, &PostParams::default(), &obj).await?;
        }
    }
    if matches!(kind.as_str(), "Pod" | "Node") && object.get("status").is_some() {
        let patch = json!({"status": object["status"]});
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    Ok(())
}

fn sorted(ips: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = ips.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

pub fn ips(ep: &core::Endpoints) -> (Vec<String>, Vec<String>) {
    let mut ready = Vec::new();
    let mut not_ready = Vec::new();
    for s in ep.subsets.iter().flatten() {
        ready.extend(s.addresses.iter().flatten().map(|a| a.ip.clone()));
        not_ready.extend(s.not_ready_addresses.iter().flatten().map(|a| a.ip.clone()));
    }
    for v in [&mut ready, &mut not_ready] {
        v.sort();
        v.dedup();
    }
    (ready, not_ready)
}

/// Polls `condition` every 20 ms until it holds, failing after [`DEADLINE`].
pub async fn wait_for<F, Fut>(what: &str, condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    wait_for_within(DEADLINE, what, condition).await
}

/// [`wait_for`] with a window of `limit`.
pub async fn wait_for_within<F, Fut>(limit: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    while !condition().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Adds Node `node-1`, where every test pod runs unless it says otherwise, to `seed` unless it
/// brings its own Nodes: the slice path skips pods whose Node does not exist (upstream R2.10).
fn with_default_node(seed: &mut Vec<Value>) {
    if !seed.iter().any(|o| o["kind"] == "Node") {
        seed.push(node("node-1", None));
    }
}

// ---- object builders ----

/// The smallest useful world: namespace `app`, Service `web` (port 80 → 8080) selecting one
/// ready pod `a` at 10.1.0.1.
pub fn web_app() -> Vec<Value> {
    vec![
        namespace("app"),
        service(
            "app",
            "web",
            json!({"app": "web"}),
            json!([{"name": "http", "port": 80, "targetPort": 8080}]),
        ),
        pod("app", "a", json!({"app": "web"}), "10.1.0.1", true),
    ]
}

/// A Ready Node with 2 CPUs, in `zone` when given.
pub fn node(name: &str, zone: Option<&str>) -> Value {
    let mut labels = json!({"kubernetes.io/hostname": name});
    if let Some(z) = zone {
        labels["topology.kubernetes.io/zone"] = json!(z);
    }
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": "2"}, "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

pub fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

pub fn service(ns: &str, name: &str, selector: Value, ports: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
        "spec": {"selector": selector, "ports": ports}
    })
}

pub fn pod(ns: &str, name: &str, labels: Value, ip: &str, ready: bool) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "x", "ports": [{"name": "http", "containerPort": 8080}]}]},
        "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                   "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}
    })
}
