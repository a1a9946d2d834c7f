//! Scale benchmark: 150,000 pods and 10,000 services in memory, list and watch throughput.
//!
//! `cargo run --release -p weir-apiserver --example scale [-- PODS SERVICES WATCHERS UPDATES]`
//!
//! Reports resident memory (VmRSS / VmHWM from /proc/self/status, whole process including the
//! benchmark's own client side), the time to stream a full pod list over HTTP, a paged
//! list through kube-rs, and watch fan-out throughput.

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use weir_apiserver::{ApiServer, Config};

fn proc_status(field: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .map(|l| l[field.len() + 1..].trim().to_string())
        })
        .unwrap_or_else(|| "n/a".into())
}

fn mem(label: &str) {
    println!(
        "{label:<38} VmRSS {:>12}  VmHWM {:>12}",
        proc_status("VmRSS"),
        proc_status("VmHWM")
    );
}

fn pod(ns: &str, i: usize) -> Value {
    let ip = format!("10.{}.{}.{}", 64 + (i >> 16) % 64, (i >> 8) & 255, i & 255);
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("app-{i}-7d9f8b6c5-x2k4q"), "namespace": ns,
            "labels": {"app": format!("app-{}", i % 10_000), "pod-template-hash": "7d9f8b6c5"},
            "creationTimestamp": "2025-01-01T00:00:00Z"},
        "spec": {"nodeName": format!("node-{}", i % 500), "containers": [{"name": "app", "image": "registry.example/app:1.2.3",
            "ports": [{"name": "http", "containerPort": 8080}, {"name": "metrics", "containerPort": 9090}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]},
        "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "hostIP": "192.168.1.10",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:05Z"},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2025-01-01T00:00:05Z"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}],
            "containerStatuses": [{"name": "app", "ready": true, "started": true, "restartCount": 0,
                "image": "registry.example/app:1.2.3", "imageID": "registry.example/app@sha256:0123456789abcdef",
                "containerID": "containerd://0123456789abcdef", "state": {"running": {"startedAt": "2025-01-01T00:00:03Z"}}}]}
    })
}

fn service(ns: &str, i: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": format!("app-{i}"), "namespace": ns},
        "spec": {"selector": {"app": format!("app-{i}")}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}})
}

