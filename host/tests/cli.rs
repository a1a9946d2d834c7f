//! The command line's contract: `weir reconcile` output shape and exit codes, `weir test`
//! failure reporting.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn weir(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(args)
        .output()
        .expect("running weir")
}

fn case(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/cases")
        .join(rel)
        .display()
        .to_string()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

const GOOD: &str = r#"
name: one ready pod
key: ns/web
service:
  metadata: {name: web, namespace: ns}
  spec: {selector: {app: web}, clusterIP: 10.96.0.1, ipFamilies: [IPv4], ports: [{name: http, port: 80, targetPort: 8080}]}
pods:
  - metadata: {name: a, namespace: ns, uid: a-uid, labels: {app: web}}
    spec: {nodeName: n1, containers: [{name: c}]}
    status: {phase: Running, podIP: 10.0.0.1, podIPs: [{ip: 10.0.0.1}], conditions: [{type: Ready, status: "True"}]}
endpoints: null
expect:
  action: create
  counts: {ready: 1, notReady: 0}
"#;

#[test]
fn reconcile_prints_the_decision_json() {
    let out = weir(&["reconcile", &case("lifecycle/create-two-ready-pods.yaml")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["action"], "create");
    let ep = &json["endpoints"];
    assert_eq!(ep["apiVersion"], "v1");
    assert_eq!(ep["kind"], "Endpoints");
    assert!(ep["metadata"]["name"].is_string());
    assert!(ep["subsets"].is_array());
    let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["action", "endpointSlices", "endpoints", "errors", "events"],
        "{json}"
    );
    let slices = &json["endpointSlices"];
    let created = slices["create"].as_array().unwrap();
    assert_eq!(created.len(), 1, "{json}");
    assert_eq!(created[0]["apiVersion"], "discovery.k8s.io/v1");
    assert_eq!(created[0]["kind"], "EndpointSlice");
    assert_eq!(created[0]["addressType"], "IPv4");
    assert_eq!(created[0]["endpoints"].as_array().unwrap().len(), 2);
    assert_eq!(slices["update"], serde_json::json!([]));
    assert_eq!(slices["delete"], serde_json::json!([]));

    let out = weir(&[
        "reconcile",
        &case("lifecycle/service-gone-no-endpoints-still-delete.yaml"),
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"action": "delete", "endpoints": null,
            "endpointSlices": {"create": [], "update": [], "delete": []},
            "errors": [], "events": []})
    );
}

#[test]
fn bad_input_is_one_line_naming_file_and_field_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let wrong_type = write(
        dir.path(),
        "wrong-type.yaml",
        &GOOD.replace("port: 80,", "port: eighty,"),
    );
    let bad_yaml = write(dir.path(), "bad.yaml", "key: [unclosed");
    let key_mismatch = write(
        dir.path(),
        "mismatch.yaml",
        &GOOD.replace("key: ns/web", "key: ns/other"),
    );
    let slice = |address_type: &str, endpoints: usize| {
        let endpoint = "{addresses: [10.0.0.1]}";
        let list = vec![endpoint; endpoints].join(", ");
        format!(
            "{GOOD}endpointSlices:\n  - {{metadata: {{name: s}}, addressType: {address_type}, endpoints: [{list}]}}\n"
        )
    };
    let unknown_type = write(dir.path(), "unknown-type.yaml", &slice("IPv5", 1));
    let too_many = write(dir.path(), "too-many.yaml", &slice("IPv4", 1001));
    let nameless_node = write(
        dir.path(),
        "nameless-node.yaml",
        &format!("{GOOD}nodes:\n  - metadata: {{labels: {{a: b}}}}\n"),
    );
    let bad_max = write(
        dir.path(),
        "bad-max.yaml",
        &format!("{GOOD}maxEndpointsPerSlice: 1001\n"),
    );
    let bad_manage = write(
        dir.path(),
        "bad-manage.yaml",
        &format!("{GOOD}manage: [endpoints, slices]\n"),
    );
    let missing = dir.path().join("missing.yaml").display().to_string();
    for (file, needle) in [
        (&unknown_type, "endpointSlices[0].addressType"),
        (&too_many, "endpointSlices[0].endpoints"),
        (&nameless_node, "nodes[0].metadata.name"),
        (&bad_max, "maxEndpointsPerSlice"),
        (&bad_manage, "manage[1]"),
        (&wrong_type, "service.spec.ports[0].port"),
        (&bad_yaml, "bad.yaml"),
        (&key_mismatch, "key"),
        (&missing, "cannot read"),
    ] {
        let out = weir(&["reconcile", file]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
        assert!(
            stderr.contains(file.as_str()) && stderr.contains(needle),
            "{stderr}"
        );
    }
}

