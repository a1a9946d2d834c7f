//! What weir-apiserver refuses as kube-apiserver does, through kube-rs over real HTTP:
//! resourceVersions it cannot serve (410 Gone, or 504 for one ahead of it) and objects with
//! invalid labels, oversized EndpointSlices or malformed pod IPs (422 Invalid).

use std::time::{Duration, Instant};

use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::core::Status;
use serde_json::json;
use weir_apiserver::{ApiServer, Config, RunningApiServer};

const DEADLINE: Duration = Duration::from_secs(20);

async fn start(config: Config) -> (RunningApiServer, kube::Client) {
    let server = ApiServer::start(config).await.expect("server starts");
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml()).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    // Every answer is the server's own, not one a retry hid.
    config.default_retry = false;
    (server, kube::Client::try_from(config).unwrap())
}

fn pod(name: &str, labels: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}
    }))
    .unwrap()
}

fn seed_pod(name: &str) -> serde_json::Value {
    serde_json::to_value(pod(name, json!({"app": "web"}))).unwrap()
}

fn api_error<T: std::fmt::Debug>(result: kube::Result<T>) -> Box<Status> {
    match result {
        Err(kube::Error::Api(status)) => status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// The first watch event from `rv` on, as JSON.
async fn first_event(client: &kube::Client, query: &str) -> serde_json::Value {
    let request = http::Request::get(format!("/api/v1/namespaces/default/pods?watch=1&{query}"))
        .body(Vec::new())
        .unwrap();
    let stream = client.request_stream(request).await.unwrap();
    let mut lines = Box::pin(stream.lines());
    let line = tokio::time::timeout(DEADLINE, lines.next())
        .await
        .expect("a watch event within the deadline")
        .expect("the stream stays open")
        .unwrap();
    serde_json::from_str(&line).unwrap()
}

#[tokio::test]
async fn a_watch_or_exact_list_from_before_the_start_is_gone_not_replayed() {
    let (server, client) = start(Config {
        seed: vec![seed_pod("seeded")],
        initial_resource_version: 100,
        ..Default::default()
    })
    .await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let started = server.store().resource_version();
    assert!(started > 100, "the seed continues after 100: {started}");
    // The seed is the initial state, not history: from before the start, 410.
    for from in [50, 101, started - 1] {
        let ev = first_event(&client, &format!("resourceVersion={from}")).await;
        assert_eq!(ev["type"], "ERROR", "from {from}: {ev}");
        assert_eq!(ev["object"]["code"], 410, "{ev}");
        assert_eq!(ev["object"]["reason"], "Expired", "{ev}");
    }
    let exact = |rv: u64| {
        ListParams::default()
            .at(&rv.to_string())
            .matching(kube::api::VersionMatch::Exact)
    };
    let gone = api_error(pods.list(&exact(50)).await);
    assert_eq!((gone.code, gone.reason.as_str()), (410, "Expired"));
    // At the current resourceVersion the current state is that snapshot.
    let listed = pods.list(&exact(started)).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    // Once pods changed, the server holds no snapshot of that older state.
    pods.create(&PostParams::default(), &pod("later", json!({})))
        .await
        .unwrap();
    let gone = api_error(pods.list(&exact(started)).await);
    assert_eq!(gone.code, 410, "{gone:?}");
    // From the start on, the watch delivers what came after.
    let ev = first_event(&client, &format!("resourceVersion={started}")).await;
    assert_eq!(ev["type"], "ADDED");
    assert_eq!(ev["object"]["metadata"]["name"], "later");
    server.shutdown().await;
}

#[tokio::test]
async fn a_resource_version_ahead_waits_then_gets_504_too_large() {
    let (server, client) = start(Config::default()).await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let current = server.store().resource_version();
    let ahead = current + 1_000;

    let asked = Instant::now();
    let too_large = api_error(
        pods.list(&ListParams::default().at(&ahead.to_string()))
            .await,
    );
    assert!(asked.elapsed() >= Duration::from_secs(3), "it waits first");
    assert_eq!(
        (too_large.code, too_large.reason.as_str()),
        (504, "Timeout")
    );
    assert_eq!(
        too_large.message,
        format!("Timeout: Too large resource version: {ahead}, current: {current}")
    );
    let details = too_large.details.expect("details");
    assert_eq!(details.retry_after_seconds, 1);
    assert_eq!(details.causes[0].reason, "ResourceVersionTooLarge");

    // The same for a watch-list, as its ERROR event.
    let ev = first_event(
        &client,
        &format!(
            "resourceVersion={ahead}&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&allowWatchBookmarks=true"
        ),
    )
    .await;
    assert_eq!(ev["type"], "ERROR");
    assert_eq!(ev["object"]["code"], 504, "{ev}");
    assert_eq!(
        ev["object"]["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );

    // A list that the server catches up with within the wait is served.
    let soon = server.store().resource_version() + 1;
    let list = tokio::spawn({
        let pods = pods.clone();
        async move {
            pods.list(&ListParams::default().at(&soon.to_string()))
                .await
        }
    });
    pods.create(&PostParams::default(), &pod("p1", json!({})))
        .await
        .unwrap();
    let listed = list
        .await
        .unwrap()
        .expect("served once the server got there");
    assert_eq!(listed.items.len(), 1);

    // A plain watch from ahead starts and delivers only what comes after that version.
    let now = server.store().resource_version();
    let stream = pods
        .watch(&WatchParams::default(), &(now + 1).to_string())
        .await
        .unwrap();
    let mut stream = Box::pin(stream);
    pods.create(&PostParams::default(), &pod("p2", json!({})))
        .await
        .unwrap();
    pods.create(&PostParams::default(), &pod("p3", json!({})))
        .await
        .unwrap();
    let event = tokio::time::timeout(DEADLINE, stream.try_next())
        .await
        .unwrap()
        .unwrap()
        .expect("an event");
    match event {
        WatchEvent::Added(p) => assert_eq!(p.metadata.name.as_deref(), Some("p3")),
        other => panic!("expected p3 added, got {other:?}"),
    }
    server.shutdown().await;
}

/// The causes of a 422, as (field, message).
fn causes(status: &Status) -> Vec<(String, String)> {
    assert_eq!(
        (status.code, status.reason.as_str()),
        (422, "Invalid"),
        "{status:?}"
    );
    status
        .details
        .iter()
        .flat_map(|d| &d.causes)
        .map(|c| (c.field.clone(), c.message.clone()))
        .collect()
}

#[tokio::test]
async fn labels_slices_and_pod_ips_are_validated_as_kube_apiserver_does() {
    let (server, client) = start(Config::default()).await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let pp = PostParams::default();

    let bad_key = api_error(pods.create(&pp, &pod("k", json!({"bad key!": "v"}))).await);
    let c = causes(&bad_key);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].0, "metadata.labels");
    assert!(
        c[0].1
            .starts_with("Invalid value: \"bad key!\": name part must consist of"),
        "{c:?}"
    );
    let long_value = "v".repeat(64);
    let c = causes(&api_error(
        pods.create(&pp, &pod("v", json!({"app": long_value})))
            .await,
    ));
    assert_eq!(
        c,
        [(
            "metadata.labels".to_string(),
            format!("Invalid value: \"{long_value}\": must be no more than 63 characters")
        )]
    );
    let c = causes(&api_error(
        pods.create(&pp, &pod("n", json!({format!("{}", "k".repeat(64)): "v"})))
            .await,
    ));
    assert!(
        c[0].1
            .contains("name part must be no more than 63 characters"),
        "{c:?}"
    );
    // What is allowed still is.
    pods.create(
        &pp,
        &pod(
            "ok",
            json!({"app.kubernetes.io/name": "web", "tier": "", "x": "v".repeat(63)}),
        ),
    )
    .await
    .expect("valid labels");
    // Labels are checked on updates too.
    let relabel = Patch::Merge(json!({"metadata": {"labels": {"-x": "v"}}}));
    let c = causes(&api_error(
        pods.patch("ok", &PatchParams::default(), &relabel).await,
    ));
    assert_eq!(c[0].0, "metadata.labels");

    // A pod IP that is not an IP, through the status subresource.
    let status = Patch::Merge(
        json!({"status": {"podIP": "10.0.0.12345", "podIPs": [{"ip": "10.0.0.12345"}]}}),
    );
    let c = causes(&api_error(
        pods.patch_status("ok", &PatchParams::default(), &status)
            .await,
    ));
    assert_eq!(
        c,
        [(
            "status.podIPs[0].ip".to_string(),
            "Invalid value: \"10.0.0.12345\": must be a valid IP address".to_string()
        )]
    );
    let status =
        Patch::Merge(json!({"status": {"podIP": "10.0.0.12", "podIPs": [{"ip": "10.0.0.12"}]}}));
    pods.patch_status("ok", &PatchParams::default(), &status)
        .await
        .expect("a valid pod IP");

    // An EndpointSlice of 1001 endpoints; 1000 are fine.
    let slices: Api<EndpointSlice> = Api::default_namespaced(client.clone());
    let slice = |name: &str, n: usize| -> EndpointSlice {
        let endpoints: Vec<_> = (0..n)
            .map(|i| json!({"addresses": [format!("10.1.{}.{}", i / 250, i % 250 + 1)]}))
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name},
            "addressType": "IPv4", "endpoints": endpoints
        }))
        .unwrap()
    };
    let c = causes(&api_error(slices.create(&pp, &slice("big", 1001)).await));
    assert_eq!(
        c,
        [(
            "endpoints".to_string(),
            "Too many: 1001: must have at most 1000 items".to_string()
        )]
    );
    slices
        .create(&pp, &slice("full", 1000))
        .await
        .expect("1000 endpoints");
    assert!(
        server
            .store()
            .get("endpointslices", "default", "big")
            .is_none()
    );
    server.shutdown().await;
}
