//! What an operator runs against a live cluster, as processes: `weir diff`, `weir snapshot`
//! then `weir test`, `weir status`; and the log of an Endpoints write whose slices fail.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};
use weir::metrics::WriteLabels;

use super::cluster::*;
use super::http_port;
use super::process::{Proc, free_port};
use super::support::{scratch_dir, test_guest};

/// `weir ARGS`: exit code, stdout, stderr.
async fn weir(args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .env("WEIR_CACHE_DIR", compile_cache_dir())
        .args(args)
        .env("WEIR_LOG", "warn")
        .env_remove("WEIR_GUEST")
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Namespace `shopfront`: Service `storefront` (pods `storefront-a` ready, `storefront-b`
/// not ready) and Service `ledger`, labelled so that the `fail-on-label` guest fails it.
fn shop() -> Vec<Value> {
    let mut ledger = service("shopfront", "ledger", json!({"app": "ledger"}), http_port());
    ledger["metadata"]["labels"]["weir.test/fail"] = json!("error");
    vec![
        namespace("shopfront"),
        service(
            "shopfront",
            "storefront",
            json!({"app": "storefront"}),
            http_port(),
        ),
        pod(
            "shopfront",
            "storefront-a",
            json!({"app": "storefront"}),
            "10.7.3.11",
            true,
        ),
        pod(
            "shopfront",
            "storefront-b",
            json!({"app": "storefront"}),
            "10.7.3.12",
            false,
        ),
        ledger,
        pod(
            "shopfront",
            "ledger-a",
            json!({"app": "ledger"}),
            "10.7.3.21",
            true,
        ),
    ]
}

async fn slice_count(c: &Cluster, service: &str) -> usize {
    let api: Api<EndpointSlice> = Api::namespaced(c.client.clone(), "shopfront");
    let selector = format!("kubernetes.io/service-name={service}");
    api.list(&ListParams::default().labels(&selector))
        .await
        .map(|l| l.items.len())
        .unwrap_or(0)
}

/// The shop, converged by the default guest (both outputs written), and a kubeconfig for it.
async fn converged_shop() -> (Cluster, tempfile::TempDir, PathBuf) {
    let c = Cluster::start(shop()).await;
    let run = c.run_default().await;
    c.wait_ips("shopfront", "storefront", &["10.7.3.11"], &["10.7.3.12"])
        .await;
    c.wait_ips("shopfront", "ledger", &["10.7.3.21"], &[]).await;
    for service in ["storefront", "ledger"] {
        let c = &c;
        wait_for("the shop's EndpointSlices", move || async move {
            slice_count(c, service).await == 1
        })
        .await;
    }
    run.idle().await;
    run.stop().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    c.write_kubeconfig(&kubeconfig);
    (c, dir, kubeconfig)
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The default guest as a file, for `--against`.
async fn default_guest_file(dir: &Path) -> PathBuf {
    let file = dir.join("default.wasm");
    let (code, _, err) = weir(&["guest", "export", path(&file)]).await;
    assert_eq!(code, 0, "{err}");
    file
}

fn service_report<'a>(report: &'a Value, key: &str) -> &'a Value {
    report["services"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == key)
        .unwrap_or_else(|| panic!("no {key} in {report:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weir_diff_says_what_a_guest_would_change_with_kubectl_exit_codes() {
    let (c, dir, kubeconfig) = converged_shop().await;
    let k = path(&kubeconfig);
    // The shop's two Services, and those the server brings itself (kube-apiserver's
    // `default/kubernetes`, which has no selector and so never changes).
    let services: Api<k8s_openapi::api::core::v1::Service> = Api::all(c.client.clone());
    let all = services
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .len();

    // The guest that wrote the state changes nothing: exit 0, and nothing on stderr (no
    // progress bar on a pipe).
    let (code, out, err) = weir(&["diff", "--kubeconfig", k]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!(
            "{all} Services: 0 would change, {all} unchanged, 0 failed"
        )),
        "{out}"
    );
    assert!(err.is_empty(), "stderr on a pipe: {err:?}");

    // A guest publishing every address as not ready: exit 1, the ready pod flips in both
    // outputs, as text and as JSON.
    let not_ready = test_guest("all-not-ready");
    let g = path(&not_ready);
    let (code, out, err) = weir(&["diff", "--kubeconfig", k, "--guest", g]).await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("shopfront/storefront:"), "{out}");
    assert!(out.contains("Endpoints: update"), "{out}");
    assert!(out.contains("~ 10.7.3.11: ready -> not ready"), "{out}");
    assert!(
        out.contains("EndpointSlices: 0 created, 1 updated, 0 deleted"),
        "{out}"
    );
    let (code, out, err) = weir(&["diff", "--kubeconfig", k, "--guest", g, "-o", "json"]).await;
    assert_eq!(code, 1, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["mode"], "stored");
    assert_eq!(report["totals"]["services"], all);
    assert_eq!(report["totals"]["changes"], 2, "{report:#}");
    assert_eq!(report["totals"]["failed"], 0);
    let storefront = service_report(&report, "shopfront/storefront");
    assert_eq!(storefront["result"], "changes");
    assert_eq!(storefront["endpoints"]["action"], "update");
    assert_eq!(
        storefront["endpoints"]["changed"],
        json!([{"address": "10.7.3.11", "before": {"ready": true}, "after": {"ready": false}}])
    );
    assert_eq!(storefront["endpoints"]["added"], json!([]));
    assert_eq!(storefront["endpoints"]["removed"], json!([]));
    let slices = &storefront["endpointSlices"];
    assert_eq!(
        (&slices["creates"], &slices["updates"], &slices["deletes"]),
        (&json!(0), &json!(1), &json!(0))
    );
    assert_eq!(slices["changed"][0]["address"], "10.7.3.11");
    assert_eq!(slices["changed"][0]["before"]["ready"], true);
    assert_eq!(slices["changed"][0]["after"]["ready"], false);
    assert_eq!(
        report["totals"]["endpoints"]["changed"], 2,
        "both ready pods flip"
    );
    assert_eq!(report["totals"]["endpointSlices"]["updates"], 2);

    // A guest that fails for one Service: that Service is reported, the other still compared.
    let failing = test_guest("fail-on-label");
    let (code, out, err) = weir(&[
        "diff",
        "--kubeconfig",
        k,
        "--guest",
        path(&failing),
        "-o",
        "json",
    ])
    .await;
    assert_eq!(
        code, 1,
        "a failure is something an operator must see: {err}"
    );
    let report: Value = serde_json::from_str(&out).unwrap();
    let ledger = service_report(&report, "shopfront/ledger");
    assert_eq!(ledger["result"], "failed");
    assert!(
        ledger["error"]
            .as_str()
            .unwrap()
            .contains("refusing shopfront/ledger"),
        "{ledger}"
    );
    assert_eq!(
        service_report(&report, "shopfront/storefront")["result"],
        "unchanged"
    );
    assert_eq!(report["totals"]["failed"], 1);
    let (_, text, _) = weir(&["diff", "--kubeconfig", k, "--guest", path(&failing)]).await;
    assert!(text.contains("shopfront/ledger: FAILED:"), "{text}");

    // Two guests on the same state: the same guest twice agrees, two policies do not.
    let default = default_guest_file(dir.path()).await;
    let d = path(&default);
    let (code, out, err) = weir(&["diff", "--kubeconfig", k, "--guest", d, "--against", d]).await;
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = weir(&[
        "diff",
        "--kubeconfig",
        k,
        "--guest",
        g,
        "--against",
        d,
        "-o",
        "json",
        "-l",
        "app=storefront",
    ])
    .await;
    assert_eq!(code, 1, "{out}{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["mode"], "against");
    assert_eq!(
        report["totals"]["services"], 1,
        "the selector picks one Service"
    );
    let storefront = service_report(&report, "shopfront/storefront");
    assert_eq!(storefront["endpoints"]["action"], "differs");
    assert_eq!(
        storefront["endpoints"]["changed"][0]["address"],
        "10.7.3.11"
    );
    assert_eq!(
        storefront["endpointSlices"]["changed"][0]["address"],
        "10.7.3.11"
    );

    // The command itself failing is exit 2: an unreadable guest, an unreachable cluster.
    let (code, _, err) = weir(&["diff", "--kubeconfig", k, "--guest", "/nonexistent.wasm"]).await;
    assert_eq!(code, 2, "{err}");
    let missing = dir.path().join("no-kubeconfig");
    let (code, _, err) = weir(&["diff", "--kubeconfig", path(&missing)]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("kubeconfig"), "{err}");
}

/// Every file under `dir`, recursively, with its text.
fn files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path, text));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weir_snapshot_cases_pass_with_the_guest_that_wrote_them_and_redact_names_and_ips() {
    let (c, _dir, kubeconfig) = converged_shop().await;
    let k = path(&kubeconfig);
    let out_dir = scratch_dir("snapshot-plain");
    let (code, out, err) = weir(&[
        "snapshot",
        "--kubeconfig",
        k,
        "--namespace",
        "shopfront",
        "-o",
        path(&out_dir),
    ])
    .await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("wrote 2 case(s)"), "{out}");
    assert!(out_dir.join("shopfront/storefront.yaml").exists());
    let (code, out, err) = weir(&["test", path(&out_dir)]).await;
    assert_eq!(code, 0, "the default guest wrote this state: {out}{err}");
    assert!(out.contains("2 passed, 0 failed"), "{out}");
    // Another guest fails exactly the Services it would change.
    let not_ready = test_guest("all-not-ready");
    let (code, out, _) = weir(&["test", "--guest", path(&not_ready), path(&out_dir)]).await;
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL") && out.contains("storefront.yaml"),
        "{out}"
    );
    assert!(out.contains("action: expected none, got update"), "{out}");

    // Redacted: the cases still pass, and no original name, uid or address is left.
    let redacted = scratch_dir("snapshot-redacted");
    let (code, out, err) = weir(&[
        "snapshot",
        "--kubeconfig",
        k,
        "-n",
        "shopfront",
        "--redact",
        "-o",
        path(&redacted),
    ])
    .await;
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = weir(&["test", path(&redacted)]).await;
    assert_eq!(code, 0, "redaction keeps the cases whole: {out}{err}");
    assert!(out.contains("2 passed, 0 failed"), "{out}");
    let mut originals: Vec<String> = [
        "shopfront",
        "storefront",
        "ledger",
        "node-1",
        "10.7.3.11",
        "10.7.3.12",
        "10.7.3.21",
    ]
    .map(String::from)
    .to_vec();
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(c.client.clone(), "shopfront");
    for pod in pods.list(&ListParams::default()).await.unwrap() {
        originals.push(pod.metadata.uid.unwrap());
    }
    let services: Api<k8s_openapi::api::core::v1::Service> =
        Api::namespaced(c.client.clone(), "shopfront");
    for svc in services.list(&ListParams::default()).await.unwrap() {
        originals.push(svc.metadata.uid.unwrap());
        originals.extend(svc.spec.unwrap().cluster_ip.filter(|ip| ip != "None"));
    }
    let written = files(&redacted);
    assert_eq!(written.len(), 2);
    for (file, text) in &written {
        for original in &originals {
            assert!(
                !text.contains(original.as_str()),
                "{} still holds {original}:\n{text}",
                file.display()
            );
            assert!(!file.to_str().unwrap().contains(original.as_str()));
        }
    }
}

