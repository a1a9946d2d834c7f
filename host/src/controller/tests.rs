//! The controller's event mapping together with the queue: which Service keys slice, pod and
//! Node events queue, after which delay, and how the queue batches them (scenarios S63, S76,
//! S93, S97 and S98 of `docs/upstream-endpointslices.md`). The queue runs on Tokio's paused
//! clock, so the delays are exact and nothing sleeps for real.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::json;
use tokio::time::Instant;

use crate::controller::Cache;
use crate::controller::ledger::slices::SliceTracker;
use crate::controller::reflect::triggers::tests::{pod, service};
use crate::controller::reflect::triggers::{node_enqueues, pod_enqueues, slice_enqueues};
use crate::controller::store::slices::NodeView;
use crate::model::labels::{LABEL_MANAGED_BY, LABEL_SERVICE_NAME, MANAGED_BY};
use crate::queue::WorkQueue;

fn slice(generation: i64, labels: serde_json::Value) -> EndpointSlice {
    let mut all = json!({LABEL_SERVICE_NAME: "foo", LABEL_MANAGED_BY: MANAGED_BY});
    for (k, v) in labels.as_object().unwrap() {
        all[k] = v.clone();
    }
    serde_json::from_value(json!({
        "metadata": {"name": "foo-abc", "namespace": "ns", "uid": "u-abc",
                     "generation": generation, "labels": all},
        "addressType": "IPv4", "endpoints": []
    }))
    .unwrap()
}

/// Queues `enqueues` and checks that the key becomes ready exactly `delay` later: the paused
/// clock jumps to the queue's next timer, so the time `get` waits is the delay itself.
async fn assert_ready_after(enqueues: Vec<(String, Duration)>, delay: Duration) {
    let q = WorkQueue::<String>::default();
    assert_eq!(enqueues.len(), 1, "{enqueues:?}");
    let started = Instant::now();
    for (k, d) in enqueues {
        q.add_after(k, d);
    }
    let got = tokio::time::timeout(Duration::from_secs(3600), q.get())
        .await
        .expect("the key becomes ready");
    assert!(got.is_some(), "the queue is not shut down");
    let waited = started.elapsed();
    assert!(
        waited >= delay && waited <= delay + Duration::from_millis(1),
        "ready after {waited:?}, not at {delay:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn s76_slice_events_queue_their_service_after_at_least_a_second() {
    let t = SliceTracker::default();
    let ours = slice(1, json!({}));
    t.written("ns/foo", &ours);
    assert!(
        slice_enqueues(&t, Duration::ZERO, None, Some(&ours)).is_empty(),
        "our own write coming back"
    );
    let edited = slice(2, json!({}));
    // Someone else raised the generation: a sync after max(1 s, batch period) (R1.15e).
    for (batch, delay) in [(Duration::ZERO, 1000), (Duration::from_millis(300), 1000)] {
        let enqueues = slice_enqueues(&t, batch, Some(&ours), Some(&edited));
        assert_eq!(
            enqueues,
            [("ns/foo".to_string(), Duration::from_millis(delay))]
        );
    }
    let long = slice_enqueues(&t, Duration::from_secs(3), Some(&ours), Some(&edited));
    assert_eq!(long, [("ns/foo".to_string(), Duration::from_secs(3))]);
    assert_ready_after(
        slice_enqueues(&t, Duration::ZERO, Some(&ours), Some(&edited)),
        Duration::from_secs(1),
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn s63_a_label_a_user_adds_to_our_slice_queues_a_sync_after_a_second() {
    let t = SliceTracker::default();
    let ours = slice(4, json!({}));
    t.written("ns/foo", &ours);
    // The API server raises the generation on a label edit (R6.7), not on an annotation one.
    let labelled = slice(5, json!({"x": "y"}));
    let mut annotated = slice(4, json!({}));
    annotated.metadata.annotations = Some([("x".to_string(), "y".to_string())].into());
    assert!(slice_enqueues(&t, Duration::ZERO, Some(&ours), Some(&annotated)).is_empty());
    assert_ready_after(
        slice_enqueues(&t, Duration::ZERO, Some(&ours), Some(&labelled)),
        Duration::from_secs(1),
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn s93_pod_driven_keys_wait_for_the_batch_period() {
    let services = vec![
        service("a", Some(json!({"app": "a"}))),
        service("b", Some(json!({"app": "b"}))),
    ];
    let old = pod("1", json!({"app": "a"}), true, "");
    let new = pod("2", json!({"app": "b"}), true, "");
    let batch = Duration::from_millis(500);
    assert_eq!(
        pod_enqueues(&services, batch, Some(&old), Some(&new)),
        [("ns/a".to_string(), batch), ("ns/b".to_string(), batch)]
    );
}

fn cached_service(name: &str, annotations: serde_json::Value) -> core::Service {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "annotations": annotations},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}
    }))
    .unwrap()
}

