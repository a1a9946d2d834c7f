//! Hot swap against the embedded API server: live policy change without losing keys,
//! refusals that keep the active guest, automatic rollback, shadow evaluation, `/guest`.

use std::sync::Arc;
use std::time::Duration;
use weir::metrics::Metrics;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1 as core;
use kube::api::{Api, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use weir::controller::Config;
use weir::runtime::{DEFAULT_GUEST, Limits, digest};
use weir::swap::source::{ConfigMapHolds, watch_configmap, watch_file};
use weir::swap::{SwapConfig, Swapper};

use super::cluster::*;
use super::support::test_guest_bytes;

fn services(n: usize, labels: serde_json::Value) -> Vec<serde_json::Value> {
    let mut objects = vec![namespace("app")];
    for i in 0..n {
        let mut svc = service(
            "app",
            &format!("s{i}"),
            json!({"app": format!("a{i}")}),
            json!([{"name": "http", "port": 80, "targetPort": 8080}]),
        );
        if let Some(map) = labels.as_object() {
            for (k, v) in map {
                svc["metadata"]["labels"][k] = v.clone();
            }
        }
        objects.push(svc);
        objects.push(pod(
            "app",
            &format!("p{i}"),
            json!({"app": format!("a{i}")}),
            &format!("10.3.{}.{}", i / 200, i % 200 + 1),
            true,
        ));
    }
    objects
}

fn ip(i: usize) -> String {
    format!("10.3.{}.{}", i / 200, i % 200 + 1)
}

/// Writes `bytes` to `path` atomically, as `kubectl cp` or a ConfigMap update would.
fn replace_file(path: &std::path::Path, bytes: &[u8]) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn swapper(run: &Running, config: SwapConfig) -> Arc<Swapper> {
    Swapper::new(runtime(Limits::default()), run.handle.clone(), config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swap_while_200_services_sync_changes_endpoints_and_loses_nothing() {
    let c = Cluster::start(services(200, json!({}))).await;
    // Slow the API down a little so the swap lands while syncs are in flight.
    c.server().faults().set_latency(Duration::from_millis(40));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("guest.wasm");
    std::fs::write(&file, DEFAULT_GUEST).unwrap();
    let run = c.run_default().await;
    let swapper = swapper(&run, SwapConfig::default());
    let stop = CancellationToken::new();
    let _watch = watch_file(
        file.clone(),
        swapper.clone(),
        Duration::from_millis(200),
        stop.clone(),
    );
    let h = run.handle.clone();
    wait_for("some syncs", || {
        let h = h.clone();
        async move { h.metrics.syncs_total() >= 20 }
    })
    .await;
    assert!(
        h.metrics.syncs_total() < 200,
        "the swap must land while syncing is under way"
    );
    let new = test_guest_bytes("all-not-ready");
    replace_file(&file, &new);
    for i in 0..200 {
        c.wait_ips("app", &format!("s{i}"), &[], &[&ip(i)]).await;
    }
    assert_eq!(
        run.handle.guest.current().digest(),
        digest(&new),
        "the new guest is active"
    );
    assert_eq!(run.handle.metrics.guest_swaps.get(), 1);
    assert_eq!(run.handle.metrics.keys_dropped.get(), 0, "no key dropped");
    stop.cancel();
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_candidates_are_refused_and_the_active_guest_keeps_serving() {
    let c = Cluster::start(services(3, json!({}))).await;
    let run = c.run_default().await;
    let swapper = swapper(&run, SwapConfig::default());
    c.wait_ips("app", "s0", &[&ip(0)], &[]).await;
    let active = run.handle.guest.current().digest().to_string();
    let good = test_guest_bytes("all-not-ready");
    let candidates: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "truncated component",
            good[..good.len() / 2].to_vec(),
            "compile",
        ),
        (
            "core module, not a component",
            b"\0asm\x01\0\0\0".to_vec(),
            "compile",
        ),
        (
            "component of another world",
            test_guest_bytes("wrong-world"),
            "world",
        ),
    ];
    for (what, bytes, reason) in candidates {
        let refusal = swapper.offer(bytes, what).await.expect_err(what);
        assert_eq!(refusal.reason(), reason, "{what}: {refusal}");
        assert_eq!(
            run.handle.guest.current().digest(),
            active,
            "{what}: the active guest stays"
        );
    }
    assert_eq!(weir::swap::Refusal::total(&run.handle.metrics), 3);
    // Still serving: a pod change is reflected by the original guest.
    c.apply(pod("app", "p1", json!({"app": "a1"}), &ip(1), false))
        .await;
    c.wait_ips("app", "s1", &[], &[&ip(1)]).await;
    c.wait_ips("app", "s0", &[&ip(0)], &[]).await;
    let info = swapper.info();
    assert_eq!(info["history"].as_array().unwrap().len(), 3);
    assert!(
        info["history"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["outcome"] == "refused")
    );
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_that_starts_trapping_is_rolled_back() {
    let c = Cluster::start(services(10, json!({"weir.test/trap": "true"}))).await;
    let run = c.run_default().await;
    for i in 0..10 {
        c.wait_ips("app", &format!("s{i}"), &[&ip(i)], &[]).await;
    }
    run.idle().await;
    let before = run.handle.guest.current().digest().to_string();
    let config = SwapConfig {
        rollback_min_calls: 5,
        rollback_fault_share: 0.5,
        ..SwapConfig::default()
    };
    let swapper = swapper(&run, config);
    assert!(
        swapper
            .offer(test_guest_bytes("trap-on-label"), "test")
            .await
            .unwrap()
    );
    let s = swapper.clone();
    wait_for("rollback", || {
        let s = s.clone();
        async move { s.handle.metrics.guest_rollbacks.get() == 1 }
    })
    .await;
    assert_eq!(
        run.handle.guest.current().digest(),
        before,
        "the previous guest is back"
    );
    // Back to serving: changes converge again.
    c.apply(pod("app", "p3", json!({"app": "a3"}), &ip(3), false))
        .await;
    c.wait_ips("app", "s3", &[], &[&ip(3)]).await;
    let history = swapper.info()["history"].clone();
    assert_eq!(history[1]["outcome"], "rolled-back", "{history}");
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trapping_service_does_not_stop_the_others() {
    let mut objects = services(5, json!({}));
    let mut trapping = service(
        "app",
        "bad",
        json!({"app": "bad"}),
        json!([{"name": "http", "port": 80, "targetPort": 8080}]),
    );
    trapping["metadata"]["labels"]["weir.test/trap"] = json!("true");
    objects.push(trapping);
    objects.push(pod(
        "app",
        "bad-pod",
        json!({"app": "bad"}),
        "10.4.0.1",
        true,
    ));
    let c = Cluster::start(objects).await;
    let guest = load_guest(test_guest_bytes("trap-on-label")).await;
    let run = c.run(guest, Config::default());
    for i in 0..5 {
        c.wait_ips("app", &format!("s{i}"), &[&ip(i)], &[]).await;
    }
    c.apply(pod("app", "p2", json!({"app": "a2"}), &ip(2), false))
        .await;
    c.wait_ips("app", "s2", &[], &[&ip(2)]).await;
    // The trapping Service was called (and trapped) before its lack of a write is checked.
    wait_for("the trap counted as a guest fault", || {
        let h = run.handle.clone();
        async move { h.metrics.guest_faults() >= 1 }
    })
    .await;
    assert!(
        c.endpoints("app", "bad").await.is_none(),
        "the trapping Service gets no write"
    );
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadow_guest_reports_differences_and_writes_nothing() {
    let c = Cluster::start(services(4, json!({}))).await;
    // The test is about what the shadow reports, not how fast: a deadline a debug build on a
    // loaded machine meets, so no comparison fails for time.
    let shadow = runtime(Limits {
        deadline: Duration::from_secs(10),
        ..Limits::default()
    })
    .load_async(test_guest_bytes("all-not-ready"))
    .await
    .unwrap();
    let run = c.run(
        default_guest().await,
        Config {
            shadow: Some(shadow),
            ..Config::default()
        },
    );
    for i in 0..4 {
        // The active (default) guest's decisions are what gets written.
        c.wait_ips("app", &format!("s{i}"), &[&ip(i)], &[]).await;
    }
    run.idle().await;
    let shadow = |result| Metrics::count(&run.handle.metrics.shadow, result);
    // The shadow runs after the live syncs, on its own task.
    wait_for("every create compared", || async {
        shadow("different") >= 4
    })
    .await;
    assert_eq!(shadow("failed"), 0);
    assert_eq!(
        c.endpoints_writes(),
        4,
        "only the active guest's four creates were written"
    );
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configmap_source_swaps_and_records_refusals_as_events() {
    let c = Cluster::start(services(2, json!({}))).await;
    let cms: Api<core::ConfigMap> = Api::namespaced(c.client.clone(), "app");
    let mut cm: core::ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "policy", "namespace": "app"}}))
            .unwrap();
    cm.binary_data = Some([("guest.wasm".to_string(), ByteString(DEFAULT_GUEST.to_vec()))].into());
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let run = c.run_default().await;
    let swapper = swapper(&run, SwapConfig::default());
    let stop = CancellationToken::new();
    let _watch = watch_configmap(
        c.client.clone(),
        "app".into(),
        "policy".into(),
        ConfigMapHolds::Guest {
            guest_key: "guest.wasm".into(),
            config_key: None,
        },
        swapper.clone(),
        stop.clone(),
    );
    c.wait_ips("app", "s0", &[&ip(0)], &[]).await;

    // A broken component is refused, with an Event on the ConfigMap.
    let mut broken = cms.get("policy").await.unwrap();
    broken.binary_data =
        Some([("guest.wasm".to_string(), ByteString(b"not wasm".to_vec()))].into());
    cms.replace("policy", &PostParams::default(), &broken)
        .await
        .unwrap();
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(c.client.clone(), "app");
    let ev = events.clone();
    wait_for("GuestRefused event", || {
        let ev = ev.clone();
        async move {
            ev.list(&Default::default()).await.is_ok_and(|l| {
                l.items
                    .iter()
                    .any(|e| e.reason.as_deref() == Some("GuestRefused"))
            })
        }
    })
    .await;

    // A good one swaps within seconds.
    let mut good = cms.get("policy").await.unwrap();
    good.binary_data = Some(
        [(
            "guest.wasm".to_string(),
            ByteString(test_guest_bytes("all-not-ready")),
        )]
        .into(),
    );
    cms.replace("policy", &PostParams::default(), &good)
        .await
        .unwrap();
    c.wait_ips("app", "s0", &[], &[&ip(0)]).await;
    c.wait_ips("app", "s1", &[], &[&ip(1)]).await;
    stop.cancel();
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_guest_endpoint_serves_digest_and_history() {
    let c = Cluster::start(services(1, json!({}))).await;
    let run = c.run_default().await;
    let swapper = swapper(&run, SwapConfig::default());
    let _ = swapper.offer(b"garbage".to_vec(), "test").await;
    let (addr, task) = weir::admin::Admin::new(run.handle.clone(), Some(swapper))
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let body = http_get(addr, "/guest").await;
    let json: serde_json::Value =
        serde_json::from_str(body.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(json["active"]["digest"], digest(DEFAULT_GUEST));
    assert_eq!(json["history"][0]["outcome"], "refused");
    let metrics = http_get(addr, "/metrics").await;
    assert!(
        metrics.contains("weir_guest_swap_refusals_total{reason=\"compile\"} 1"),
        "{metrics}"
    );
    task.abort();
    run.stop().await;
}

async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pinned_digest_and_golden_cases_gate_every_candidate() {
    let c = Cluster::start(services(1, json!({}))).await;
    let run = c.run_default().await;
    c.wait_ips("app", "s0", &[&ip(0)], &[]).await;
    let candidate = test_guest_bytes("all-not-ready");

    let pinned = swapper(
        &run,
        SwapConfig {
            pin_sha256: Some(digest(DEFAULT_GUEST)),
            ..SwapConfig::default()
        },
    );
    let refusal = pinned.offer(candidate.clone(), "test").await.unwrap_err();
    assert_eq!(refusal.reason(), "digest", "{refusal}");

    // The upstream golden cases fail under a policy that marks everything not ready.
    let cases = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/readiness");
    let checked = swapper(
        &run,
        SwapConfig {
            check_cases: Some(cases),
            ..SwapConfig::default()
        },
    );
    let refusal = checked.offer(candidate, "test").await.unwrap_err();
    assert_eq!(refusal.reason(), "cases", "{refusal}");
    assert_eq!(run.handle.guest.current().digest(), digest(DEFAULT_GUEST));
    run.stop().await;
}

/// Guests that block in WASI (a sleep, a one-hour timer) or spin on the clock: with as many
/// stalled Services as workers, the others still converge, and every stalled call counts as
/// a fault.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalling_guests_do_not_stall_the_controller() {
    for name in ["sleep", "poll-timer", "clock-spin"] {
        let workers = 2;
        let mut objects = services(4, json!({}));
        for i in 0..workers {
            let mut stalled = service(
                "app",
                &format!("stalled{i}"),
                json!({"app": "stalled"}),
                json!([{"name": "http", "port": 80, "targetPort": 8080}]),
            );
            stalled["metadata"]["labels"]["weir.test/stall"] = json!("true");
            objects.push(stalled);
        }
        let c = Cluster::start(objects).await;
        let run = c.run(
            load_guest(test_guest_bytes(name)).await,
            Config {
                workers,
                ..Config::default()
            },
        );
        for i in 0..4 {
            c.wait_ips("app", &format!("s{i}"), &[&ip(i)], &[]).await;
        }
        let h = run.handle.clone();
        wait_for("stalled calls counted as faults", || {
            let h = h.clone();
            async move { h.metrics.guest_faults() >= workers as u64 }
        })
        .await;
        assert!(c.endpoints("app", "stalled0").await.is_none(), "{name}");
        run.stop().await;
    }
}

/// A swap to a guest that blocks on every Service is rolled back, like one that traps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_that_starts_blocking_is_rolled_back() {
    let c = Cluster::start(services(6, json!({"weir.test/stall": "true"}))).await;
    let run = c.run_default().await;
    for i in 0..6 {
        c.wait_ips("app", &format!("s{i}"), &[&ip(i)], &[]).await;
    }
    run.idle().await;
    let before = run.handle.guest.current().digest().to_string();
    let swapper = swapper(&run, SwapConfig::default());
    assert!(
        swapper
            .offer(test_guest_bytes("poll-timer"), "test")
            .await
            .unwrap()
    );
    let s = swapper.clone();
    wait_for("rollback", || {
        let s = s.clone();
        async move { s.handle.metrics.guest_rollbacks.get() == 1 }
    })
    .await;
    assert_eq!(run.handle.guest.current().digest(), before);
    c.apply(pod("app", "p2", json!({"app": "a2"}), &ip(2), false))
        .await;
    c.wait_ips("app", "s2", &[], &[&ip(2)]).await;
    run.stop().await;
}

/// The gate runs `--guest-check` cases under the deadline: a candidate that sleeps in one is
/// refused promptly, and the swapper goes on to look at the next candidate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_that_sleeps_in_a_check_case_is_refused_and_the_next_is_taken() {
    let c = Cluster::start(services(2, json!({}))).await;
    let run = c.run_default().await;
    c.wait_ips("app", "s0", &[&ip(0)], &[]).await;
    let cases = tempfile::tempdir().unwrap();
    std::fs::write(
        cases.path().join("stalled.yaml"),
        r#"
key: app/web
service:
  metadata: {name: web, namespace: app, labels: {weir.test/stall: "true"}}
  spec: {selector: {app: web}, clusterIP: 10.96.0.1, ipFamilies: [IPv4], ports: [{name: http, port: 80, targetPort: 8080}]}
pods: []
endpoints: null
"#,
    )
    .unwrap();
    let swapper = swapper(
        &run,
        SwapConfig {
            check_cases: Some(cases.path().to_path_buf()),
            ..SwapConfig::default()
        },
    );
    for name in ["sleep", "poll-timer", "clock-spin"] {
        let refusal = tokio::time::timeout(
            Duration::from_secs(30),
            swapper.offer(test_guest_bytes(name), name),
        )
        .await
        .expect("the gate must not stall")
        .expect_err(name);
        assert_eq!(refusal.reason(), "cases", "{name}: {refusal}");
        assert!(refusal.to_string().contains("deadline"), "{refusal}");
    }
    assert!(
        swapper
            .offer(test_guest_bytes("all-not-ready"), "good")
            .await
            .unwrap()
    );
    c.wait_ips("app", "s0", &[], &[&ip(0)]).await;
    run.stop().await;
}

/// The gate tries a candidate with the policy configuration it would run with: a guest that
/// refuses the live configuration never goes live, and the same guest offered with a
/// configuration it accepts does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_is_checked_with_the_live_policy_config() {
    let c = Cluster::start(services(2, json!({}))).await;
    // all-not-ready takes any configuration object; the default guest refuses unknown fields.
    let run = c.run(
        load_guest(test_guest_bytes("all-not-ready")).await,
        Config {
            policy_config: r#"{"tolerated":true}"#.into(),
            ..Config::default()
        },
    );
    c.wait_ips("app", "s0", &[], &[&ip(0)]).await;
    let swapper = swapper(&run, SwapConfig::default());
    let active = run.handle.guest.current().digest().to_string();
    let refusal = swapper
        .offer(DEFAULT_GUEST.to_vec(), "test")
        .await
        .expect_err("the default guest refuses the live configuration");
    assert_eq!(refusal.reason(), "config", "{refusal}");
    assert!(refusal.to_string().contains("tolerated"), "{refusal}");
    assert_eq!(run.handle.guest.current().digest(), active);
    assert_eq!(run.handle.guest.config(), r#"{"tolerated":true}"#);
    // As a pair with a configuration it accepts, it goes live, and both change together.
    assert!(
        swapper
            .offer_pair(DEFAULT_GUEST.to_vec(), Some("{}".into()), "test")
            .await
            .unwrap()
    );
    assert_eq!(run.handle.guest.config(), "{}");
    c.wait_ips("app", "s0", &[&ip(0)], &[]).await;
    c.wait_ips("app", "s1", &[&ip(1)], &[]).await;
    run.stop().await;
}

/// Rollback counts every call that gave no usable decision, not only traps: errors the guest
/// returns and decisions validation refuses. After a rollback, `previous` names the guest
/// that was rolled back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_errors_and_refused_decisions_count_toward_rollback() {
    for how in ["error", "invalid"] {
        let c = Cluster::start(services(6, json!({"weir.test/fail": how}))).await;
        let run = c.run_default().await;
        for i in 0..6 {
            c.wait_ips("app", &format!("s{i}"), &[&ip(i)], &[]).await;
        }
        run.idle().await;
        let before = run.handle.guest.current().digest().to_string();
        let swapper = swapper(&run, SwapConfig::default());
        let bad = test_guest_bytes("fail-on-label");
        assert!(swapper.offer(bad.clone(), "test").await.unwrap(), "{how}");
        let s = swapper.clone();
        wait_for("rollback", || {
            let s = s.clone();
            async move { s.handle.metrics.guest_rollbacks.get() == 1 }
        })
        .await;
        assert_eq!(run.handle.guest.current().digest(), before, "{how}");
        let info = swapper.info();
        assert_eq!(info["previous"], json!(digest(&bad)), "{how}: {info}");
        c.apply(pod("app", "p2", json!({"app": "a2"}), &ip(2), false))
            .await;
        c.wait_ips("app", "s2", &[], &[&ip(2)]).await;
        run.stop().await;
    }
}

