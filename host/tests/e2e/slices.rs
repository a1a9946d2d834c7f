//! EndpointSlices end to end: the real controller with the default (0.2.0) guest against the
//! embedded API server, observed and driven with kubectl as an operator would.

use std::process::Command;

use serde_json::{Value, json};
use weir::controller::Config;

use super::cluster::*;
use super::support;

/// kubectl against the test cluster's API server.
struct Kubectl {
    dir: tempfile::TempDir,
}

impl Kubectl {
    /// Fails the test when kubectl does not run (`make tools` installs it).
    fn new(c: &Cluster) -> Kubectl {
        support::require_tool("kubectl", &["version", "--client"]);
        let dir = tempfile::tempdir().unwrap();
        c.write_kubeconfig(&dir.path().join("kubeconfig"));
        Kubectl { dir }
    }

    /// Runs kubectl off the async threads; panics with its stderr when it fails.
    async fn run(&self, args: &[&str], stdin: Option<String>) -> String {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let dir = self.dir.path().to_path_buf();
        tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut child = Command::new("kubectl")
                .args(&args)
                .env("KUBECONFIG", dir.join("kubeconfig"))
                .env("HOME", &dir)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawning kubectl");
            let mut input = child.stdin.take().unwrap();
            if let Some(text) = stdin {
                input.write_all(text.as_bytes()).unwrap();
            }
            drop(input);
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "kubectl {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
        .await
        .unwrap()
    }

    /// The EndpointSlices of a Service, as `kubectl get -o json` lists them.
    async fn slices(&self, namespace: &str, service: &str) -> Vec<Value> {
        let selector = format!("kubernetes.io/service-name={service}");
        let out = self
            .run(
                &[
                    "get",
                    "endpointslices",
                    "-n",
                    namespace,
                    "-l",
                    &selector,
                    "-o",
                    "json",
                ],
                None,
            )
            .await;
        let list: Value = serde_json::from_str(&out).unwrap();
        list["items"].as_array().cloned().unwrap_or_default()
    }

    /// Polls the Service's slices until `done` holds for them.
    async fn wait_slices(
        &self,
        namespace: &str,
        service: &str,
        what: &str,
        mut done: impl FnMut(&[Value]) -> bool,
    ) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            let slices = self.slices(namespace, service).await;
            if done(&slices) {
                return slices;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}; last saw {}",
                serde_json::to_string_pretty(&slices).unwrap()
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
}

fn endpoints(slice: &Value) -> Vec<Value> {
    slice["endpoints"].as_array().cloned().unwrap_or_default()
}

/// Endpoint counts of the slices, sorted.
fn lengths(slices: &[Value]) -> Vec<usize> {
    let mut l: Vec<usize> = slices.iter().map(|s| endpoints(s).len()).collect();
    l.sort_unstable();
    l
}

/// The endpoint of pod `name` in any of the slices, with its slice's name.
fn endpoint_of<'a>(slices: &'a [Value], pod: &str) -> Option<(&'a str, Value)> {
    slices.iter().find_map(|s| {
        endpoints(s)
            .into_iter()
            .find(|e| e["targetRef"]["name"] == pod)
            .map(|e| (s["metadata"]["name"].as_str().unwrap_or(""), e))
    })
}

/// Pods p0..p{n}, ready, at 10.1.x.y.
fn web_pods(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            pod(
                "app",
                &format!("p{i}"),
                json!({"app": "web"}),
                &format!("10.1.{}.{}", i / 250, i % 250 + 1),
                true,
            )
        })
        .collect()
}

fn web_world(pods: usize) -> Vec<Value> {
    let mut objects = vec![
        namespace("app"),
        service(
            "app",
            "web",
            json!({"app": "web"}),
            json!([{"name": "http", "port": 80, "targetPort": 8080}]),
        ),
    ];
    objects.extend(web_pods(pods));
    objects
}