#[test]
fn s97_a_node_zone_change_syncs_no_service_but_those_asking_for_auto_hints() {
    let cache = Cache::default();
    cache.apply_service(&cached_service("plain", json!({})));
    // trafficDistribution hints need no Node facts beyond each endpoint's zone (R5.9).
    let mut closest = cached_service("closest", json!({}));
    closest.spec.as_mut().unwrap().traffic_distribution = Some("PreferClose".into());
    cache.apply_service(&closest);
    let without = NodeView {
        zone: None,
        ready: true,
        cpu_millis: 1000,
        control_plane: false,
    };
    let with = NodeView {
        zone: Some("zone-a".into()),
        ..without.clone()
    };
    assert!(
        node_enqueues(&cache, Some(&without), Some(&with)).is_empty(),
        "the zone is picked up at the next sync (R1.16)"
    );
    // D10: a Service asking for topology-aware hints is re-synced.
    cache.apply_service(&cached_service(
        "auto",
        json!({"service.kubernetes.io/topology-mode": "Auto"}),
    ));
    assert_eq!(
        node_enqueues(&cache, Some(&without), Some(&with)),
        ["ns/auto"]
    );
    let more_cpu = NodeView {
        cpu_millis: 2000,
        ..with.clone()
    };
    assert!(
        node_enqueues(&cache, Some(&with), Some(&more_cpu)).is_empty(),
        "CPU alone is not a topology change"
    );
}

