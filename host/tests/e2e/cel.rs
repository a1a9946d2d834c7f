//! The built-in CEL guest under `weir run`'s ConfigMap source: a change of rule in the
//! ConfigMap is checked at the swap gate and goes live without a restart; a rule that does not
//! compile, or is not a bool, is refused with an Event naming it, and the last good rule keeps
//! serving.

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1 as core;
use kube::api::{Api, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use weir::runtime::{CEL_GUEST, Limits, Runtime};
use weir::swap::source::watch_configmap;
use weir::swap::{SwapConfig, Swapper};

use super::cluster::*;

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
    let mut cm: core::ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "rules", "namespace": "app"},
        "data": {"policy.yaml": not_ready("p0")}
    }))
    .unwrap();
    cm.binary_data = Some([("guest.wasm".to_string(), ByteString(CEL_GUEST.to_vec()))].into());
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let run = c.run_default().await;
    let swapper = Swapper::new(
        Runtime::new(Limits::default()).unwrap(),
        run.handle.clone(),
        SwapConfig::default(),
    );
    let stop = CancellationToken::new();
    let _watch = watch_configmap(
        c.client.clone(),
        "app".into(),
        "rules".into(),
        "guest.wasm".into(),
        Some("policy.yaml".into()),
        swapper.clone(),
        stop.clone(),
    );
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
    let good = run.handle.guest.config();
    assert!(good.contains("p1"), "{good}");

    // A rule that does not compile, then one that is not a bool: both refused at the gate,
    // each with an Event naming the rule; the last good rule keeps serving.
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
        let s = swapper.clone();
        wait_for("the bad rule is refused", || {
            let s = s.clone();
            async move { s.handle.metrics.swap_refusals_total() == n as u64 + 1 }
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
        assert_eq!(run.handle.guest.config(), good);
    }
    // Still serving the last good rule: a new pod is synced with it.
    let pods: Api<core::Pod> = Api::namespaced(c.client.clone(), "app");
    let p2: core::Pod =
        serde_json::from_value(pod("app", "p2", json!({"app": "a1"}), "10.4.0.3", true)).unwrap();
    pods.create(&PostParams::default(), &p2).await.unwrap();
    c.wait_ips("app", "s1", &["10.4.0.3"], &["10.4.0.2"]).await;
    c.wait_ips("app", "s0", &["10.4.0.1"], &[]).await;

    // And a good rule after the refusals goes live.
    set_rules("include: \"pod.metadata.name != 'p0'\"\n".to_string()).await;
    c.wait_ips("app", "s0", &[], &[]).await;
    c.wait_ips("app", "s1", &["10.4.0.2", "10.4.0.3"], &[])
        .await;
    stop.cancel();
    run.stop().await;
}
