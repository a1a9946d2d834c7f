//! The real `weir` binary as a process: `weir run` with SIGTERM, `--dry-run` (`weir demo`
//! has its own tests, `host/tests/demo.rs`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::cluster::*;
use super::http_port;
use serde_json::json;

/// A child process whose stdout lines arrive on a channel, so reads can have deadlines.
pub(super) struct Proc {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Proc {
    pub(super) fn spawn(args: &[&str]) -> Proc {
        let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
        command.env("WEIR_CACHE_DIR", compile_cache_dir());
        command
            .args(args)
            .env("WEIR_LOG", "warn")
            // Tests scrape /metrics beside the probes; secure serving has its own test.
            .env("WEIR_METRICS_SECURE", "false")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command.spawn().expect("spawning weir");
        let stdout = child.stdout.take().unwrap();
        Proc::reading(child, stdout)
    }

    /// Runs `command` (the weir binary, set up by the caller) with its log (stderr) as the
    /// lines read.
    pub(super) fn spawn_logging(mut command: Command) -> Proc {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning weir");
        let stderr = child.stderr.take().unwrap();
        Proc::reading(child, stderr)
    }

    fn reading(child: Child, output: impl std::io::Read + Send + 'static) -> Proc {
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(output).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Proc { child, lines }
    }

    /// The process id.
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Reads lines until `done` says the collected output is complete.
    pub(super) fn read_until(
        &self,
        what: &str,
        done: impl FnMut(&[String]) -> bool,
    ) -> Vec<String> {
        self.read_until_within(DEADLINE, what, done)
    }

    /// [`Proc::read_until`] with a window of `limit`.
    pub(super) fn read_until_within(
        &self,
        limit: Duration,
        what: &str,
        mut done: impl FnMut(&[String]) -> bool,
    ) -> Vec<String> {
        let deadline = Instant::now() + limit;
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
    pub(super) fn stop(self, signal: &str) -> std::process::ExitStatus {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.wait(&format!("weir to exit after {signal}"))
    }

    /// The exit status, if the process has exited.
    pub(super) fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().unwrap()
    }

