//! An API server replaced by one with other contents, as after an etcd restore or a rebuilt
//! control plane: API server A, `weir run` (the process) converged on it; A goes away and B
//! comes up on the same address with other objects, its resourceVersions behind or ahead of
//! A's. Everything weir writes to B, watched from B's first moment, belongs to B's objects and
//! holds none of A's addresses; weir converges on B (docs/operations.md, "API server resets").

use std::process::Command;
use std::sync::{Arc, Mutex};

use futures::TryStreamExt;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{WatchEvent, WatchParams};
use kube::{Api, Resource};
use serde_json::{Value, json};

use super::cluster::*;
use super::process::{Proc, free_port};

/// A's pod addresses: none of them may reach B.
const A_NET: &str = "10.7.";

fn http() -> Value {
    json!([{"name": "http", "port": 80, "targetPort": 8080}])
}

/// A: Services `gone` (only on A) and `shared` (on both), each with a pod on A's network,
/// then 60 pods no Service selects, so A's resourceVersions run well past B's start.
fn server_a() -> Vec<Value> {
    let mut objects = vec![
        namespace("app"),
        node("node-1", None),
        service("app", "gone", json!({"app": "gone"}), http()),
        service("app", "shared", json!({"app": "shared"}), http()),
        pod("app", "a-gone", json!({"app": "gone"}), "10.7.0.1", true),
        pod(
            "app",
            "a-shared",
            json!({"app": "shared"}),
            "10.7.0.2",
            true,
        ),
    ];
    for i in 0..60 {
        objects.push(pod(
            "app",
            &format!("filler-{i}"),
            json!({"app": "filler"}),
            &format!("10.7.1.{}", i + 1),
            true,
        ));
    }
    objects
}

/// B: `shared` again and `fresh`, with pods on B's network only.
fn server_b() -> Vec<Value> {
    vec![
        namespace("app"),
        node("node-1", None),
        service("app", "shared", json!({"app": "shared"}), http()),
        service("app", "fresh", json!({"app": "fresh"}), http()),
        pod(
            "app",
            "b-shared",
            json!({"app": "shared"}),
            "10.9.0.2",
            true,
        ),
        pod("app", "b-fresh", json!({"app": "fresh"}), "10.9.0.3", true),
    ]
}

/// B's Services: the only ones weir may write for on B.
const B_SERVICES: &[&str] = &["shared", "fresh"];

/// Every address in an Endpoints or EndpointSlice, and the Service it belongs to.
fn owner_and_addresses(kind: &str, object: &Value) -> (String, Vec<String>) {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(String::from))
            .collect()
    };
    match kind {
        "Endpoints" => {
            let mut ips = Vec::new();
            for subset in object["subsets"].as_array().into_iter().flatten() {
                for list in ["addresses", "notReadyAddresses"] {
                    for a in subset[list].as_array().into_iter().flatten() {
                        ips.extend(a["ip"].as_str().map(String::from));
                    }
                }
            }
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            (name.to_string(), ips)
        }
        _ => {
            let ips = object["endpoints"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|e| strings(&e["addresses"]))
                .collect();
            let service = object["metadata"]["labels"]["kubernetes.io/service-name"]
                .as_str()
                .unwrap_or_default();
            (service.to_string(), ips)
        }
    }
}

