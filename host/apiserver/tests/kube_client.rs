//! kube-rs against weir-apiserver over real HTTP, with the client built from the written
//! kubeconfig.

use std::path::PathBuf;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use weir_apiserver::{ApiServer, Config, RunningApiServer};

const DEADLINE: Duration = Duration::from_secs(20);

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!(
            "weir-apiserver-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn start(config: Config, tag: &str) -> (RunningApiServer, kube::Client, TempDir) {
    start_with(config, tag, true).await
}

async fn start_with(
    config: Config,
    tag: &str,
    retry: bool,
) -> (RunningApiServer, kube::Client, TempDir) {
    let server = ApiServer::start(config).await.expect("server starts");
    let dir = TempDir::new(tag);
    let path = dir.0.join("kubeconfig");
    server.write_kubeconfig(&path).expect("write kubeconfig");
    let kc = kube::config::Kubeconfig::read_from(&path).expect("read kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .expect("kubeconfig accepted");
    assert_eq!(cfg.default_namespace, "default");
    let mut cfg = cfg;
    cfg.default_retry = retry;
    let client = kube::Client::try_from(cfg).expect("client");
    (server, client, dir)
}

fn pod(name: &str, app: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"name": "http", "containerPort": 80}]}]}
    }))
    .expect("pod")
}

fn api_err(e: kube::Error) -> Box<kube::core::Status> {
    match e {
        kube::Error::Api(s) => s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Polls `f` until it returns `Some`, failing after `DEADLINE`.
async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let end = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < end,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn crud_conflicts_and_errors() {
    let (server, client, _dir) = start(Config::default(), "crud").await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let created = pods
        .create(&PostParams::default(), &pod("a", "web"))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert!(meta.uid.is_some() && meta.creation_timestamp.is_some());
    let rv1: u64 = meta.resource_version.as_deref().unwrap().parse().unwrap();
    assert_eq!(
        created.status.as_ref().unwrap().phase.as_deref(),
        Some("Pending")
    );
    let port = &created.spec.as_ref().unwrap().containers[0]
        .ports
        .as_ref()
        .unwrap()[0];
    assert_eq!(port.protocol.as_deref(), Some("TCP"));

    // create of an existing name
    let e = api_err(
        pods.create(&PostParams::default(), &pod("a", "web"))
            .await
            .unwrap_err(),
    );
    assert!(e.is_already_exists() && e.code == 409, "{e:?}");
    // missing
    let e = api_err(pods.get("nope").await.unwrap_err());
    assert!(e.is_not_found() && e.code == 404);
    assert_eq!(e.message, "pods \"nope\" not found");
    // update with a stale resourceVersion
    let mut fresh = created.clone();
    fresh
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("v".into(), "2".into());
    let updated = pods
        .replace("a", &PostParams::default(), &fresh)
        .await
        .unwrap();
    let rv2: u64 = updated
        .metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv1);
    let e = api_err(
        pods.replace("a", &PostParams::default(), &fresh)
            .await
            .unwrap_err(),
    );
    assert!(e.is_conflict(), "{e:?}");
    assert_eq!(e.reason, "Conflict");
    // the main resource ignores status
    let mut with_status = updated.clone();
    with_status.status.as_mut().unwrap().phase = Some("Running".into());
    let r = pods
        .replace("a", &PostParams::default(), &with_status)
        .await
        .unwrap();
    assert_eq!(r.status.unwrap().phase.as_deref(), Some("Pending"));
    // namespace missing
    let other: Api<Pod> = Api::namespaced(client.clone(), "missing");
    let e = api_err(
        other
            .create(&PostParams::default(), &pod("a", "web"))
            .await
            .unwrap_err(),
    );
    assert!(e.is_not_found());
    assert_eq!(e.message, "namespaces \"missing\" not found");
    // services are defaulted like kube-apiserver does
    let svcs: Api<Service> = Api::default_namespaced(client.clone());
    let svc: Service = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]}}),
    )
    .unwrap();
    let svc = svcs.create(&PostParams::default(), &svc).await.unwrap();
    let spec = svc.spec.unwrap();
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert!(spec.cluster_ip.as_deref().unwrap().starts_with("10.96."));
    assert_eq!(spec.cluster_ips.unwrap().len(), 1);
    assert_eq!(spec.ip_families.unwrap(), vec!["IPv4".to_string()]);
    assert_eq!(spec.ip_family_policy.as_deref(), Some("SingleStack"));
    let p = &spec.ports.unwrap()[0];
    assert_eq!(p.protocol.as_deref(), Some("TCP"));
    assert_eq!(
        p.target_port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(80))
    );
    // endpoints: PUT creates, leases in their group
    let eps: Api<Endpoints> = Api::default_namespaced(client.clone());
    let ep: Endpoints = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
        "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]}),
    )
    .unwrap();
    let ep = eps
        .replace("web", &PostParams::default(), &ep)
        .await
        .unwrap();
    assert_eq!(
        ep.subsets.unwrap()[0].ports.as_ref().unwrap()[0]
            .protocol
            .as_deref(),
        Some("TCP")
    );
    let leases: Api<Lease> = Api::default_namespaced(client.clone());
    let lease: Lease = serde_json::from_value(
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "weir"}, "spec": {"holderIdentity": "me"}}),
    )
    .unwrap();
    leases.create(&PostParams::default(), &lease).await.unwrap();
    let e = api_err(
        leases
            .create(&PostParams::default(), &lease)
            .await
            .unwrap_err(),
    );
    assert_eq!(
        e.message,
        "leases.coordination.k8s.io \"weir\" already exists"
    );
    // delete returns the object; finalizers hold it
    let mut f = pod("fin", "web");
    f.metadata.finalizers = Some(vec!["weir.dev/test".into()]);
    pods.create(&PostParams::default(), &f).await.unwrap();
    let d = pods.delete("fin", &DeleteParams::default()).await.unwrap();
    let marked = d.left().expect("object returned");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert!(pods.get("fin").await.is_ok());
    pods.patch(
        "fin",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(api_err(pods.get("fin").await.unwrap_err()).is_not_found());
    let d = pods.delete("a", &DeleteParams::default()).await.unwrap();
    assert_eq!(d.left().unwrap().metadata.name.as_deref(), Some("a"));

    let stats = server.stats();
    assert_eq!(stats.writes("endpoints"), 1);
    assert_eq!(stats.verbs("pods").create, 4);
    assert!(stats.requests >= 10, "{stats:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn patches_including_status() {
    let (server, client, _dir) = start(Config::default(), "patch").await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(&PostParams::default(), &pod("p", "web"))
        .await
        .unwrap();
    let p = pods
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "fe"}}})),
        )
        .await
        .unwrap();
    assert_eq!(p.metadata.labels.unwrap()["tier"], "fe");
    let status = json!({"status": {"phase": "Running", "podIP": "10.244.0.5", "podIPs": [{"ip": "10.244.0.5"}],
        "conditions": [{"type": "Ready", "status": "True"}]}});
    let p = pods
        .patch_status("p", &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
    let st = p.status.unwrap();
    assert_eq!(st.phase.as_deref(), Some("Running"));
    assert_eq!(st.pod_ip.as_deref(), Some("10.244.0.5"));
    // status writes ignore everything but status
    let p = pods
        .patch_status(
            "p",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"x": "y"}}, "status": {"phase": "Failed"}}),
            ),
        )
        .await
        .unwrap();
    assert!(!p.metadata.labels.as_ref().unwrap().contains_key("x"));
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Failed"));
    // JSON patch (raw request: kube's Patch::Json needs a feature the workspace does not enable)
    let json_patch = |body: serde_json::Value| {
        http::Request::patch("/api/v1/namespaces/default/pods/p")
            .header("content-type", "application/json-patch+json")
            .body(serde_json::to_vec(&body).unwrap())
            .unwrap()
    };
    let e = client
        .request_text(json_patch(
            json!([{"op": "test", "path": "/metadata/name", "value": "zzz"}]),
        ))
        .await
        .unwrap_err();
    assert_eq!(api_err(e).code, 422);
    client
        .request_text(json_patch(
            json!([{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}]),
        ))
        .await
        .unwrap();
    assert_eq!(
        pods.get("p").await.unwrap().metadata.annotations.unwrap()["a"],
        "b"
    );
    // strategic merge patch merges conditions by type
    let smp = json!({"status": {"conditions": [{"type": "PodScheduled", "status": "True"}]}});
    let p = pods
        .patch_status("p", &PatchParams::default(), &Patch::Strategic(smp))
        .await
        .unwrap();
    assert_eq!(p.status.unwrap().conditions.unwrap().len(), 2);
    // merge patch with a stale resourceVersion conflicts
    let e = pods
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"resourceVersion": "1", "labels": {"a": "b"}}})),
        )
        .await
        .unwrap_err();
    assert!(api_err(e).is_conflict());
    // server-side apply of a label is recorded for its manager (more in `server_side_apply`)
    let p = pods
        .patch(
            "p",
            &PatchParams::apply("t"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Pod",
                                 "metadata": {"name": "p", "labels": {"ssa": "yes"}}})),
        )
        .await
        .unwrap();
    assert_eq!(p.metadata.labels.unwrap()["ssa"], "yes");
    assert!(
        p.metadata.managed_fields.unwrap().iter().any(|m| {
            m.manager.as_deref() == Some("t") && m.operation.as_deref() == Some("Apply")
        })
    );
    assert_eq!(server.stats().verbs("pods/status").patch, 3);
    server.shutdown().await;
}

