use super::*;
use crate::reconcile::validate::Action;
use crate::reconcile::validate_slices::SlicePlan;
use crate::runtime::Guest;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::json;
use std::sync::OnceLock;

fn default_guest() -> Guest {
    static GUEST: OnceLock<Guest> = OnceLock::new();
    GUEST
        .get_or_init(|| {
            crate::runtime::Runtime::new(crate::runtime::Limits::default())
                .unwrap()
                .default_guest()
                .unwrap()
        })
        .clone()
}

fn syncer() -> Syncer {
    Syncer {
        consistency: Arc::default(),
        cache: Arc::new(Cache::default()),
        guest: ActiveGuest::new(default_guest()),
        writer: Writer::DryRun,
        events: EventRecorder::new(Writer::DryRun, std::time::Duration::from_secs(60)),
        trigger_times: TriggerTimeTracker::default(),
        ledger: Arc::default(),
        health: Arc::default(),
        shadow: None,
        metrics: Arc::default(),
        outputs: crate::controller::Outputs::default(),
        slice_stats: Default::default(),
    }
}

/// The Service ns/s is deleted, as its watch reports it: the cache forgets it and, when it was
/// a managed one, the ledger owes its Endpoints' delete.
fn delete_service(s: &Syncer) {
    let managed = s.cache.delete_service("ns", "s");
    s.ledger.deletes.service_deleted("ns/s", managed);
}

fn service(spec: serde_json::Value) -> core::Service {
    serde_json::from_value(json!({
        "metadata": {"name": "s", "namespace": "ns", "uid": "u1",
                     "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": spec,
    }))
    .unwrap()
}

fn endpoints(rv: &str, ip: &str) -> core::Endpoints {
    serde_json::from_value(json!({
        "metadata": {"name": "s", "namespace": "ns", "resourceVersion": rv},
        "subsets": [{"addresses": [{"ip": ip}], "ports": [{"port": 80}]}],
    }))
    .unwrap()
}

fn selecting() -> serde_json::Value {
    json!({"selector": {"app": "web"}, "ports": [{"port": 80}]})
}

#[tokio::test]
async fn stale_guard_comes_after_not_found_external_name_and_nil_selector() {
    let s = syncer();
    s.cache.apply_endpoints(endpoints("5", "10.0.0.1"));
    s.ledger.endpoints.superseded("ns/s", "5".into());
    // nil selector: left alone, not held up by the guard.
    s.cache
        .apply_service(&service(json!({"ports": [{"port": 80}]})));
    assert_eq!(s.sync("ns/s").await.unwrap(), SyncOutcome::Unchanged);
    // ExternalName, even with a selector.
    let mut external = selecting();
    external["type"] = json!("ExternalName");
    external["externalName"] = json!("example.com");
    s.cache.apply_service(&service(external));
    assert_eq!(s.sync("ns/s").await.unwrap(), SyncOutcome::Unchanged);
    // A Service that selects pods: the guard holds.
    s.cache.apply_service(&service(selecting()));
    assert!(matches!(
        s.sync("ns/s").await,
        Err(SyncError::StaleCache(k, rv)) if k == "ns/s" && rv == "5"
    ));
    // Service deleted: the delete goes ahead despite the stale cache.
    delete_service(&s);
    assert_eq!(
        s.sync("ns/s").await.unwrap(),
        SyncOutcome::Written("delete")
    );
}

fn owned_slice(name: &str, generation: i64) -> EndpointSlice {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "uid": name, "generation": generation,
                     "labels": {"kubernetes.io/service-name": "s",
                                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "s",
                                          "uid": "u1", "controller": true, "blockOwnerDeletion": true}]},
        "addressType": "IPv4", "ports": [], "endpoints": []
    }))
    .unwrap()
}

/// A Service selecting `app: web`, single-stack IPv4 (so one stored placeholder is right).
fn ipv4_service() -> core::Service {
    let mut spec = selecting();
    spec["ipFamilies"] = json!(["IPv4"]);
    spec["clusterIP"] = json!("10.0.0.10");
    service(spec)
}

fn slice_writes(s: &Syncer) -> u64 {
    let st = &s.slice_stats;
    st.creates.get() + st.updates.get() + st.deletes.get()
}