    /// Waits for the process to exit on its own; fails after [`DEADLINE`].
    pub(super) fn wait(mut self, what: &str) -> std::process::ExitStatus {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A test that fails half-way does not leave its weir running.
impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weir_run_converges_and_exits_zero_on_sigterm() {
    let c = Cluster::start(web_app()).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    c.write_kubeconfig(&kubeconfig);
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

/// weir makes a registry client only for a guest from a registry: setting one up can fail for
/// reasons that do not concern a guest file or a built-in guest (an image built from scratch
/// has no root certificates, and a client refuses to be built without any; a docker config file
/// may be malformed). Here a malformed docker config file stands for them: an `oci://` guest is
/// refused at start because of it, the built-in guest runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weir_run_sets_up_a_registry_client_only_for_a_guest_from_a_registry() {
    let c = Cluster::start(web_app()).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    c.write_kubeconfig(&kubeconfig);
    let docker_config = dir.path().join("docker");
    std::fs::create_dir(&docker_config).unwrap();
    std::fs::write(docker_config.join("config.json"), "{not json").unwrap();
    let weir = |extra: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
        command
            .args(["run", "--kubeconfig", kubeconfig.to_str().unwrap()])
            .args(["--leader-elect=false", "--admin-addr", "127.0.0.1:0"])
            .args(extra)
            .env("WEIR_CACHE_DIR", compile_cache_dir())
            .env("WEIR_METRICS_SECURE", "false")
            .env("DOCKER_CONFIG", &docker_config);
        command
    };
    let refused = weir(&["--guest", "oci://127.0.0.1:1/weir/none:1"])
        .output()
        .expect("running weir");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && stderr.contains("config.json"),
        "an oci:// guest needs the registry client, which the docker config file breaks: \
         {refused:?}"
    );
    let run = Proc::spawn_logging(weir(&[]));
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
    c.write_kubeconfig(&kubeconfig);
    let run = Proc::spawn(&[
        "run",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--dry-run",
        "--admin-addr",
        "127.0.0.1:0",
    ]);
    let lines = tokio::task::spawn_blocking(move || {
        let lines = run.read_until("the dry-run creates", |seen| {
            seen.iter()
                .any(|l| l.contains("\"create\"") && l.contains("\"endpoints\""))
                && seen
                    .iter()
                    .any(|l| l.contains("\"create\"") && l.contains("\"endpointSlice\""))
        });
        (run.stop("-TERM"), lines)
    })
    .await
    .unwrap();
    let create: serde_json::Value = serde_json::from_str(
        lines
            .1
            .iter()
            .find(|l| l.contains("\"endpoints\""))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(create["key"], "app/web");
    assert_eq!(
        create["endpoints"]["subsets"][0]["addresses"][0]["ip"],
        "10.1.0.1"
    );
    assert!(lines.0.success());
    let slice: serde_json::Value = serde_json::from_str(
        lines
            .1
            .iter()
            .find(|l| l.contains("\"endpointSlice\""))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        slice["endpointSlice"]["endpoints"][0]["addresses"][0],
        "10.1.0.1"
    );
    assert_eq!(c.endpoints_writes(), 0, "a dry run writes nothing");
    assert_eq!(c.writes("endpointslices"), 0);
    assert!(c.endpoints("app", "web").await.is_none());
}

/// A free TCP port on 127.0.0.1 (bound and released; the race with other tests is harmless
/// because the kernel does not hand out a just-released ephemeral port again at once).
pub(super) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` with an Accept header; returns (content type, body). HTTP/1.0 over a plain
/// socket keeps the test free of an HTTP client dependency.
fn http_get(port: u16, path: &str, accept: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: localhost\r\nAccept: {accept}\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    let content_type = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-type:")
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_default();
    (content_type, body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_scrape_passes_promtool_and_covers_the_alerts() {
    let c = Cluster::start(web_app()).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    c.write_kubeconfig(&kubeconfig);
    let port = free_port();
    let admin = format!("127.0.0.1:{port}");
    let run = Proc::spawn(&[
        "run",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--admin-addr",
        &admin,
    ]);
    c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;
    let (classic, openmetrics) = tokio::task::spawn_blocking(move || {
        let scrape = |accept| {
            let deadline = Instant::now() + DEADLINE;
            loop {
                // The Endpoints write is counted when it is made, the sync once its slices are
                // written too: wait for both.
                let got = http_get(port, "/metrics", accept);
                let counted = got.1.contains(
                    "weir_endpoints_writes_total{action=\"create\",result=\"success\"} 1",
                ) && got.1.contains("weir_syncs_total{result=\"success\"}");
                if counted || Instant::now() > deadline {
                    return got;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        let classic = scrape("text/plain;version=0.0.4;q=0.5,*/*;q=0.1");
        let openmetrics =
            scrape("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5");
        assert!(run.stop("-TERM").success());
        (classic, openmetrics)
    })
    .await
    .unwrap();

    // Classic text by default, OpenMetrics when asked.
    assert!(
        classic.0.starts_with("text/plain; version=0.0.4"),
        "{}",
        classic.0
    );
    assert!(
        openmetrics.0.starts_with("application/openmetrics-text"),
        "{}",
        openmetrics.0
    );
    assert!(openmetrics.1.trim_end().ends_with("# EOF"));
    let body = &classic.1;
    for line in [
        "workqueue_adds_total{name=\"endpoint\"}",
        "workqueue_depth{name=\"endpoint\"}",
        "workqueue_retries_total{name=\"endpoint\"}",
        "workqueue_queue_duration_seconds_bucket{name=\"endpoint\",le=\"1e-06\"}",
        "workqueue_queue_duration_seconds_bucket{name=\"endpoint\",le=\"1e-05\"}",
        "workqueue_queue_duration_seconds_bucket{name=\"endpoint\",le=\"1000\"}",
        "workqueue_work_duration_seconds_count{name=\"endpoint\"}",
        "workqueue_unfinished_work_seconds{name=\"endpoint\"}",
        "workqueue_longest_running_processor_seconds{name=\"endpoint\"}",
        "weir_endpoints_writes_total{action=\"create\",result=\"success\"} 1",
        "weir_guest_calls_total{result=\"ok\"}",
        "weir_guest_call_duration_seconds_count",
        "weir_sync_duration_seconds_count",
        "weir_syncs_total{result=\"success\"}",
        "leader_election_master_status{name=\"weir\"} 1",
    ] {
        assert!(body.contains(line), "no {line} in:\n{body}");
    }
    let digest = weir::runtime::digest(weir::runtime::DEFAULT_GUEST);
    assert!(
        body.contains(&format!(
            "weir_guest_info{{digest=\"{digest}\",world=\"weir:endpoints@0.2.0/endpoint-policy\"}} 1"
        )),
        "{body}"
    );
    // Every metric the example alerts and the operations guide name is exported (under its
    // _total name for counters).
    for (file, what) in [
        (
            "../deploy/kubernetes/monitoring/prometheusrule.yaml",
            "the alerts use",
        ),
        ("../docs/operations.md", "docs/operations.md names"),
    ] {
        let text =
            std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
                .unwrap();
        let names: std::collections::BTreeSet<&str> = text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            // `workqueue_*` in prose is a family, not a name.
            .filter(|w| {
                (w.starts_with("weir_")
                    || w.starts_with("workqueue_")
                    || w.starts_with("leader_election_"))
                    && !w.ends_with('_')
            })
            .collect();
        assert!(names.len() >= 4, "{file}: {names:?}");
        for name in names {
            assert!(
                body.contains(&format!("\n# TYPE {name} ")),
                "{what} {name}, which weir does not export"
            );
        }
    }

    super::support::require_tool("promtool", &["--version"]);
    // promtool reads the classic format (the one Prometheus gets unless it asks otherwise).
    {
        let scraped = &classic.1;
        let mut promtool = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        promtool
            .stdin
            .take()
            .unwrap()
            .write_all(scraped.as_bytes())
            .unwrap();
        let out = promtool.wait_with_output().unwrap();
        assert!(
            out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
            "promtool check metrics:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_carry_ts_level_msg_and_key_and_rust_log_applies() {
    let c = Cluster::start(web_app()).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    c.write_kubeconfig(&kubeconfig);
    let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
    command.env("WEIR_CACHE_DIR", compile_cache_dir());
    command
        .args(["run", "--log-format", "json", "--admin-addr", "127.0.0.1:0"])
        .env("WEIR_METRICS_SECURE", "false")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        // No --log: RUST_LOG decides (weir's debug lines, everything else from warn).
        .env_remove("WEIR_LOG")
        .env("RUST_LOG", "warn,weir=debug");
    let run = Proc::spawn_logging(command);
    let (status, lines) = tokio::task::spawn_blocking(move || {
        let lines = run.read_until("the write of app/web, logged", |seen| {
            seen.iter()
                .any(|l| l.contains("endpoints written") && l.contains("app/web"))
        });
        (run.stop("-TERM"), lines)
    })
    .await
    .unwrap();
    assert!(status.success());
    let parsed: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    for line in &parsed {
        let ts = line["ts"].as_str().expect("ts");
        ts.parse::<k8s_openapi::jiff::Timestamp>()
            .unwrap_or_else(|e| panic!("ts {ts}: {e}"));
        let level = line["level"].as_str().expect("level");
        assert!(["error", "warn", "info", "debug", "trace"].contains(&level));
        assert!(line["msg"].is_string(), "{line}");
        let target = line["target"].as_str().unwrap();
        assert!(
            target.starts_with("weir") || level == "warn" || level == "error",
            "RUST_LOG keeps other crates at warn: {line}"
        );
    }
    let written = parsed
        .iter()
        .find(|l| l["msg"] == "endpoints written")
        .unwrap();
    assert_eq!(written["key"], "app/web");
    assert_eq!(written["action"], "create");
    assert_eq!(written["level"], "info");
    assert!(
        parsed.iter().any(|l| l["level"] == "debug"),
        "RUST_LOG's weir=debug applies"
    );
}

/// weir lists and watches pods and Nodes in protobuf where the server serves it, as
/// kube-controller-manager does (kube-apiserver); weir-apiserver answers in JSON, and weir
/// reads that instead. `--kube-api-content-type application/json` keeps to JSON everywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_and_nodes_are_read_in_protobuf_where_the_server_serves_it() {
    let c = Cluster::start(web_app()).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    c.write_kubeconfig(&kubeconfig);
    let served = if crate::real::selected() {
        "protobuf"
    } else {
        "json"
    };
    // The first run writes app/web's Endpoints from the pods it read; the second finds them
    // written.
    for (flags, expected, writes) in [
        (&[][..], served, true),
        (
            &["--kube-api-content-type", "application/json"][..],
            "json",
            false,
        ),
    ] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
        command
            .env("WEIR_CACHE_DIR", compile_cache_dir())
            .env("WEIR_METRICS_SECURE", "false")
            .args(["run", "--log-format", "json", "--admin-addr", "127.0.0.1:0"])
            .args(flags)
            .arg("--kubeconfig")
            .arg(&kubeconfig);
        let run = Proc::spawn_logging(command);
        let lines = tokio::task::spawn_blocking(move || {
            let lines = run.read_until("the pods and Nodes listed, and app/web written", |seen| {
                let listed = |kind: &str| {
                    seen.iter()
                        .any(|l| l.contains("\"listed\"") && l.contains(&format!("\"{kind}\"")))
                };
                listed("pods")
                    && listed("nodes")
                    && (!writes || seen.iter().any(|l| l.contains("endpoints written")))
            });
            assert!(run.stop("-TERM").success());
            lines
        })
        .await
        .unwrap();
        for kind in ["pods", "nodes"] {
            let listed: serde_json::Value = lines
                .iter()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find(|l| l["msg"] == "listed" && l["kind"] == kind)
                .unwrap();
            assert_eq!(listed["encoding"], expected, "{kind}, {flags:?}: {listed}");
        }
        c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;
    }
}

/// A first start as the image makes it: the guest compiled ahead of time (`weir guest
/// compile`, a process of its own), and `weir run --compiled-guests` takes its machine code
/// from there instead of compiling (no `--cache-dir` to fall back on), then converges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weir_run_takes_the_guest_compiled_ahead_of_time() {
    let c = Cluster::start(web_app()).await;
    let (dir, kubeconfig) = kubeconfig_of(&c);
    let compiled = dir.path().join("compiled");
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["guest", "compile", "--into"])
        .arg(&compiled)
        .env("WEIR_LOG", "warn")
        .output()
        .expect("running weir guest compile");
    assert!(out.status.success(), "{out:?}");
    let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
    command
        .args([
            "run",
            "--kubeconfig",
            &kubeconfig,
            "--admin-addr",
            "127.0.0.1:0",
        ])
        .args(["--leader-elect=false", "--compiled-guests"])
        .arg(&compiled)
        .env_remove("WEIR_CACHE_DIR")
        .env("WEIR_METRICS_SECURE", "false")
        .env("WEIR_LOG", "info");
    let run = Proc::spawn_logging(command);
    let (run, lines) = tokio::task::spawn_blocking(move || {
        let lines = run.read_until("the guest loaded", |seen| {
            seen.iter().any(|l| l.contains("guest loaded"))
        });
        (run, lines)
    })
    .await
    .unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("compiled form taken from --compiled-guests")),
        "{lines:#?}"
    );
    assert!(!lines.iter().any(|l| l.contains("compiling")), "{lines:#?}");
    // Its log is a pipe, as in a container: plain text, no colour codes.
    assert!(!lines.iter().any(|l| l.contains('\u{1b}')), "{lines:#?}");
    c.wait_ips("app", "web", &["10.1.0.1"], &[]).await;
    let status = tokio::task::spawn_blocking(move || run.stop("-TERM"))
        .await
        .unwrap();
    assert!(status.success(), "SIGTERM exits 0: {status:?}");
}