#[tokio::test]
async fn list_paging_selectors_and_watch() {
    let (server, client, _dir) = start(Config::default(), "list").await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    for i in 0..5 {
        pods.create(
            &PostParams::default(),
            &pod(&format!("p{i}"), if i % 2 == 0 { "even" } else { "odd" }),
        )
        .await
        .unwrap();
    }
    let all: Api<Pod> = Api::all(client.clone());
    assert_eq!(
        all.list(&ListParams::default()).await.unwrap().items.len(),
        5
    );
    let even = pods
        .list(&ListParams::default().labels("app=even"))
        .await
        .unwrap();
    assert_eq!(even.items.len(), 3);
    assert_eq!(
        pods.list(&ListParams::default().labels("app in (odd),!nothing"))
            .await
            .unwrap()
            .items
            .len(),
        2
    );
    assert_eq!(
        pods.list(&ListParams::default().labels("app notin (odd)"))
            .await
            .unwrap()
            .items
            .len(),
        3
    );
    assert_eq!(
        pods.list(&ListParams::default().fields("metadata.name=p1"))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    // paging
    let mut names = Vec::new();
    let mut lp = ListParams::default().limit(2);
    let first = pods.list(&lp).await.unwrap();
    let rv = first.metadata.resource_version.clone();
    let mut page = first;
    loop {
        assert!(page.items.len() <= 2);
        names.extend(page.items.iter().map(|p| p.metadata.name.clone().unwrap()));
        assert_eq!(page.metadata.resource_version, rv);
        match page.metadata.continue_.clone() {
            Some(c) if !c.is_empty() => {
                lp = lp.continue_token(&c);
                page = pods.list(&lp).await.unwrap();
            }
            _ => break,
        }
    }
    assert_eq!(names, vec!["p0", "p1", "p2", "p3", "p4"]);

    // watch from the list's resourceVersion with a selector: transitions are ADDED/DELETED
    let rv = rv.unwrap();
    let wp = WatchParams::default().labels("app=even").timeout(10);
    let mut w = pods.watch(&wp, &rv).await.unwrap().boxed();
    pods.patch(
        "p1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "even"}}})),
    )
    .await
    .unwrap();
    pods.patch(
        "p0",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "odd"}}})),
    )
    .await
    .unwrap();
    pods.patch(
        "p2",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
    )
    .await
    .unwrap();
    pods.delete("p4", &DeleteParams::default()).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let ev = tokio::time::timeout(DEADLINE, w.try_next())
            .await
            .expect("event in time")
            .unwrap()
            .unwrap();
        seen.push(match ev {
            WatchEvent::Added(p) => format!("ADDED {}", p.metadata.name.unwrap()),
            WatchEvent::Modified(p) => format!("MODIFIED {}", p.metadata.name.unwrap()),
            WatchEvent::Deleted(p) => format!("DELETED {}", p.metadata.name.unwrap()),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(
        seen,
        vec!["ADDED p1", "DELETED p0", "MODIFIED p2", "DELETED p4"]
    );

    // watch with resourceVersion 0 starts with the current state
    let mut w = pods
        .watch(&WatchParams::default().timeout(5), "0")
        .await
        .unwrap()
        .boxed();
    let mut added = 0;
    while added < 4 {
        match tokio::time::timeout(DEADLINE, w.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            WatchEvent::Added(_) => added += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    // bookmarks when asked for
    let mut w = pods
        .watch(
            &WatchParams {
                bookmarks: true,
                ..WatchParams::default().timeout(5)
            },
            &server.store().resource_version().to_string(),
        )
        .await
        .unwrap()
        .boxed();
    let ev = tokio::time::timeout(DEADLINE, w.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(ev, WatchEvent::Bookmark(_)), "{ev:?}");
    // an expired resourceVersion is 410 Gone as an ERROR event
    server.faults().compact("pods");
    let mut w = pods
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    match tokio::time::timeout(DEADLINE, w.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap()
    {
        WatchEvent::Error(s) => {
            assert_eq!(s.code, 410);
            assert_eq!(s.reason, "Expired");
        }
        other => panic!("expected 410, got {other:?}"),
    }
    server.shutdown().await;
}

#[tokio::test]
async fn watcher_survives_gone_and_dropped_watches() {
    let config = Config {
        history: 50,
        bookmark_interval: Duration::from_millis(200),
        ..Config::default()
    };
    let (server, client, _dir) = start(config, "watcher").await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(&PostParams::default(), &pod("seed", "w"))
        .await
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let stream = watcher(pods.clone(), watcher::Config::default()).default_backoff();
    let task = tokio::spawn(async move {
        let mut stream = stream.boxed();
        while let Some(ev) = stream.next().await {
            let msg = match ev {
                Ok(watcher::Event::Init) => "init".to_string(),
                Ok(watcher::Event::InitDone) => "initdone".to_string(),
                Ok(watcher::Event::InitApply(p)) => {
                    format!("initapply {}", p.metadata.name.unwrap())
                }
                Ok(watcher::Event::Apply(p)) => format!("apply {}", p.metadata.name.unwrap()),
                Ok(watcher::Event::Delete(p)) => format!("delete {}", p.metadata.name.unwrap()),
                Err(e) => format!("error {e}"),
            };
            if tx.send(msg).is_err() {
                break;
            }
        }
    });
    async fn wait_for(
        rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
        want: &str,
    ) -> Vec<String> {
        let mut seen = Vec::new();
        let end = tokio::time::Instant::now() + DEADLINE;
        loop {
            let m = tokio::time::timeout_at(end, rx.recv())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for {want:?}; saw {seen:?}"))
                .expect("watcher alive");
            let hit = m == want;
            seen.push(m);
            if hit {
                return seen;
            }
        }
    }
    wait_for(&mut rx, "initdone").await;
    pods.create(&PostParams::default(), &pod("one", "w"))
        .await
        .unwrap();
    wait_for(&mut rx, "apply one").await;

    // A dropped watch: the watcher re-watches and sees later changes.
    let watches = server.stats().watches;
    server.faults().drop_watches();
    eventually("re-watch after drop", || async {
        (server.stats().watches > watches).then_some(())
    })
    .await;
    pods.create(&PostParams::default(), &pod("two", "w"))
        .await
        .unwrap();
    wait_for(&mut rx, "apply two").await;

    // The next watch gets 410 Gone: the watcher relists.
    server.faults().expire_next_watches(1);
    server.faults().drop_watches();
    wait_for(&mut rx, "init").await;
    let seen = wait_for(&mut rx, "initdone").await;
    assert!(seen.contains(&"initapply two".to_string()), "{seen:?}");
    pods.create(&PostParams::default(), &pod("three", "w"))
        .await
        .unwrap();
    wait_for(&mut rx, "apply three").await;

    // Compaction up to now does not disturb an up-to-date watcher (bookmarks keep it current).
    server.faults().compact("pods");
    server.faults().drop_watches();
    pods.delete("one", &DeleteParams::default()).await.unwrap();
    wait_for(&mut rx, "delete one").await;

    // Streaming lists (sendInitialEvents) work as well.
    let stream = watcher(pods.clone(), watcher::Config::default().streaming_lists());
    let mut stream = stream.boxed();
    let mut got = Vec::new();
    loop {
        match tokio::time::timeout(DEADLINE, stream.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            watcher::Event::InitApply(p) => got.push(p.metadata.name.unwrap()),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    got.sort();
    assert_eq!(got, vec!["seed", "three", "two"]);
    task.abort();
    server.shutdown().await;
}

#[tokio::test]
async fn injected_errors() {
    let (server, client, _dir) = start_with(Config::default(), "faults", false).await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(&PostParams::default(), &pod("p", "x"))
        .await
        .unwrap();
    server.faults().set_error_rate(1.0);
    let e = api_err(pods.get("p").await.unwrap_err());
    assert_eq!(e.code, 500);
    server.faults().set_error_rate(0.0);
    server.faults().set_throttle_rate(1.0);
    let e = api_err(pods.get("p").await.unwrap_err());
    assert_eq!(e.code, 429);
    server.faults().set_throttle_rate(0.0);
    server.faults().conflict_next_updates(2);
    for _ in 0..2 {
        let e = pods
            .patch(
                "p",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
            )
            .await
            .unwrap_err();
        assert!(api_err(e).is_conflict());
    }
    pods.patch(
        "p",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
    )
    .await
    .unwrap();
    // Deterministic: the same seed fails the same requests.
    let pattern = |seed| {
        let f = server.faults();
        let mut faults = f.get();
        faults.error_rate = 0.5;
        faults.seed = seed;
        f.set(faults);
        let pods = pods.clone();
        async move {
            let mut out = Vec::new();
            for _ in 0..16 {
                out.push(pods.get("p").await.is_ok());
            }
            out
        }
    };
    let a = pattern(7).await;
    let b = pattern(7).await;
    assert_eq!(a, b);
    assert!(a.iter().any(|x| *x) && a.iter().any(|x| !*x));
    server.faults().set(weir_apiserver::Faults::default());
    // kube-rs's default retry honours Retry-After on 429s.
    let (server2, retrying, _dir2) = start(Config::default(), "faults-retry").await;
    let f = server2.faults();
    f.set(weir_apiserver::Faults {
        throttle_rate: 0.5,
        retry_after_seconds: 0,
        seed: 3,
        ..Default::default()
    });
    let pods2: Api<Pod> = Api::default_namespaced(retrying);
    for i in 0..5 {
        pods2
            .create(&PostParams::default(), &pod(&format!("r{i}"), "x"))
            .await
            .unwrap();
    }
    assert_eq!(server2.store().count("pods"), 5);
    assert!(server2.stats().verbs("pods").create > 5);
    server2.shutdown().await;
    server.shutdown().await;
}

#[tokio::test]
async fn demo_seed_loads() {
    let text = include_str!("../../../deploy/demo/seed.yaml");
    let seed = weir_apiserver::parse_seed(text).expect("seed parses");
    let (server, client, _dir) = start(
        Config {
            seed,
            ..Config::default()
        },
        "seed",
    )
    .await;
    let pods: Api<Pod> = Api::all(client.clone());
    let list = pods.list(&ListParams::default()).await.unwrap();
    assert!(list.items.len() >= 12, "{}", list.items.len());
    let ready = |p: &Pod| {
        p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    };
    assert!(list.items.iter().any(ready));
    assert!(list.items.iter().any(|p| !ready(p)));
    assert!(
        list.items
            .iter()
            .all(|p| p.spec.as_ref().unwrap().node_name.is_some())
    );
    let svcs: Api<Service> = Api::all(client.clone());
    let svcs = svcs.list(&ListParams::default()).await.unwrap().items;
    assert!(svcs.len() >= 5);
    assert!(
        svcs.iter()
            .any(|s| s.spec.as_ref().unwrap().cluster_ip.as_deref() == Some("None"))
    );
    assert!(
        svcs.iter()
            .any(|s| s.spec.as_ref().unwrap().selector.is_none())
    );
    assert!(
        svcs.iter()
            .any(|s| s.spec.as_ref().unwrap().publish_not_ready_addresses == Some(true))
    );
    server.shutdown().await;
}

#[tokio::test]
async fn http_surface() {
    let (server, client, _dir) = start(Config::default(), "http").await;
    let get = |path: &str| http::Request::get(path).body(Vec::new()).unwrap();
    // discovery, as kubectl reads it
    let v: serde_json::Value =
        serde_json::from_str(&client.request_text(get("/api/v1")).await.unwrap()).unwrap();
    let pods = v["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods")
        .unwrap();
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert_eq!(pods["namespaced"], true);
    assert!(
        v["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "pods/status")
    );
    let v: serde_json::Value =
        serde_json::from_str(&client.request_text(get("/apis")).await.unwrap()).unwrap();
    let groups: Vec<&str> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        groups,
        vec!["coordination.k8s.io", "discovery.k8s.io", "events.k8s.io"]
    );
    assert_eq!(client.request_text(get("/readyz")).await.unwrap(), "ok");
    let version = client.apiserver_version().await.unwrap();
    assert_eq!(version.major, "1");
    // Table form
    let pods_api: Api<Pod> = Api::default_namespaced(client.clone());
    pods_api
        .create(&PostParams::default(), &pod("t", "x"))
        .await
        .unwrap();
    let req = http::Request::get("/api/v1/namespaces/default/pods")
        .header(
            "accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .body(Vec::new())
        .unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&client.request_text(req).await.unwrap()).unwrap();
    assert_eq!(v["kind"], "Table");
    assert_eq!(v["columnDefinitions"][0]["name"], "Name");
    assert_eq!(v["rows"][0]["cells"][0], "t");
    assert_eq!(v["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    // protobuf bodies are refused with 415, unknown paths are 404 Status
    let req = http::Request::post("/api/v1/namespaces/default/pods")
        .header("content-type", "application/vnd.kubernetes.protobuf")
        .body(vec![0u8; 4])
        .unwrap();
    assert_eq!(
        api_err(client.request_text(req).await.unwrap_err()).code,
        415
    );
    let e = api_err(
        client
            .request_text(get("/api/v1/widgets"))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (404, "NotFound"));
    // timeoutSeconds ends a watch cleanly
    let t = std::time::Instant::now();
    let mut w = pods_api
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .unwrap()
        .boxed();
    while let Some(ev) = tokio::time::timeout(DEADLINE, w.next())
        .await
        .expect("watch ends in time")
    {
        ev.unwrap();
    }
    assert!(t.elapsed() >= Duration::from_millis(900));
    server.shutdown().await;
}

fn dyn_api(
    client: &kube::Client,
    group: &str,
    kind: &str,
    plural: &str,
) -> Api<kube::api::DynamicObject> {
    let gvk = kube::api::GroupVersionKind::gvk(group, "v1", kind);
    let ar = kube::api::ApiResource::from_gvk_with_plural(&gvk, plural);
    if kind == "Node" {
        Api::all_with(client.clone(), &ar)
    } else {
        Api::namespaced_with(client.clone(), "default", &ar)
    }
}

fn slice(name: &str, owners: serde_json::Value) -> kube::api::DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "labels": {"kubernetes.io/service-name": "web"}, "ownerReferences": owners},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.0.1"]}],
        "ports": [{"name": "http", "port": 8080}]
    }))
    .expect("slice")
}

fn owner(kind: &str, api_version: &str, name: &str, uid: &str, block: bool) -> serde_json::Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": true, "blockOwnerDeletion": block})
}

async fn web_service(client: &kube::Client, name: &str) -> String {
    let services: Api<Service> = Api::default_namespaced(client.clone());
    let svc: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
    }))
    .unwrap();
    let svc = services.create(&PostParams::default(), &svc).await.unwrap();
    svc.metadata.uid.unwrap()
}

