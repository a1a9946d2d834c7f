//! Scale: how long `weir run` takes to converge 1,000 Services over 10,000 pods on the
//! embedded API server, and the peak memory of the `weir run` process.
//!
//! `cargo bench -p weir --bench converge` (add `-- SERVICES PODS_PER_SERVICE [MANAGE]` to
//! change the size, MANAGE being `weir run --manage`: `endpoints,endpointslices`, the default,
//! or `endpoints`). The API server runs in this process; `weir run` is the real binary, so its
//! peak RSS (VmHWM) is its own. Convergence is reached when every Service has its Endpoints
//! and, when managed, at least one EndpointSlice.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let services: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let per_service: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10);
    let manage = args
        .get(2)
        .cloned()
        .unwrap_or_else(|| "endpoints,endpointslices".into());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(run(services, per_service, &manage));
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

async fn run(services: usize, per_service: usize, manage: &str) {
    let mut seed = Vec::new();
    let namespaces = 10;
    for n in 0..50 {
        seed.push(json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("node-{n}"), "labels": {"topology.kubernetes.io/zone": format!("zone-{}", n % 3)}},
            "status": {"allocatable": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]}}));
    }
    for n in 0..namespaces {
        seed.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("ns-{n}")}}));
    }
    for s in 0..services {
        let ns = format!("ns-{}", s % namespaces);
        seed.push(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("svc-{s}"), "namespace": ns, "labels": {"app": format!("app-{s}")}},
            "spec": {"selector": {"app": format!("app-{s}")}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}));
        for p in 0..per_service {
            let ip = format!("10.{}.{}.{}", s / 256 % 256, s % 256, p + 1);
            seed.push(json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("svc-{s}-pod-{p}"), "namespace": ns,
                             "labels": {"app": format!("app-{s}"), "pod-template-hash": "abc123", "tier": "backend"},
                             "annotations": {"kubectl.kubernetes.io/restartedAt": "2024-01-01T00:00:00Z"}},
                "spec": {"nodeName": format!("node-{}", p % 50), "containers": [{"name": "app", "image": "registry.example/app:1.0",
                         "ports": [{"name": "http", "containerPort": 8080}, {"name": "metrics", "containerPort": 9090}]}]},
                "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                           "conditions": [{"type": "Ready", "status": if p % 5 == 4 { "False" } else { "True" }, "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}));
        }
    }
    let server = weir_apiserver::ApiServer::start(weir_apiserver::Config {
        seed,
        ..Default::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();

    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args([
            "run",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--manage",
            manage,
            // weir's own pace, not its client limit (KCM's 20/s would make any run ~100 s).
            "--kube-api-qps",
            "1000000",
            "--kube-api-burst",
            "1000000",
        ])
        .env("WEIR_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut peak = 0;
    let deadline = started + Duration::from_secs(600);
    loop {
        peak = peak.max(vm_hwm_kib(pid).unwrap_or(0));
        let slices_done = !manage.contains("endpointslices")
            || server.store().count("endpointslices") >= services;
        if server.store().count("endpoints") >= services && slices_done {
            break;
        }
        assert!(Instant::now() < deadline, "did not converge in 10 minutes");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let converged = started.elapsed();
    // Let it settle (writes coming back as no-op syncs), then read the peak again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    peak = peak.max(vm_hwm_kib(pid).unwrap_or(0));
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = child.wait();
    let writes = server.stats().writes("endpoints");
    let slice_writes = server.stats().writes("endpointslices");
    println!(
        "services {services}, pods {}, --manage {manage}: every Service's outputs written {converged:.2?} after `weir run` started",
        services * per_service
    );
    println!(
        "endpoints writes {writes}, endpointslices writes {slice_writes} (one create each per Service)"
    );
    println!("peak RSS of weir run: {:.1} MiB", peak as f64 / 1024.0);
    server.shutdown().await;
}
