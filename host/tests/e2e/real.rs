//! The real kube-apiserver as the end-to-end tests' server: `WEIR_E2E_SERVER=kube-apiserver`
//! starts one kube-harness (etcd and kube-apiserver built from upstream's Go modules,
//! docs/real-kubernetes.md) for the whole test binary, and every [`super::cluster::Cluster`]
//! runs on it instead of the in-process weir-apiserver.
//!
//! Most tests run a controller that watches every namespace, and Nodes are cluster-wide, so the
//! tests take the server one at a time ([`Session`] holds it) and each starts on a wiped cluster:
//! no pod, Service, Endpoints, EndpointSlice, ConfigMap, Lease, Event or Node of an earlier test
//! is left. The harness has no kubelet, no ServiceAccount controller and no garbage collector,
//! so this module does their part: Node and pod status go through the `status` subresource, each
//! namespace gets its `default` ServiceAccount, and a graceful deletion is finished the way a
//! kubelet confirms one.
//!
//! A test that replaces the API server under weir runs on a harness of its own
//! ([`OwnHarness`]), holding the turn all the same.

use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use k8s_openapi::api::core::v1 as core;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

/// The environment variable that picks the server: `weir-apiserver` (the default) or
/// `kube-apiserver`.
pub const SWITCH: &str = "WEIR_E2E_SERVER";
/// The environment variable naming the kube-harness binary (`make upstream` builds it).
pub const HARNESS: &str = "WEIR_KUBE_HARNESS";

/// The tests that cannot run on the real server, one per line as `module::test_name: reason`
/// (a test of `main.rs` has no module).
/// `make e2e-real` skips them and prints each with its reason; `docs/apiserver.md` lists them.
pub const NOT_APPLICABLE: &str = include_str!("not-on-kube-apiserver.txt");

/// Whether the tests run on the real kube-apiserver. An unknown value fails every test rather
/// than quietly running on weir-apiserver.
pub fn selected() -> bool {
    match std::env::var(SWITCH).as_deref() {
        Err(_) | Ok("") | Ok("weir-apiserver") => false,
        Ok("kube-apiserver") => true,
        Ok(other) => panic!("{SWITCH}={other}: expected weir-apiserver or kube-apiserver"),
    }
}

/// The listed tests, as (name, reason).
pub fn not_applicable() -> Vec<(&'static str, &'static str)> {
    NOT_APPLICABLE
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, reason) = l.split_once(": ").expect("`name: reason`");
            (name.trim(), reason.trim())
        })
        .collect()
}

/// The one harness of this test binary.
struct Harness {
    dir: PathBuf,
    kubeconfig: PathBuf,
    /// The watchdog, holding the write end of its stdin: that closes when this process exits,
    /// however it exits, and the watchdog then stops the harness. It is never waited for: it
    /// outlives the test binary by design.
    _watchdog: Mutex<Child>,
}

static STARTED: OnceLock<Harness> = OnceLock::new();
/// One test at a time on the shared server.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn harness_binary() -> PathBuf {
    match std::env::var_os(HARNESS) {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        // host/ is the package root; the harness lands in the workspace's target/upstream.
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/upstream/kube-harness"),
    }
}

fn harness() -> &'static Harness {
    STARTED.get_or_init(|| {
        let binary = harness_binary();
        assert!(
            binary.is_file(),
            "{} does not exist: `make upstream` builds it, or set {HARNESS}",
            binary.display()
        );
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("kube-harness-e2e-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // The watchdog first, so that a failing `up` is cleaned up too. It lives in its own
        // process group: a Ctrl-C of the test run reaches the tests, not it, and it still stops
        // the servers (by the PIDs `up` recorded) once the test binary is gone. It keeps the
        // logs and drops etcd's data.
        let mut watchdog = Command::new("sh");
        watchdog
            .args([
                "-c",
                r#"cat >/dev/null; "$0" down "$1" >/dev/null 2>&1; rm -rf "$1/etcd""#,
            ])
            .arg(&binary)
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut watchdog, 0);
        let watchdog = watchdog.spawn().expect("spawning the harness watchdog");
        let out = Command::new(&binary)
            .arg("up")
            .arg(&dir)
            .output()
            .expect("running kube-harness up");
        assert!(
            out.status.success(),
            "kube-harness up {} failed: {}{}",
            dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("e2e on kube-apiserver: harness in {}", dir.display());
        Harness {
            kubeconfig: dir.join("kubeconfig"),
            dir,
            _watchdog: Mutex::new(watchdog),
        }
    })
}