#[tokio::test]
async fn s74_a_slice_cache_behind_our_write_fails_the_sync_as_stale_and_writes_nothing() {
    let s = syncer();
    s.cache.apply_service(&ipv4_service());
    s.cache.slices.apply(owned_slice("a", 10));
    // Tracked 12, cached 10: the cache has not seen weir's last write.
    s.ledger.slices.written("ns/s", &owned_slice("a", 12));
    let error = s.sync("ns/s").await.unwrap_err();
    assert!(
        matches!(&error, SyncError::StaleSlices(k) if k == "ns/s"),
        "{error}"
    );
    assert_eq!(
        error.result_label(),
        "stale",
        "counted as weir_syncs{{result=stale}}"
    );
    assert_eq!(s.slice_stats.stale.get(), 1);
    assert_eq!(slice_writes(&s), 0, "nothing written");
    // Tracked 10 / cached 10 and tracked 1 / cached 10: the sync goes ahead (the stored
    // placeholder is right for a Service without pods, so it writes nothing either).
    for tracked in [10, 1] {
        s.ledger.slices.written("ns/s", &owned_slice("a", tracked));
        s.sync("ns/s").await.unwrap();
    }
    assert_eq!(s.slice_stats.stale.get(), 1);
}

#[tokio::test]
async fn s75_an_expected_delete_still_listed_or_a_written_slice_missing_is_stale() {
    let s = syncer();
    s.cache.apply_service(&ipv4_service());
    // A Service the tracker never saw is never stale.
    s.cache.slices.apply(owned_slice("a", 1));
    s.sync("ns/s").await.unwrap();
    // weir deleted "a" but the cache still lists it.
    s.ledger.slices.deleted("ns/s", "a");
    assert!(matches!(
        s.sync("ns/s").await,
        Err(SyncError::StaleSlices(_))
    ));
    s.cache.slices.delete("ns", "a");
    // weir created "b" and the cache has not got it yet.
    s.ledger.slices.written("ns/s", &owned_slice("b", 1));
    assert!(matches!(
        s.sync("ns/s").await,
        Err(SyncError::StaleSlices(_))
    ));
    assert_eq!(s.slice_stats.stale.get(), 2);
    assert_eq!(slice_writes(&s), 0);
}

#[tokio::test]
async fn s73_a_deleted_service_forgets_its_slice_and_trigger_time_state_and_writes_no_slice() {
    // Both outputs, and EndpointSlices alone (no Endpoints DELETE to hang the forgetting on).
    for endpoints in [true, false] {
        let mut s = syncer();
        s.outputs.endpoints = endpoints;
        s73_case(&s).await;
    }
}

async fn s73_case(s: &Syncer) {
    s.cache.apply_service(&ipv4_service());
    s.cache.slices.apply(owned_slice("a", 3));
    s.ledger.slices.written("ns/s", &owned_slice("a", 3));
    let view = s.cache.service("ns", "s").unwrap().view;
    assert!(s.trigger_times.compute("ns/s", &view, &[]).is_some());
    delete_service(s);
    let writes_before = slice_writes(s);
    // The Endpoints object goes (spec §5.2); the slices are left to garbage collection.
    s.sync("ns/s").await.unwrap();
    assert_eq!(
        slice_writes(s),
        writes_before,
        "no slice write for a deleted Service"
    );
    // The tracker forgot the Service: a stale-looking cache no longer fails a sync.
    assert!(!s.ledger.slices.is_stale("ns/s", []));
    assert!(!s.ledger.slices.has(&owned_slice("a", 3)));
    // The trigger-time tracker forgot it too: a new Service of that name starts from its
    // creation time again.
    assert_eq!(
        s.trigger_times.compute("ns/s", &view, &[]),
        Some("2024-01-01T00:00:00Z".to_string())
    );
}

/// Caches a ready, running pod `name` of the `app: web` Service on `node` at `ip`.
fn apply_ready_pod(s: &Syncer, name: &str, node: &str, ip: &str) {
    let pod: core::Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                     "labels": {"app": "web"}},
        "spec": {"nodeName": node, "containers": [{"name": "c"}]},
        "status": {"phase": "Running", "podIPs": [{"ip": ip}],
                   "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .unwrap();
    s.cache
        .apply_pod(crate::controller::store::CachedPod::from_pod(&pod));
}