/// One ConfigMap holds the guest and its configuration: a change to both is checked as a
/// pair and applied at once; a pair that does not work together is refused whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configmap_pair_swaps_guest_and_config_together() {
    let c = Cluster::start(services(2, json!({}))).await;
    let cms: Api<core::ConfigMap> = Api::namespaced(c.client.clone(), "app");
    let pair = |guest: Vec<u8>, config: &str| {
        let mut cm: core::ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": "policy", "namespace": "app"}, "data": {"config.yaml": config}}),
        )
        .unwrap();
        cm.binary_data = Some([("guest.wasm".to_string(), ByteString(guest))].into());
        cm
    };
    cms.create(&PostParams::default(), &pair(DEFAULT_GUEST.to_vec(), ""))
        .await
        .unwrap();
    // Every step below waits for a guest compilation, a few seconds on an idle machine and
    // tens of seconds on a loaded one, so each gets a wider window than DEADLINE. Under load a
    // call can also overrun the default 100 ms deadline, and enough such faults would make the
    // swapper roll back (correctly, but not what this test is about): the guests get a deadline
    // no machine overruns, and rollback is off.
    let limits = Limits {
        deadline: Duration::from_secs(30),
        ..Limits::default()
    };
    let runtime = runtime(limits);
    let run = c.run(
        runtime.load_async(DEFAULT_GUEST.to_vec()).await.unwrap(),
        Config::default(),
    );
    let swapper = Swapper::new(
        runtime,
        run.handle.clone(),
        SwapConfig {
            rollback_window: Duration::ZERO,
            ..SwapConfig::default()
        },
    );
    const STEP: Duration = Duration::from_secs(120);
    let stop = CancellationToken::new();
    let _watch = watch_configmap(
        c.client.clone(),
        "app".into(),
        "policy".into(),
        ConfigMapHolds::Guest {
            guest_key: "guest.wasm".into(),
            config_key: Some("config.yaml".into()),
        },
        swapper.clone(),
        stop.clone(),
    );
    c.wait_ips_within(STEP, "app", "s0", &[&ip(0)], &[]).await;
    let replace = |cm: core::ConfigMap| {
        let cms = cms.clone();
        async move {
            let mut current = cms.get("policy").await.unwrap();
            current.data = cm.data;
            current.binary_data = cm.binary_data;
            cms.replace("policy", &PostParams::default(), &current)
                .await
                .unwrap();
        }
    };
    // A new guest with a configuration only it accepts: both go live.
    let all_not_ready = test_guest_bytes("all-not-ready");
    replace(pair(all_not_ready.clone(), "tolerated: true\n")).await;
    c.wait_ips_within(STEP, "app", "s0", &[], &[&ip(0)]).await;
    assert_eq!(run.handle.guest.config(), r#"{"tolerated":true}"#);
    // The default guest with that same configuration does not work: refused whole.
    replace(pair(DEFAULT_GUEST.to_vec(), "tolerated: true\n")).await;
    let s = swapper.clone();
    wait_for_within(STEP, "the mismatched pair is refused", || {
        let s = s.clone();
        async move { weir::swap::Refusal::total(&s.handle.metrics) == 1 }
    })
    .await;
    assert_eq!(run.handle.guest.current().digest(), digest(&all_not_ready));
    assert_eq!(run.handle.guest.config(), r#"{"tolerated":true}"#);
    // The default guest with a configuration it takes: swapped back, together.
    replace(pair(DEFAULT_GUEST.to_vec(), "{}")).await;
    c.wait_ips_within(STEP, "app", "s0", &[&ip(0)], &[]).await;
    c.wait_ips_within(STEP, "app", "s1", &[&ip(1)], &[]).await;
    assert_eq!(run.handle.guest.config(), "{}");
    stop.cancel();
    run.stop().await;
}

/// Every refusal of a ConfigMap's content is counted under its reason, listed in `/guest`'s
/// history and recorded as an Event whose note is its own, whatever refused it: a
/// configuration that is not YAML (refused before any guest check), a component that does not
/// compile, a ConfigMap without the guest's key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_configmap_refusal_is_counted_listed_and_noted_in_its_own_event() {
    let c = Cluster::start(services(1, json!({}))).await;
    let cms: Api<core::ConfigMap> = Api::namespaced(c.client.clone(), "app");
    let content = |guest: Option<&[u8]>, config: &str| {
        let mut cm: core::ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": "policy", "namespace": "app"}, "data": {"config.yaml": config}}),
        )
        .unwrap();
        cm.binary_data = guest.map(|g| [("guest.wasm".to_string(), ByteString(g.to_vec()))].into());
        cm
    };
    cms.create(&PostParams::default(), &content(Some(DEFAULT_GUEST), "{}"))
        .await
        .unwrap();
    let run = c.run_default().await;
    let swapper = swapper(&run, SwapConfig::default());
    let stop = CancellationToken::new();
    let _watch = watch_configmap(
        c.client.clone(),
        "app".into(),
        "policy".into(),
        ConfigMapHolds::Guest {
            guest_key: "guest.wasm".into(),
            config_key: Some("config.yaml".into()),
        },
        swapper.clone(),
        stop.clone(),
    );
    c.wait_ips("app", "s0", &[&ip(0)], &[]).await;
    let replace = |cm: core::ConfigMap| {
        let cms = cms.clone();
        async move {
            let mut current = cms.get("policy").await.unwrap();
            current.data = cm.data;
            current.binary_data = cm.binary_data;
            cms.replace("policy", &PostParams::default(), &current)
                .await
                .unwrap();
        }
    };
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(c.client.clone(), "app");
    let active = run.handle.guest.current().digest().to_string();
    let steps: [(core::ConfigMap, &str, &str); 3] = [
        (
            content(Some(DEFAULT_GUEST), "{unclosed: [yaml"),
            "config",
            "the policy configuration cannot be read",
        ),
        (
            content(Some(b"not wasm"), "{}"),
            "compile",
            "not a valid WebAssembly component",
        ),
        (content(None, "{}"), "missing", "has no key \"guest.wasm\""),
    ];
    for (n, (cm, reason, note)) in steps.into_iter().enumerate() {
        replace(cm).await;
        let s = swapper.clone();
        wait_for(&format!("refusal {reason} counted"), || {
            let s = s.clone();
            async move { weir::swap::Refusal::total(&s.handle.metrics) == n as u64 + 1 }
        })
        .await;
        let counted = run
            .handle
            .metrics
            .guest_swap_refusals
            .get_or_create(&weir::metrics::ReasonLabel { reason })
            .get();
        assert_eq!(counted, 1, "{reason}");
        let info = swapper.info();
        let last = info["history"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["outcome"], "refused", "{info}");
        assert!(last["reason"].as_str().unwrap().contains(note), "{info}");
        assert_eq!(info["refusals"], json!(n + 1), "{info}");
        let ev = events.clone();
        wait_for(&format!("an Event noting the {reason} refusal"), || {
            let ev = ev.clone();
            async move {
                ev.list(&Default::default()).await.is_ok_and(|l| {
                    l.items.iter().any(|e| {
                        e.reason.as_deref() == Some("GuestRefused")
                            && e.note.as_deref().is_some_and(|text| text.contains(note))
                    })
                })
            }
        })
        .await;
        assert_eq!(run.handle.guest.current().digest(), active, "{reason}");
    }
    let text = run.handle.metrics.encode_text().unwrap();
    for reason in ["config", "compile", "missing"] {
        assert!(
            text.contains(&format!(
                "weir_guest_swap_refusals_total{{reason=\"{reason}\"}} 1"
            )),
            "{text}"
        );
    }
    stop.cancel();
    run.stop().await;
}