/// One test's hold on the real server: the turn, an admin client, and where the test's share
/// of the audit log starts.
pub struct Session {
    _turn: tokio::sync::MutexGuard<'static, ()>,
    pub client: Client,
    kubeconfig: PathBuf,
    audit_log: PathBuf,
    audit_start: u64,
}

impl Session {
    /// Waits for the server's turn, wipes what earlier tests left, and applies `seed`.
    pub async fn start(seed: Vec<Value>) -> Session {
        let turn = TURN.lock().await;
        // Starting the harness blocks for a few seconds, once per test binary.
        let harness = tokio::task::spawn_blocking(harness).await.unwrap();
        let kubeconfig = kube::config::Kubeconfig::read_from(&harness.kubeconfig).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        let client = Client::try_from(config).unwrap();
        wipe(&client).await;
        let audit_log = harness.dir.join("audit.log");
        let audit_start = std::fs::metadata(&audit_log).map_or(0, |m| m.len());
        let session = Session {
            _turn: turn,
            client,
            kubeconfig: harness.kubeconfig.clone(),
            audit_log,
            audit_start,
        };
        for object in seed {
            session.apply(&object).await.unwrap_or_else(|e| {
                panic!(
                    "seeding {} on kube-apiserver: {e}",
                    object["metadata"]["name"]
                )
            });
        }
        session
    }

    /// The admin kubeconfig, copied to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        std::fs::copy(&self.kubeconfig, path).map(drop)
    }

    /// Creates or updates `object` by server-side apply (so that the server's defaults, which
    /// a replace of the test's sparse object would try to remove, stay), then sets the status
    /// of a pod or Node as a kubelet would. A namespace gets its `default` ServiceAccount.
    pub async fn apply(&self, object: &Value) -> Result<(), kube::Error> {
        apply(&self.client, object).await
    }

    /// The write requests (create, update, patch, delete) to `resource` (`endpoints` or
    /// `endpointslices`, the two the harness audits) since this session started, whether they
    /// succeeded or not, and of them the deletes.
    pub fn writes(&self, resource: &str) -> (u64, u64) {
        audited_writes(&self.audit_log, self.audit_start, resource, None)
    }

    /// Ends the graceful deletion of a pod as its kubelet does once the containers stopped: a
    /// delete with grace period 0.
    pub async fn finish_graceful_deletion(&self, namespace: &str, name: &str) {
        finish_graceful_deletion(&self.client, namespace, name).await
    }
}

/// [`Session::finish_graceful_deletion`] through `client`.
pub async fn finish_graceful_deletion(client: &Client, namespace: &str, name: &str) {
    let pods: Api<core::Pod> = Api::namespaced(client.clone(), namespace);
    match pods
        .delete(name, &DeleteParams::default().grace_period(0))
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => panic!("deleting pod {namespace}/{name} with grace period 0: {e}"),
    }
}

/// A kube-harness of one test's own, whose API server the test replaces by an empty one at
/// the same address ([`OwnHarness::replace_empty`]); the shared harness cannot be replaced
/// under the other tests. It holds the shared server's turn, so that no other test loads the
/// machine while its servers start.
pub struct OwnHarness {
    _turn: tokio::sync::MutexGuard<'static, ()>,
    pub client: Client,
    binary: PathBuf,
    /// The state directory of `up`: its certificates and kubeconfig stay valid throughout.
    dir: PathBuf,
    /// The state directory of the servers running now: `dir`, then one per replacement.
    current: PathBuf,
    /// The server processes started by replacements (`up`'s are not this process's children).
    children: Vec<Child>,
    /// Dropping it (with this, or when the test binary exits) closes its stdin, and it then
    /// stops every server of `dir` and removes the directory.
    _watchdog: Child,
}

