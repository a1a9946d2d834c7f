//! End-to-end tests: the real controller against the embedded API server over HTTP. Each test
//! waits for a condition with a deadline.

mod cel;
mod cluster;
mod ha;
mod lang_swap;
mod operator;
mod orphans;
mod process;
mod real;
mod reset;
mod secure;
mod slices;
mod staleness;
#[path = "../support/mod.rs"]
mod support;
mod swap;

use std::time::Duration;

use cluster::*;
use k8s_openapi::api::core::v1 as core;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use weir::cases::Case;
use weir::controller::Config;
use weir::reconcile::validate::Action;

fn http_port() -> serde_json::Value {
    json!([{"name": "http", "port": 80, "targetPort": 8080}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_becoming_ready_and_not_ready() {
    let c = Cluster::start(vec![
        namespace("app"),
        service("app", "web", json!({"app": "web"}), http_port()),
        pod("app", "a", json!({"app": "web"}), "10.1.0.1", true),
        pod("app", "b", json!({"app": "web"}), "10.1.0.2", false),
    ])
    .await;
    let run = c.run_default().await;
    c.wait_ips("app", "web", &["10.1.0.1"], &["10.1.0.2"]).await;
    c.apply(pod("app", "b", json!({"app": "web"}), "10.1.0.2", true))
        .await;
    c.wait_ips("app", "web", &["10.1.0.1", "10.1.0.2"], &[])
        .await;
    c.apply(pod("app", "a", json!({"app": "web"}), "10.1.0.1", false))
        .await;
    c.wait_ips("app", "web", &["10.1.0.2"], &["10.1.0.1"]).await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relabelled_pod_leaves_one_service_and_joins_another() {
    let c = Cluster::start(vec![
        namespace("app"),
        service("app", "blue", json!({"color": "blue"}), http_port()),
        service("app", "green", json!({"color": "green"}), http_port()),
        pod("app", "a", json!({"color": "blue"}), "10.1.0.1", true),
        pod("app", "b", json!({"color": "green"}), "10.1.0.2", true),
    ])
    .await;
    let run = c.run_default().await;
    c.wait_ips("app", "blue", &["10.1.0.1"], &[]).await;
    c.wait_ips("app", "green", &["10.1.0.2"], &[]).await;
    c.apply(pod("app", "a", json!({"color": "green"}), "10.1.0.1", true))
        .await;
    c.wait_ips("app", "blue", &[], &[]).await;
    c.wait_ips("app", "green", &["10.1.0.1", "10.1.0.2"], &[])
        .await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_target_port_publish_not_ready_and_headless() {
    let mut publish = service(
        "app",
        "all",
        json!({"app": "web"}),
        json!([{"name": "web", "port": 80, "targetPort": "http"}]),
    );
    publish["spec"]["publishNotReadyAddresses"] = json!(true);
    let mut headless = service("app", "peers", json!({"app": "web"}), json!([]));
    headless["spec"]["clusterIP"] = json!("None");
    let c = Cluster::start(vec![
        namespace("app"),
        publish,
        headless,
        service(
            "app",
            "named",
            json!({"app": "web"}),
            json!([{"name": "web", "port": 80, "targetPort": "http"}]),
        ),
        pod("app", "a", json!({"app": "web"}), "10.1.0.1", true),
        pod("app", "b", json!({"app": "web"}), "10.1.0.2", false),
    ])
    .await;
    let run = c.run_default().await;
    c.wait_ips("app", "named", &["10.1.0.1"], &["10.1.0.2"])
        .await;
    c.wait_ips("app", "all", &["10.1.0.1", "10.1.0.2"], &[])
        .await;
    c.wait_ips("app", "peers", &["10.1.0.1"], &["10.1.0.2"])
        .await;
    let named = c.endpoints("app", "named").await.unwrap();
    let ports: Vec<i32> = named
        .subsets
        .iter()
        .flatten()
        .flat_map(|s| s.ports.iter().flatten().map(|p| p.port))
        .collect();
    assert_eq!(
        ports,
        [8080],
        "the named port resolves to the container port"
    );
    let peers = c.endpoints("app", "peers").await.unwrap();
    assert!(
        peers
            .subsets
            .iter()
            .flatten()
            .all(|s| s.ports.as_ref().is_none_or(Vec::is_empty))
    );
    assert_eq!(
        peers
            .metadata
            .labels
            .unwrap()
            .get("service.kubernetes.io/headless")
            .map(String::as_str),
        Some("")
    );
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftover_endpoints_are_removed_at_start_except_leader_election() {
    let leftover = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "orphan", "namespace": "app"},
        "subsets": [{"addresses": [{"ip": "10.9.9.9"}], "ports": [{"port": 1}]}]});
    let leader = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "lock", "namespace": "app",
        "annotations": {"control-plane.alpha.kubernetes.io/leader": "{}"}}});
    let c = Cluster::start(vec![namespace("app"), leftover, leader]).await;
    let run = c.run_default().await;
    c.wait_gone("app", "orphan").await;
    run.idle().await;
    assert!(
        c.endpoints("app", "lock").await.is_some(),
        "leader-election Endpoints survive the sweep"
    );
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_edited_endpoints_are_restored() {
    let c = Cluster::start(web_app()).await;
    let run = c.run_default().await;
    c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;
    let api: Api<core::Endpoints> = Api::namespaced(c.client.clone(), "app");
    let edit = json!({"subsets": [{"addresses": [{"ip": "10.6.6.6"}], "ports": [{"port": 80}]}]});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .unwrap();
    c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn correct_endpoints_get_no_write() {
    let c = Cluster::start(vec![
        namespace("app"),
        service("app", "web", json!({"app": "web"}), http_port()),
        service(
            "app",
            "db",
            json!({"app": "db"}),
            json!([{"name": "sql", "port": 5432}]),
        ),
        pod("app", "a", json!({"app": "web"}), "10.1.0.1", true),
        pod("app", "d", json!({"app": "db"}), "10.1.0.9", true),
    ])
    .await;
    let first = c.run_default().await;
    c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;
    c.wait_ips("app", "db", &["10.1.0.9"], &[]).await;
    first.idle().await;
    first.stop().await;
    // A fresh controller (a restart, or a takeover) finds everything right: no write at all.
    let writes = c.endpoints_writes();
    let second = c.run_default().await;
    let handle = second.handle.clone();
    wait_for("both services synced", || {
        let h = handle.clone();
        async move { h.metrics.syncs_total() >= 2 }
    })
    .await;
    second.idle().await;
    assert_eq!(
        c.endpoints_writes(),
        writes,
        "a correct Endpoints object must not be rewritten"
    );
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn converges_through_api_faults_dropped_watches_and_410() {
    let mut objects = vec![namespace("app")];
    for i in 0..20 {
        objects.push(service(
            "app",
            &format!("svc-{i}"),
            json!({"group": format!("g{i}")}),
            http_port(),
        ));
        for j in 0..3 {
            objects.push(pod(
                "app",
                &format!("p-{i}-{j}"),
                json!({"group": format!("g{i}")}),
                &format!("10.2.{i}.{j}"),
                j != 2,
            ));
        }
    }
    let c = Cluster::start_with(weir_apiserver::Config {
        seed: objects,
        history: 50,
        ..Default::default()
    })
    .await;
    let faults = c.server().faults();
    // The controller's own requests fail 20% of the time (10% 500, 10% 429).
    faults.set_error_rate(0.1);
    faults.set_throttle_rate(0.1);
    let config = Config {
        rate_limiter: weir::queue::RateLimiterConfig {
            max_delay: Duration::from_secs(2),
            ..Default::default()
        },
        // Pod-driven syncs wait a little, so the churn below is written while faults are on.
        batch_period: Duration::from_secs(2),
        ..Config::default()
    };
    let run = c.run(default_guest().await, config);
    let expected = |i: usize, all_ready: bool| {
        let ips: Vec<String> = (0..3).map(|j| format!("10.2.{i}.{j}")).collect();
        if all_ready {
            (ips, Vec::new())
        } else {
            (ips[..2].to_vec(), ips[2..].to_vec())
        }
    };
    for i in 0..20 {
        let (ready, not_ready) = expected(i, false);
        let (ready, not_ready): (Vec<&str>, Vec<&str>) = (
            ready.iter().map(String::as_str).collect(),
            not_ready.iter().map(String::as_str).collect(),
        );
        c.wait_ips("app", &format!("svc-{i}"), &ready, &not_ready)
            .await;
    }
    // Churn: every Service needs an update (the test's own writes go in without faults)...
    faults.set_error_rate(0.0);
    faults.set_throttle_rate(0.0);
    for i in 0..20 {
        c.apply(pod(
            "app",
            &format!("p-{i}-2"),
            json!({"group": format!("g{i}")}),
            &format!("10.2.{i}.2"),
            true,
        ))
        .await;
    }
    // ...and the controller writes it through 20% failures, conflicts on its first updates,
    // dropped watches and 410 Gone on the next ones.
    faults.conflict_next_updates(3);
    faults.set_error_rate(0.1);
    faults.set_throttle_rate(0.1);
    faults.drop_watches();
    faults.expire_next_watches(2);
    for i in 0..20 {
        let (ready, _) = expected(i, true);
        let ready: Vec<&str> = ready.iter().map(String::as_str).collect();
        c.wait_ips("app", &format!("svc-{i}"), &ready, &[]).await;
    }
    faults.set_error_rate(0.0);
    faults.set_throttle_rate(0.0);
    run.idle().await;
    let metrics = &run.handle.metrics;
    assert_eq!(metrics.keys_dropped.get(), 0, "no key was given up");
    assert!(
        metrics.sync_errors() > 0,
        "faults were actually injected: syncs {} writes {} server {:?}",
        metrics.syncs_total(),
        metrics.writes_done(),
        c.server().stats()
    );
    run.stop().await;
}

/// The initial state arrives by watch-list by default; a server that refuses watch-list (a
/// kube-apiserver with the WatchList feature gate off answers 422) gets paged lists, and so
/// does `InitialList::Paged` with pages smaller than the cluster. Either way the caches fill,
/// Endpoints converge, and the watch after the list delivers changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initial_state_by_watch_list_by_pages_and_by_fallback() {
    use weir::controller::InitialList;
    let world = || {
        let mut objects = vec![namespace("app")];
        objects.push(service("app", "web", json!({"app": "web"}), http_port()));
        for j in 0..5 {
            objects.push(pod(
                "app",
                &format!("p-{j}"),
                json!({"app": "web"}),
                &format!("10.3.0.{j}"),
                j != 4,
            ));
        }
        objects
    };
    let ips = |n: usize| (0..n).map(|j| format!("10.3.0.{j}")).collect::<Vec<_>>();
    for (watch_list, initial_list) in [
        (true, InitialList::Streaming),
        (false, InitialList::Streaming),
        (true, InitialList::Paged { page_size: 2 }),
    ] {
        let c = Cluster::start_with(weir_apiserver::Config {
            seed: world(),
            watch_list,
            ..Default::default()
        })
        .await;
        let run = c.run(
            default_guest().await,
            Config {
                initial_list,
                ..Config::default()
            },
        );
        let all = ips(5);
        let ready: Vec<&str> = all[..4].iter().map(String::as_str).collect();
        c.wait_ips("app", "web", &ready, &[all[4].as_str()]).await;
        assert_eq!(
            run.handle.cache.pod_count(),
            5,
            "{initial_list:?}, watch-list served: {watch_list}"
        );
        c.apply(pod("app", "p-4", json!({"app": "web"}), "10.3.0.4", true))
            .await;
        let ready: Vec<&str> = all.iter().map(String::as_str).collect();
        c.wait_ips("app", "web", &ready, &[]).await;
        run.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_seed_converges_to_what_weir_reconcile_computes() {
    let seed = weir_apiserver::parse_seed(include_str!("../../../deploy/demo/seed.yaml")).unwrap();
    let c = Cluster::start(seed).await;
    let run = c.run_default().await;
    let services: Api<core::Service> = Api::all(c.client.clone());
    let list = services.list(&Default::default()).await.unwrap();
    let selected: Vec<_> = list
        .items
        .iter()
        .filter(|s| s.spec.as_ref().and_then(|s| s.selector.as_ref()).is_some())
        .collect();
    assert!(selected.len() >= 4, "the demo has Services with selectors");
    for svc in &selected {
        let (ns, name) = (
            svc.metadata.namespace.clone().unwrap(),
            svc.metadata.name.clone().unwrap(),
        );
        let c = &c;
        wait_for(&format!("{ns}/{name} endpoints"), || async {
            c.endpoints(&ns, &name).await.is_some()
        })
        .await;
    }
    run.idle().await;
    // Every Service's stored Endpoints is exactly what `weir reconcile` computes from the same
    // objects: reconciling the stored state decides nothing.
    let pods: Api<core::Pod> = Api::all(c.client.clone());
    let pods = pods.list(&Default::default()).await.unwrap().items;
    let guest = default_guest().await;
    for svc in &selected {
        let (ns, name) = (
            svc.metadata.namespace.clone().unwrap(),
            svc.metadata.name.clone().unwrap(),
        );
        let case = Case {
            name: None,
            key: format!("{ns}/{name}"),
            service: Some((*svc).clone()),
            pods: pods.clone(),
            endpoints: c.endpoints(&ns, &name).await,
            config: None,
            nodes: None,
            endpoint_slices: Vec::new(),
            max_endpoints_per_slice: 100,
            // The controller writes Endpoints only, so only they are compared.
            manage: Some(vec![weir::cases::ManagedOutput::Endpoints]),
            expect: None,
        };
        assert_eq!(
            case.run(&guest).await.unwrap().action,
            Action::None,
            "{ns}/{name} differs from weir reconcile"
        );
        let fresh = Case {
            endpoints: None,
            ..case
        };
        let Action::Create(want) = fresh.run(&guest).await.unwrap().action else {
            panic!("create expected")
        };
        let got = c.endpoints(&ns, &name).await.unwrap();
        assert_eq!(
            weir::reconcile::canonical::endpoints(&got, false),
            weir::reconcile::canonical::endpoints(&want, false),
            "{ns}/{name}"
        );
    }
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_updates_record_one_rate_limited_event() {
    // Stale Endpoints that need an update, and an API server that conflicts every update.
    let stale = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web", "namespace": "app"},
        "subsets": [{"addresses": [{"ip": "10.6.6.6"}], "ports": [{"port": 80}]}]});
    let c = Cluster::start(vec![
        namespace("app"),
        service("app", "web", json!({"app": "web"}), http_port()),
        pod("app", "a", json!({"app": "web"}), "10.1.0.1", true),
        stale,
    ])
    .await;
    c.server().faults().conflict_next_updates(1_000);
    let run = c.run_default().await;
    let h = run.handle.clone();
    wait_for("several failed syncs", || {
        let h = h.clone();
        async move { h.metrics.sync_errors() >= 3 }
    })
    .await;
    // events.k8s.io/v1, as kube's Recorder writes them.
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(c.client.clone(), "app");
    let failed: Vec<_> = events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("FailedToUpdateEndpoint"))
        .collect();
    assert_eq!(
        failed.len(),
        1,
        "one event per Service per minute, however often it fails"
    );
    let regarding = failed[0].regarding.as_ref().unwrap();
    assert_eq!(regarding.kind.as_deref(), Some("Service"));
    assert_eq!(regarding.name.as_deref(), Some("web"));
    assert_eq!(failed[0].type_.as_deref(), Some("Warning"));
    assert_eq!(
        failed[0].reporting_controller.as_deref(),
        Some("endpoint-controller")
    );
    c.server().faults().conflict_next_updates(0);
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_period_coalesces_pod_changes_into_one_write() {
    let c = Cluster::start(vec![
        namespace("app"),
        service("app", "web", json!({"app": "web"}), http_port()),
        pod("app", "a", json!({"app": "web"}), "10.1.0.1", true),
        pod("app", "b", json!({"app": "web"}), "10.1.0.2", true),
        pod("app", "d", json!({"app": "web"}), "10.1.0.3", true),
    ])
    .await;
    // Long enough that the three applies below land in one period even on a loaded 2-core
    // machine (3 s was not); the test waits for the write, so it costs this much time once.
    let config = Config {
        batch_period: Duration::from_secs(10),
        ..Config::default()
    };
    let run = c.run(default_guest().await, config);
    c.wait_ips("app", "web", &["10.1.0.1", "10.1.0.2", "10.1.0.3"], &[])
        .await;
    run.idle().await;
    let before = c.endpoints_writes();
    // Three changes well inside one batch period give one sync and one write.
    for name in ["a", "b", "d"] {
        let ip = match name {
            "a" => "10.1.0.1",
            "b" => "10.1.0.2",
            _ => "10.1.0.3",
        };
        c.apply(pod("app", name, json!({"app": "web"}), ip, false))
            .await;
    }
    c.wait_ips("app", "web", &[], &["10.1.0.1", "10.1.0.2", "10.1.0.3"])
        .await;
    run.idle().await;
    assert_eq!(
        c.endpoints_writes() - before,
        1,
        "three pod changes in one batch period, one write"
    );
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_selector_limits_what_weir_manages() {
    let mut managed = service("app", "mine", json!({"app": "web"}), http_port());
    managed["metadata"]["labels"]["owner"] = json!("weir");
    let foreign_endpoints = json!({"apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "theirs", "namespace": "app"},
        "subsets": [{"addresses": [{"ip": "10.7.7.7"}], "ports": [{"port": 80}]}]});
    let c = Cluster::start(vec![
        namespace("app"),
        managed,
        service("app", "theirs", json!({"app": "web"}), http_port()),
        foreign_endpoints,
        pod("app", "a", json!({"app": "web"}), "10.1.0.1", true),
    ])
    .await;
    let config = Config {
        service_selector: Some("owner=weir".parse().unwrap()),
        ..Config::default()
    };
    let run = c.run(default_guest().await, config);
    c.wait_ips("app", "mine", &["10.1.0.1"], &[]).await;
    run.idle().await;
    // The unselected Service's Endpoints belong to someone else: untouched, not deleted.
    let theirs = c.endpoints("app", "theirs").await.expect("not deleted");
    assert_eq!(ips(&theirs), (vec!["10.7.7.7".to_string()], vec![]));
    run.stop().await;
}

/// A deleted pod bound to a node stays, terminating, for its grace period (the API server
/// emulates the kubelet). Endpoints drop it at once, except for a Service with
/// publishNotReadyAddresses, which keeps listing it, as ready, until it is gone
/// (docs/upstream-behaviour.md §6.3 and §9.1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminating_pods_leave_endpoints_unless_publish_not_ready() {
    let mut objects = web_app();
    let mut publish = service("app", "all", json!({"app": "web"}), http_port());
    publish["spec"]["publishNotReadyAddresses"] = json!(true);
    objects.push(publish);
    objects.push(pod("app", "b", json!({"app": "web"}), "10.1.0.2", true));
    let c = Cluster::start(objects).await;
    let run = c.run_default().await;
    c.wait_ips("app", "web", &["10.1.0.1", "10.1.0.2"], &[])
        .await;
    c.wait_ips("app", "all", &["10.1.0.1", "10.1.0.2"], &[])
        .await;

    let pods: Api<core::Pod> = Api::namespaced(c.client.clone(), "app");
    let grace = kube::api::DeleteParams::default().grace_period(10);
    pods.delete("b", &grace).await.unwrap();
    c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;
    run.idle().await;
    // Its EndpointSlice keeps it, marked terminating and still serving (it was ready).
    let slices: Api<k8s_openapi::api::discovery::v1::EndpointSlice> =
        Api::namespaced(c.client.clone(), "app");
    let of_all = kube::api::ListParams::default().labels("kubernetes.io/service-name=all");
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let listed = slices.list(&of_all).await.unwrap();
        let b = listed
            .items
            .iter()
            .flat_map(|s| s.endpoints.iter().flatten())
            .find(|e| e.addresses.iter().any(|a| a == "10.1.0.2"))
            .and_then(|e| e.conditions.clone());
        if let Some(conditions) = &b
            && conditions.terminating == Some(true)
        {
            assert_eq!(conditions.serving, Some(true), "{conditions:?}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no terminating endpoint for pod b in the slices of app/all: {b:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let all = c.endpoints("app", "all").await.unwrap();
    let terminating = c.pod("app", "b").await;
    assert!(
        terminating.is_some_and(|p| p.metadata.deletion_timestamp.is_some()),
        "the pod must still be terminating when its addresses are checked"
    );
    assert_eq!(
        ips(&all),
        (vec!["10.1.0.1".into(), "10.1.0.2".into()], vec![])
    );

    // When the grace period ends the pod is removed and leaves the last Endpoints too.
    c.finish_graceful_deletion("app", "b").await;
    c.wait_ips("app", "all", &["10.1.0.1"], &[]).await;
    run.stop().await;
}