fn slice_writes(c: &Cluster) -> u64 {
    c.writes("endpointslices")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_pods_fill_slices_of_one_hundred_and_a_flip_updates_exactly_one() {
    let c = Cluster::start(web_world(250)).await;
    let k = Kubectl::new(&c);
    let run = c.run_default().await;
    let slices = k
        .wait_slices("app", "web", "three slices of 100, 100, 50", |s| {
            lengths(s) == [50, 100, 100]
        })
        .await;
    for s in &slices {
        assert_eq!(s["addressType"], "IPv4");
        assert_eq!(
            s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
            "endpointslice-controller.k8s.io"
        );
        assert_eq!(s["metadata"]["ownerReferences"][0]["kind"], "Service");
        assert_eq!(s["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(s["ports"][0]["port"], 8080);
    }
    run.idle().await;
    // The Endpoints come from the same decision.
    let ep = c
        .endpoints("app", "web")
        .await
        .expect("Endpoints written too");
    assert_eq!(ips(&ep).0.len(), 250);
    let before = slice_writes(&c);

    k.run(
        &[
            "patch",
            "pod",
            "p7",
            "-n",
            "app",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"conditions":[{"type":"Ready","status":"False"}]}}"#,
        ],
        None,
    )
    .await;
    k.wait_slices("app", "web", "p7 not ready in its slice", |s| {
        endpoint_of(s, "p7").is_some_and(|(_, e)| e["conditions"]["ready"] == false)
    })
    .await;
    run.idle().await;
    assert_eq!(
        slice_writes(&c) - before,
        1,
        "one readiness flip rewrites exactly one slice"
    );
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_service_removes_its_slices_through_garbage_collection() {
    let c = Cluster::start(web_world(3)).await;
    let k = Kubectl::new(&c);
    let run = c.run_default().await;
    k.wait_slices("app", "web", "one slice", |s| lengths(s) == [3])
        .await;
    k.run(&["delete", "service", "web", "-n", "app"], None)
        .await;
    k.wait_slices("app", "web", "no slices", |s| s.is_empty())
        .await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn taking_over_correct_slices_writes_nothing() {
    let c = Cluster::start(web_world(120)).await;
    let k = Kubectl::new(&c);
    let first = c.run_default().await;
    k.wait_slices("app", "web", "two slices", |s| lengths(s) == [20, 100])
        .await;
    first.idle().await;
    first.stop().await;
    // Make them look as kube-controller-manager leaves them: its own endpoint and port order
    // and its own trigger-time annotation. The content is the same.
    for mut s in k.slices("app", "web").await {
        if let Some(e) = s["endpoints"].as_array_mut() {
            e.reverse();
        }
        s["metadata"]["annotations"] =
            json!({"endpoints.kubernetes.io/last-change-trigger-time": "2020-01-01T00:00:00Z"});
        k.run(&["replace", "-f", "-"], Some(s.to_string())).await;
    }
    let (slices_before, endpoints_before) = (slice_writes(&c), c.endpoints_writes());
    let second = c.run_default().await;
    // The Service synced (and found nothing to write), not merely queued.
    wait_for("the Service synced", || {
        let h = second.handle.clone();
        async move { h.metrics.syncs_total() >= 1 }
    })
    .await;
    second.idle().await;
    assert_eq!(
        slice_writes(&c),
        slices_before,
        "correct slices are adopted with zero writes"
    );
    assert_eq!(c.endpoints_writes(), endpoints_before);
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_edited_slice_is_restored() {
    let c = Cluster::start(web_world(2)).await;
    let k = Kubectl::new(&c);
    let run = c.run_default().await;
    let slices = k
        .wait_slices("app", "web", "one slice", |s| lengths(s) == [2])
        .await;
    let name = slices[0]["metadata"]["name"].as_str().unwrap().to_string();
    k.run(
        &[
            "label",
            "endpointslice",
            &name,
            "-n",
            "app",
            "edited-by=hand",
        ],
        None,
    )
    .await;
    k.wait_slices("app", "web", "the label removed again", |s| {
        s.len() == 1 && s[0]["metadata"]["labels"].get("edited-by").is_none()
    })
    .await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dual_stack_service_gets_ipv4_and_ipv6_slices() {
    let mut svc = service(
        "app",
        "web",
        json!({"app": "web"}),
        json!([{"name": "http", "port": 80, "targetPort": 8080}]),
    );
    svc["spec"]["ipFamilyPolicy"] = json!("RequireDualStack");
    svc["spec"]["ipFamilies"] = json!(["IPv4", "IPv6"]);
    let mut p = pod("app", "a", json!({"app": "web"}), "10.1.0.1", true);
    p["status"]["podIPs"] = json!([{"ip": "10.1.0.1"}, {"ip": "fd00::1"}]);
    let c = Cluster::start(vec![namespace("app"), svc, p]).await;
    let k = Kubectl::new(&c);
    let run = c.run_default().await;
    let slices = k
        .wait_slices("app", "web", "an IPv4 and an IPv6 slice", |s| {
            s.len() == 2 && s.iter().all(|s| endpoints(s).len() == 1)
        })
        .await;
    let mut by_type: Vec<(String, String)> = slices
        .iter()
        .map(|s| {
            (
                s["addressType"].as_str().unwrap().to_string(),
                endpoints(s)[0]["addresses"][0]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    by_type.sort();
    assert_eq!(
        by_type,
        [
            ("IPv4".to_string(), "10.1.0.1".to_string()),
            ("IPv6".to_string(), "fd00::1".to_string())
        ]
    );
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zones_come_from_nodes_and_prefer_close_gives_hints() {
    let mut svc = service(
        "app",
        "web",
        json!({"app": "web"}),
        json!([{"name": "http", "port": 80, "targetPort": 8080}]),
    );
    svc["spec"]["trafficDistribution"] = json!("PreferClose");
    let mut a = pod("app", "a", json!({"app": "web"}), "10.1.0.1", true);
    a["spec"]["nodeName"] = json!("node-a");
    let mut b = pod("app", "b", json!({"app": "web"}), "10.1.0.2", true);
    b["spec"]["nodeName"] = json!("node-b");
    let c = Cluster::start(vec![
        namespace("app"),
        node("node-a", Some("zone-a")),
        node("node-b", Some("zone-b")),
        svc,
        a,
        b,
    ])
    .await;
    let k = Kubectl::new(&c);
    let run = c.run_default().await;
    let slices = k
        .wait_slices("app", "web", "two hinted endpoints", |s| {
            lengths(s) == [2]
                && endpoints(&s[0])
                    .iter()
                    .all(|e| e["hints"]["forZones"].is_array())
        })
        .await;
    for e in endpoints(&slices[0]) {
        assert_eq!(e["hints"]["forZones"], json!([{"name": e["zone"].clone()}]));
    }
    let (_, a) = endpoint_of(&slices, "a").unwrap();
    assert_eq!(a["zone"], "zone-a");
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_only_leaves_slices_alone() {
    let c = Cluster::start(web_world(2)).await;
    let k = Kubectl::new(&c);
    let config = Config {
        outputs: weir::controller::Outputs {
            endpoint_slices: false,
            ..Default::default()
        },
        ..Config::default()
    };
    let run = c.run(default_guest().await, config);
    c.wait_ips("app", "web", &["10.1.0.1", "10.1.0.2"], &[])
        .await;
    run.idle().await;
    assert!(k.slices("app", "web").await.is_empty());
    assert_eq!(slice_writes(&c), 0);
    run.stop().await;
}

fn drained(mut pod: Value) -> Value {
    pod["metadata"]["annotations"] = json!({"weir.dev/drain": "true"});
    pod
}

fn swapper(run: &Running) -> std::sync::Arc<weir::swap::Swapper> {
    weir::swap::Swapper::new(
        runtime(weir::runtime::Limits::default()),
        run.handle.clone(),
        weir::swap::SwapConfig::default(),
    )
}

fn ready_of(slices: &[Value], pod: &str) -> Option<bool> {
    endpoint_of(slices, pod).and_then(|(_, e)| e["conditions"]["ready"].as_bool())
}

fn two_pods_one_drained() -> Vec<Value> {
    let mut objects = web_world(0);
    objects.push(drained(pod(
        "app",
        "a",
        json!({"app": "web"}),
        "10.1.0.1",
        true,
    )));
    objects.push(pod("app", "b", json!({"app": "web"}), "10.1.0.2", true));
    objects
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_annotation_policy_marks_the_pod_not_ready_in_its_slice() {
    let c = Cluster::start(two_pods_one_drained()).await;
    let k = Kubectl::new(&c);
    let guest = load_guest(support::guests::example_guest_bytes("drain-annotation")).await;
    let run = c.run(guest, Config::default());
    let slices = k
        .wait_slices("app", "web", "a drained, b ready", |s| {
            ready_of(s, "a") == Some(false) && ready_of(s, "b") == Some(true)
        })
        .await;
    // Same decision, both outputs.
    c.wait_ips("app", "web", &["10.1.0.2"], &["10.1.0.1"]).await;
    let (_, a) = endpoint_of(&slices, "a").unwrap();
    assert_eq!(
        a["conditions"]["serving"], true,
        "the pod itself is still serving"
    );
    run.stop().await;
}

/// The two outputs of a sync are written independently, as upstream's two controllers write
/// them: while the server refuses every Endpoints request, a new ready pod still reaches the
/// Service's slice, and the Endpoints catch up once the server takes them again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_endpoints_write_does_not_hold_back_the_slices() {
    let c = Cluster::start(web_app()).await;
    let k = Kubectl::new(&c);
    let run = c.run_default().await;
    c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;
    k.wait_slices("app", "web", "pod a in the slice", |s| {
        ready_of(s, "a") == Some(true)
    })
    .await;
    // Every client, weir's included, is cut off from Endpoints; slices and pods still go through.
    c.server().faults().partition("", "endpoints");
    c.apply(pod("app", "b", json!({"app": "web"}), "10.1.0.2", true))
        .await;
    k.wait_slices(
        "app",
        "web",
        "pod b in the slice while Endpoints are refused",
        |s| ready_of(s, "a") == Some(true) && ready_of(s, "b") == Some(true),
    )
    .await;
    let stored = c
        .endpoints("app", "web")
        .await
        .expect("the Endpoints exist");
    assert_eq!(
        ips(&stored),
        (vec!["10.1.0.1".to_string()], vec![]),
        "the Endpoints write was refused, so the stored Endpoints still lack pod b"
    );
    c.server().faults().heal();
    c.wait_ips("app", "web", &["10.1.0.1", "10.1.0.2"], &[])
        .await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_swap_to_drain_annotation_changes_the_slices_live() {
    let c = Cluster::start(two_pods_one_drained()).await;
    let k = Kubectl::new(&c);
    let run = c.run_default().await;
    k.wait_slices("app", "web", "both ready under the default guest", |s| {
        ready_of(s, "a") == Some(true) && ready_of(s, "b") == Some(true)
    })
    .await;
    swapper(&run)
        .offer(
            support::guests::example_guest_bytes("drain-annotation"),
            "test",
        )
        .await
        .expect("drain-annotation is accepted");
    k.wait_slices("app", "web", "a drained after the swap", |s| {
        ready_of(s, "a") == Some(false) && ready_of(s, "b") == Some(true)
    })
    .await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapping_between_a_0_1_and_a_0_2_guest_keeps_slices_live() {
    let c = Cluster::start(web_world(2)).await;
    let k = Kubectl::new(&c);
    // A 0.1.0 guest renders Endpoints only, and weir says so.
    let run = c.run(
        load_guest(support::test_guest_bytes("v0-1-default")).await,
        Config::default(),
    );
    c.wait_ips("app", "web", &["10.1.0.1", "10.1.0.2"], &[])
        .await;
    run.idle().await;
    assert_eq!(slice_writes(&c), 0, "a 0.1.0 guest writes no slices");
    assert_eq!(
        run.syncer.slice_stats.unsupported_guests.get(),
        1,
        "said once"
    );
    let guest_metrics = |metrics: &weir::metrics::Metrics| {
        let text = metrics.encode_text().unwrap();
        let world = text
            .lines()
            .find(|l| l.starts_with("weir_guest_info{"))
            .and_then(|l| l.split("world=\"").nth(1))
            .and_then(|w| w.split('"').next())
            .map(str::to_string);
        let renders = text
            .lines()
            .find_map(|l| l.strip_prefix("weir_guest_renders_slices "))
            .map(str::to_string);
        (world, renders)
    };
    assert_eq!(
        guest_metrics(&run.handle.metrics),
        (
            Some("weir:endpoints@0.1.0/endpoint-policy".into()),
            Some("0".into())
        ),
        "the metrics name the 0.1.0 world"
    );
    // To 0.2.0: the slices appear without a restart.
    let swap = swapper(&run);
    swap.offer(weir::runtime::DEFAULT_GUEST.to_vec(), "test")
        .await
        .expect("the default guest is accepted");
    k.wait_slices("app", "web", "a slice after the swap to 0.2.0", |s| {
        lengths(s) == [2]
    })
    .await;
    assert_eq!(
        guest_metrics(&run.handle.metrics),
        (
            Some("weir:endpoints@0.2.0/endpoint-policy".into()),
            Some("1".into())
        ),
        "the metrics follow the swap"
    );
    // Back to 0.1.0: Endpoints follow a readiness flip, the slice is left as it was.
    swap.offer(support::test_guest_bytes("v0-1-default"), "test")
        .await
        .expect("the 0.1.0 guest is accepted");
    run.idle().await;
    let before = slice_writes(&c);
    c.apply(pod("app", "p0", json!({"app": "web"}), "10.1.0.1", false))
        .await;
    c.wait_ips("app", "web", &["10.1.0.2"], &["10.1.0.1"]).await;
    run.idle().await;
    assert_eq!(slice_writes(&c), before);
    run.stop().await;
}