impl OwnHarness {
    /// Waits for the server's turn, starts a harness in a directory of its own and applies
    /// `seed`.
    pub async fn start(seed: Vec<Value>) -> OwnHarness {
        static STARTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let turn = TURN.lock().await;
        let binary = harness_binary();
        assert!(
            binary.is_file(),
            "{} does not exist: `make upstream` builds it, or set {HARNESS}",
            binary.display()
        );
        let n = STARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("kube-harness-own-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // As the shared harness's watchdog, for this directory and its replacements.
        let mut watchdog = Command::new("sh");
        watchdog
            .args([
                "-c",
                r#"cat >/dev/null; for d in "$1"/next-* "$1"; do "$0" down "$d" >/dev/null 2>&1; done; rm -rf "$1""#,
            ])
            .arg(&binary)
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut watchdog, 0);
        let watchdog = watchdog.spawn().expect("spawning the harness watchdog");
        let out = {
            let (binary, dir) = (binary.clone(), dir.clone());
            tokio::task::spawn_blocking(move || {
                Command::new(&binary)
                    .arg("up")
                    .arg(&dir)
                    .output()
                    .expect("running kube-harness up")
            })
            .await
            .unwrap()
        };
        assert!(
            out.status.success(),
            "kube-harness up {} failed: {}{}",
            dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let kubeconfig = kube::config::Kubeconfig::read_from(dir.join("kubeconfig")).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        let client = Client::try_from(config).unwrap();
        for object in &seed {
            apply(&client, object).await.unwrap_or_else(|e| {
                panic!(
                    "seeding {} on kube-apiserver: {e}",
                    object["metadata"]["name"]
                )
            });
        }
        OwnHarness {
            _turn: turn,
            client,
            binary,
            current: dir.clone(),
            dir,
            children: Vec::new(),
            _watchdog: watchdog,
        }
    }

    /// The admin kubeconfig, copied to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        std::fs::copy(self.dir.join("kubeconfig"), path).map(drop)
    }

    /// Creates or updates `object` as [`Session::apply`] does.
    pub async fn apply(&self, object: &Value) -> Result<(), kube::Error> {
        apply(&self.client, object).await
    }

    /// Writes to `resource` on the server running now, as [`Session::writes`] counts them, by
    /// a client whose User-Agent contains `user_agent` (any when `None`).
    pub fn writes(&self, resource: &str, user_agent: Option<&str>) -> (u64, u64) {
        audited_writes(&self.current.join("audit.log"), 0, resource, user_agent)
    }

