//! Policies in Python and TypeScript hot-swapped into a running `weir run` (a process, as an
//! operator runs it) against weir-apiserver: each steers Endpoints and EndpointSlices, runs
//! under the limits it carries (`weir policy build --deadline --memory-mib`), and a guest
//! asking for more than the operator's ceilings is refused while the active one serves on.
//!
//! The guests are made as the author makes them: `weir new-policy NAME --lang
//! python|js`, the drain-annotation example's source in place of the template's, and `make -C
//! NAME`, with the tools `make tools` installs (componentize-py; the SDK's npm packages). A
//! missing tool fails the test.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

use super::cluster::*;
use super::http_port;
use super::process::{Proc, free_port};
use super::support::require_tool;
use weir::runtime::{DEFAULT_GUEST, digest};

/// What the Python and JS guests ask for: CPython and SpiderMonkey start in tens of
/// milliseconds, which a debug weir on a busy machine stretches past the 100 ms default.
const GUEST_DEADLINE: &str = "2s";
const GUEST_MEMORY_MIB: u64 = 128;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// `weir ARGS` in `dir`; fails the test unless it exits 0.
fn weir_in(dir: &Path, args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .env("WEIR_CACHE_DIR", compile_cache_dir())
        .env_remove("WEIR_GUEST")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "weir {args:?}: {out:?}");
}

