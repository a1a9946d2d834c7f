//! High availability: two `weir run` replicas on one API server elect one writer through a
//! Lease. Writes are told apart at the server by User-Agent, which names the replica's
//! election identity. Short lease settings (3 s / 2 s / 1 s) keep the tests fast.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use kube::api::WatchEvent;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::cluster::*;
use super::process::{Proc, free_port};

/// What a controller writes (the Lease is not counted: every replica takes part in it).
const WRITES: &[&str] = &["endpoints", "endpointslices", "events"];
const LEASE_DURATION: Duration = Duration::from_secs(3);
/// kube-controller-manager's default election timings: lease duration, renew deadline, retry
/// period.
const KCM_TIMINGS: [&str; 3] = ["15s", "10s", "2s"];

/// One `weir run` process.
struct Replica {
    proc: Proc,
    port: u16,
    identity: String,
}

impl Replica {
    /// Starts a replica with short election timings (lease 3 s, renew deadline 2 s, retry
    /// 1 s) and reads its election identity from its (JSON) log.
    fn start(kubeconfig: &Path) -> Replica {
        Replica::start_timed(kubeconfig, ["3s", "2s", "1s"], DEADLINE)
    }

    /// [`Replica::start`] with the lease duration, renew deadline and retry period given,
    /// allowing `window` for the replica to start.
    fn start_timed(kubeconfig: &Path, timings: [&str; 3], window: Duration) -> Replica {
        Replica::start_in(kubeconfig, timings, window, "weir-system")
    }

    /// [`Replica::start_timed`] with the Lease in `namespace`.
    fn start_in(
        kubeconfig: &Path,
        [lease, renew, retry]: [&str; 3],
        window: Duration,
        namespace: &str,
    ) -> Replica {
        let port = free_port();
        let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
        command.env("WEIR_CACHE_DIR", compile_cache_dir());
        command
            .args(["run", "--log-format", "json", "--workers", "2"])
            .args(["--admin-addr", &format!("127.0.0.1:{port}")])
            // The tests read /metrics beside the probes.
            .env("WEIR_METRICS_SECURE", "false")
            .args(["--leader-elect-lease-duration", lease])
            .args(["--leader-elect-renew-deadline", renew])
            .args(["--leader-elect-retry-period", retry])
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .env("WEIR_LOG", "info")
            // The Lease goes to the Pod's namespace.
            .env("POD_NAMESPACE", namespace);
        let proc = Proc::spawn_logging(command);
        let standing_by = "standing by for the leader-election lease";
        let lines = tokio::task::block_in_place(|| {
            proc.read_until_within(window, "the replica's election identity", |seen| {
                seen.iter().any(|l| l.contains(standing_by))
            })
        });
        let line = lines.iter().find(|l| l.contains(standing_by)).unwrap();
        let line: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(line["namespace"], namespace, "{line}");
        let identity = line["identity"].as_str().expect("identity").to_string();
        Replica {
            proc,
            port,
            identity,
        }
    }

    /// `leader_election_master_status{name="weir"}` as its /metrics says now.
    async fn leader_status(&self) -> Option<u8> {
        let (_, body) = get(self.port, "/metrics").await?;
        body.lines()
            .find_map(|l| l.strip_prefix("leader_election_master_status{name=\"weir\"} "))
            .and_then(|v| v.trim().parse().ok())
    }

    /// Waits until its /metrics says `status`.
    async fn wait_status(&self, status: u8, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            if self.leader_status().await == Some(status) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not report leader status {status} within {within:?}",
                self.identity
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// `GET path` on the admin port: (status code, body), `None` if nothing answers.
async fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let exchange = async {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        s.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())
            .await
            .ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).await.ok()?;
        let code = out.get(9..12)?.parse().ok()?;
        Some((code, out.split_once("\r\n\r\n")?.1.to_string()))
    };
    tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .ok()
        .flatten()
}

