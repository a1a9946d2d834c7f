//! The built-in CEL guest: through the binary as an operator runs it (`--guest builtin:cel`
//! with `--policy-config`, bad rules refused with exit 2, `weir new-policy --lang cel` and
//! `make -C NAME test`, `weir guest export --builtin cel`), and in-process for what needs many
//! calls (the CEL examples against the Rust examples' cases, every kind of refused rule): the
//! component is 3.6 MB, and each process compiles it anew.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use support::scratch_dir;
use weir::cases::{check_file_with_config, normalize_config};
use weir::runtime::{CEL_GUEST, CallError, Guest, Limits, Runtime, digest};

/// The CEL guest, compiled once per test, with a deadline a debug build on a busy machine meets.
async fn cel_guest() -> Guest {
    let limits = Limits {
        deadline: std::time::Duration::from_secs(10),
        ..Limits::default()
    };
    Runtime::new(limits)
        .unwrap()
        .load_async(CEL_GUEST.to_vec())
        .await
        .unwrap()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

fn weir(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weir"))
        .current_dir(root())
        .args(args)
        .env_remove("WEIR_GUEST")
        .env_remove("WEIR_POLICY_CONFIG")
        .env("WEIR_LOG", "warn")
        .output()
        .expect("running weir")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path(rel: &str) -> String {
    root().join(rel).to_string_lossy().into_owned()
}

/// The decision `weir reconcile` printed, with `ip` → `conditions.ready` of every slice
/// endpoint created, and the Endpoints' ready and not-ready IPs.
struct Printed {
    ready: Vec<String>,
    not_ready: Vec<String>,
    slice_ready: Vec<(String, bool, bool)>,
}

fn printed(out: &Output) -> Printed {
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ips = |key: &str| -> Vec<String> {
        let mut ips: Vec<String> = json["endpoints"]["subsets"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|subset| subset[key].as_array().cloned().unwrap_or_default())
            .map(|address| address["ip"].as_str().unwrap().to_string())
            .collect();
        ips.sort();
        ips
    };
    let mut slice_ready: Vec<(String, bool, bool)> = json["endpointSlices"]["create"]
        .as_array()
        .expect("created slices")
        .iter()
        .flat_map(|slice| slice["endpoints"].as_array().cloned().unwrap_or_default())
        .map(|endpoint| {
            (
                endpoint["addresses"][0].as_str().unwrap().to_string(),
                endpoint["conditions"]["ready"].as_bool().unwrap(),
                endpoint["conditions"]["serving"].as_bool().unwrap(),
            )
        })
        .collect();
    slice_ready.sort();
    Printed {
        ready: ips("addresses"),
        not_ready: ips("notReadyAddresses"),
        slice_ready,
    }
}

const DRAIN_CASE: &str =
    "guest/examples/drain-annotation/cases/default-annotation-moves-pod-to-not-ready.yaml";

#[test]
fn reconcile_with_the_drain_rule_drains_the_annotated_pod_in_both_outputs() {
    // Pod b (10.0.0.2) is ready and annotated weir.dev/drain=true; c (10.0.0.3) is not ready.
    let upstream = printed(&weir(&[
        "reconcile",
        "--guest",
        "builtin:default",
        &path(DRAIN_CASE),
    ]));
    assert_eq!(upstream.ready, ["10.0.0.1", "10.0.0.2"]);
    let drained = printed(&weir(&[
        "reconcile",
        "--guest",
        "builtin:cel",
        "--policy-config",
        &path("guest/examples/cel/drain-annotation.yaml"),
        &path(DRAIN_CASE),
    ]));
    assert_eq!(drained.ready, ["10.0.0.1"]);
    assert_eq!(drained.not_ready, ["10.0.0.2", "10.0.0.3"]);
    // In the slice, b is not ready but still serving (its Ready condition is true).
    assert_eq!(
        drained.slice_ready,
        [
            ("10.0.0.1".to_string(), true, true),
            ("10.0.0.2".to_string(), false, true),
            ("10.0.0.3".to_string(), false, false),
        ]
    );
}

#[test]
fn a_rule_that_does_not_compile_or_is_not_bool_exits_2_naming_it() {
    let dir = scratch_dir("cel-bad-rules");
    let write = |name: &str, text: &str| {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        file.to_string_lossy().into_owned()
    };
    let syntax = write("syntax.yaml", "ready: \"endpoint.ready && !\"\n");
    let not_bool = write(
        "not-bool.yaml",
        "terminating: \"size(pod.metadata.name)\"\n",
    );
    let case = path(DRAIN_CASE);
    for (command, needles) in [
        (
            vec![
                "reconcile",
                "--guest",
                "builtin:cel",
                "--policy-config",
                &syntax,
                &case,
            ],
            &["rule `ready` does not compile", "<input>:1:"][..],
        ),
        (
            vec![
                "test",
                "--guest",
                "builtin:cel",
                "--policy-config",
                &not_bool,
                &case,
            ],
            &["rule `terminating` returns int, not bool"][..],
        ),
    ] {
        let out = weir(&command);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {stderr}");
        assert!(stderr.contains("--policy-config"), "{command:?}: {stderr}");
        for needle in needles {
            assert!(
                stderr.contains(needle),
                "{command:?}: missing {needle:?} in {stderr}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gate_refuses_each_kind_of_bad_configuration_naming_the_field() {
    let guest = cel_guest().await;
    for (yaml, needles) in [
        (
            "ready: \"endpoint.ready && !\"\nserving: endpoint.serving\n",
            &["rule `ready` does not compile", "<input>:1:"][..],
        ),
        (
            "include: \"true\"\nterminating: \"size(pod.metadata.name)\"\n",
            &["rule `terminating` returns int, not bool"][..],
        ),
        (
            "variables:\n  - {name: draining, expression: \"pod.metadata.(\"}\nready: variables.draining\n",
            &["variables[0] (draining) does not compile"][..],
        ),
        (
            "variables:\n  - {name: n, expression: \"size(pod.metadata.name)\"}\nready: variables.n\n",
            &["rule `ready` returns int, not bool"][..],
        ),
        (
            "ready: \"podd.metadata.name == 'a'\"\n",
            &["rule `ready`", "podd"][..],
        ),
        (
            "ready: endpoint.ready\nredy: \"false\"\n",
            &["unknown field `redy`"][..],
        ),
        (
            "include: \"\"\n",
            &["rule `include`: the expression is empty"][..],
        ),
    ] {
        let config = normalize_config(yaml).unwrap();
        let message = match guest.validate_config(&config).await {
            Err(CallError::Guest(message)) => message,
            other => panic!("{yaml}: expected a refusal, got {other:?}"),
        };
        for needle in needles {
            assert!(
                message.contains(needle),
                "{yaml}: missing {needle:?} in {message}"
            );
        }
    }
    // Rules that depend on the pod are accepted: the synthetic pod has no annotations.
    let config =
        normalize_config("ready: \"pod.metadata.annotations['weir.dev/drain'] != 'true'\"\n")
            .unwrap();
    guest.validate_config(&config).await.unwrap();
}

#[test]
fn unknown_builtin_guests_are_refused_listing_the_known_ones() {
    let out = weir(&["reconcile", "--guest", "builtin:lua", &path(DRAIN_CASE)]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("builtin:default, builtin:cel"), "{stderr}");
}

/// The CEL example's configuration with the case's own `config` (the Rust example's
/// configuration fields) as its `params`, written to a file.
fn with_params(example: &Path, case: &Path, dir: &Path) -> Option<PathBuf> {
    let case: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(case).unwrap()).unwrap();
    let config = case.get("config")?;
    let config: serde_yaml::Value = match config {
        serde_yaml::Value::String(text) => serde_yaml::from_str(text).unwrap(),
        other => other.clone(),
    };
    let mut cel: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(example).unwrap()).unwrap();
    let params = cel
        .get_mut("params")
        .and_then(serde_yaml::Value::as_mapping_mut)
        .expect("the CEL example has params");
    for (key, value) in config.as_mapping().expect("the case's config is a map") {
        assert!(
            params.contains_key(key),
            "{key:?} is not a param of {}",
            example.display()
        );
        params.insert(key.clone(), value.clone());
    }
    let file = dir.join(format!(
        "{}.yaml",
        case_name(&case).replace(|c: char| !c.is_ascii_alphanumeric(), "-")
    ));
    std::fs::write(&file, serde_yaml::to_string(&cel).unwrap()).unwrap();
    Some(file)
}

fn case_name(case: &serde_yaml::Value) -> String {
    case["name"]
        .as_str()
        .unwrap_or("case")
        .chars()
        .take(40)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cel_examples_pass_the_rust_examples_cases() {
    let guest = cel_guest().await;
    let dir = scratch_dir("cel-examples");
    for name in ["drain-annotation", "node-allowlist", "canary-opt-in"] {
        let example = root().join(format!("guest/examples/cel/{name}.yaml"));
        let cases = root().join(format!("guest/examples/{name}/cases"));
        let mut files: Vec<PathBuf> = std::fs::read_dir(&cases)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(files.len() >= 3, "{name}: {files:?}");
        let mut differs_from_upstream = false;
        for case in &files {
            // A case that configures the Rust policy runs with those values as params.
            let config = with_params(&example, case, &dir).unwrap_or_else(|| example.clone());
            let text = normalize_config(&std::fs::read_to_string(&config).unwrap()).unwrap();
            guest.validate_config(&text).await.unwrap();
            let verdict = check_file_with_config(&guest, case, Some(&text)).await;
            assert!(
                verdict.problems.is_empty(),
                "{name}: {} with {}:\n{}",
                case.display(),
                config.display(),
                verdict.problems.join("\n")
            );
            // Without rules (upstream) the case may fail: the rules are what passes it.
            let upstream = check_file_with_config(&guest, case, Some("")).await;
            differs_from_upstream |= !upstream.problems.is_empty();
        }
        assert!(
            differs_from_upstream,
            "{name}: every case also passes without the rules"
        );
    }
}

#[test]
fn new_policy_lang_cel_scaffolds_a_policy_whose_make_test_passes() {
    let dir = scratch_dir("cel-new-policy");
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .current_dir(&dir)
        .args(["new-policy", "demo-cel", "--lang", "cel"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("make -C demo-cel test"),
        "{}",
        text(&out.stdout)
    );
    let policy = dir.join("demo-cel");
    for file in ["policy.yaml", "Makefile", "README.md", "cases"] {
        assert!(policy.join(file).exists(), "{file} missing");
    }
    assert!(!policy.join("Cargo.toml").exists());
    let make = Command::new("make")
        .current_dir(&dir)
        .args(["-C", "demo-cel", "test"])
        .env("WEIR", env!("CARGO_BIN_EXE_weir"))
        .env_remove("WEIR_POLICY_CONFIG")
        .env_remove("WEIR_GUEST")
        .output()
        .expect("running make (it must be installed)");
    let stdout = text(&make.stdout);
    assert!(make.status.success(), "{stdout}{}", text(&make.stderr));
    assert!(stdout.contains("2 passed, 0 failed"), "{stdout}");

    // A non-empty directory is refused; --sdk is for Rust policies only.
    for args in [
        vec!["new-policy", "demo-cel", "--lang", "cel"],
        vec!["new-policy", "other", "--lang", "cel", "--sdk", "."],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_weir"))
            .current_dir(&dir)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    assert!(!dir.join("other").exists());
}

#[test]
fn guest_export_writes_the_cel_guest() {
    let dir = scratch_dir("cel-export");
    let file = dir.join("cel.wasm");
    let out = weir(&[
        "guest",
        "export",
        "--builtin",
        "cel",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&file).unwrap(), CEL_GUEST);
    let out = weir(&["guest", "export", "--builtin", "builtin:cel", "-"]);
    assert_eq!(out.stdout, CEL_GUEST);
    let out = weir(&["guest", "info", file.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains(&format!("sha256:     {}", digest(CEL_GUEST))),
        "{stdout}"
    );
    assert!(stdout.contains("compatible: yes"), "{stdout}");
    // The exported file runs like the built-in one.
    let out = weir(&[
        "reconcile",
        "--guest",
        file.to_str().unwrap(),
        "--policy-config",
        &path("guest/examples/cel/drain-annotation.yaml"),
        &path(DRAIN_CASE),
    ]);
    assert_eq!(printed(&out).ready, ["10.0.0.1"]);
    let out = weir(&["guest", "export", "--builtin", "lua", "-"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn rules_in_a_configmap_need_a_built_in_guest() {
    // Checked before anything is read from the cluster, so no server is needed.
    let kubeconfig = scratch_dir("cel-configmap-rules").join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n\
         contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {}}]\n",
    )
    .unwrap();
    let out = weir(&[
        "run",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--leader-elect=false",
        "--guest",
        "policy.wasm",
        "--policy-config",
        "configmap:weir-system/rules/policy.yaml",
    ]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("needs a built-in guest (--guest builtin:NAME)"),
        "{err}"
    );

    let out = weir(&["run", "--policy-config", "configmap:weir-system/rules"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("expected configmap:NAMESPACE/NAME/KEY"),
        "{err}"
    );
}