/// The slice plan a sync of `ns/s` would write, without writing it.
async fn slice_plan(s: &Syncer) -> SlicePlan {
    let Prepared::Call { request, .. } = s.prepare("ns/s").unwrap() else {
        panic!("a selecting Service calls the guest");
    };
    let stored = s.cache.slices.for_service("ns/s");
    let request = s.reader().request(*request, &stored, true);
    let decision = s.guest.current().call(&request).await.unwrap();
    assert!(decision.errors.is_empty(), "{:?}", decision.errors);
    let target = crate::reconcile::admit::Target {
        namespace: "ns",
        name: "s",
        uid: "u1",
    };
    let max = s.outputs.max_endpoints_per_slice;
    crate::reconcile::admit::slices(target, max, (&stored, &request.pods), decision.slices).unwrap()
}

#[tokio::test]
async fn s97_a_zone_added_to_a_node_appears_at_the_services_next_sync() {
    let s = syncer();
    s.cache.apply_service(&ipv4_service());
    apply_ready_pod(&s, "p1", "node-1", "10.1.0.1");
    let node = |zone: Option<&str>| crate::controller::store::slices::NodeView {
        zone: zone.map(str::to_string),
        ready: true,
        cpu_millis: 1000,
        control_plane: false,
    };
    s.cache.nodes.apply("node-1", node(None));
    // The first sync creates the slice, without a zone; store it as the API server would.
    let mut plan = slice_plan(&s).await;
    assert_eq!((plan.create.len(), plan.update.len()), (1, 0));
    let mut created = plan.create.remove(0);
    assert_eq!(created.endpoints.as_ref().unwrap()[0].zone, None);
    created.metadata.name = Some("s-abcde".into());
    created.metadata.uid = Some("slice-uid".into());
    created.metadata.generation = Some(1);
    created.metadata.resource_version = Some("1".into());
    s.cache.slices.apply(created);
    assert!(slice_plan(&s).await.is_empty(), "up to date");
    // The Node gains its zone: that alone syncs nothing (controller::tests::s97_*), and the
    // Service's next sync updates the one slice with the zone.
    s.cache.nodes.apply("node-1", node(Some("zone-a")));
    let plan = slice_plan(&s).await;
    assert_eq!(
        (plan.create.len(), plan.update.len(), plan.delete.len()),
        (0, 1, 0)
    );
    assert_eq!(plan.update[0].metadata.name.as_deref(), Some("s-abcde"));
    assert_eq!(
        plan.update[0].endpoints.as_ref().unwrap()[0]
            .zone
            .as_deref(),
        Some("zone-a")
    );
    let updates = s.slice_stats.updates.get();
    s.sync("ns/s").await.unwrap();
    assert_eq!(s.slice_stats.updates.get(), updates + 1);
}

/// S91 (R4.27): the first sync stamps the slice with the Service's creation time; a later
/// write with no newer pod Ready transition carries no trigger-time annotation at all.
#[tokio::test]
async fn s91_a_later_write_without_a_newer_ready_transition_drops_the_trigger_time() {
    const TRIGGER: &str = "endpoints.kubernetes.io/last-change-trigger-time";
    let s = syncer();
    s.cache.apply_service(&ipv4_service());
    let pod: core::Pod = serde_json::from_value(json!({
        "metadata": {"name": "p1", "namespace": "ns", "uid": "uid-1", "labels": {"app": "web"}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c"}]},
        "status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.1"}],
                   "conditions": [{"type": "Ready", "status": "True",
                                   "lastTransitionTime": "2023-12-31T00:00:00Z"}]}
    }))
    .unwrap();
    s.cache
        .apply_pod(crate::controller::store::CachedPod::from_pod(&pod));
    let node = crate::controller::store::slices::NodeView {
        zone: None,
        ready: true,
        cpu_millis: 1000,
        control_plane: false,
    };
    s.cache.nodes.apply("node-1", node);
    let mut plan = slice_plan(&s).await;
    assert_eq!((plan.create.len(), plan.update.len()), (1, 0));
    let mut created = plan.create.remove(0);
    let annotation = |slice: &EndpointSlice| {
        slice
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(TRIGGER))
            .cloned()
    };
    assert_eq!(
        annotation(&created).as_deref(),
        Some("2024-01-01T00:00:00Z"),
        "first sync: the Service's creation time"
    );
    created.metadata.name = Some("s-abcde".into());
    created.metadata.uid = Some("slice-uid".into());
    created.metadata.generation = Some(1);
    created.metadata.resource_version = Some("1".into());
    s.cache.slices.apply(created);
    // The Service gains a label: its slice is rewritten (R4.26), with no pod change.
    let mut labelled = ipv4_service();
    labelled.metadata.labels = Some([("team".to_string(), "a".to_string())].into());
    s.cache.apply_service(&labelled);
    let plan = slice_plan(&s).await;
    assert_eq!((plan.create.len(), plan.update.len()), (0, 1));
    assert_eq!(annotation(&plan.update[0]), None, "no newer transition");
}

