//! The built-in CEL guest under `weir run --guest builtin:cel --policy-config
//! configmap:NS/NAME/KEY`, as a process: the rules live in a ConfigMap (the CEL guest itself is
//! built in, and too large for one). A change of rule there is checked at the swap gate and goes
//! live without a restart; a rule that does not compile, or is not a bool, is refused with an
//! Event naming it, and the last good rule keeps serving.

use std::process::Command;

use k8s_openapi::api::core::v1 as core;
use kube::api::{Api, PostParams};
use serde_json::json;

use super::cluster::*;
use super::process::{Proc, free_port};

/// Services `s0` and `s1`, each selecting one ready pod (`p0` at 10.4.0.1, `p1` at 10.4.0.2).
fn objects() -> Vec<serde_json::Value> {
    let mut objects = vec![namespace("app")];
    for i in 0..2 {
        objects.push(service(
            "app",
            &format!("s{i}"),
            json!({"app": format!("a{i}")}),
            json!([{"name": "http", "port": 80, "targetPort": 8080}]),
        ));
        objects.push(pod(
            "app",
            &format!("p{i}"),
            json!({"app": format!("a{i}")}),
            &format!("10.4.0.{}", i + 1),
            true,
        ));
    }
    objects
}

/// A rule that marks the pod named `name` not ready.
fn not_ready(name: &str) -> String {
    format!("ready: \"endpoint.ready && pod.metadata.name != '{name}'\"\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configmap_swap_between_cel_rules_is_hot_and_gated() {
    let c = Cluster::start(objects()).await;
    let cms: Api<core::ConfigMap> = Api::namespaced(c.client.clone(), "app");
    let cm: core::ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "rules", "namespace": "app"},
        "data": {"policy.yaml": not_ready("p0")}
    }))
    .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    c.write_kubeconfig(&kubeconfig);
    let admin = format!("127.0.0.1:{}", free_port());
    let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
    command.env("WEIR_CACHE_DIR", compile_cache_dir());
    command
        .arg("run")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--guest", "builtin:cel"])
        .args(["--policy-config", "configmap:app/rules/policy.yaml"])
        .args(["--leader-elect=false", "--admin-addr", &admin])
        // /readyz is enough; secure metrics serving has its own test (secure.rs).
        .env("WEIR_METRICS_SECURE", "false")
        .env("WEIR_LOG", "warn");
    let _run = Proc::spawn_logging(command);
    // Starting compiles the CEL guest (megabytes of wasm; tens of seconds on a debug build of
    // a loaded machine), so readiness gets a longer wait than a sync does.
    let started = tokio::time::Instant::now();
    while !ready(&admin).await {
        assert!(
            started.elapsed() < STARTUP,
            "weir run never became ready at {admin}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // The first rule: p0 is not ready.
    c.wait_ips("app", "s0", &[], &["10.4.0.1"]).await;
    c.wait_ips("app", "s1", &["10.4.0.2"], &[]).await;

    let set_rules = |rules: String| {
        let cms = cms.clone();
        async move {
            let mut current = cms.get("rules").await.unwrap();
            current.data = Some([("policy.yaml".to_string(), rules)].into());
            cms.replace("rules", &PostParams::default(), &current)
                .await
                .unwrap();
        }
    };
    // Another rule, same process: p1 is the one not ready now.
    set_rules(not_ready("p1")).await;
    c.wait_ips("app", "s0", &["10.4.0.1"], &[]).await;
    c.wait_ips("app", "s1", &[], &["10.4.0.2"]).await;

    // A rule that does not compile, then one that is not a bool: both refused at the gate,
    // counted and named in /guest, each with a GuestRefused Event on the ConfigMap naming it;
    // the last good rule keeps serving.
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(c.client.clone(), "app");
    for (n, (rules, needle)) in [
        (
            "ready: \"endpoint.ready &&\"\n",
            "rule `ready` does not compile",
        ),
        (
            "serving: \"'yes'\"\n",
            "rule `serving` returns string, not bool",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        set_rules(rules.to_string()).await;
        wait_for("the bad rule is refused, naming it", || {
            let admin = admin.clone();
            async move {
                guest_report(&admin).await.is_some_and(|report| {
                    let refused = report["history"].as_array().and_then(|history| {
                        history.iter().rev().find(|r| r["outcome"] == "refused")
                    });
                    report["refusals"].as_u64() == Some(n as u64 + 1)
                        && refused.is_some_and(|r| r["reason"].as_str().unwrap().contains(needle))
                })
            }
        })
        .await;
        let ev = events.clone();
        wait_for("a GuestRefused event naming the rule", || {
            let ev = ev.clone();
            async move {
                ev.list(&Default::default()).await.is_ok_and(|l| {
                    l.items.iter().any(|e| {
                        e.reason.as_deref() == Some("GuestRefused")
                            && e.note.as_deref().is_some_and(|note| note.contains(needle))
                    })
                })
            }
        })
        .await;
    }
    // Still serving the last good rule: a new pod is synced with it.
    c.apply(pod("app", "p2", json!({"app": "a1"}), "10.4.0.3", true))
        .await;
    c.wait_ips("app", "s1", &["10.4.0.3"], &["10.4.0.2"]).await;
    c.wait_ips("app", "s0", &["10.4.0.1"], &[]).await;

    // And a good rule after the refusals goes live.
    set_rules("include: \"pod.metadata.name != 'p0'\"\n".to_string()).await;
    c.wait_ips("app", "s0", &[], &[]).await;
    c.wait_ips("app", "s1", &["10.4.0.2", "10.4.0.3"], &[])
        .await;
}

/// How long `weir run --guest builtin:cel` may take to become ready.
const STARTUP: std::time::Duration = std::time::Duration::from_secs(180);

/// Whether the admin endpoint's `/readyz` answers 200.
async fn ready(admin: &str) -> bool {
    get(admin, "/readyz").await.is_some_and(|response| {
        response.starts_with("HTTP/1.1 200") || response.starts_with("HTTP/1.0 200")
    })
}

/// The admin endpoint's `/guest` report, if it answers (HTTP/1.0 over a plain socket, as the
/// other admin tests read it).
async fn guest_report(admin: &str) -> Option<serde_json::Value> {
    let response = get(admin, "/guest").await?;
    let (_, body) = response.split_once("\r\n\r\n")?;
    serde_json::from_str(body).ok()
}

/// `GET path` from the admin endpoint: the whole response, if it answers.
async fn get(admin: &str, path: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(admin).await.ok()?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    Some(response)
}