/// The Lease `weir-system/weir`, read from the API server.
async fn lease(c: &Cluster) -> Option<k8s_openapi::api::coordination::v1::Lease> {
    lease_in(c, "weir-system").await
}

/// The Lease `weir` in `namespace`, read from the API server.
async fn lease_in(
    c: &Cluster,
    namespace: &str,
) -> Option<k8s_openapi::api::coordination::v1::Lease> {
    let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
        kube::Api::namespaced(c.client.clone(), namespace);
    leases.get_opt("weir").await.expect("reading the Lease")
}

async fn lease_holder(c: &Cluster) -> Option<String> {
    lease(c).await?.spec?.holder_identity
}

fn selected(app: &str) -> serde_json::Value {
    json!({"app": app})
}

fn web(name: &str) -> serde_json::Value {
    service(
        "app",
        name,
        selected(name),
        json!([{"name": "http", "port": 80, "targetPort": 8080}]),
    )
}

/// `n` Services `svc-I` in `app`, each selecting one ready pod `p-I` at 10.1.0.I.
fn services_with_a_ready_pod(n: usize) -> Vec<serde_json::Value> {
    let mut objects = Vec::new();
    for i in 0..n {
        let name = format!("svc-{i}");
        objects.push(web(&name));
        objects.push(pod(
            "app",
            &format!("p-{i}"),
            selected(&name),
            &format!("10.1.0.{i}"),
            true,
        ));
    }
    objects
}

fn kubeconfig(c: &Cluster, dir: &tempfile::TempDir) -> std::path::PathBuf {
    let path = dir.path().join("kubeconfig");
    c.write_kubeconfig(&path);
    path
}

/// Exactly one replica writes, and when it is killed the other takes over within the lease
/// duration plus 5 s and brings every Service (old, changed and new) up to date.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_writer_and_a_sigkilled_leader_is_replaced() {
    let mut objects = vec![namespace("weir-system"), namespace("app")];
    objects.extend(services_with_a_ready_pod(3));
    let c = Cluster::start(objects).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig(&c, &dir);
    let a = Replica::start(&kubeconfig);
    let b = Replica::start(&kubeconfig);
    for i in 0..3 {
        let ip = format!("10.1.0.{i}");
        c.wait_ips("app", &format!("svc-{i}"), &[&ip], &[]).await;
    }
    wait_for("one leader and one standby", || {
        let (a, b) = (&a, &b);
        async move {
            let both = (a.leader_status().await, b.leader_status().await);
            both == (Some(1), Some(0)) || both == (Some(0), Some(1))
        }
    })
    .await;
    let (leader, standby) = if a.leader_status().await == Some(1) {
        (a, b)
    } else {
        (b, a)
    };
    assert_eq!(lease_holder(&c).await, Some(leader.identity.clone()));
    // The standby gets ready (caches synced) but writes nothing.
    wait_for("the standby ready", || {
        let port = standby.port;
        async move {
            get(port, "/readyz")
                .await
                .is_some_and(|(code, _)| code == 200)
        }
    })
    .await;
    let writers = c.server().stats().writers(WRITES);
    assert_eq!(writers.len(), 1, "exactly one writer: {writers:?}");
    assert!(
        writers[0].contains(&leader.identity) && writers[0].starts_with("weir/"),
        "{writers:?}"
    );

    let killed = Instant::now();
    let status = tokio::task::block_in_place(|| leader.proc.stop("-KILL"));
    assert!(!status.success());
    // Changes made while nobody leads: a pod turns not ready, a Service and its pod appear.
    c.apply(pod("app", "p-0", selected("svc-0"), "10.1.0.0", false))
        .await;
    c.apply(web("svc-new")).await;
    c.apply(pod("app", "p-new", selected("svc-new"), "10.1.0.9", true))
        .await;
    standby
        .wait_status(1, LEASE_DURATION + Duration::from_secs(5))
        .await;
    let took_over = killed.elapsed();
    assert_eq!(lease_holder(&c).await, Some(standby.identity.clone()));
    c.wait_ips("app", "svc-0", &[], &["10.1.0.0"]).await;
    c.wait_ips("app", "svc-1", &["10.1.0.1"], &[]).await;
    c.wait_ips("app", "svc-2", &["10.1.0.2"], &[]).await;
    c.wait_ips("app", "svc-new", &["10.1.0.9"], &[]).await;
    let stats = c.server().stats();
    let old = stats.client_writes(&leader.identity, WRITES).unwrap();
    let new = stats
        .client_writes(&standby.identity, WRITES)
        .expect("the new leader writes");
    assert!(old.last < new.first, "the two leaders' writes overlap");
    assert_eq!(stats.writers(WRITES).len(), 2);

    // SIGTERM on a leader: exit 0, and the Lease is released for the next one at once.
    let status = tokio::task::block_in_place(|| standby.proc.stop("-TERM"));
    assert!(status.success(), "{status:?}");
    assert_eq!(lease_holder(&c).await, None, "released on SIGTERM");
    eprintln!("takeover after SIGKILL: {took_over:?}");
}