/// Runs one worker on a fresh queue while a pod of the Service `web` is added at each of
/// `at_ms` (ms from the start); returns how many syncs of `ns/web` ran.
async fn syncs_for_pod_adds(batch: Duration, at_ms: &[u64]) -> usize {
    let q = WorkQueue::<String>::default();
    let syncs = Arc::new(AtomicUsize::new(0));
    let worker = {
        let (q, syncs) = (q.clone(), syncs.clone());
        tokio::spawn(async move {
            while let Some(k) = q.get().await {
                assert_eq!(k, "ns/web");
                syncs.fetch_add(1, Ordering::SeqCst);
                q.done(&k);
            }
        })
    };
    let services = vec![service("web", Some(json!({"app": "web"})))];
    let start = Instant::now();
    for (i, ms) in at_ms.iter().enumerate() {
        tokio::time::sleep_until(start + Duration::from_millis(*ms)).await;
        let added = pod(&i.to_string(), json!({"app": "web"}), true, "");
        for (k, delay) in pod_enqueues(&services, batch, None, Some(&added)) {
            q.add_after(k, delay);
        }
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
    q.shut_down();
    worker.await.unwrap();
    syncs.load(Ordering::SeqCst)
}

#[tokio::test(start_paused = true)]
async fn s98_pod_adds_within_the_batch_period_make_one_sync() {
    let second = Duration::from_secs(1);
    assert_eq!(syncs_for_pod_adds(second, &[0, 100, 200]).await, 1);
    assert_eq!(
        syncs_for_pod_adds(Duration::ZERO, &[0, 100, 200]).await,
        3,
        "period 0: one sync per add"
    );
    assert_eq!(
        syncs_for_pod_adds(second, &[0, 100, 1100]).await,
        2,
        "adds spanning the period"
    );
}

/// A controller handle against a fresh weir-apiserver seeded with the Service `ns/foo`
/// selecting one ready pod on an existing Node, its caches filled by hand (no informers run,
/// so each watch event is delivered exactly when a test says).
async fn handle_with_one_service() -> (
    weir_apiserver::RunningApiServer,
    kube::Client,
    crate::controller::Handle,
    Arc<crate::controller::sync::Syncer>,
) {
    handle_with_one_service_through(|config| {
        crate::client::Clients::single(kube::Client::try_from(config).unwrap())
    })
    .await
}

/// [`handle_with_one_service`] with the controller's clients made by `clients` from the
/// server's client configuration.
async fn handle_with_one_service_through(
    clients: impl FnOnce(kube::Config) -> crate::client::Clients,
) -> (
    weir_apiserver::RunningApiServer,
    kube::Client,
    crate::controller::Handle,
    Arc<crate::controller::sync::Syncer>,
) {
    let seed = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}),
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
               "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "foo", "namespace": "ns"},
               "spec": {"selector": {"app": "foo"}, "clusterIP": "10.96.0.10", "ipFamilies": ["IPv4"],
                        "ports": [{"port": 80}]}}),
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "p1", "namespace": "ns", "labels": {"app": "foo"}},
               "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "app:1"}]},
               "status": {"phase": "Running", "podIP": "10.1.0.1", "podIPs": [{"ip": "10.1.0.1"}],
                          "conditions": [{"type": "Ready", "status": "True"}]}}),
    ];
    let server = weir_apiserver::ApiServer::start(weir_apiserver::Config {
        seed,
        ..Default::default()
    })
    .await
    .unwrap();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config.clone()).unwrap();
    let guest = crate::runtime::Runtime::new(crate::runtime::Limits::default())
        .unwrap()
        .default_guest()
        .unwrap();
    let controller = crate::controller::Controller::with_clients(
        clients(config),
        crate::runtime::ActiveGuest::new(guest),
        crate::controller::Config::default(),
    );
    let h = controller.handle();
    let syncer = controller.syncer();
    h.synced.store(true, Ordering::Release);
    let stored = |resource, name| server.store().get(resource, "ns", name).unwrap();
    let svc: core::Service = serde_json::from_value(stored("services", "foo")).unwrap();
    h.cache.apply_service(&svc);
    let p1: core::Pod = serde_json::from_value(stored("pods", "p1")).unwrap();
    h.cache
        .apply_pod(crate::controller::store::CachedPod::from_pod(&p1));
    h.cache.nodes.apply(
        "node-1",
        NodeView {
            zone: None,
            ready: true,
            cpu_millis: 0,
            control_plane: false,
        },
    );
    (server, client, h, syncer)
}

/// Under churn (batch period 0) every write of a Service's Endpoints came back through the
/// Endpoints watch and queued the Service again before the slices written in the same sync
/// were back: that sync failed as stale, and its retries drained the shared retry bucket, so
/// retries were scheduled tens of seconds out. weir's own Endpoints write coming back queues
/// nothing; someone else's edit still does (D3).
#[tokio::test]
async fn our_own_endpoints_write_coming_back_queues_nothing_but_an_edit_does() {
    let (server, _client, h, syncer) = handle_with_one_service().await;
    let outcome = syncer.sync("ns/foo").await.unwrap();
    assert_eq!(
        outcome,
        crate::controller::sync::SyncOutcome::Written("create")
    );
    let mut written: core::Endpoints =
        serde_json::from_value(server.store().get("endpoints", "ns", "foo").unwrap()).unwrap();
    let mut on_endpoints =
        crate::controller::reflect::reflect(crate::controller::reflect::EndpointsObjects {
            handle: h.clone(),
            ledger: syncer.ledger.clone(),
        });
    on_endpoints(crate::controller::watch::Change::Apply(written.clone()));
    assert_eq!(h.queue.len(), 0, "weir's own write coming back");
    // A hand edit: another resourceVersion.
    written.metadata.resource_version = Some("999999".into());
    on_endpoints(crate::controller::watch::Change::Apply(written));
    assert_eq!(
        h.queue.len(),
        1,
        "an edit by someone else is restored at once"
    );
    server.shutdown().await;
}