/// A kubeconfig file for `c`'s server, in a directory that lives as long as the first value.
fn kubeconfig_of(c: &Cluster) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    c.write_kubeconfig(&path);
    (dir, path.to_str().unwrap().to_string())
}

/// The most requests any stretch of `span` may hold under a token bucket of `qps` and
/// `burst`, measured at the server: the bucket's own bound, plus `lag` worth of tokens for
/// requests admitted just before the stretch that arrive in it (network, pool and scheduling
/// delay between the client's limiter and the server's clock).
fn bucket_bound(qps: f64, burst: usize, span: Duration, lag: Duration) -> f64 {
    burst as f64 + qps * (span + lag).as_secs_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_api_qps_and_burst_hold_for_each_bucket_under_a_burst_of_1000_services() {
    const SERVICES: usize = 1000;
    const QPS: f64 = 200.0;
    const BURST: usize = 10;
    // Generous so the check is deterministic on a loaded machine, yet far below what weir
    // sends unlimited (it converges these 1,000 Services in a fraction of the time).
    const LAG: Duration = Duration::from_millis(500);
    let mut seed = vec![namespace("load")];
    for i in 0..SERVICES {
        let app = json!({ "app": format!("a{i}") });
        seed.push(service("load", &format!("s{i}"), app.clone(), http_port()));
        let ip = format!("10.2.{}.{}", i / 250, i % 250 + 1);
        seed.push(pod("load", &format!("p{i}"), app, &ip, true));
    }
    let c = Cluster::start(seed).await;
    c.server().record_requests();
    let (_dir, kubeconfig) = kubeconfig_of(&c);
    let run = Proc::spawn(&[
        "run",
        "--kubeconfig",
        &kubeconfig,
        "--kube-api-qps",
        &QPS.to_string(),
        "--kube-api-burst",
        &BURST.to_string(),
        "--admin-addr",
        "127.0.0.1:0",
    ]);
    // One Endpoints and one EndpointSlice per Service: 1,000 writes in each output's bucket,
    // 5 s at the limit.
    let expected = Duration::from_secs_f64(SERVICES as f64 / QPS);
    let deadline = Instant::now() + expected + DEADLINE;
    let store = c.server().store();
    let converged = || {
        store.count("endpoints") == SERVICES
            && store.count("endpointslices") == SERVICES
            && (0..SERVICES).step_by(97).all(|i| {
                store
                    .get("endpoints", "load", &format!("s{i}"))
                    .is_some_and(|e| {
                        e["subsets"][0]["addresses"][0]["ip"]
                            == format!("10.2.{}.{}", i / 250, i % 250 + 1)
                    })
            })
    };
    while !converged() {
        assert!(
            Instant::now() < deadline,
            "not converged: {} Endpoints, {} EndpointSlices",
            store.count("endpoints"),
            store.count("endpointslices")
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let status = tokio::task::spawn_blocking(move || run.stop("-TERM"))
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");

    // Only weir talks to the server over HTTP here (the test reads the store in process).
    // Its Lease requests go through a client and bucket of their own (a renewal must not
    // queue behind writes), so they are left out. Each output has a bucket of its own (its
    // informer and its writes), and the shared watches and Events a third.
    let requests = c.server().requests();
    let bucket_of = |path: &str| {
        if path.contains("/endpointslices") {
            "endpointslices"
        } else if path.contains("/endpoints") {
            "endpoints"
        } else {
            "shared"
        }
    };
    assert!(requests.len() > 2 * SERVICES, "{} requests", requests.len());
    for bucket in ["endpoints", "endpointslices", "shared"] {
        let times: Vec<Instant> = requests
            .iter()
            .filter(|r| !r.path.contains("/leases") && bucket_of(&r.path) == bucket)
            .map(|r| r.at)
            .collect();
        if bucket != "shared" {
            assert!(
                times.len() >= SERVICES,
                "{bucket}: {} requests",
                times.len()
            );
        }
        let mut worst = (0.0f64, 0, 0);
        for (i, start) in times.iter().enumerate() {
            for (j, end) in times.iter().enumerate().skip(i) {
                let count = j - i + 1;
                let bound = bucket_bound(QPS, BURST, *end - *start, LAG);
                assert!(
                    count as f64 <= bound,
                    "{bucket}: {count} requests within {:?} (requests {i}..={j}); a bucket of \
                     {QPS}/s, burst {BURST} allows {bound:.0}",
                    *end - *start
                );
                let share = count as f64 / bound;
                if share > worst.0 {
                    worst = (share, i, j);
                }
            }
        }
        if let (Some(first), Some(last)) = (times.first(), times.last()) {
            let span = *last - *first;
            eprintln!(
                "{bucket}: {} requests in {span:?} ({:.1}/s); fullest stretch: {:.0}% of its bound",
                times.len(),
                times.len() as f64 / span.as_secs_f64().max(f64::EPSILON),
                worst.0 * 100.0
            );
        }
    }
}