/// Every event on `api` from resourceVersion `from` on, as (type, kind, object).
fn record<K>(api: Api<K>, from: u64, kind: &'static str, log: Arc<Mutex<Vec<(String, Value)>>>)
where
    K: Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
    K: Send + 'static,
{
    tokio::spawn(async move {
        let stream = api
            .watch(&WatchParams::default().timeout(290), &from.to_string())
            .await
            .expect("the watch of B starts");
        let mut stream = std::pin::pin!(stream);
        while let Ok(Some(event)) = stream.try_next().await {
            let (ty, object) = match event {
                WatchEvent::Added(o) => ("ADDED", o),
                WatchEvent::Modified(o) => ("MODIFIED", o),
                WatchEvent::Deleted(o) => ("DELETED", o),
                WatchEvent::Bookmark(_) => continue,
                WatchEvent::Error(e) => panic!("the watch of B failed: {e:?}"),
            };
            let value = serde_json::to_value(&object).unwrap();
            log.lock().unwrap().push((format!("{ty} {kind}"), value));
        }
    });
}

async fn replaced_api_server_gets_no_ghost_writes(ahead: bool) {
    let a = Cluster::start_with(weir_apiserver::Config {
        seed: server_a(),
        ..Default::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    a.write_kubeconfig(&kubeconfig);
    let admin = free_port();
    let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
    command.env("WEIR_CACHE_DIR", compile_cache_dir());
    command
        .args(["run", "--workers", "2", "--readyz-api-timeout", "2s"])
        .args(["--admin-addr", &format!("127.0.0.1:{admin}")])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        // The test scrapes /metrics beside the probes.
        .env("WEIR_METRICS_SECURE", "false")
        .env("WEIR_LOG", "warn");
    let mut weir = Proc::spawn_logging(command);
    a.wait_ips("app", "gone", &["10.7.0.1"], &[]).await;
    a.wait_ips("app", "shared", &["10.7.0.2"], &[]).await;
    let slices = Api::<EndpointSlice>::namespaced(a.client.clone(), "app");
    wait_for("A's slices written", || {
        let slices = slices.clone();
        async move {
            slices
                .list(&Default::default())
                .await
                .is_ok_and(|l| l.items.len() == 2)
        }
    })
    .await;
    let a_version = a.server().store().resource_version();

    let addr = a.server().addr();
    let (server, client) = a.into_embedded();
    server.shutdown().await;
    let initial_resource_version = if ahead { a_version + 1_000 } else { 0 };
    let server = weir_apiserver::ApiServer::start(weir_apiserver::Config {
        addr,
        seed: server_b(),
        initial_resource_version,
        ..Default::default()
    })
    .await
    .expect("B starts on A's address");
    let b = Cluster::embedded(server, client);
    let b_start = b.server().store().resource_version();
    assert_eq!(
        b_start > a_version,
        ahead,
        "B at {b_start}, A was at {a_version}"
    );
    // B's history begins at its start: watches from there see every write weir makes to B.
    let log = Arc::new(Mutex::new(Vec::new()));
    record(
        Api::<core::Endpoints>::all(b.client.clone()),
        b_start,
        "Endpoints",
        log.clone(),
    );
    record(
        Api::<EndpointSlice>::all(b.client.clone()),
        b_start,
        "EndpointSlice",
        log.clone(),
    );

    b.wait_ips("app", "shared", &["10.9.0.2"], &[]).await;
    b.wait_ips("app", "fresh", &["10.9.0.3"], &[]).await;
    let slices = Api::<EndpointSlice>::namespaced(b.client.clone(), "app");
    wait_for("B's slices written", || {
        let slices = slices.clone();
        async move {
            slices.list(&Default::default()).await.is_ok_and(|l| {
                let mut held: Vec<(String, Vec<String>)> = l
                    .items
                    .iter()
                    .map(|s| {
                        owner_and_addresses("EndpointSlice", &serde_json::to_value(s).unwrap())
                    })
                    .collect();
                held.sort();
                held == [
                    ("fresh".to_string(), vec!["10.9.0.3".to_string()]),
                    ("shared".to_string(), vec!["10.9.0.2".to_string()]),
                ]
            })
        }
    })
    .await;
    // weir is ready again, and what it wrote to B on the way was B's alone.
    wait_for("weir ready on B", || async move {
        http_status(admin, "/readyz").await == Some(200)
    })
    .await;
    let log = log.lock().unwrap().clone();
    assert!(!log.is_empty(), "the watches of B saw weir's writes");
    for (event, object) in &log {
        let kind = event.split(' ').nth(1).unwrap_or_default();
        let (service, addresses) = owner_and_addresses(kind, object);
        assert!(
            B_SERVICES.contains(&service.as_str()),
            "{event} for Service {service:?}, which B does not have: {object}"
        );
        assert!(
            !addresses.iter().any(|ip| ip.starts_with(A_NET)),
            "{event} of {service} holds A's addresses {addresses:?}"
        );
    }
    assert!(weir.exited().is_none(), "weir exited");
    let status = tokio::task::block_in_place(|| weir.stop("-TERM"));
    assert!(status.success(), "{status:?}");
}

/// The status code of `GET path` on 127.0.0.1:`port`, `None` if nothing answers.
async fn http_status(port: u16, path: &str) -> Option<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).await.ok()?;
    out.get(9..12)?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_replaced_by_one_behind_it_gets_no_write_from_the_old_state() {
    replaced_api_server_gets_no_ghost_writes(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_replaced_by_one_ahead_of_it_gets_no_write_from_the_old_state() {
    replaced_api_server_gets_no_ghost_writes(true).await;
}