#[tokio::test]
async fn endpoints_without_a_service_are_deleted_only_after_the_service_was() {
    let s = syncer();
    s.cache.apply_endpoints(endpoints("5", "10.0.0.1"));
    // An Endpoints event for a key that never had a Service: no delete.
    assert_eq!(s.sync("ns/s").await.unwrap(), SyncOutcome::Unchanged);
    // Nor for a Service weir never saw that is deleted.
    delete_service(&s);
    assert_eq!(s.sync("ns/s").await.unwrap(), SyncOutcome::Unchanged);
    // A Service that existed and is gone: delete, once.
    s.cache.apply_service(&service(selecting()));
    delete_service(&s);
    assert_eq!(
        s.sync("ns/s").await.unwrap(),
        SyncOutcome::Written("delete")
    );
    assert_eq!(s.sync("ns/s").await.unwrap(), SyncOutcome::Unchanged);
    // The start-up sweep's permission works the same way.
    s.ledger.deletes.owe("ns/s");
    assert_eq!(
        s.sync("ns/s").await.unwrap(),
        SyncOutcome::Written("delete")
    );
}

#[tokio::test]
async fn no_write_from_caches_that_may_mix_two_api_servers() {
    use crate::controller::watch::consistency::{Inconsistent, ResetCause};
    let s = syncer();
    s.cache.apply_service(&service(selecting()));
    delete_service(&s);
    // An informer still owes its list of the current epoch: nothing is written.
    s.consistency.register("pods");
    assert!(matches!(
        s.sync("ns/s").await,
        Err(SyncError::Inconsistent(Inconsistent))
    ));
    assert!(s.ledger.deletes.is_owed("ns/s"), "the delete is still owed");
    s.consistency.listed("pods", s.consistency.epoch());
    // A decision made before a reset is not written after it.
    let before = s.consistency.begin().unwrap();
    s.consistency.reset("pods", ResetCause::Gone);
    s.consistency.listed("pods", s.consistency.epoch());
    let owed = s
        .endpoints_output()
        .write("ns/s", target("u1"), Action::Delete, before)
        .await;
    assert!(matches!(owed, Err(SyncError::Inconsistent(_))), "{owed:?}");
    assert!(s.ledger.deletes.is_owed("ns/s"));
    // From a view of the current epoch the write goes ahead.
    assert_eq!(
        s.sync("ns/s").await.unwrap(),
        SyncOutcome::Written("delete")
    );
}

#[test]
fn trigger_times_are_not_tracked_for_external_name_or_nil_selector() {
    let s = syncer();
    let view = |spec| Arc::new(crate::reconcile::view::service(&service(spec), "ns"));
    let created = Some("2024-01-01T00:00:00Z".to_string());
    let mut external = selecting();
    external["type"] = json!("ExternalName");
    for spec in [json!({"ports": [{"port": 80}]}), external] {
        let request =
            s.reader()
                .selected("ns/s", ("ns", "s"), Some(view(spec)), None, String::new());
        assert_eq!(request.trigger_time, None);
    }
    // The first sync that selects pods still reports the Service's creation: the tracker
    // had not been fed before.
    let request = s.reader().selected(
        "ns/s",
        ("ns", "s"),
        Some(view(selecting())),
        None,
        String::new(),
    );
    assert_eq!(request.trigger_time, created);
}