/// A sync that finds the slice cache behind weir's own write fails as stale (R1.26); the
/// watch event that brings the write into the cache queues the Service at once, not after the
/// retry backoff (which under churn had grown to tens of seconds).
#[tokio::test]
async fn a_stale_slice_sync_is_queued_again_as_soon_as_the_cache_catches_up() {
    let (server, client, h, syncer) = handle_with_one_service().await;
    syncer.sync("ns/foo").await.unwrap();
    // The Endpoints watch has delivered weir's write; the slice watch has not.
    let endpoints = server.store().get("endpoints", "ns", "foo").unwrap();
    h.cache
        .apply_endpoints(serde_json::from_value(endpoints).unwrap());
    let created = kube::Api::<EndpointSlice>::namespaced(client, "ns")
        .list(&Default::default())
        .await
        .unwrap()
        .items;
    assert_eq!(created.len(), 1, "one slice created");
    // The slice watch has not delivered weir's create yet: the next sync is stale.
    let error = syncer.sync("ns/foo").await.unwrap_err();
    assert!(
        matches!(&error, crate::controller::sync::SyncError::StaleSlices(k) if k == "ns/foo"),
        "{error}"
    );
    let mut on_slices = crate::controller::reflect::reflect(crate::controller::reflect::Slices {
        handle: h.clone(),
        ledger: syncer.ledger.clone(),
        batch: Duration::ZERO,
    });
    // Someone else's slice of another Service catches nothing up.
    let mut other = slice(1, json!({LABEL_SERVICE_NAME: "bar"}));
    other.metadata.uid = Some("u-other".into());
    on_slices(crate::controller::watch::Change::Apply(other));
    assert_eq!(h.queue.len(), 0);
    // The create arrives: the Service is ready to sync again at once.
    on_slices(crate::controller::watch::Change::Apply(created[0].clone()));
    assert_eq!(h.queue.len(), 1, "queued without waiting for the backoff");
    assert_eq!(
        syncer.sync("ns/foo").await.unwrap(),
        crate::controller::sync::SyncOutcome::Unchanged
    );
    server.shutdown().await;
}

/// While an informer still owes its list after an API server reset, /readyz says why and no
/// sync writes; once every informer has listed, both go back to normal.
#[tokio::test]
async fn readyz_fails_and_nothing_is_written_while_waiting_for_a_consistent_view() {
    let (server, _client, h, syncer) = handle_with_one_service().await;
    assert_eq!(h.readiness(), Ok(()));
    h.consistency.register("services");
    h.consistency.register("pods");
    let epoch = h.consistency.epoch();
    h.consistency.listed("services", epoch);
    let why = h.readiness().unwrap_err();
    assert!(
        why.contains("consistent view") && why.contains("pods"),
        "{why}"
    );
    let refused = syncer.sync("ns/foo").await;
    assert!(
        matches!(
            refused,
            Err(crate::controller::sync::SyncError::Inconsistent(_))
        ),
        "{refused:?}"
    );
    assert!(server.store().get("endpoints", "ns", "foo").is_none());
    h.consistency.listed("pods", epoch);
    assert_eq!(h.readiness(), Ok(()));
    assert_eq!(
        syncer.sync("ns/foo").await.unwrap(),
        crate::controller::sync::SyncOutcome::Written("create")
    );
    server.shutdown().await;
}

