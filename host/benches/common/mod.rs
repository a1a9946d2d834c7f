//! What the controller benchmarks share: a cluster of Services and pods seeded into
//! weir-apiserver in the bench process, and `weir run` (the real binary, release build) as a
//! child process, so its peak memory is its own.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

/// Namespaces the Services and pods are spread over.
pub const NAMESPACES: usize = 10;

/// Namespace of Service `s`.
pub fn namespace(s: usize) -> String {
    format!("ns-{}", s % NAMESPACES)
}

/// Name of pod `p` of Service `s`.
pub fn pod_name(s: usize, p: usize) -> String {
    format!("svc-{s}-pod-{p}")
}

/// IP of pod `p` of Service `s` (unique while `p < 255` and `s < 65,536`).
pub fn pod_ip(s: usize, p: usize) -> String {
    format!("10.{}.{}.{}", s / 256 % 256, s % 256, p + 1)
}

/// Whether pod `p` is ready in the seed: every fifth pod is not.
pub fn seeded_ready(p: usize) -> bool {
    p % 5 != 4
}

/// 50 Nodes in 3 zones, and `services` Services in [`NAMESPACES`] namespaces, each selecting
/// its own `per_service` pods through a named target port. The pods look like a Deployment's
/// (three labels, an annotation, two named container ports).
pub fn seed(services: usize, per_service: usize) -> Vec<Value> {
    let mut seed = Vec::with_capacity(services * (per_service + 1) + 60);
    for n in 0..50 {
        seed.push(json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("node-{n}"), "labels": {"topology.kubernetes.io/zone": format!("zone-{}", n % 3)}},
            "status": {"allocatable": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]}}));
    }
    for n in 0..NAMESPACES {
        seed.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("ns-{n}")}}));
    }
    for s in 0..services {
        let ns = namespace(s);
        seed.push(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("svc-{s}"), "namespace": ns, "labels": {"app": format!("app-{s}")}},
            "spec": {"selector": {"app": format!("app-{s}")}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}));
        for p in 0..per_service {
            let ip = pod_ip(s, p);
            seed.push(json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pod_name(s, p), "namespace": ns,
                             "labels": {"app": format!("app-{s}"), "pod-template-hash": "abc123", "tier": "backend"},
                             "annotations": {"kubectl.kubernetes.io/restartedAt": "2024-01-01T00:00:00Z"}},
                "spec": {"nodeName": format!("node-{}", p % 50), "containers": [{"name": "app", "image": "registry.example/app:1.0",
                         "ports": [{"name": "http", "containerPort": 8080}, {"name": "metrics", "containerPort": 9090}]}]},
                "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                           "conditions": [{"type": "Ready", "status": if seeded_ready(p) { "True" } else { "False" }, "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}));
        }
    }
    seed
}

/// `weir run` against `server` with extra `args`, logging warnings only. The environment is
/// passed on, so `WEIR_*` variables (e.g. `WEIR_INITIAL_LIST=paged`) reach it.
pub struct Weir {
    pub child: Child,
    /// Where its admin endpoint (`/metrics`) listens.
    pub admin: std::net::SocketAddr,
    _dir: tempfile::TempDir,
}

impl Weir {
    pub fn start(server: &weir_apiserver::RunningApiServer, args: &[&str]) -> Weir {
        // weir's own pace, not its client limit (KCM's 20/s would make a 1,000-Service
        // run take ~100 s and cap churn below its 50 changes/s).
        Self::start_limited(
            server,
            &[
                &["--kube-api-qps", "1000000", "--kube-api-burst", "1000000"],
                args,
            ]
            .concat(),
        )
    }

    /// `weir run` as [`Weir::start`], at its own API client limits (the defaults unless
    /// `args` set them).
    pub fn start_limited(server: &weir_apiserver::RunningApiServer, args: &[&str]) -> Weir {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig: PathBuf = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).unwrap();
        // A port that was free a moment ago, so the bench knows where to read metrics.
        let admin = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_weir"))
            .args(["run", "--kubeconfig", kubeconfig.to_str().unwrap()])
            .args(["--admin-addr", &admin.to_string()])
            // The bench reads /metrics beside the probes.
            .args(["--metrics-secure=false"])
            .args(args)
            .env("WEIR_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        Weir {
            child,
            admin,
            _dir: dir,
        }
    }

    /// The value of a metric from its `/metrics`, if it answers and has it: `name` is the
    /// series as exposed, labels included (`workqueue_depth{name="endpoint"}`).
    #[allow(dead_code)] // not every bench reads metrics
    pub fn metric(&self, name: &str) -> Option<f64> {
        metric_at(self.admin, name)
    }

    /// Peak resident memory of the process so far (`VmHWM`), in KiB.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    }

    /// Stops it as SIGTERM does and waits for it.
    pub fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// The value of the series `name` (labels included) from the `/metrics` of the admin endpoint
/// at `admin`, if it answers and has it.
pub fn metric_at(admin: std::net::SocketAddr, name: &str) -> Option<f64> {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(admin).ok()?;
    conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: weir\r\n\r\n")
        .ok()?;
    let mut body = String::new();
    conn.read_to_string(&mut body).ok()?;
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}