    /// Replaces the API server by an empty one at the same address, as a control plane whose
    /// etcd lost its data comes back: etcd and kube-apiserver are killed (SIGKILL) and a new
    /// kube-apiserver starts on the same port with the same certificates, on a fresh etcd.
    /// That etcd starts before the kill, on ports of its own, so that the outage is
    /// kube-apiserver's start alone. Returns once the new kube-apiserver runs, not once it is
    /// ready: clients see the outage as it is.
    pub async fn replace_empty(&mut self) {
        let n = std::fs::read_dir(&self.dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("next-"))
            })
            .count();
        let next = self.dir.join(format!("next-{}", n + 1));
        std::fs::create_dir_all(&next).unwrap();
        for file in [
            "ca.crt",
            "apiserver.crt",
            "apiserver.key",
            "admin.crt",
            "admin.key",
            "sa.key",
            "sa.pub",
            "kubeconfig",
        ] {
            std::fs::copy(self.dir.join(file), next.join(file))
                .unwrap_or_else(|e| panic!("copying {file}: {e}"));
        }
        let ports: Value =
            serde_json::from_slice(&std::fs::read(self.current.join("ports.json")).unwrap())
                .unwrap();
        let etcd_port = free_loopback_port();
        let ports = json!({
            "etcdClient": etcd_port,
            "etcdPeer": free_loopback_port(),
            "apiserver": ports["apiserver"],
        });
        std::fs::write(next.join("ports.json"), ports.to_string()).unwrap();
        self.spawn_server(&next, "etcd");
        wait_etcd_healthy(etcd_port).await;
        for name in ["apiserver", "etcd"] {
            let pid = std::fs::read_to_string(self.current.join(format!("{name}.pid")))
                .unwrap_or_else(|e| panic!("the {name} pid of {}: {e}", self.current.display()));
            let killed = Command::new("kill")
                .args(["-KILL", pid.trim()])
                .status()
                .unwrap();
            assert!(killed.success(), "kill -KILL {pid} ({name})");
        }
        // The killed server's sockets close only once all its threads are gone, some time
        // after its main thread is a zombie: the new one binds the port once it is free.
        let port = ports["apiserver"].as_u64().unwrap() as u16;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::net::TcpListener::bind(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "port {port} still taken after kube-apiserver was killed"
            );
            for child in &mut self.children {
                let _ = child.try_wait();
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        self.spawn_server(&next, "apiserver");
        self.current = next;
    }

    /// Starts `kube-harness NAME DIR` as `up` does (its own process group, log and pid file
    /// in DIR), so that `down` stops it.
    fn spawn_server(&mut self, dir: &Path, name: &str) {
        let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
        let mut command = Command::new(&self.binary);
        command
            .arg(name)
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("starting kube-harness {name}: {e}"));
        std::fs::write(dir.join(format!("{name}.pid")), format!("{}\n", child.id())).unwrap();
        self.children.push(child);
    }
}

/// A free loopback port (another process may take it before it is bound; the test then fails
/// with the server's log).
fn free_loopback_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until etcd on `port` answers its health check.
async fn wait_etcd_healthy(port: u16) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let answer = async {
            let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .ok()?;
            stream
                .write_all(b"GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n")
                .await
                .ok()?;
            let mut out = String::new();
            stream.read_to_string(&mut out).await.ok()?;
            Some(out)
        };
        let answer = tokio::time::timeout(std::time::Duration::from_secs(5), answer)
            .await
            .ok()
            .flatten();
        if answer.is_some_and(|a| a.contains("\"health\":\"true\"")) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "etcd on port {port} did not get healthy"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// [`Session::apply`] through `client`.
async fn apply(client: &Client, object: &Value) -> Result<(), kube::Error> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let resource = resource(kind).unwrap_or_else(|| panic!("unsupported kind {kind}"));
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let name = object["metadata"]["name"].as_str().unwrap().to_string();
    let mut body = object.clone();
    let status = body.as_object_mut().unwrap().remove("status");
    if let Some(metadata) = body["metadata"].as_object_mut() {
        metadata.remove("resourceVersion");
    }
    let params = PatchParams::apply("weir-e2e").force();
    api.patch(&name, &params, &Patch::Apply(&body)).await?;
    if let Some(status) = status.filter(|_| matches!(kind, "Pod" | "Node")) {
        let patch = json!({"status": status});
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    if kind == "Namespace" {
        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": name}});
        let accounts: Api<core::ServiceAccount> = Api::namespaced(client.clone(), &name);
        if accounts.get_opt("default").await?.is_none() {
            let account = serde_json::from_value(account).unwrap();
            accounts.create(&Default::default(), &account).await?;
        }
    }
    Ok(())
}