/// A leader whose Lease renewals fail (it is partitioned from the Lease, but could still write
/// Endpoints) stops writing before the standby starts, and exits non-zero.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_from_its_lease_stops_writing_before_the_standby_starts() {
    let mut objects = web_app();
    objects.push(namespace("weir-system"));
    let c = Cluster::start(objects).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig(&c, &dir);
    let a = Replica::start(&kubeconfig);
    a.wait_status(1, DEADLINE).await;
    c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;
    let b = Replica::start(&kubeconfig);
    wait_for("b ready as a standby", || {
        let b = &b;
        async move {
            b.leader_status().await == Some(0)
                && get(b.port, "/readyz")
                    .await
                    .is_some_and(|(code, _)| code == 200)
        }
    })
    .await;

    // Churn: the pod flips readiness all along, so a leader always has something to write.
    let churn = tokio::spawn({
        let client = c.client.clone();
        async move {
            for i in 0.. {
                apply(
                    &client,
                    pod("app", "a", json!({"app": "web"}), "10.1.0.1", i % 2 == 0),
                )
                .await;
                // The pace of the churn, not a wait: changes keep coming for as long as the
                // test runs.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    });
    c.server().faults().partition(&a.identity, "leases");
    let a_identity = a.identity.clone();
    let (status, log) = tokio::task::block_in_place(|| {
        let log = a.proc.read_until("a to give up", |seen| {
            seen.iter().any(|l| l.contains("leader election lost"))
        });
        (a.proc.wait("a to exit"), log)
    });
    assert_eq!(status.code(), Some(1), "a lost leader exits 1: {status:?}");
    assert!(
        log.iter()
            .any(|l| l.contains("not renewed within the renew deadline")),
        "{}",
        log.join("\n")
    );
    b.wait_status(1, DEADLINE).await;
    assert_eq!(lease_holder(&c).await, Some(b.identity.clone()));
    // b writes the churn from now on.
    wait_for("b's first write", || {
        let found = c
            .server()
            .stats()
            .client_writes(&b.identity, WRITES)
            .is_some();
        async move { found }
    })
    .await;
    churn.abort();
    let _ = churn.await;
    c.apply(pod("app", "a", json!({"app": "web"}), "10.1.0.1", true))
        .await;
    c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;

    let stats = c.server().stats();
    let a_writes = stats.client_writes(&a_identity, WRITES).unwrap();
    let b_writes = stats.client_writes(&b.identity, WRITES).unwrap();
    assert!(
        a_writes.last < b_writes.first,
        "a wrote {:?} after b's first write",
        a_writes.last - b_writes.first
    );
    let status = tokio::task::block_in_place(|| b.proc.stop("-TERM"));
    assert!(status.success(), "{status:?}");
}

/// A Lease deleted under a running leader is created again as client-go's elector creates it:
/// held by the leader, the create counting as its renewal, so the leader goes on leading and
/// writing without exiting, with kube-controller-manager's default timings (lease 15 s, renew
/// deadline 10 s, retry 2 s). The windows are generous for a loaded machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_lease_is_created_again_and_the_leader_keeps_leading() {
    use k8s_openapi::api::coordination::v1::Lease;
    const WINDOW: Duration = Duration::from_secs(120);
    let mut objects = web_app();
    objects.push(namespace("weir-system"));
    let c = Cluster::start(objects).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig(&c, &dir);
    let mut a = Replica::start_timed(&kubeconfig, KCM_TIMINGS, WINDOW);
    a.wait_status(1, WINDOW).await;
    c.wait_ips_within(WINDOW, "app", "web", &["10.1.0.1"], &[])
        .await;
    let leases: kube::Api<Lease> = kube::Api::namespaced(c.client.clone(), "weir-system");
    // Its uid and version before the delete (kube-apiserver answers a Lease delete with a
    // Status, not the deleted object); every version after it is watched.
    let before = lease(&c).await.expect("the Lease").metadata;
    let old_uid = before.uid.expect("a uid");
    let params = kube::api::WatchParams::default().fields("metadata.name=weir");
    let mut versions = leases
        .watch(
            &params,
            &before.resource_version.expect("a resourceVersion"),
        )
        .await
        .expect("watching the Lease")
        .boxed();
    leases
        .delete("weir", &Default::default())
        .await
        .expect("the Lease is deleted");
    // Created again (a new object) held by a, in its very first version as client-go's elector
    // creates it, and renewed three times (once a retry period, 2 s) after that: a kept
    // leading.
    let mut renewals = std::collections::BTreeSet::new();
    let watched = tokio::time::timeout(WINDOW, async {
        while renewals.len() < 4 {
            let lease = match versions.try_next().await.expect("the watch failed") {
                Some(WatchEvent::Added(lease) | WatchEvent::Modified(lease)) => lease,
                Some(WatchEvent::Deleted(_) | WatchEvent::Bookmark(_)) => continue,
                Some(WatchEvent::Error(status)) => panic!("the watch failed: {status:?}"),
                None => panic!("the watch ended"),
            };
            if lease.metadata.uid.as_deref() == Some(old_uid.as_str()) {
                continue;
            }
            let spec = lease.spec.unwrap_or_default();
            assert_eq!(
                spec.holder_identity.as_deref(),
                Some(a.identity.as_str()),
                "a version of the Lease created again is not held by a: {spec:?}"
            );
            renewals.extend(spec.renew_time.map(|t| t.0));
        }
    })
    .await;
    assert!(
        watched.is_ok(),
        "timed out waiting for the Lease created again and renewed three times by a"
    );
    assert!(a.proc.exited().is_none(), "the leader exited");
    assert_eq!(a.leader_status().await, Some(1));
    // And it still writes.
    c.apply(pod("app", "a", json!({"app": "web"}), "10.1.0.1", false))
        .await;
    c.wait_ips_within(WINDOW, "app", "web", &[], &["10.1.0.1"])
        .await;
    let status = tokio::task::block_in_place(|| a.proc.stop("-TERM"));
    assert!(status.success(), "{status:?}");
}

/// An API server replaced by an empty one at the same address (killed; a new one on a fresh
/// store, as after a control plane lost its etcd) under a leader with kube-controller-manager's
/// default timings. As with client-go's elector, the leader creates the missing Lease held by
/// itself, which counts as its renewal, and keeps leading: on the new server the Lease is held
/// by it and renewed, the Services and pods applied again converge, and the standby writes
/// nothing on either server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_replaced_by_an_empty_one_keeps_its_leader() {
    use k8s_openapi::api::coordination::v1::Lease;
    const WINDOW: Duration = Duration::from_secs(120);
    // The Lease in kube-system, as kube-controller-manager's: a new server has that namespace
    // from its start, so the leader can create the Lease before anything is applied again.
    const NAMESPACE: &str = "kube-system";
    let world = || {
        let mut objects = vec![namespace("app"), node("node-1", None)];
        objects.extend(services_with_a_ready_pod(3));
        objects
    };
    // And 300 pods that no Service selects, so that the old server's resourceVersion is far
    // above the new one's, as a long-lived cluster's is above a fresh etcd's.
    let mut objects = world();
    objects.extend((0..300).map(|i| {
        let ip = format!("10.3.{}.{}", i / 250, i % 250 + 1);
        pod("app", &format!("old-{i}"), json!({"app": "old"}), &ip, true)
    }));
    let c = Cluster::start_replaceable(objects).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig(&c, &dir);
    let mut a = Replica::start_in(&kubeconfig, KCM_TIMINGS, WINDOW, NAMESPACE);
    a.wait_status(1, WINDOW).await;
    let mut b = Replica::start_in(&kubeconfig, KCM_TIMINGS, WINDOW, NAMESPACE);
    wait_for_within(WINDOW, "b ready as a standby", || {
        let b = &b;
        async move {
            b.leader_status().await == Some(0)
                && get(b.port, "/readyz")
                    .await
                    .is_some_and(|(code, _)| code == 200)
        }
    })
    .await;
    for i in 0..3 {
        let ip = format!("10.1.0.{i}");
        c.wait_ips_within(WINDOW, "app", &format!("svc-{i}"), &[&ip], &[])
            .await;
    }
    let held = lease_in(&c, NAMESPACE).await.and_then(|l| l.spec);
    assert_eq!(
        held.and_then(|s| s.holder_identity),
        Some(a.identity.clone())
    );
    assert!(c.writes_by(&a.identity) > 0, "a wrote the Endpoints");
    assert_eq!(c.writes_by(&b.identity), 0, "the standby wrote");

    let c = c.replace_empty().await;
    let client = c.client.clone();
    wait_for_within(WINDOW, "the new API server to answer", || {
        let client = client.clone();
        async move { client.apiserver_version().await.is_ok() }
    })
    .await;
    for object in world() {
        c.apply(object).await;
    }
    // The Lease on the new server: held by a and renewed twice (a retry period apart, 2 s)
    // after it appeared.
    let leases: kube::Api<Lease> = kube::Api::namespaced(c.client.clone(), NAMESPACE);
    let mut renewals = std::collections::BTreeSet::new();
    let deadline = Instant::now() + WINDOW;
    while renewals.len() < 3 {
        let spec = leases
            .get_opt("weir")
            .await
            .ok()
            .flatten()
            .and_then(|l| l.spec);
        if let Some(spec) = spec {
            assert_eq!(
                spec.holder_identity.as_deref(),
                Some(a.identity.as_str()),
                "the Lease on the new server is not a's"
            );
            renewals.extend(spec.renew_time.map(|t| t.0));
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for the Lease created again and renewed twice by a"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for i in 0..3 {
        let ip = format!("10.1.0.{i}");
        c.wait_ips_within(WINDOW, "app", &format!("svc-{i}"), &[&ip], &[])
            .await;
    }
    assert!(a.proc.exited().is_none(), "the leader exited");
    assert!(b.proc.exited().is_none(), "the standby exited");
    assert_eq!(a.leader_status().await, Some(1));
    assert_eq!(b.leader_status().await, Some(0));
    assert!(c.writes_by(&a.identity) > 0, "a wrote on the new server");
    assert_eq!(
        c.writes_by(&b.identity),
        0,
        "the standby wrote on the new server"
    );
    for replica in [b, a] {
        let status = tokio::task::block_in_place(|| replica.proc.stop("-TERM"));
        assert!(status.success(), "{status:?}");
    }
}

/// In process, with the gate driven by hand: a standby syncs its caches and is ready but
/// writes nothing; once it leads it writes; when no renewal comes within the renew deadline,
/// /healthz fails with the reason and writes are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_wait_for_the_lease_and_healthz_fails_past_the_renew_deadline() {
    use weir::leader::WriteGate;
    let c = Cluster::start(web_app()).await;
    let gate = WriteGate::leased(Duration::from_secs(1));
    let config = weir::controller::Config {
        gate: gate.clone(),
        ..Default::default()
    };
    let run = c.run(default_guest().await, config);
    let (addr, _admin) = weir::admin::Admin::new(run.handle.clone(), None)
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let port = addr.port();
    wait_for("a synced standby", || {
        let h = run.handle.clone();
        async move { h.is_synced() }
    })
    .await;
    // A standby queues nothing (it syncs everything when it leads).
    assert!(run.handle.queue.is_empty());
    assert_eq!(run.handle.enqueue_all(), 0);
    assert_eq!(get(port, "/readyz").await.unwrap().0, 200);
    assert_eq!(get(port, "/healthz").await.unwrap().0, 200);
    assert_eq!(c.server().stats().writers(WRITES), Vec::<String>::new());
    assert!(c.endpoints("app", "web").await.is_none());

    gate.renewed(tokio::time::Instant::now());
    c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;
    // No more renewals: a second later the leader must not write, and says so.
    wait_for("/healthz failing", || async move {
        get(port, "/healthz")
            .await
            .is_some_and(|(code, body)| code == 503 && body.contains("not renewed"))
    })
    .await;
    assert_eq!(
        get(port, "/readyz").await.unwrap().0,
        200,
        "readyz unchanged"
    );
    // A change now queues nothing, and a sync of it (as an in-flight worker would make) is
    // refused before it reaches the API server.
    let writes = c.server().stats().writes("endpoints");
    c.apply(pod("app", "a", json!({"app": "web"}), "10.1.0.1", false))
        .await;
    c.pod_watch_caught_up(&run, "marker").await;
    assert!(
        run.handle.queue.is_empty(),
        "a change observed past the renew deadline was queued"
    );
    wait_for("a sync refused by the gate", || {
        let syncer = run.syncer.clone();
        async move {
            use weir::controller::sync::SyncError;
            use weir::controller::writer::WriteError;
            matches!(
                syncer.sync("app/web").await,
                Err(SyncError::Write {
                    source: WriteError::NotLeader(_),
                    ..
                } | SyncError::SliceWrite {
                    source: WriteError::NotLeader(_),
                    ..
                })
            )
        }
    })
    .await;
    assert!(run.handle.queue.is_empty());
    assert_eq!(c.server().stats().writes("endpoints"), writes);
    assert_eq!(c.server().stats().writers(WRITES).len(), 1);
    run.stop().await;
}

/// The Lease can come while the caches are still syncing: the events seen before it queued
/// nothing, yet every Service is synced once the replica leads. (The Node list is held back by
/// a partition, so the Lease deterministically comes after the Services and Pods arrived.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_won_while_the_caches_sync_still_syncs_every_service() {
    use weir::leader::WriteGate;
    let mut objects = vec![namespace("app")];
    objects.extend(services_with_a_ready_pod(20));
    let c = Cluster::start(objects).await;
    // Every client (the controller's has no User-Agent) is cut off from Nodes.
    c.server().faults().partition("", "nodes");
    let gate = WriteGate::leased(Duration::from_secs(600));
    let config = weir::controller::Config {
        gate: gate.clone(),
        ..Default::default()
    };
    let run = c.run(default_guest().await, config);
    wait_for("Services and Pods cached, Nodes not", || {
        let h = run.handle.clone();
        async move {
            h.cache.service_keys().len() == 20 && h.cache.pod_count() == 20 && !h.is_synced()
        }
    })
    .await;
    assert!(run.handle.queue.is_empty(), "not leading: nothing queued");
    gate.renewed(tokio::time::Instant::now());
    c.server().faults().heal();
    for i in 0..20 {
        let ip = format!("10.1.0.{i}");
        c.wait_ips("app", &format!("svc-{i}"), &[&ip], &[]).await;
    }
    run.stop().await;
}
