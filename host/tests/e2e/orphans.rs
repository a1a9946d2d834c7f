//! Endpoints that weir must leave alone after start-up: an Endpoints event alone never deletes
//! (docs/operations.md, "Which Endpoints weir deletes").

use std::time::Duration;

use k8s_openapi::api::core::v1 as core;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

use super::cluster::*;

fn manual_endpoints(name: &str, ip: &str, annotations: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": name, "namespace": "app", "annotations": annotations},
        "subsets": [{"addresses": [{"ip": ip}], "ports": [{"port": 80}]}]})
}

/// The web app with the controller synced and idle.
async fn running_web_app() -> (Cluster, Running) {
    let c = Cluster::start(web_app()).await;
    let run = c.run_default().await;
    c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;
    run.idle().await;
    (c, run)
}

fn syncs(run: &Running) -> u64 {
    run.handle.metrics.syncs_total()
}

/// Waits until the controller has run at least one sync more than `before` and is idle again,
/// so whatever the event caused has been done.
async fn synced_after(run: &Running, before: u64) {
    let h = run.handle.clone();
    wait_for("a sync after the change", || {
        let h = h.clone();
        async move { h.metrics.syncs_total() > before }
    })
    .await;
    run.idle().await;
}

/// Applies `object` and waits until the controller has synced what its event queued.
async fn apply_synced(c: &Cluster, run: &Running, object: Value) {
    let before = syncs(run);
    c.apply(object).await;
    synced_after(run, before).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_created_without_a_service_survive() {
    let (c, run) = running_web_app().await;
    apply_synced(&c, &run, manual_endpoints("manual", "10.5.0.1", json!({}))).await;
    // An update of it is an event too.
    apply_synced(&c, &run, manual_endpoints("manual", "10.5.0.2", json!({}))).await;
    let kept = c.endpoints("app", "manual").await.expect("not deleted");
    assert_eq!(ips(&kept), (vec!["10.5.0.2".to_string()], vec![]));
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_election_lock_survives_30s_of_renewals() {
    const LEADER: &str = "control-plane.alpha.kubernetes.io/leader";
    let (c, run) = running_web_app().await;
    let api: Api<core::Endpoints> = Api::namespaced(c.client.clone(), "app");
    let lock = json!({"apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "lock", "namespace": "app",
                     "annotations": {LEADER: r#"{"holderIdentity":"a","renewTime":"0"}"#}}});
    apply_synced(&c, &run, lock).await;
    // Renew as an old-style leader elector does: read, update the annotation, write back.
    let start = tokio::time::Instant::now();
    let mut renewals = 0;
    while start.elapsed() < Duration::from_secs(30) {
        let mut current = api.get("lock").await.expect("the lock still exists");
        renewals += 1;
        current.metadata.annotations.get_or_insert_default().insert(
            LEADER.into(),
            format!(r#"{{"holderIdentity":"a","renewTime":"{renewals}"}}"#),
        );
        let before = syncs(&run);
        api.replace("lock", &PostParams::default(), &current)
            .await
            .expect("renewal");
        // The controller has seen this renewal before the next one.
        synced_after(&run, before).await;
        assert!(
            c.endpoints("app", "lock").await.is_some(),
            "the lock was deleted after renewal {renewals}"
        );
        // The pace of the renewals, not a wait (each one is awaited above): leader electors
        // renew every couple of seconds; 10 per second is plenty here.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(renewals >= 30, "only {renewals} renewals");
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_made_endpoints_applied_before_their_selectorless_service_survive() {
    let (c, run) = running_web_app().await;
    // As `kubectl apply -f dir/` does: the Endpoints first, then the Service without a selector.
    // The controller syncs the Endpoints' key before the Service exists, the order that lost
    // them most often.
    apply_synced(
        &c,
        &run,
        manual_endpoints("external-db", "10.8.0.1", json!({})),
    )
    .await;
    let mut selectorless = service("app", "external-db", json!({}), json!([{"port": 80}]));
    selectorless["spec"]
        .as_object_mut()
        .unwrap()
        .remove("selector");
    apply_synced(&c, &run, selectorless).await;
    let kept = c
        .endpoints("app", "external-db")
        .await
        .expect("not deleted");
    assert_eq!(ips(&kept), (vec!["10.8.0.1".to_string()], vec![]));
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_deletion_deletes_and_counts_once() {
    let (c, run) = running_web_app().await;
    let writes = run.handle.metrics.writes_done();
    let deletes = c.deletes("endpoints");
    let endpoints_writes = c.writes("endpoints");
    let services: Api<core::Service> = Api::namespaced(c.client.clone(), "app");
    services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    c.wait_gone("app", "web").await;
    // The Endpoints delete event comes back and is synced too.
    let h = run.handle.clone();
    wait_for("the endpoints cache forgets the deleted object", || {
        let gone = h.cache.endpoints("app/web").is_none();
        async move { gone }
    })
    .await;
    run.idle().await;
    let written = run.handle.metrics.writes_done() - writes;
    let deleted = c.deletes("endpoints") - deletes;
    if super::real::selected() {
        // kube-apiserver deletes the Endpoints itself (unaudited), racing weir's delete: weir
        // sends at most one DELETE, counts it only when it found something, and never creates
        // the Endpoints again (finding F6 of docs/design/conformance-findings.md).
        assert_eq!(
            c.writes("endpoints") - endpoints_writes,
            deleted,
            "no create or update"
        );
        assert!(deleted <= 1, "{deleted} DELETE requests");
        assert!(
            written <= deleted,
            "{written} writes counted, {deleted} sent"
        );
    } else {
        assert_eq!(written, 1, "one deletion, counted once");
        assert_eq!(deleted, 1, "one DELETE request");
    }
    run.stop().await;
}