/// Each output writes through a bucket of its own, as kube-controller-manager's controllers
/// each have a client: with a budget of one request a bucket (and the next token 1,000 s
/// away), a sync that creates a Service's Endpoints and its EndpointSlice completes. With one
/// bucket for both (`--kube-api-limit-scope shared`), the Endpoints create takes the only
/// token and the slice create waits for the next.
#[tokio::test]
async fn each_output_writes_through_a_bucket_of_its_own() {
    use crate::client::{ApiRate, Clients, LimitScope};
    let rate = ApiRate {
        qps: 0.001,
        burst: 1,
    };
    for scope in [LimitScope::PerOutput, LimitScope::Shared] {
        let (server, _client, _h, syncer) = handle_with_one_service_through(|config| {
            Clients::rate_limited(config, rate, scope).unwrap()
        })
        .await;
        let sync = syncer.sync("ns/foo");
        match scope {
            LimitScope::PerOutput => {
                // The timeout guards against a hang only: two requests, one in each bucket.
                let outcome = tokio::time::timeout(Duration::from_secs(30), sync)
                    .await
                    .expect("no output waits for a token")
                    .unwrap();
                assert_eq!(
                    outcome,
                    crate::controller::sync::SyncOutcome::Written("create")
                );
                assert_eq!(server.store().count("endpoints"), 1);
                assert_eq!(server.store().count("endpointslices"), 1);
            }
            LimitScope::Shared => {
                // The token the slice create waits for comes after 1,000 s, so the sync is
                // still waiting when it is cut short, however slow the machine.
                let waited = tokio::time::timeout(Duration::from_millis(500), sync).await;
                assert!(waited.is_err(), "one bucket: the slice create waits");
                assert_eq!(server.store().count("endpoints"), 1);
                assert_eq!(server.store().count("endpointslices"), 0);
            }
        }
        server.shutdown().await;
    }
}

/// finding F6 of docs/design/conformance-findings.md: kube-apiserver deletes a deleted Service's Endpoints itself,
/// and weir may see that before the Service's own deletion. The sync it queues still finds the
/// Service in the cache; it asks the server, finds the Service gone, and creates nothing. The
/// Endpoints of a Service that does exist, deleted by hand, are still created again (D3).
#[tokio::test]
async fn endpoints_deleted_with_their_service_are_not_created_again() {
    use crate::controller::sync::SyncOutcome;
    let (server, client, h, syncer) = handle_with_one_service().await;
    assert_eq!(
        syncer.sync("ns/foo").await.unwrap(),
        SyncOutcome::Written("create")
    );
    let stored = || -> core::Endpoints {
        serde_json::from_value(server.store().get("endpoints", "ns", "foo").unwrap()).unwrap()
    };
    let endpoints_api = kube::Api::<core::Endpoints>::namespaced(client.clone(), "ns");
    let slices_api = kube::Api::<EndpointSlice>::namespaced(client.clone(), "ns");
    // The slice watch delivers what the syncs wrote, so the next sync is not stale.
    let deliver_slices = || async {
        for slice in slices_api.list(&Default::default()).await.unwrap().items {
            h.cache.slices.apply(slice);
        }
    };
    deliver_slices().await;
    let mut on_endpoints =
        crate::controller::reflect::reflect(crate::controller::reflect::EndpointsObjects {
            handle: h.clone(),
            ledger: syncer.ledger.clone(),
        });
    let written = stored();
    on_endpoints(crate::controller::watch::Change::Apply(written.clone()));

    // A hand deletion while the Service exists: restored.
    endpoints_api
        .delete("foo", &Default::default())
        .await
        .unwrap();
    on_endpoints(crate::controller::watch::Change::Delete(written));
    assert_eq!(
        syncer.sync("ns/foo").await.unwrap(),
        SyncOutcome::Written("create"),
        "a live Service's Endpoints deleted by hand"
    );
    deliver_slices().await;
    let restored = stored();
    on_endpoints(crate::controller::watch::Change::Apply(restored.clone()));

    // The Service is deleted, and its Endpoints with it, as kube-apiserver's Service registry
    // does; the Endpoints event arrives first.
    kube::Api::<core::Service>::namespaced(client, "ns")
        .delete("foo", &Default::default())
        .await
        .unwrap();
    endpoints_api
        .delete("foo", &Default::default())
        .await
        .unwrap();
    on_endpoints(crate::controller::watch::Change::Delete(restored));
    assert!(h.cache.service("ns", "foo").is_some(), "still cached");
    assert_eq!(syncer.sync("ns/foo").await.unwrap(), SyncOutcome::Unchanged);
    assert!(
        server.store().get("endpoints", "ns", "foo").is_none(),
        "not created again"
    );
    server.shutdown().await;
}