#[test]
fn the_request_and_the_write_see_one_endpoints_snapshot() {
    let s = Arc::new(syncer());
    s.cache.apply_service(&service(selecting()));
    s.cache.apply_endpoints(endpoints("1", "10.0.0.1"));
    // Selected pods make building a request take a while, as in a real cluster: a second
    // read of the cache after them would see another version.
    for i in 0..300 {
        let pod: core::Pod = serde_json::from_value(json!({
            "metadata": {"name": format!("p{i}"), "namespace": "ns", "labels": {"app": "web"}},
            "status": {"podIPs": [{"ip": format!("10.1.{}.{}", i / 250, i % 250)}]},
        }))
        .unwrap();
        s.cache
            .apply_pod(crate::controller::store::CachedPod::from_pod(&pod));
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flipper = {
        let (s, stop) = (s.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                s.cache
                    .apply_endpoints(endpoints(&n.to_string(), &format!("10.0.{}.1", n % 200)));
            }
        })
    };
    for _ in 0..500 {
        let Prepared::Call { request, stored } = s.prepare("ns/s").unwrap() else {
            panic!("a selecting Service calls the guest");
        };
        let current = request.current.expect("current endpoints");
        let stored = stored.expect("stored endpoints");
        assert_eq!(
            Some(current.resource_version.as_str()),
            stored.metadata.resource_version.as_deref()
        );
        assert_eq!(current, crate::reconcile::view::endpoints(&stored));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    flipper.join().unwrap();
}

fn target(uid: &str) -> crate::reconcile::admit::Target<'_> {
    crate::reconcile::admit::Target {
        namespace: "ns",
        name: "s",
        uid,
    }
}

/// D15 (finding F4 of docs/design/conformance-findings.md): a Service asking for topology-aware hints with a ready
/// endpoint on a Node without a zone. Each sync copies its hintless slice into the updates
/// (R5.12) and then removes every hint (R5.13), so the guest, like upstream, decides an update
/// that changes nothing; the host leaves it out.
#[tokio::test]
async fn d15_an_update_that_changes_nothing_is_not_written() {
    let s = syncer();
    let mut svc = ipv4_service();
    svc.metadata.annotations = Some(
        [(
            "service.kubernetes.io/topology-mode".to_string(),
            "Auto".to_string(),
        )]
        .into(),
    );
    s.cache.apply_service(&svc);
    // Two zones, enough endpoints for both, and one ready endpoint on the zoneless node-0.
    for i in 0..7 {
        let (name, node, ip) = (
            format!("p{i}"),
            format!("node-{}", i % 3),
            format!("10.1.0.{}", i + 1),
        );
        apply_ready_pod(&s, &name, &node, &ip);
    }
    let node = |zone: Option<&str>| crate::controller::store::slices::NodeView {
        zone: zone.map(str::to_string),
        ready: zone.is_some(),
        cpu_millis: 1000,
        control_plane: false,
    };
    // A Node without a zone that is not ready does not count for the allocations (R5.10).
    s.cache.nodes.apply("node-0", node(None));
    s.cache.nodes.apply("node-1", node(Some("zone-a")));
    s.cache.nodes.apply("node-2", node(Some("zone-b")));
    // Store what each write would leave, as the API server would, until a sync writes nothing.
    let mut plan = slice_plan(&s).await;
    assert_eq!((plan.create.len(), plan.update.len()), (1, 0));
    let mut stored = plan.create.remove(0);
    stored.metadata.name = Some("s-abcde".into());
    stored.metadata.uid = Some("slice-uid".into());
    for version in 1.. {
        stored.metadata.resource_version = Some(version.to_string());
        s.cache.slices.apply(stored.clone());
        let mut plan = slice_plan(&s).await;
        if plan.is_empty() {
            break;
        }
        assert!(
            version < 3,
            "a sync still writes after {version} writes: {plan:?}"
        );
        stored = plan.update.remove(0);
    }
    // The guest still decides upstream's update (R4.22 writes every one); nothing is written.
    let Prepared::Call { request, .. } = s.prepare("ns/s").unwrap() else {
        panic!("a selecting Service calls the guest");
    };
    let slices = s.cache.slices.for_service("ns/s");
    let request = s.reader().request(*request, &slices, true);
    let decision = s.guest.current().call(&request).await.unwrap();
    assert_eq!(decision.slices.update.len(), 1, "upstream's no-op update");
    let writes = slice_writes(&s);
    s.sync("ns/s").await.unwrap();
    assert_eq!(slice_writes(&s), writes, "nothing written");
}