async fn gone(api: &Api<kube::api::DynamicObject>, name: &str) {
    eventually(&format!("{name} deleted"), || async {
        api.get_opt(name).await.unwrap().is_none().then_some(())
    })
    .await;
}

#[tokio::test]
async fn nodes_and_endpointslice_generation() {
    let (server, client, _dir) = start(Config::default(), "nodes").await;
    let nodes = dyn_api(&client, "", "Node", "nodes");
    let node: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "node-a", "labels": {"topology.kubernetes.io/zone": "zone-a"}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .unwrap();
    let created = nodes.create(&PostParams::default(), &node).await.unwrap();
    assert!(created.metadata.namespace.is_none());
    // Nodes keep the status they are created with (kubelets register that way).
    assert_eq!(created.data["status"]["conditions"][0]["type"], "Ready");
    let listed = nodes
        .list(&ListParams::default().fields("metadata.name=node-a"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    // Field selectors nodes support; an unset boolean selects as false.
    let schedulable = nodes
        .list(&ListParams::default().fields("spec.unschedulable=false"))
        .await
        .unwrap();
    assert_eq!(schedulable.items.len(), 1);

    // EndpointSlice generation: 1 on create; bumped by content and label changes only.
    let slices = dyn_api(
        &client,
        "discovery.k8s.io",
        "EndpointSlice",
        "endpointslices",
    );
    let s = slices
        .create(&PostParams::default(), &slice("web-abc", json!([])))
        .await
        .unwrap();
    assert_eq!(s.metadata.generation, Some(1));
    let pp = PatchParams::default();
    let gen_after = |p: serde_json::Value| {
        let slices = slices.clone();
        let pp = pp.clone();
        async move {
            slices
                .patch("web-abc", &pp, &Patch::Merge(p))
                .await
                .unwrap()
                .metadata
                .generation
                .unwrap()
        }
    };
    assert_eq!(
        gen_after(json!({"endpoints": [{"addresses": ["10.1.0.2"]}]})).await,
        2
    );
    assert_eq!(
        gen_after(json!({"metadata": {"labels": {"x": "y"}}})).await,
        3
    );
    assert_eq!(
        gen_after(json!({"metadata": {"annotations": {"a": "b"}}})).await,
        3
    );
    assert_eq!(
        gen_after(json!({"ports": [{"name": "http", "port": 9090}]})).await,
        4
    );
    assert_eq!(gen_after(json!({"addressType": "IPv4"})).await, 4);
    server.shutdown().await;
}

#[tokio::test]
async fn owner_references_cascade() {
    let (server, client, _dir) = start(Config::default(), "gc").await;
    let services: Api<Service> = Api::default_namespaced(client.clone());
    let slices = dyn_api(
        &client,
        "discovery.k8s.io",
        "EndpointSlice",
        "endpointslices",
    );
    let pp = PostParams::default();

    // Background (the default): the owner goes at once, its dependents right after; a
    // dependent with another live owner only loses the dangling reference; owners of kinds
    // this server does not serve count as live.
    let uid = web_service(&client, "web").await;
    let other = web_service(&client, "other").await;
    let web_ref = owner("Service", "v1", "web", &uid, true);
    slices
        .create(&pp, &slice("web-1", json!([web_ref])))
        .await
        .unwrap();
    let two = json!([web_ref, owner("Service", "v1", "other", &other, false)]);
    slices.create(&pp, &slice("web-2", two)).await.unwrap();
    let foreign = json!([
        web_ref,
        owner("ReplicaSet", "apps/v1", "rs", "rs-uid", false)
    ]);
    slices.create(&pp, &slice("web-3", foreign)).await.unwrap();
    services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    assert!(services.get_opt("web").await.unwrap().is_none());
    gone(&slices, "web-1").await;
    let refs = eventually("dangling reference removed", || async {
        let s = slices.get("web-2").await.unwrap();
        let refs = s.metadata.owner_references.unwrap_or_default();
        (refs.len() == 1).then_some(refs)
    })
    .await;
    assert_eq!(refs[0].name, "other");
    let s3 = slices.get("web-3").await.unwrap();
    assert_eq!(s3.metadata.owner_references.unwrap().len(), 1);

    // A dependent written with a reference to an owner that does not exist is collected.
    let ghost = json!([owner("Service", "v1", "ghost", "no-such-uid", false)]);
    slices.create(&pp, &slice("ghost-1", ghost)).await.unwrap();
    gone(&slices, "ghost-1").await;

    // Orphan: the owner goes, the dependent stays without the reference.
    let uid = web_service(&client, "orph").await;
    let r = json!([owner("Service", "v1", "orph", &uid, true)]);
    slices.create(&pp, &slice("orph-1", r)).await.unwrap();
    services
        .delete("orph", &DeleteParams::orphan())
        .await
        .unwrap();
    eventually("orphaning owner gone", || async {
        services
            .get_opt("orph")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    let s = slices.get("orph-1").await.unwrap();
    assert!(s.metadata.owner_references.unwrap_or_default().is_empty());

    // Foreground: the owner waits (finalizer foregroundDeletion) until every dependent that
    // blocks it is gone; here one is held by a finalizer.
    let uid = web_service(&client, "fg").await;
    let mut held = slice("fg-1", json!([owner("Service", "v1", "fg", &uid, true)]));
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    slices.create(&pp, &held).await.unwrap();
    services
        .delete("fg", &DeleteParams::foreground())
        .await
        .unwrap();
    let marked = services.get("fg").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert!(
        marked
            .metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"foregroundDeletion".to_string())
    );
    let s = eventually("dependent marked", || async {
        let s = slices.get("fg-1").await.unwrap();
        s.metadata.deletion_timestamp.is_some().then_some(s)
    })
    .await;
    assert!(services.get_opt("fg").await.unwrap().is_some());
    slices
        .patch(
            "fg-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null, "resourceVersion": s.metadata.resource_version}})),
        )
        .await
        .unwrap();
    gone(&slices, "fg-1").await;
    eventually("foreground owner gone", || async {
        services
            .get_opt("fg")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;

    // Bad options are refused as kube-apiserver does.
    let (code, _) = raw_delete(
        &server,
        "/api/v1/namespaces/default/services/other?propagationPolicy=Sideways",
    )
    .await;
    assert_eq!(code, 422);
    server.shutdown().await;
}

/// DELETE over plain HTTP; returns (status code, body).
async fn raw_delete(server: &RunningApiServer, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let req = format!("DELETE {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let code = out[9..12].parse().unwrap();
    (code, out)
}

fn bound_pod(name: &str, grace: Option<i64>) -> Pod {
    let mut p = pod(name, "web");
    let spec = p.spec.as_mut().unwrap();
    spec.node_name = Some("node-a".into());
    spec.termination_grace_period_seconds = grace;
    p
}

#[tokio::test]
async fn graceful_pod_deletion() {
    let (server, client, _dir) = start(Config::default(), "grace").await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let pp = PostParams::default();

    // Bound to a node: marked, kept for the grace period, then removed by the "kubelet".
    pods.create(&pp, &bound_pod("slow", Some(2))).await.unwrap();
    let marked = pods
        .delete("slow", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("graceful delete returns the marked pod");
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(2));
    let ts = marked
        .metadata
        .deletion_timestamp
        .expect("deletionTimestamp")
        .0;
    let created = marked.metadata.creation_timestamp.unwrap().0;
    let ahead = ts.duration_since(created).as_secs_f64();
    assert!(
        (1.0..=4.0).contains(&ahead),
        "deletionTimestamp {ahead}s after creation"
    );
    let still = pods.get("slow").await.unwrap();
    assert!(still.metadata.deletion_timestamp.is_some());
    // Updates during the grace period do not remove it.
    pods.patch(
        "slow",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await
    .unwrap();
    assert!(pods.get_opt("slow").await.unwrap().is_some());
    eventually("terminating pod removed", || async {
        pods.get_opt("slow").await.unwrap().is_none().then_some(())
    })
    .await;

    // The delete option's grace period wins; 0 deletes at once (kubectl --grace-period=0 --force).
    pods.create(&pp, &bound_pod("now", None)).await.unwrap();
    let d = pods
        .delete("now", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    assert!(d.is_left());
    assert!(pods.get_opt("now").await.unwrap().is_none());

    // Default grace period: 30 s.
    pods.create(&pp, &bound_pod("default", None)).await.unwrap();
    let m = pods
        .delete("default", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(m.metadata.deletion_grace_period_seconds, Some(30));
    // A second delete may shorten it.
    let m = pods
        .delete("default", &DeleteParams::default().grace_period(1))
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(m.metadata.deletion_grace_period_seconds, Some(1));
    eventually("shortened grace ends", || async {
        pods.get_opt("default")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;

    // Unscheduled pods go at once.
    pods.create(&pp, &pod("pending", "web")).await.unwrap();
    pods.delete("pending", &DeleteParams::default())
        .await
        .unwrap();
    assert!(pods.get_opt("pending").await.unwrap().is_none());
    server.shutdown().await;

    // A server configured with a maximum: the pod shows the full grace period but goes early.
    let config = Config {
        max_pod_grace_period: Some(Duration::from_millis(200)),
        ..Config::default()
    };
    let (server, client, _dir) = start(config, "grace-max").await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(&pp, &bound_pod("capped", None)).await.unwrap();
    let m = pods
        .delete("capped", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(m.metadata.deletion_grace_period_seconds, Some(30));
    eventually("capped pod removed", || async {
        pods.get_opt("capped")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    server.shutdown().await;
}

#[tokio::test]
async fn seeded_owner_references_hold_and_cascade() {
    let svc = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "default", "uid": "seed-svc-uid"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}});
    let mut owned = serde_json::to_value(slice(
        "web-seeded",
        json!([owner("Service", "v1", "web", "seed-svc-uid", true)]),
    ))
    .unwrap();
    owned["metadata"]["namespace"] = json!("default");
    let config = Config {
        seed: vec![svc, owned],
        ..Config::default()
    };
    let (server, client, _dir) = start(config, "seed-gc").await;
    let services: Api<Service> = Api::default_namespaced(client.clone());
    let slices = dyn_api(
        &client,
        "discovery.k8s.io",
        "EndpointSlice",
        "endpointslices",
    );
    // Seeds keep their uids, so the owner is found and the slice stays...
    assert_eq!(
        services.get("web").await.unwrap().metadata.uid.as_deref(),
        Some("seed-svc-uid")
    );
    // (a request after the collector's first pass: a dangling slice would be gone by now)
    let probe = slice(
        "probe",
        json!([owner("Service", "v1", "none", "none", false)]),
    );
    slices.create(&PostParams::default(), &probe).await.unwrap();
    gone(&slices, "probe").await;
    assert!(slices.get_opt("web-seeded").await.unwrap().is_some());
    // ...and goes with its owner.
    services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    gone(&slices, "web-seeded").await;
    server.shutdown().await;
}

/// Server-side apply as kube-rs (and kube-lease-manager) send it: create-on-apply, managedFields
/// per manager, 409 naming field and manager, force, and fieldManager required.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply() {
    let (_server, client, _dir) = start(Config::default(), "ssa").await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let cfg = |holder: &str| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": "ha"},
               "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15}})
    };
    // Create on apply.
    let l = leases
        .patch("ha", &PatchParams::apply("alpha"), &Patch::Apply(cfg("a")))
        .await
        .unwrap();
    assert_eq!(
        l.spec.as_ref().unwrap().holder_identity.as_deref(),
        Some("a")
    );
    let mf = l.metadata.managed_fields.clone().unwrap();
    assert_eq!(mf.len(), 1);
    assert_eq!(mf[0].manager.as_deref(), Some("alpha"));
    assert_eq!(mf[0].operation.as_deref(), Some("Apply"));
    assert_eq!(
        mf[0].fields_v1.as_ref().unwrap().0,
        json!({"f:spec": {"f:holderIdentity": {}, "f:leaseDurationSeconds": {}}})
    );
    // Another manager, different value, no force: 409 naming the field and the owner.
    let e = api_err(
        leases
            .patch("ha", &PatchParams::apply("beta"), &Patch::Apply(cfg("b")))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 409);
    assert_eq!(e.reason, "Conflict");
    // Worded as kube-apiserver words it (tests/upstream/apidiff compares the two).
    assert_eq!(
        e.message,
        "Apply failed with 1 conflict: conflict with \"alpha\": .spec.holderIdentity"
    );
    let causes = e.details.as_ref().unwrap().causes.clone();
    assert!(
        causes
            .iter()
            .any(|c| c.field == ".spec.holderIdentity" && c.reason == "FieldManagerConflict"),
        "{causes:?}"
    );
    assert_eq!(
        leases
            .get("ha")
            .await
            .unwrap()
            .spec
            .unwrap()
            .holder_identity
            .as_deref(),
        Some("a"),
        "a refused apply changes nothing"
    );
    // Forced: the value moves, and so does ownership.
    let l = leases
        .patch(
            "ha",
            &PatchParams::apply("beta").force(),
            &Patch::Apply(
                json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                 "spec": {"holderIdentity": "b"}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        l.spec.as_ref().unwrap().holder_identity.as_deref(),
        Some("b")
    );
    let mf = l.metadata.managed_fields.unwrap();
    let alpha = mf
        .iter()
        .find(|m| m.manager.as_deref() == Some("alpha"))
        .unwrap();
    assert_eq!(
        alpha.fields_v1.as_ref().unwrap().0,
        json!({"f:spec": {"f:leaseDurationSeconds": {}}})
    );
    // Now alpha conflicts with beta.
    let e = api_err(
        leases
            .patch("ha", &PatchParams::apply("alpha"), &Patch::Apply(cfg("a")))
            .await
            .unwrap_err(),
    );
    assert!(
        e.message.contains("conflict with \"beta\""),
        "{}",
        e.message
    );
    // A merge patch records an Update entry for its manager and takes the field.
    let l = leases
        .patch(
            "ha",
            &PatchParams {
                field_manager: Some("gamma".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"spec": {"holderIdentity": "c"}})),
        )
        .await
        .unwrap();
    let mf = l.metadata.managed_fields.unwrap();
    let gamma = mf
        .iter()
        .find(|m| m.manager.as_deref() == Some("gamma"))
        .unwrap();
    assert_eq!(gamma.operation.as_deref(), Some("Update"));
    assert!(mf.iter().all(|m| {
        m.manager.as_deref() != Some("beta")
            || m.fields_v1.as_ref().unwrap().0["f:spec"]
                .get("f:holderIdentity")
                .is_none()
    }));
    // fieldManager is required for apply.
    let req = http::Request::patch("/apis/coordination.k8s.io/v1/namespaces/default/leases/ha")
        .header("Content-Type", "application/apply-patch+yaml")
        .body(serde_json::to_vec(&cfg("z")).unwrap())
        .unwrap();
    let e = api_err(client.request::<Lease>(req).await.unwrap_err());
    assert_eq!(e.code, 400);
    assert!(e.message.contains("fieldManager"), "{}", e.message);
}

/// kube-lease-manager (the elector weir's HA is to use) locks, hands over and observes a Lease
/// on weir-apiserver: its server-side apply calls (create-on-apply, conflicts, force on expiry)
/// are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_lease_manager_elects_and_hands_over() {
    use kube_lease_manager::{LeaseCreateMode, LeaseManager, LeaseParams};
    let (server, client, _dir) = start(Config::default(), "klm").await;
    let manager = |id: &str| {
        LeaseManager::new(
            client.clone(),
            "weir",
            "default",
            LeaseParams::new(id.to_string(), 2, 1),
            LeaseCreateMode::AutoCreate,
        )
    };
    let a = manager("a").await.expect("manager a");
    let b = manager("b").await.expect("manager b");
    let holder = || {
        server
            .store()
            .get("leases", "default", "weir")
            .and_then(|l| l["spec"]["holderIdentity"].as_str().map(str::to_string))
    };
    let leader = tokio::time::timeout(DEADLINE, a.changed())
        .await
        .expect("a decides")
        .unwrap();
    assert!(leader, "a takes the free lease");
    assert_eq!(holder().as_deref(), Some("a"));
    let lease = server.store().get("leases", "default", "weir").unwrap();
    assert!(
        lease["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["operation"] == "Apply"),
        "{lease}"
    );
    a.release().await.expect("a releases");
    let leader = tokio::time::timeout(DEADLINE, b.changed())
        .await
        .expect("b decides")
        .unwrap();
    assert!(leader, "b takes the released lease");
    assert_eq!(holder().as_deref(), Some("b"));
    let leader = tokio::time::timeout(DEADLINE, a.changed())
        .await
        .expect("a decides")
        .unwrap();
    assert!(!leader, "a sees it lost the lease");
}

/// The watch-list protocol on the wire, as kube-apiserver speaks it (KEP-3157): with
/// `sendInitialEvents=true` a watch starts with one ADDED event per matching object, then one
/// BOOKMARK annotated `k8s.io/initial-events-end: "true"` carrying the resourceVersion of that
/// state, then the changes after it. The request needs `resourceVersionMatch=NotOlderThan` and
/// `allowWatchBookmarks=true`; without them it is refused with 422 naming the field.
#[tokio::test]
async fn watch_list_protocol_on_the_wire() {
    use futures::{AsyncBufReadExt, StreamExt as _};
    let (server, client, _dir) = start(Config::default(), "watchlist").await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let pp = PostParams::default();
    for (name, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
        pods.create(&pp, &pod(name, app)).await.unwrap();
    }
    let listed_rv = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let get = |query: &str| {
        http::Request::get(format!("/api/v1/namespaces/default/pods?watch=1&{query}"))
            .body(Vec::new())
            .unwrap()
    };
    async fn next_line<S>(lines: &mut S) -> serde_json::Value
    where
        S: futures::Stream<Item = std::io::Result<String>> + Unpin,
    {
        let line = tokio::time::timeout(DEADLINE, lines.next())
            .await
            .expect("a watch event within the deadline")
            .expect("the stream stays open")
            .unwrap();
        serde_json::from_str(&line).unwrap()
    }

    let stream = client
        .request_stream(get(
            "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&labelSelector=app%3Dweb",
        ))
        .await
        .unwrap();
    let mut lines = Box::pin(stream.lines());
    let mut added = Vec::new();
    let bookmark = loop {
        let ev = next_line(&mut lines).await;
        match ev["type"].as_str().unwrap() {
            "ADDED" => added.push(
                ev["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            ),
            "BOOKMARK" => break ev,
            other => panic!("unexpected {other} before the end of the initial events: {ev}"),
        }
    };
    added.sort();
    assert_eq!(added, ["a", "b"], "only the objects the selector matches");
    let meta = &bookmark["object"]["metadata"];
    assert_eq!(
        meta["annotations"]["k8s.io/initial-events-end"], "true",
        "{bookmark}"
    );
    assert_eq!(meta["resourceVersion"], listed_rv.as_str(), "{bookmark}");
    assert_eq!(bookmark["object"]["kind"], "Pod");
    assert_eq!(bookmark["object"]["apiVersion"], "v1");

    // Then the stream goes on with the changes after that state.
    pods.create(&pp, &pod("d", "web")).await.unwrap();
    let ev = loop {
        let ev = next_line(&mut lines).await;
        if ev["type"] != "BOOKMARK" {
            break ev;
        }
        assert!(
            ev["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"].is_null(),
            "only the first bookmark ends the initial events: {ev}"
        );
    };
    assert_eq!(ev["type"], "ADDED", "{ev}");
    assert_eq!(ev["object"]["metadata"]["name"], "d", "{ev}");

    // sendInitialEvents=false from a resourceVersion: no synthetic events, only what followed.
    let stream = client
        .request_stream(get(&format!(
            "sendInitialEvents=false&resourceVersionMatch=NotOlderThan&resourceVersion={listed_rv}"
        )))
        .await
        .unwrap();
    let mut lines = Box::pin(stream.lines());
    let ev = next_line(&mut lines).await;
    assert_eq!(ev["type"], "ADDED", "{ev}");
    assert_eq!(ev["object"]["metadata"]["name"], "d", "{ev}");

    // Refused as kube-apiserver refuses them.
    for (query, field) in [
        (
            "sendInitialEvents=true&allowWatchBookmarks=true",
            "resourceVersionMatch",
        ),
        (
            "sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
            "allowWatchBookmarks",
        ),
    ] {
        let e = api_err(client.request_text(get(query)).await.unwrap_err());
        assert_eq!(e.code, 422, "{query}: {e:?}");
        let causes = e.details.map(|d| d.causes).unwrap_or_default();
        assert!(
            causes.iter().any(|c| c.field == field),
            "{query}: {causes:?}"
        );
    }
    server.shutdown().await;

    // A server configured without watch-list answers as kube-apiserver with the WatchList
    // feature gate off: 422 on sendInitialEvents, while plain watches still work.
    let (server, client, _dir) = start(
        Config {
            watch_list: false,
            ..Config::default()
        },
        "nowatchlist",
    )
    .await;
    let e = api_err(
        client
            .request_text(get(
                "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
            ))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 422, "{e:?}");
    let causes = e.details.map(|d| d.causes).unwrap_or_default();
    assert!(
        causes.iter().any(|c| c.field == "sendInitialEvents"),
        "{causes:?}"
    );
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(&pp, &pod("x", "web")).await.unwrap();
    let stream = client
        .request_stream(get("resourceVersion=0"))
        .await
        .unwrap();
    let mut lines = Box::pin(stream.lines());
    let ev = next_line(&mut lines).await;
    assert_eq!(ev["type"], "ADDED", "{ev}");
    server.shutdown().await;
}