/// GETs `path` over a raw HTTP/1.1 connection and returns the body size (chunked decoding
/// skipped: the byte count includes chunk headers, close enough for throughput).
async fn raw_get(addr: std::net::SocketAddr, path: &str) -> usize {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    let mut n = 0;
    loop {
        match s.read(&mut buf).await.unwrap() {
            0 => return n,
            k => n += k,
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let pods = args.first().copied().unwrap_or(150_000);
    let services = args.get(1).copied().unwrap_or(10_000);
    let watchers = args.get(2).copied().unwrap_or(4);
    let updates = args.get(3).copied().unwrap_or(20_000);
    mem("start");
    let server = ApiServer::start(Config {
        history: 10_000,
        ..Config::default()
    })
    .await?;
    let store = server.store();
    let t = Instant::now();
    let namespaces = 20;
    let mut batch = Vec::with_capacity(1_000);
    for i in 0..services {
        batch.push(service(&format!("ns-{}", i % namespaces), i));
        if batch.len() == 1_000 {
            store.load(std::mem::take(&mut batch))?;
        }
    }
    for i in 0..pods {
        batch.push(pod(&format!("ns-{}", i % namespaces), i));
        if batch.len() == 1_000 {
            store.load(std::mem::take(&mut batch))?;
        }
    }
    store.load(batch)?;
    println!(
        "loaded {pods} pods + {services} services in {:.2?}",
        t.elapsed()
    );
    mem("after load");

    // Full list, raw HTTP (server-side streaming).
    for round in 0..2 {
        let t = Instant::now();
        let n = raw_get(server.addr(), "/api/v1/pods").await;
        let e = t.elapsed();
        println!(
            "list all pods (raw HTTP) #{round}: {:.1} MiB in {e:.2?} = {:.0} MiB/s, {:.0} pods/s",
            n as f64 / 1048576.0,
            n as f64 / 1048576.0 / e.as_secs_f64(),
            pods as f64 / e.as_secs_f64()
        );
    }
    mem("after raw lists");

    // kube-rs paged list (500 per page, as kube-runtime's watcher does), incl. client decoding.
    let path = std::env::temp_dir().join(format!("weir-scale-{}.kubeconfig", std::process::id()));
    server.write_kubeconfig(&path)?;
    let kc = kube::config::Kubeconfig::read_from(&path)?;
    let _ = std::fs::remove_file(&path);
    let client = kube::Client::try_from(
        kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?,
    )?;
    let api: Api<Pod> = Api::all(client.clone());
    let t = Instant::now();
    let mut lp = ListParams::default().limit(500);
    let mut count = 0;
    loop {
        let page = api.list(&lp).await?;
        count += page.items.len();
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => break,
        }
    }
    let e = t.elapsed();
    println!(
        "list all pods (kube-rs, pages of 500, decoded): {count} in {e:.2?} = {:.0} pods/s",
        count as f64 / e.as_secs_f64()
    );
    mem("after kube-rs list");

    // Selector list (label match over all pods).
    let t = Instant::now();
    let n = raw_get(server.addr(), "/api/v1/pods?labelSelector=app%3Dapp-42").await;
    println!(
        "list pods with labelSelector app=app-42 (scan {pods}): {n} bytes in {:.2?}",
        t.elapsed()
    );

    // Watch fan-out of the initial state: `watchers` concurrent watches from resourceVersion 0,
    // each receiving one synthetic ADDED event per pod.
    let t = Instant::now();
    let mut handles = Vec::new();
    for _ in 0..watchers {
        let addr = server.addr();
        handles.push(tokio::spawn(async move {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            s.write_all(b"GET /api/v1/pods?watch=1&resourceVersion=0 HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            let mut lines = BufReader::new(s).lines();
            let mut n = 0;
            while let Ok(Some(l)) = lines.next_line().await {
                if l.starts_with("{\"type\":\"ADDED\"") {
                    n += 1;
                    if n == pods {
                        break;
                    }
                }
            }
            n
        }));
    }
    let mut delivered = 0;
    for h in handles {
        delivered += h.await?;
    }
    let e = t.elapsed();
    println!(
        "watch from rv 0: {delivered} initial events to {watchers} watchers in {e:.2?} = {:.0} events/s",
        delivered as f64 / e.as_secs_f64()
    );
    mem("after initial-events watches");

    // Watch fan-out: `watchers` raw watches on all pods, `updates` label patches via kube-rs.
    let rv = store.resource_version();
    let mut handles = Vec::new();
    for _ in 0..watchers {
        let addr = server.addr();
        handles.push(tokio::spawn(async move {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            s.write_all(
                format!(
                    "GET /api/v1/pods?watch=1&resourceVersion={rv} HTTP/1.1\r\nHost: x\r\n\r\n"
                )
                .as_bytes(),
            )
            .await
            .unwrap();
            let mut lines = BufReader::new(s).lines();
            let mut n = 0;
            while let Ok(Some(l)) = lines.next_line().await {
                if l.starts_with("{\"type\":\"MODIFIED\"") {
                    n += 1;
                    if n == updates {
                        break;
                    }
                }
            }
            n
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let t = Instant::now();
    let concurrency = 8;
    futures::stream::iter(0..updates)
        .map(|i| {
            let api: Api<Pod> = Api::namespaced(client.clone(), &format!("ns-{}", i % namespaces));
            let name = format!("app-{i}-7d9f8b6c5-x2k4q");
            async move {
                api.patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"labels": {"bench": "1"}}})),
                )
                .await
                .map(|_| ())
            }
        })
        .buffer_unordered(concurrency)
        .for_each(|r| async move { r.expect("patch") })
        .await;
    let writes = t.elapsed();
    let mut delivered = 0;
    for h in handles {
        delivered += h.await?;
    }
    let e = t.elapsed();
    println!(
        "{updates} patches (kube-rs, {concurrency} in flight): {writes:.2?} = {:.0} writes/s",
        updates as f64 / writes.as_secs_f64()
    );
    println!(
        "watch fan-out: {delivered} events to {watchers} watchers in {e:.2?} = {:.0} events/s",
        delivered as f64 / e.as_secs_f64()
    );
    mem("end");
    server.shutdown().await;
    Ok(())
}