/// A managed Service's deletion, as its watch reports it, makes its Endpoints weir's to
/// delete; the sync deletes them and settles the debt, so a later sync of the key writes
/// nothing. The same Service seen again owes nothing.
#[tokio::test]
async fn a_deleted_services_endpoints_are_deleted_once_through_the_reflector() {
    use crate::controller::sync::SyncOutcome;
    let (server, client, h, syncer) = handle_with_one_service().await;
    assert_eq!(
        syncer.sync("ns/foo").await.unwrap(),
        SyncOutcome::Written("create")
    );
    let svc: core::Service =
        serde_json::from_value(server.store().get("services", "ns", "foo").unwrap()).unwrap();
    let mut on_services =
        crate::controller::reflect::reflect(crate::controller::reflect::Services {
            handle: h.clone(),
            ledger: syncer.ledger.clone(),
        });
    // Seen again, it owes nothing.
    on_services(crate::controller::watch::Change::Apply(svc.clone()));
    assert!(!syncer.ledger.deletes.is_owed("ns/foo"));
    kube::Api::<core::Service>::namespaced(client, "ns")
        .delete("foo", &Default::default())
        .await
        .unwrap();
    on_services(crate::controller::watch::Change::Delete(svc));
    assert!(syncer.ledger.deletes.is_owed("ns/foo"));
    let cached_before = h.cache.endpoints("ns/foo").is_some();
    assert_eq!(
        syncer.sync("ns/foo").await.unwrap(),
        SyncOutcome::Written("delete")
    );
    assert!(server.store().get("endpoints", "ns", "foo").is_none());
    assert!(!syncer.ledger.deletes.is_owed("ns/foo"), "settled");
    // The write stage left the caches as the watches last reported them.
    assert_eq!(h.cache.endpoints("ns/foo").is_some(), cached_before);
    assert_eq!(syncer.sync("ns/foo").await.unwrap(), SyncOutcome::Unchanged);
    server.shutdown().await;
}

/// A sync of the one Service whose two creates reach the API server and then wait, their
/// responses held back until `release`: the moment at which the watch events of both writes
/// have often come and the responses not (`ledger::held`). Returns the stored Endpoints and
/// slice as the watches deliver them, the running sync, and the release.
async fn a_sync_whose_responses_wait() -> (
    weir_apiserver::RunningApiServer,
    crate::controller::Handle,
    Arc<crate::controller::sync::Syncer>,
    (core::Endpoints, EndpointSlice),
    tokio::task::JoinHandle<
        Result<crate::controller::sync::SyncOutcome, crate::controller::sync::SyncError>,
    >,
    Arc<tokio::sync::Semaphore>,
) {
    let (arrived, mut posts) = tokio::sync::mpsc::unbounded_channel();
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let gate = release.clone();
    let (server, client, h, syncer) = handle_with_one_service_through(move |config| {
        let base = kube::Client::try_from(config).unwrap();
        let held = tower::service_fn(move |request: axum::http::Request<kube::client::Body>| {
            let (base, arrived, gate) = (base.clone(), arrived.clone(), gate.clone());
            async move {
                let create = request.method() == axum::http::Method::POST;
                let response = base.send(request).await?;
                if create {
                    let _ = arrived.send(());
                    gate.acquire().await.expect("open").forget();
                }
                Ok::<_, kube::Error>(response)
            }
        });
        crate::client::Clients::single(kube::Client::new(held, "default"))
    })
    .await;
    let sync = tokio::spawn({
        let syncer = syncer.clone();
        async move { syncer.sync("ns/foo").await }
    });
    for _ in 0..2 {
        // The timeout guards against a hang only.
        tokio::time::timeout(Duration::from_secs(30), posts.recv())
            .await
            .expect("both creates reach the API server")
            .unwrap();
    }
    let endpoints =
        serde_json::from_value(server.store().get("endpoints", "ns", "foo").unwrap()).unwrap();
    let mut slices = kube::Api::<EndpointSlice>::namespaced(client, "ns")
        .list(&Default::default())
        .await
        .unwrap()
        .items;
    assert_eq!(slices.len(), 1, "one slice created");
    let slice = slices.remove(0);
    (server, h, syncer, (endpoints, slice), sync, release)
}