/// The write requests to `resource` (`endpoints` or `endpointslices`) in the audit log
/// `path` from byte `start` on, by a client whose User-Agent contains `user_agent` (any
/// client when `None`), and of them the deletes.
fn audited_writes(path: &Path, start: u64, resource: &str, user_agent: Option<&str>) -> (u64, u64) {
    assert!(
        matches!(resource, "endpoints" | "endpointslices"),
        "the harness audits writes to endpoints and endpointslices only, not {resource}"
    );
    let mut file = std::fs::File::open(path).expect("the harness's audit log");
    file.seek(SeekFrom::Start(start)).unwrap();
    let (mut writes, mut deletes) = (0, 0);
    for line in BufReader::new(file).lines().map_while(Result::ok) {
        // A line the server is still writing is not complete JSON yet; the next read has it.
        let Ok(event) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if event["stage"] != "ResponseComplete" || event["objectRef"]["resource"] != resource {
            continue;
        }
        let by = event["userAgent"].as_str().unwrap_or_default();
        if user_agent.is_some_and(|ua| !by.contains(ua)) {
            continue;
        }
        match event["verb"].as_str() {
            Some("create" | "update" | "patch") => writes += 1,
            Some("delete" | "deletecollection") => {
                writes += 1;
                deletes += 1;
            }
            _ => {}
        }
    }
    (writes, deletes)
}

/// The API resource of each kind the tests seed.
fn resource(kind: &str) -> Option<ApiResource> {
    use k8s_openapi::api::{coordination::v1::Lease, discovery::v1::EndpointSlice};
    Some(match kind {
        "Namespace" => ApiResource::erase::<core::Namespace>(&()),
        "Node" => ApiResource::erase::<core::Node>(&()),
        "Service" => ApiResource::erase::<core::Service>(&()),
        "Pod" => ApiResource::erase::<core::Pod>(&()),
        "Endpoints" => ApiResource::erase::<core::Endpoints>(&()),
        "ConfigMap" => ApiResource::erase::<core::ConfigMap>(&()),
        "ServiceAccount" => ApiResource::erase::<core::ServiceAccount>(&()),
        "EndpointSlice" => ApiResource::erase::<EndpointSlice>(&()),
        "Lease" => ApiResource::erase::<Lease>(&()),
        _ => return None,
    })
}

/// Namespaces every cluster has; the tests never write in them.
const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Deletes what earlier tests left: every object of the kinds the tests write, in every
/// namespace but the system ones, and every Node. Namespaces and their `default`
/// ServiceAccounts stay (without a namespace controller a deleted namespace never goes away).
async fn wipe(client: &Client) {
    use k8s_openapi::api::{
        coordination::v1::Lease, discovery::v1::EndpointSlice, events::v1::Event,
    };
    let namespaces: Api<core::Namespace> = Api::all(client.clone());
    let namespaces = namespaces.list(&ListParams::default()).await.unwrap();
    let now = DeleteParams::default().grace_period(0);
    for ns in namespaces.items {
        let ns = ns.metadata.name.unwrap();
        if SYSTEM_NAMESPACES.contains(&ns.as_str()) {
            continue;
        }
        let all = ListParams::default();
        // Services have no deletecollection; one delete each.
        let services: Api<core::Service> = Api::namespaced(client.clone(), &ns);
        for svc in services.list(&all).await.unwrap().items {
            let name = svc.metadata.name.unwrap();
            let _ = services.delete(&name, &now).await;
        }
        macro_rules! delete_all {
            ($($kind:ty),*) => {$(
                Api::<$kind>::namespaced(client.clone(), &ns)
                    .delete_collection(&now, &all)
                    .await
                    .unwrap_or_else(|e| panic!("wiping {ns}: {e}"));
            )*};
        }
        delete_all!(
            core::Pod,
            core::Endpoints,
            EndpointSlice,
            core::ConfigMap,
            Lease,
            Event
        );
    }
    Api::<core::Node>::all(client.clone())
        .delete_collection(&now, &ListParams::default())
        .await
        .unwrap();
}

/// Every test named in `not-on-kube-apiserver.txt` exists, so the list skips what it says.
#[test]
fn every_test_listed_as_not_applicable_exists() {
    let list = not_applicable();
    assert!(!list.is_empty());
    for (name, reason) in list {
        assert!(!reason.is_empty(), "{name} has no reason");
        let (module, test) = name.split_once("::").unwrap_or(("main", name));
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/e2e/{module}.rs"));
        let source = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{name}: reading {}: {e}", file.display()));
        assert!(
            source.contains(&format!("fn {test}()")),
            "{name} is listed in not-on-kube-apiserver.txt but is no test in {}",
            file.display()
        );
    }
}