#[test]
fn kube_controller_manager_flag_names_are_aliases_and_two_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-kubeconfig");
    let missing = missing.to_str().unwrap();
    // Each KCM name is accepted: parsing passes and the run fails later, on the kubeconfig.
    for flag in [
        "--concurrent-endpoint-syncs=3",
        "--concurrent-service-endpoint-syncs=3",
        "--endpoint-updates-batch-period=1s",
        "--endpointslice-updates-batch-period=1s",
    ] {
        let out = weir(&["run", flag, "--kubeconfig", missing, "--leader-elect=false"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag}: {stderr}");
        assert!(
            stderr.contains("cannot read kubeconfig"),
            "{flag}: {stderr}"
        );
        // The missing file is said once, though kube's error repeats its cause's text.
        assert_eq!(stderr.matches("os error 2").count(), 1, "{flag}: {stderr}");
    }
    // They are the same flags as --workers and --batch-period: same checks...
    for (flag, why) in [
        (
            "--concurrent-service-endpoint-syncs=0",
            "0 is not in 1..=65535",
        ),
        ("--endpointslice-updates-batch-period=soon", "soon"),
    ] {
        let out = weir(&["run", flag]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {stderr}");
        assert!(stderr.contains(why), "{flag}: {stderr}");
    }
    // ...and one value each: two names (even with equal values) are refused, not merged.
    for pair in [
        ["--workers=4", "--concurrent-endpoint-syncs=4"],
        [
            "--concurrent-endpoint-syncs=4",
            "--concurrent-service-endpoint-syncs=8",
        ],
        [
            "--endpoint-updates-batch-period=1s",
            "--endpointslice-updates-batch-period=2s",
        ],
    ] {
        let out = weir(&["run", pair[0], pair[1]]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{pair:?}: {stderr}");
        assert!(
            stderr.contains("cannot be used multiple times"),
            "{pair:?}: {stderr}"
        );
    }
    let help = weir(&["run", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    for name in [
        "--concurrent-endpoint-syncs",
        "--concurrent-service-endpoint-syncs",
        "--endpoint-updates-batch-period",
        "--endpointslice-updates-batch-period",
    ] {
        assert!(
            help.contains(&format!("{name},")) || help.contains(&format!("{name}]")),
            "--help shows {name}"
        );
    }
}

#[test]
fn a_bad_service_selector_is_refused_naming_the_flag_and_the_problem() {
    for (selector, problem) in [
        ("team in payments", "expected: '('"),
        ("team=a,", "expected: identifier after ','"),
        ("-team=a", "key: Invalid value"),
    ] {
        let out = weir(&["run", &format!("--service-selector={selector}")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{selector}: {stderr}");
        assert!(
            stderr.contains("--service-selector") && stderr.contains(problem),
            "{selector}: {stderr}"
        );
    }
}

#[test]
fn the_operations_guide_names_only_flags_weir_has() {
    let guide = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/operations.md"),
    )
    .unwrap();
    let help: String = [
        &["--help"][..],
        &["run", "--help"],
        &["test", "--help"],
        &["guest", "--help"],
        &["guest", "push", "--help"],
        &["guest", "sign", "--help"],
        &["guest", "keygen", "--help"],
        &["demo", "--help"],
        &["diff", "--help"],
        &["snapshot", "--help"],
        &["status", "--help"],
    ]
    .iter()
    .map(|args| String::from_utf8_lossy(&weir(args).stdout).into_owned())
    .collect();
    // Flags of the other tools the guide shows (kube-controller-manager, kubectl, cargo, cosign).
    let foreign = [
        "--controllers",
        "--from-file",
        "--replicas",
        "--test",
        "--tlog-upload",
        "--insecure-ignore-tlog",
    ];
    let mut checked = 0;
    for (i, _) in guide.match_indices("--") {
        let flag: String = guide[i + 2..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
            .collect();
        // `---` of a table, or a flag.
        if !flag.starts_with(|c: char| c.is_ascii_lowercase())
            || foreign.contains(&format!("--{flag}").as_str())
        {
            continue;
        }
        let named = help.contains(&format!("--{flag} "))
            || help.contains(&format!("--{flag},"))
            || help.contains(&format!("--{flag}]"))
            || help.contains(&format!("--{flag}\n"));
        assert!(
            named,
            "docs/operations.md names --{flag}, which no weir command has"
        );
        checked += 1;
    }
    assert!(checked > 30, "{checked} flags checked");
}

#[test]
fn kube_api_rate_flags_refuse_unusable_values_naming_the_flag() {
    for (flag, value) in [
        ("--kube-api-qps", "0"),
        ("--kube-api-qps", "-5"),
        ("--kube-api-qps", "NaN"),
        ("--kube-api-qps", "fast"),
        ("--kube-api-burst", "0"),
        ("--kube-api-burst", "-1"),
    ] {
        let out = weir(&["run", &format!("{flag}={value}")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert!(stderr.contains(flag), "{flag} {value}: {stderr}");
    }
}

#[test]
fn a_failing_case_shows_a_diff_and_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "good.yaml", GOOD);
    write(
        dir.path(),
        "wrong.yaml",
        &GOOD.replace("ready: 1, notReady: 0", "ready: 2, notReady: 0"),
    );
    let out = weir(&["test", &dir.path().display().to_string()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("FAIL") && stdout.contains("counts: expected ready 2"),
        "{stdout}"
    );
    assert!(
        stdout.trim_end().ends_with("1 passed, 1 failed"),
        "{stdout}"
    );
}

/// A case whose `config` the policy's `validate-config` refuses is bad input: `weir reconcile`
/// exits 2 with one line naming the file, `config` and the policy's reason, before any
/// reconcile; `weir test` reports the case as failing. The same configuration as a valid one
/// passes, so it is the configuration that is refused.
#[test]
fn a_config_the_policy_refuses_exits_2_naming_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let refused = write(
        dir.path(),
        "refused.yaml",
        &format!("{GOOD}config: {{unknownKnob: 1}}\n"),
    );
    let out = weir(&["reconcile", &refused]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&refused)
            && stderr.contains("config: the policy refuses it")
            && stderr.contains("unknownKnob"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "no decision is printed");
    let out = weir(&["test", &refused]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("unknownKnob"), "{stdout}");

    let accepted = write(
        dir.path(),
        "accepted.yaml",
        &format!("{GOOD}config: {{}}\n"),
    );
    let out = weir(&["reconcile", &accepted]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Leader-election timings that contradict each other stop `weir run` before it does anything
/// (no kubeconfig is even read), with one line naming the flags and exit code 2.
#[test]
fn contradictory_leader_election_timings_exit_2() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["--leader-elect-renew-deadline", "20s"],
            "--leader-elect-renew-deadline (20s) must be shorter than --leader-elect-lease-duration (15s)",
        ),
        (
            &["--leader-elect-retry-period", "10s"],
            "--leader-elect-retry-period (10s) must be shorter than --leader-elect-renew-deadline (10s)",
        ),
        (
            &["--leader-elect-lease-duration", "15500ms"],
            "--leader-elect-lease-duration (15s 500ms) must be a whole number of seconds",
        ),
        (
            &["--leader-elect=true", "--leader-elect-retry-period", "0s"],
            "--leader-elect-retry-period must be more than 0s",
        ),
    ];
    for (flags, message) in cases {
        let mut args = vec!["run", "--kubeconfig", "/nonexistent/kubeconfig"];
        args.extend_from_slice(flags);
        let out = weir(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(!stderr.contains("kubeconfig"), "checked first: {stderr}");
    }
    // Without leader election the timings are not used, so they are not checked either:
    // the run gets as far as reading the kubeconfig.
    let out = weir(&[
        "run",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
        "--leader-elect=false",
        "--leader-elect-renew-deadline",
        "20s",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("/nonexistent/kubeconfig"), "{stderr}");
}

/// Duration flags keep to their ranges: a zero deadline, or one of minutes or years, exits 2
/// with one line naming the flag and the range, before anything runs; values inside the range
/// are taken.
#[test]
fn duration_flags_outside_their_range_exit_2_naming_the_range() {
    let range = "must be greater than 0 and at most 1m";
    let refused: [(&[&str], &str); 12] = [
        (&["run", "--guest-deadline", "0"], range),
        (&["run", "--guest-deadline", "0s"], range),
        (&["run", "--guest-deadline", "61s"], range),
        (&["run", "--guest-deadline", "10y"], range),
        (&["reconcile", "--guest-deadline", "0ms"], range),
        (&["run", "--guest-poll", "0s"], "at most 1h"),
        (&["run", "--batch-period", "2h"], "must be at most 1h"),
        (&["run", "--rollback-window", "10y"], "must be at most 1day"),
        (
            &["run", "--resync-period", "31days"],
            "must be at most 30days",
        ),
        (&["run", "--readyz-api-timeout", "0s"], "greater than 0"),
        (&["run", "--shutdown-grace", "10y"], "must be at most 1h"),
        (
            &["run", "--leader-elect-lease-duration", "2h"],
            "must be at most 1h",
        ),
    ];
    for (args, why) in refused {
        let out = weir(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        let flag = args[1];
        assert!(
            stderr.contains(flag) && stderr.contains(why),
            "{args:?}: {stderr}"
        );
    }
    // The environment goes through the same check.
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["run"])
        .env("WEIR_GUEST_DEADLINE", "0s")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(range), "{stderr}");
    // Inside the range (both ends included) the flags are taken: `reconcile` decides, and
    // `run` gets as far as reading its kubeconfig.
    for deadline in ["250ms", "60s", "1m"] {
        let out = weir(&[
            "reconcile",
            "--guest-deadline",
            deadline,
            &case("lifecycle/create-two-ready-pods.yaml"),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{deadline}: {stderr}");
    }
    let out = weir(&[
        "run",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
        "--leader-elect=false",
        "--guest-deadline=60s",
        "--guest-poll=1h",
        "--batch-period=0s",
        "--rollback-window=0s",
        "--resync-period=30days",
        "--readyz-api-timeout=1day",
        "--shutdown-grace=0s",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/kubeconfig"), "{stderr}");
}