/// The watch events of weir's own writes that come before the writes' responses are held, not
/// taken for someone else's changes: neither queues the Service again, before or after the
/// responses. Without holding them, a sync of 1,000 Services loaded at once synced most of
/// them twice.
#[tokio::test]
async fn weirs_own_writes_seen_before_their_responses_queue_nothing() {
    let (server, h, syncer, (endpoints, slice), sync, release) =
        a_sync_whose_responses_wait().await;
    let mut on_endpoints =
        crate::controller::reflect::reflect(crate::controller::reflect::EndpointsObjects {
            handle: h.clone(),
            ledger: syncer.ledger.clone(),
        });
    let mut on_slices = crate::controller::reflect::reflect(crate::controller::reflect::Slices {
        handle: h.clone(),
        ledger: syncer.ledger.clone(),
        batch: Duration::ZERO,
    });
    on_endpoints(crate::controller::watch::Change::Apply(endpoints));
    on_slices(crate::controller::watch::Change::Apply(slice));
    let stats = h.queue.stats();
    assert_eq!((stats.depth, stats.delayed), (0, 0), "held, not queued");
    release.add_permits(2);
    let outcome = sync.await.unwrap().unwrap();
    assert_eq!(
        outcome,
        crate::controller::sync::SyncOutcome::Written("create")
    );
    assert_eq!(
        syncer.ledger.take_requeue("ns/foo"),
        None,
        "both were weir's own"
    );
    server.shutdown().await;
}

/// A change by someone else seen while weir's writes wait for their responses is held too, and
/// once the writes end it queues the Service as it would have on arrival: at once for
/// Endpoints, after the slice delay for a slice.
#[tokio::test]
async fn a_change_by_someone_else_held_during_the_writes_queues_the_service_after_them() {
    use crate::controller::ledger::Requeue;
    for (edited, requeue) in [
        ("endpoints", Requeue::Now),
        ("slice", Requeue::AfterSliceDelay),
    ] {
        let (server, h, syncer, (mut endpoints, mut slice), sync, release) =
            a_sync_whose_responses_wait().await;
        if edited == "endpoints" {
            endpoints.metadata.resource_version = Some("999999".into());
            let mut on_endpoints =
                crate::controller::reflect::reflect(crate::controller::reflect::EndpointsObjects {
                    handle: h.clone(),
                    ledger: syncer.ledger.clone(),
                });
            on_endpoints(crate::controller::watch::Change::Apply(endpoints));
        } else {
            slice.metadata.generation = Some(slice.metadata.generation.unwrap_or(1) + 1);
            let mut on_slices =
                crate::controller::reflect::reflect(crate::controller::reflect::Slices {
                    handle: h.clone(),
                    ledger: syncer.ledger.clone(),
                    batch: Duration::ZERO,
                });
            on_slices(crate::controller::watch::Change::Apply(slice));
        }
        let stats = h.queue.stats();
        assert_eq!((stats.depth, stats.delayed), (0, 0), "{edited}: held");
        release.add_permits(2);
        sync.await.unwrap().unwrap();
        // What the worker does after each sync: the key goes back to the queue.
        let delay = Duration::from_secs(1);
        crate::controller::workers::requeue_held(&h, &syncer.ledger, "ns/foo", delay);
        let stats = h.queue.stats();
        let expected = match requeue {
            Requeue::Now => (1, 0),
            Requeue::AfterSliceDelay => (0, 1),
        };
        assert_eq!(
            (stats.depth, stats.delayed),
            expected,
            "{edited}: someone else's change queues the key again"
        );
        assert_eq!(syncer.ledger.take_requeue("ns/foo"), None, "answered once");
        server.shutdown().await;
    }
}
