//! The guest deadline holds in every command that runs a guest, whatever the guest spends its
//! time on: computing (`loop-forever`), sleeping (`sleep`), spinning on the clock
//! (`clock-spin`) or blocking on a long WASI timer (`poll-timer`). Each command is run as a
//! user runs it, as a process, and must exit by itself with a clear error and its exit code.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::{request, scratch_dir, test_guest};
use weir::runtime::{CallError, Limits, Runtime};

/// A Service the stalling test guests stall on (`loop-forever` loops on any Service).
const STALL_CASE: &str = r#"
name: a Service the test guests stall on
key: ns/web
service:
  metadata: {name: web, namespace: ns, labels: {weir.test/stall: "true"}}
  spec: {selector: {app: web}, clusterIP: 10.96.0.1, ipFamilies: [IPv4], ports: [{name: http, port: 80, targetPort: 8080}]}
pods:
  - metadata: {name: a, namespace: ns, uid: a-uid, labels: {app: web}}
    spec: {nodeName: n1, containers: [{name: c}]}
    status: {phase: Running, podIP: 10.0.0.1, podIPs: [{ip: 10.0.0.1}], conditions: [{type: Ready, status: "True"}]}
endpoints: null
"#;

const STALLING: [&str; 4] = ["loop-forever", "sleep", "clock-spin", "poll-timer"];

/// How long a command may take in all: compiling the guest in a debug build on a loaded
/// machine takes seconds; a command that ignores the deadline never ends.
const PROCESS_LIMIT: Duration = Duration::from_secs(90);

/// Runs weir with `args`, killing it (and failing the test) if it outlives `PROCESS_LIMIT`.
fn weir(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running weir");
    let started = Instant::now();
    while child.try_wait().expect("waiting for weir").is_none() {
        if started.elapsed() > PROCESS_LIMIT {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "weir {args:?} still running after {PROCESS_LIMIT:?}: the deadline did not hold\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn stall_case(dir: &Path) -> PathBuf {
    let path = dir.join("stall.yaml");
    std::fs::write(&path, STALL_CASE).unwrap();
    path
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn reconcile_test_and_bench_time_out_stalling_guests_with_exit_1() {
    let dir = scratch_dir("deadline-commands");
    let case = stall_case(&dir);
    let case = case.to_str().unwrap();
    for name in STALLING {
        let guest = test_guest(name);
        let guest = guest.to_str().unwrap();
        let flags = ["--guest", guest, "--guest-deadline", "200ms"];
        for command in [
            vec!["reconcile"],
            vec!["test"],
            vec!["bench", "--iterations", "3", "--warmup", "0"],
        ] {
            let args: Vec<&str> = command.iter().copied().chain(flags).chain([case]).collect();
            let out = weir(&args);
            let all = text(&out);
            assert_eq!(
                out.status.code(),
                Some(1),
                "{name}: weir {command:?}: {all}"
            );
            assert!(
                all.contains("guest exceeded its deadline of 200ms"),
                "{name}: weir {command:?} does not name the deadline: {all}"
            );
        }
    }
}

#[test]
fn demo_with_a_looping_guest_runs_for_its_time_and_exits() {
    let guest = test_guest("loop-forever");
    let log = scratch_dir("deadline-demo").join("demo.log");
    let out = weir(&[
        "demo",
        "--guest",
        guest.to_str().unwrap(),
        "--guest-deadline",
        "100ms",
        "--for",
        "2s",
        "--log-file",
        log.to_str().unwrap(),
    ]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("weir demo: stopped"), "{all}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("guest exceeded its deadline of 100ms"),
        "the failed syncs are logged to the demo's log file: {logged}"
    );
}

/// In process, with the time of each call: none holds its caller longer than the deadline
/// plus a small margin, and the same guest serves unmarked Services in between.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_call_outlives_its_deadline_whatever_wasi_it_blocks_in() {
    let deadline = Duration::from_millis(200);
    // Scheduling slack: the epoch thread, the test and (in CI) other test binaries share two
    // cores, so a tight margin would make this a timing test. Every guest here would otherwise
    // stall forever, so any bound proves the call was cut off; 2 s keeps it robust.
    let margin = Duration::from_secs(2);
    let runtime = Runtime::new(Limits {
        deadline,
        ..Limits::default()
    })
    .unwrap();
    let stalled = request("ns", "web", 2, &[("weir.test/stall", "true")]);
    let plain = request("ns", "web", 2, &[]);
    for name in STALLING {
        let guest = runtime
            .load_async(std::fs::read(test_guest(name)).unwrap())
            .await
            .unwrap();
        // Several at once, as the controller's workers would call them.
        let calls = (0..4).map(|_| {
            let guest = guest.clone();
            let stalled = stalled.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                let result = guest.call(&stalled).await;
                (result, started.elapsed())
            })
        });
        for call in futures::future::join_all(calls).await {
            let (result, elapsed) = call.unwrap();
            assert_eq!(result, Err(CallError::Timeout(deadline)), "{name}");
            assert!(
                elapsed < deadline + margin,
                "{name}: the call held its task for {elapsed:?}"
            );
        }
        if name != "loop-forever" {
            assert!(guest.call(&plain).await.is_ok(), "{name} serves the others");
        }
    }
}