/// Runs `weir status ARGS -o json` until it exits 0 with a report `want` accepts.
async fn wait_status(args: &[&str], want: impl Fn(&Value) -> bool) -> Value {
    let args = [args, &["-o", "json"][..]].concat();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let (code, out, err) = weir(&args).await;
        if code == 0 {
            let report: Value = serde_json::from_str(&out).unwrap();
            if want(&report) {
                return report;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "weir status never said what was awaited: {code} {out}{err}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weir_status_names_the_leader_its_guest_and_the_last_swap_and_refusal() {
    // The Lease's namespace exists, as it does in a cluster weir is deployed to.
    let mut objects = web_app();
    objects.push(namespace("weir-system"));
    let c = Cluster::start(objects).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    c.write_kubeconfig(&kubeconfig);
    let k = path(&kubeconfig);
    let lease = [
        "status",
        "--kubeconfig",
        k,
        "--leader-elect-resource-namespace",
        "weir-system",
    ];

    let (code, out, err) = weir(&lease).await;
    assert_eq!(code, 1, "nobody leads yet: {out}{err}");
    assert!(out.contains("Lease weir-system/weir: none"), "{out}");

    let guest = dir.path().join("guest.wasm");
    let (code, _, err) = weir(&["guest", "export", path(&guest)]).await;
    assert_eq!(code, 0, "{err}");
    let port = free_port();
    let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
    command.env("WEIR_CACHE_DIR", compile_cache_dir());
    command
        .args(["run", "--kubeconfig", k, "--guest", path(&guest)])
        .args(["--guest-poll", "100ms"])
        .args(["--admin-addr", &format!("127.0.0.1:{port}")])
        .args(["--leader-elect-resource-namespace", "weir-system"])
        // `weir status --admin-url http://...` reads /guest beside the probes; over HTTPS
        // with a token it is tested in secure.rs.
        .env("WEIR_METRICS_SECURE", "false")
        .env("WEIR_LOG", "warn");
    let _run = Proc::spawn_logging(command);
    let admin = format!("http://127.0.0.1:{port}");
    let with_admin = [&lease[..], &["--admin-url", admin.as_str()][..]].concat();

    let report = wait_status(&with_admin, |_| true).await;
    assert_eq!(report["lease"], "weir-system/weir");
    assert_eq!(report["leader"]["held"], true);
    let holder = report["leader"]["holder"].as_str().unwrap().to_string();
    assert!(!holder.is_empty());
    let digest = weir::runtime::digest(weir::runtime::DEFAULT_GUEST);
    assert_eq!(report["guest"]["active"]["digest"], json!(digest));
    assert_eq!(report["guest"]["active"]["world"], "weir:endpoints@0.2.0");

    // A broken candidate is refused, then another policy swapped in: both show.
    std::fs::write(&guest, b"not a component").unwrap();
    wait_status(&with_admin, |r| r["guest"]["refusals"].as_u64() > Some(0)).await;
    std::fs::copy(test_guest("all-not-ready"), &guest).unwrap();
    let report = wait_status(&with_admin, |r| r["guest"]["swaps"].as_u64() > Some(0)).await;
    let swapped_to = report["guest"]["active"]["digest"].as_str().unwrap();
    assert_ne!(swapped_to, digest);

    let (code, out, err) = weir(&with_admin).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("Lease weir-system/weir: {holder} leads")),
        "{out}"
    );
    assert!(out.contains("Guest: weir:endpoints@0.2.0 sha256:"), "{out}");
    let last_swap = out.lines().find(|l| l.starts_with("Last swap: ")).unwrap();
    assert!(last_swap.ends_with(&format!("-> {swapped_to}")), "{out}");
    let last_refusal = out
        .lines()
        .find(|l| l.starts_with("Last refusal: "))
        .unwrap();
    assert_ne!(last_refusal, "Last refusal: none", "{out}");
}

/// When the Endpoints are written and the slices fail, the Endpoints write is still
/// logged and counted: it happened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoints_write_is_reported_even_when_the_slices_then_fail() {
    let c = Cluster::start(web_app()).await;
    let run = c.run_default().await;
    c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;
    run.idle().await;
    let updates = || {
        run.handle
            .metrics
            .writes
            .get_or_create(&WriteLabels {
                action: "update",
                result: "success",
            })
            .get()
    };
    let before = updates();
    let updates = &updates;
    // Every EndpointSlice request now fails; Endpoints still go through.
    c.server().faults().partition("", "endpointslices");
    c.apply(pod("app", "b", json!({"app": "web"}), "10.1.0.2", true))
        .await;
    c.wait_ips("app", "web", &["10.1.0.1", "10.1.0.2"], &[])
        .await;
    wait_for("the Endpoints update to be counted", move || async move {
        updates() > before
    })
    .await;
    run.stop().await;
}
