//! Helpers shared by weir's integration tests: `mod support;` in a test file.
#![allow(dead_code)] // each test binary uses its own subset

pub mod guests;
pub mod registry;

use std::path::PathBuf;

#[allow(unused_imports)] // each test binary uses its own subset
pub use guests::{test_guest, test_guest_bytes};
use weir::model;

/// Fails the test unless `program args` runs and exits 0. A test never skips for a missing
/// tool: `make test` installs every tool the tests need first (`make tools`,
/// tests/install-tools.sh), so a green run means every test ran.
pub fn require_tool(program: &str, args: &[&str]) {
    let ok = std::process::Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "`{program} {}` does not run: `make tools` installs every tool the tests need",
        args.join(" ")
    );
}

/// Writes an executable shell script at `path` with `body`. A child process writes it, not
/// this one: a file this process holds open for writing is inherited by any child that another
/// test thread forks in that moment, and until that child execs, running the script fails with
/// "Text file busy" (ETXTBSY).
pub fn write_script(path: &std::path::Path, body: &str) {
    use std::io::Write;
    let mut writer = std::process::Command::new("sh")
        .args(["-c", "cat > \"$0\" && chmod 755 \"$0\""])
        .arg(path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("running sh to write a script");
    let mut stdin = writer.stdin.take().unwrap();
    stdin
        .write_all(format!("#!/bin/sh\n{body}\n").as_bytes())
        .unwrap();
    drop(stdin);
    assert!(
        writer.wait().unwrap().success(),
        "writing {}",
        path.display()
    );
}

/// Runs `weir ARGS` with `env` added to its environment, polling until it exits or `limit`
/// passes (then it is killed and the test fails); returns (exit code, stdout and stderr
/// together).
pub fn weir_within(
    args: &[&str],
    env: &[(&str, &str)],
    limit: std::time::Duration,
) -> (Option<i32>, String) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_weir"));
    command.args(args).envs(env.iter().copied());
    output_within(command, limit)
}

/// Runs `command` with stdin closed, polling until it exits or `limit` passes (then it is
/// killed and the test fails); returns (exit code, stdout and stderr together). The output
/// goes to a file, so a chatty program never blocks on a full pipe.
pub fn output_within(
    mut command: std::process::Command,
    limit: std::time::Duration,
) -> (Option<i32>, String) {
    use std::process::Stdio;
    let out = tempfile::NamedTempFile::new().unwrap();
    // One open file for both streams, so they share an offset and do not overwrite each other.
    let stdout = out.reopen().unwrap();
    let stderr = stdout.try_clone().unwrap();
    let what = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("running {what}: {e}"));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(out.path()).unwrap_or_default();
    (status.code(), text)
}

/// An empty scratch directory for one test, under cargo's per-target temporary directory.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    dir
}

fn kv(pairs: &[(&str, &str)]) -> Vec<model::KeyValue> {
    pairs
        .iter()
        .map(|(k, v)| model::KeyValue {
            key: (*k).into(),
            value: (*v).into(),
        })
        .collect()
}

/// A ClusterIP Service `namespace/name` selecting `app=<name>`, with one port `http` 80 → 8080
/// and the given labels.
pub fn service(namespace: &str, name: &str, labels: &[(&str, &str)]) -> model::Service {
    model::Service {
        namespace: namespace.into(),
        name: name.into(),
        uid: format!("uid-svc-{name}"),
        labels: kv(labels),
        annotations: vec![],
        creation_timestamp: Some("2024-01-01T00:00:00Z".into()),
        selector: Some(kv(&[("app", name)])),
        service_type: "ClusterIP".into(),
        cluster_ip: "10.96.0.10".into(),
        cluster_ips: vec!["10.96.0.10".into()],
        ip_families: vec!["IPv4".into()],
        ports: vec![model::ServicePort {
            name: "http".into(),
            protocol: "TCP".into(),
            port: 80,
            target_port: model::TargetPort::Number(8080),
            app_protocol: None,
        }],
        publish_not_ready_addresses: false,
        traffic_distribution: None,
        deleting: false,
    }
}

/// A running pod `namespace/<app>-<index>` with IP `10.1.x.y`, ready or not, on one of three
/// Nodes that exist (no zone).
pub fn pod(namespace: &str, app: &str, index: usize, ready: bool) -> model::Pod {
    let ip = format!("10.1.{}.{}", index / 250, index % 250 + 1);
    model::Pod {
        namespace: namespace.into(),
        name: format!("{app}-{index}"),
        uid: format!("uid-pod-{app}-{index}"),
        labels: kv(&[("app", app)]),
        annotations: vec![],
        node_name: format!("node-{}", index % 3),
        hostname: String::new(),
        subdomain: String::new(),
        pod_ip: Some(ip.clone()),
        pod_ips: vec![ip],
        phase: "Running".into(),
        conditions: vec![model::PodCondition {
            condition_type: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            last_transition_time: Some("2024-01-01T00:00:00Z".into()),
        }],
        terminating: false,
        node_exists: true,
        zone: None,
        container_ports: vec![],
    }
}

/// A 0.2.0 request for `namespace/name` whose Service carries `labels` and selects `pods`
/// pods (every fifth not ready), with nothing stored yet and both outputs managed: the
/// request the controller sends by default.
pub fn request(
    namespace: &str,
    name: &str,
    pods: usize,
    labels: &[(&str, &str)],
) -> model::Request {
    model::Request {
        namespace: namespace.into(),
        name: name.into(),
        service: Some(service(namespace, name, labels)),
        pods: (0..pods)
            .map(|i| pod(namespace, name, i, i % 5 != 0))
            .collect(),
        current: None,
        trigger_time: None,
        config: String::new(),
        endpoint_slices: vec![],
        max_endpoints_per_slice: 100,
        zone_capacities: None,
        manage: model::Outputs {
            endpoints: true,
            endpoint_slices: true,
        },
    }
}
