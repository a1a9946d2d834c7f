//! The real `weir` binary as a process: `weir demo`, `weir run` with SIGTERM, `--dry-run`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::cluster::*;

/// A child process whose stdout lines arrive on a channel, so reads can have deadlines.
struct Proc {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Proc {
    fn spawn(args: &[&str]) -> Proc {
        let mut child = Command::new(env!("CARGO_BIN_EXE_weir"))
            .args(args)
            .env("WEIR_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawning weir");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Proc { child, lines }
    }

    /// Reads lines until `done` says the collected output is complete.
    fn read_until(&self, what: &str, mut done: impl FnMut(&[String]) -> bool) -> Vec<String> {
        let deadline = Instant::now() + DEADLINE;
        let mut seen = Vec::new();
        while !done(&seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => seen.push(line),
                Err(_) => panic!(
                    "timed out waiting for {what}; output so far:\n{}",
                    seen.join("\n")
                ),
            }
        }
        seen
    }

    /// Sends `signal` and waits for the exit status.
    fn stop(mut self, signal: &str) -> std::process::ExitStatus {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "weir did not exit after {signal}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn weir_demo_gives_every_demo_service_its_endpoints() {
    let demo = Proc::spawn(&["demo", "--for", "120s"]);
    let services = [
        "shop/web",
        "shop/cart",
        "shop/cart-headless",
        "payments/ledger",
        "payments/gateway",
    ];
    let lines = demo.read_until("every demo Service's endpoints", |seen| {
        services.iter().all(|s| {
            seen.iter()
                .any(|l| l.starts_with(&format!("{s} ")) && !l.contains("ready []  not-ready []"))
        })
    });
    assert!(
        lines.iter().any(|l| l.contains("kubeconfig at")),
        "the demo prints its kubeconfig path"
    );
    let status = demo.stop("-INT");
    assert!(
        status.success(),
        "Ctrl-C stops the demo cleanly: {status:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weir_run_converges_and_exits_zero_on_sigterm() {
    let c = Cluster::start(web_app()).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    c.server.write_kubeconfig(&kubeconfig).unwrap();
    let run = Proc::spawn(&[
        "run",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--workers",
        "2",
        "--admin-addr",
        "127.0.0.1:0",
    ]);
    c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;
    let status = tokio::task::spawn_blocking(move || run.stop("-TERM"))
        .await
        .unwrap();
    assert!(status.success(), "SIGTERM exits 0: {status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_prints_decisions_and_writes_nothing() {
    let c = Cluster::start(web_app()).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    c.server.write_kubeconfig(&kubeconfig).unwrap();
    let run = Proc::spawn(&[
        "run",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--dry-run",
        "--admin-addr",
        "127.0.0.1:0",
    ]);
    let lines = tokio::task::spawn_blocking(move || {
        let lines = run.read_until("the dry-run create", |seen| {
            seen.iter().any(|l| l.contains("\"create\""))
        });
        (run.stop("-TERM"), lines)
    })
    .await
    .unwrap();
    let create: serde_json::Value =
        serde_json::from_str(lines.1.iter().find(|l| l.contains("\"create\"")).unwrap()).unwrap();
    assert_eq!(create["key"], "app/web");
    assert_eq!(
        create["endpoints"]["subsets"][0]["addresses"][0]["ip"],
        "10.1.0.1"
    );
    assert!(lines.0.success());
    assert_eq!(c.endpoints_writes(), 0, "a dry run writes nothing");
    assert!(c.endpoints("app", "web").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weir_demo_churn_rolls_a_pod_with_a_terminating_window() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let demo = Proc::spawn(&[
        "demo",
        "--churn",
        "--for",
        "120s",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
    ]);
    let lines = demo.read_until("a rolling replacement", |seen| {
        seen.iter().any(|l| l.contains("churn: replaced by"))
    });
    let line = lines
        .iter()
        .find(|l| l.contains("churn: replaced by"))
        .unwrap();
    // "<ns>/<old> (pod)   churn: replaced by <new>, terminating for 6s"
    let (ns, old) = line
        .split_whitespace()
        .next()
        .unwrap()
        .split_once('/')
        .unwrap();
    let new = line
        .split("replaced by ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap();
    let kc = kube::config::Kubeconfig::read_from(&kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(kube::Client::try_from(config).unwrap(), ns);
    let replacement = pods.get(new).await.unwrap();
    let ip = replacement.status.unwrap().pod_ip.unwrap();
    let terminating = pods.get_opt(old).await.unwrap();
    assert!(
        terminating.is_some_and(|p| p.metadata.deletion_timestamp.is_some()),
        "{old} stays terminating for its grace period"
    );
    // The replacement's address reaches the Endpoints the demo shows; the old pod goes.
    demo.read_until("the replacement's endpoint", |seen| {
        seen.iter()
            .any(|l| l.starts_with(&format!("{ns}/")) && l.contains(&ip))
    });
    wait_for("the replaced pod to be removed", || {
        let pods = pods.clone();
        async move { pods.get_opt(old).await.unwrap().is_none() }
    })
    .await;
    let status = demo.stop("-INT");
    assert!(status.success(), "{status:?}");
}