/// Makes the drain-annotation policy in `lang` (`python` or `js`) in `dir` as an author
/// would: a scaffold, the example's source, `make`. Returns the guest's bytes.
fn build_drain_annotation(lang: &str, dir: &Path) -> Vec<u8> {
    require_tool("make", &["--version"]);
    let name = format!("drain-{lang}");
    weir_in(dir, &["new-policy", &name, "--lang", lang]);
    let source = if lang == "python" {
        "policy.py"
    } else {
        "policy.ts"
    };
    let example = root().join("guest/examples/drain-annotation").join(lang);
    std::fs::copy(example.join(source), dir.join(&name).join(source)).unwrap();
    let make = Command::new("make")
        .arg("-C")
        .arg(&name)
        .arg(format!("DEADLINE={GUEST_DEADLINE}"))
        .arg(format!("MEMORY_MIB={GUEST_MEMORY_MIB}"))
        .current_dir(dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("running make");
    assert!(make.status.success(), "make -C {name}: {make:?}");
    std::fs::read(dir.join(&name).join(format!("{name}.wasm"))).unwrap()
}

/// Writes `bytes` to `path` atomically, as `kubectl cp` or a deployment tool would.
fn replace_file(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// `GET /guest` on the plain admin endpoint, as JSON.
async fn guest_status(port: u16) -> Option<Value> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    stream
        .write_all(b"GET /guest HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await
        .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    if !head.contains(" 200 ") {
        return None;
    }
    serde_json::from_str(body).ok()
}

/// Polls `/guest` until `done` holds of it; returns it. Fails after two minutes: a debug
/// weir compiles an 18 MB Python guest in tens of seconds on a busy machine.
async fn wait_status(port: u16, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let status = guest_status(port).await.unwrap_or(Value::Null);
        if done(&status) {
            return status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}; last /guest: {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `/guest` names `digest` as the active guest; returns the status.
async fn wait_active(port: u16, digest: &str) -> Value {
    wait_status(port, &format!("guest {digest} active"), |s| {
        s["active"]["digest"] == digest
    })
    .await
}

/// The pod IPs of the Service's EndpointSlices whose `ready` condition is `ready`.
async fn slice_ips(c: &Cluster, ready: bool) -> Vec<String> {
    let api: Api<EndpointSlice> = Api::namespaced(c.client.clone(), "app");
    let params = ListParams::default().labels("kubernetes.io/service-name=web");
    let Ok(list) = api.list(&params).await else {
        return Vec::new();
    };
    let mut ips: Vec<String> = list
        .items
        .iter()
        .flat_map(|slice| slice.endpoints.iter().flatten())
        .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(ready))
        .flat_map(|e| e.addresses.clone())
        .collect();
    ips.sort();
    ips
}

/// Waits until the Endpoints and the EndpointSlices both list `ready` and `not_ready`.
async fn wait_both(c: &Cluster, ready: &[&str], not_ready: &[&str]) {
    c.wait_ips("app", "web", ready, not_ready).await;
    let want = |ips: &[&str]| ips.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    wait_for(
        &format!("EndpointSlices ready {ready:?}, not ready {not_ready:?}"),
        || async {
            slice_ips(c, true).await == want(ready) && slice_ips(c, false).await == want(not_ready)
        },
    )
    .await;
}

fn web_pod(name: &str, ip: &str, draining: bool) -> Value {
    let mut pod = pod("app", name, json!({"app": "web"}), ip, true);
    if draining {
        pod["metadata"]["annotations"] = json!({"weir.dev/drain": "true"});
    }
    pod
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_and_js_policies_hot_swap_and_steer_endpoints_and_slices() {
    let dir = tempfile::tempdir().unwrap();
    let python = build_drain_annotation("python", dir.path());
    let js = build_drain_annotation("js", dir.path());

    let c = Cluster::start(vec![
        namespace("app"),
        service("app", "web", json!({"app": "web"}), http_port()),
        web_pod("a", "10.1.0.1", false),
        web_pod("b", "10.1.0.2", true),
        web_pod("c", "10.1.0.3", false),
    ])
    .await;
    let kubeconfig = dir.path().join("kubeconfig");
    c.write_kubeconfig(&kubeconfig);
    let guest = dir.path().join("guest.wasm");
    std::fs::write(&guest, DEFAULT_GUEST).unwrap();
    let port = free_port();
    let _run = Proc::spawn(&[
        "run",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--guest",
        guest.to_str().unwrap(),
        "--admin-addr",
        &format!("127.0.0.1:{port}"),
    ]);
    // The default guest ignores the annotation.
    wait_both(&c, &["10.1.0.1", "10.1.0.2", "10.1.0.3"], &[]).await;
    let status = wait_active(port, &digest(DEFAULT_GUEST)).await;
    assert_eq!(status["active"]["limits"]["deadline"], "100ms", "{status}");

    replace_file(&guest, &python);
    let status = wait_active(port, &digest(&python)).await;
    assert_eq!(
        status["active"]["limits"]["deadline"], GUEST_DEADLINE,
        "{status}"
    );
    assert_eq!(
        status["active"]["limits"]["memory-mib"], GUEST_MEMORY_MIB,
        "{status}"
    );
    wait_both(&c, &["10.1.0.1", "10.1.0.3"], &["10.1.0.2"]).await;

    replace_file(&guest, &js);
    wait_active(port, &digest(&js)).await;
    // A change after the swap is the JS policy's to handle.
    c.apply(web_pod("c", "10.1.0.3", true)).await;
    wait_both(&c, &["10.1.0.1"], &["10.1.0.2", "10.1.0.3"]).await;

    // Asking for more than the operator's ceiling (2s by default) is refused at the gate; the
    // JS guest keeps serving.
    let js_guest = dir.path().join("drain-js/drain-js.wasm");
    weir_in(
        dir.path(),
        &[
            "policy",
            "limits",
            js_guest.to_str().unwrap(),
            "-o",
            "greedy.wasm",
            "--deadline",
            "5s",
        ],
    );
    let greedy = dir.path().join("greedy.wasm");
    replace_file(&guest, &std::fs::read(&greedy).unwrap());
    let status = wait_status(port, "the greedy guest's refusal", |s| {
        s["history"].as_array().is_some_and(|h| {
            h.iter().any(|r| {
                r["outcome"] == "refused"
                    && r["reason"]
                        .as_str()
                        .is_some_and(|s| s.contains("--guest-max-deadline"))
            })
        })
    })
    .await;
    assert_eq!(status["active"]["digest"], digest(&js), "{status}");
    c.apply(web_pod("a", "10.1.0.1", true)).await;
    wait_both(&c, &[], &["10.1.0.1", "10.1.0.2", "10.1.0.3"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_asking_above_the_ceiling_stops_weir_run_at_start() {
    let c = Cluster::start(web_app()).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    c.write_kubeconfig(&kubeconfig);
    let default = dir.path().join("default.wasm");
    std::fs::write(&default, DEFAULT_GUEST).unwrap();
    weir_in(
        dir.path(),
        &[
            "policy",
            "limits",
            "default.wasm",
            "-o",
            "greedy.wasm",
            "--memory-mib",
            "1024",
        ],
    );
    let greedy = dir.path().join("greedy.wasm");
    let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
    command.env("WEIR_CACHE_DIR", compile_cache_dir());
    command
        .args(["run", "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("--guest")
        .arg(&greedy)
        .args(["--admin-addr", "127.0.0.1:0"])
        .env("WEIR_METRICS_SECURE", "false");
    let refused = Proc::spawn_logging(command);
    let lines = tokio::task::spawn_blocking(move || {
        let lines = refused.read_until("the refusal", |seen| {
            seen.iter().any(|l| l.contains("--guest-max-memory-mib"))
        });
        (refused.wait("weir run to exit"), lines)
    })
    .await
    .unwrap();
    assert_eq!(lines.0.code(), Some(2), "{:?}", lines.1);
    assert!(
        lines.1.iter().any(|l| l.contains("memory 1024 MiB")),
        "{:?}",
        lines.1
    );
    assert!(
        c.endpoints("app", "web").await.is_none(),
        "nothing was written"
    );
}