/// A shadow guest that sleeps through its deadline on every call costs the live syncs
/// nothing: they write without waiting for it, each far below the shadow's deadline. After
/// three timeouts in a row it is suspended, as its metric and `/guest` show, and later syncs
/// do not call it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeping_shadow_does_not_delay_live_syncs_and_is_suspended() {
    let c = Cluster::start(services(4, json!({"weir.test/stall": "true"}))).await;
    let deadline = Duration::from_secs(3);
    let shadow = runtime(Limits {
        deadline,
        ..Limits::default()
    })
    .load_async(test_guest_bytes("sleep"))
    .await
    .unwrap();
    let run = c.run(
        default_guest().await,
        Config {
            shadow: Some(shadow),
            ..Config::default()
        },
    );
    for i in 0..4 {
        c.wait_ips("app", &format!("s{i}"), &[&ip(i)], &[]).await;
    }
    run.idle().await;
    let metrics = &run.handle.metrics;
    // Every live sync so far, all together, took less than one shadow call: none waited.
    let text = metrics.encode_text().unwrap();
    let value = |name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {text}"))
    };
    let (synced, took) = (
        value("weir_sync_duration_seconds_count"),
        value("weir_sync_duration_seconds_sum"),
    );
    assert!(synced >= 4.0, "{text}");
    assert!(
        took < deadline.as_secs_f64(),
        "{synced} live syncs took {took}s together; the shadow's deadline is {deadline:?}"
    );

    let m = metrics.clone();
    wait_for("the shadow suspended", || {
        let m = m.clone();
        async move { m.shadow_suspended.get() == 1 }
    })
    .await;
    assert_eq!(metrics.shadow_suspensions.get(), 1);
    // At least the three timeouts in a row that suspend it: a comparison that failed otherwise
    // before them restarts the count (the exact rule is `shadow::tests`' to check), and the
    // point here is that none follows the suspension.
    let failed = Metrics::count(&metrics.shadow, "failed");
    assert!(
        failed >= 3,
        "{failed} failed comparisons, fewer than three timeouts"
    );
    let text = metrics.encode_text().unwrap();
    assert!(text.contains("weir_shadow_suspended 1"), "{text}");
    let (addr, task) = weir::admin::Admin::new(run.handle.clone(), None)
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let body = http_get(addr, "/guest").await;
    let json: serde_json::Value =
        serde_json::from_str(body.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(json["shadow"]["suspended"], true, "{json}");
    assert_eq!(json["shadow"]["suspensions"], 1, "{json}");
    assert!(json["shadow"]["trialIn"].is_string(), "{json}");

    // While suspended, a live sync still writes and counts its comparison as suspended.
    let suspended = Metrics::count(&metrics.shadow, "suspended");
    c.apply(pod("app", "p0", json!({"app": "a0"}), &ip(0), false))
        .await;
    c.wait_ips("app", "s0", &[], &[&ip(0)]).await;
    let m = metrics.clone();
    wait_for("the sync's comparison counted as suspended", || {
        let m = m.clone();
        async move { Metrics::count(&m.shadow, "suspended") > suspended }
    })
    .await;
    assert_eq!(
        Metrics::count(&metrics.shadow, "failed"),
        failed,
        "not called again"
    );
    task.abort();
    run.stop().await;
}
