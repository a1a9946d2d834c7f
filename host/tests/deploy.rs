//! The deploy that ships: the Dockerfile passes hadolint and builds with a toolchain every locked
//! crate accepts, `deploy/kubernetes` (and its
//! monitoring overlay) renders with `kubectl kustomize` into objects that validate against the
//! Kubernetes schemas and hold together (selectors, ports, flags, volumes), and the example
//! alerts pass `promtool check rules` and their unit tests.
//!
//! The tools (hadolint, kubectl, kubernetes-validate, promtool) come from `make tools`, which
//! `make test` runs first; a test whose tool does not run fails.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use serde_yaml::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ is in the repository")
        .to_path_buf()
}

/// Runs a command; panics with its output unless it succeeds. Returns stdout.
fn run(command: &mut Command) -> String {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// `kubectl kustomize DIR`, as a list of objects.
fn render(dir: &str) -> (String, Vec<Value>) {
    let text = run(Command::new("kubectl")
        .arg("kustomize")
        .arg(repo().join(dir)));
    let objects = serde_yaml::Deserializer::from_str(&text)
        .map(|doc| Value::deserialize(doc).expect("kustomize prints YAML"))
        .collect();
    (text, objects)
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} rendered"))
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v:?}"))
}

/// Validates rendered objects with `kubernetes-validate --strict` (unknown fields are errors).
/// Returns the kinds it had no schema for.
fn validate(text: &str, tag: &str) -> Vec<String> {
    let dir = support::scratch_dir(&format!("deploy-validate-{tag}"));
    let file = dir.join("rendered.yaml");
    std::fs::write(&file, text).unwrap();
    let out = Command::new("kubernetes-validate")
        .args(["--strict", "--quiet"])
        .arg(&file)
        .output()
        .expect("kubernetes-validate runs");
    let report =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "manifests do not validate:\n{report}");
    assert!(!report.contains("ERROR"), "{report}");
    report
        .lines()
        .filter_map(|l| l.split("Couldn't find schema for kind ").nth(1))
        .map(|rest| {
            rest.split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// The RBAC rules that mention `resource`.
fn rules_for<'a>(rules: &'a [Value], resource: &str) -> Vec<&'a Value> {
    rules
        .iter()
        .filter(|r| {
            r["resources"]
                .as_sequence()
                .unwrap()
                .iter()
                .any(|x| x == resource)
        })
        .collect()
}

#[test]
fn dockerfile_passes_hadolint_and_runs_static_non_root() {
    support::require_tool("hadolint", &["--version"]);
    let dockerfile = repo().join("Dockerfile");
    // Style-level findings fail too; the one ignore pragma in the file says why.
    run(Command::new("hadolint")
        .args(["--failure-threshold", "style"])
        .arg(&dockerfile));
    let text = std::fs::read_to_string(&dockerfile).unwrap();
    let froms: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert!(froms.len() >= 2, "multi-stage build: {froms:?}");
    assert!(
        froms.last().unwrap().contains("distroless/static"),
        "the final stage has no libc, so the binary must be static: {froms:?}"
    );
    let user = text
        .lines()
        .rfind(|l| l.starts_with("USER "))
        .expect("the image sets a USER");
    let uid = user["USER ".len()..].split(':').next().unwrap();
    assert_ne!(uid.parse::<u32>().expect("a numeric UID"), 0, "{user}");
    // `COPY . .` sends the context: the build outputs and npm's trees stay out of it.
    let ignored = std::fs::read_to_string(repo().join(".dockerignore")).unwrap();
    for pattern in ["target/", "**/target/", "**/node_modules/", ".git/"] {
        assert!(
            ignored.lines().any(|l| l.trim() == pattern),
            ".dockerignore lacks {pattern}"
        );
    }
}

/// A `major.minor[.patch]` version as numbers, for ordering.
fn rust_version(text: &str) -> Vec<u64> {
    text.split('.')
        .map(|part| {
            part.parse()
                .unwrap_or_else(|_| panic!("{text:?} is not a Rust version"))
        })
        .collect()
}

/// The build stage's toolchain (`FROM rust:1.95-alpine3.22`) is at least the `rust-version` of
/// every crate `Cargo.lock` pins, the workspace's own included: an older one cannot build the
/// image at all. A tag without a patch level names that minor release's newest patch.
#[test]
fn dockerfile_toolchain_is_not_older_than_any_locked_crate_needs() {
    let text = std::fs::read_to_string(repo().join("Dockerfile")).unwrap();
    let tag = text
        .lines()
        .find_map(|l| l.strip_prefix("FROM rust:"))
        .expect("the build stage is FROM rust:VERSION-...");
    let toolchain = rust_version(tag.split(['-', ' ']).next().unwrap());
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let metadata: serde_json::Value = serde_json::from_str(&run(Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(repo())))
    .expect("cargo metadata prints JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let mut needs: Vec<(Vec<u64>, String)> = packages
        .iter()
        .filter_map(|p| {
            let needed = p["rust_version"].as_str()?;
            let crate_name = format!(
                "{} {}",
                p["name"].as_str().unwrap_or("?"),
                p["version"].as_str().unwrap_or("?")
            );
            Some((rust_version(needed), crate_name))
        })
        .collect();
    assert!(
        needs.len() > 10,
        "cargo metadata names a rust-version for only {} crates",
        needs.len()
    );
    needs.sort();
    let (highest, by) = needs.last().unwrap();
    // Compared at the tag's precision: `1.95` stands for every 1.95.x.
    let highest = &highest[..highest.len().min(toolchain.len())];
    assert!(
        toolchain.as_slice() >= highest,
        "the Dockerfile builds with rust:{tag}, but {by} needs Rust {}",
        highest
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(".")
    );
}

#[test]
fn manifests_render_validate_and_hold_together() {
    support::require_tool("kubectl", &["version", "--client"]);
    support::require_tool("kubernetes-validate", &["--version"]);
    let (text, objects) = render("deploy/kubernetes");
    assert_eq!(validate(&text, "base"), Vec::<String>::new());

    let deployment = find(&objects, "Deployment", "weir");
    assert_eq!(deployment["spec"]["replicas"], 2);
    let pod = &deployment["spec"]["template"];
    let pod_labels = &pod["metadata"]["labels"];
    let spec = &pod["spec"];
    assert_eq!(spec["priorityClassName"], "system-cluster-critical");
    assert_eq!(spec["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        spec["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let container = &spec["containers"][0];
    let sc = &container["securityContext"];
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["capabilities"]["drop"][0], "ALL");
    assert!(container["resources"]["requests"]["memory"].is_string());
    assert!(container["resources"]["limits"]["memory"].is_string());
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");

    // Every flag the manifest passes exists in `weir run`.
    let help = run(Command::new(env!("CARGO_BIN_EXE_weir")).args(["run", "--help"]));
    let args: Vec<&str> = container["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(str_of)
        .collect();
    assert_eq!(args[0], "run");
    let flag_value = |flag: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(&format!("{flag}=")))
            .unwrap_or_else(|| panic!("the manifest passes no {flag}"))
            .to_string()
    };
    for arg in &args[1..] {
        let flag = arg.split('=').next().unwrap();
        assert!(
            help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")),
            "`weir run` has no flag {flag}"
        );
    }

    // --cache-dir is a directory weir makes in an emptyDir (the emptyDir itself is
    // world-writable, which weir refuses), --guest-check the generated cases ConfigMap.
    let mount_of = |path: &str| -> &Value {
        let mount = container["volumeMounts"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|m| m["mountPath"] == path)
            .unwrap_or_else(|| panic!("nothing mounted at {path}"));
        spec["volumes"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|v| v["name"] == mount["name"])
            .unwrap()
    };
    let cache_dir = flag_value("--cache-dir");
    let (cache_parent, _) = cache_dir.rsplit_once('/').unwrap();
    assert!(
        mount_of(cache_parent)["emptyDir"].is_mapping(),
        "{cache_dir}"
    );
    let cases = str_of(&mount_of(&flag_value("--guest-check"))["configMap"]["name"]);
    let cases_map = find(&objects, "ConfigMap", cases);
    assert!(
        cases_map["data"].as_mapping().unwrap().len() >= 2,
        "{cases_map:?}"
    );

    // The probes use the plain admin port, the metrics Service the secure metrics port.
    let port_named = |name: &str| -> i64 {
        container["ports"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("no container port {name}"))["containerPort"]
            .as_i64()
            .unwrap()
    };
    let port_of = |addr: &str| -> i64 { addr.rsplit_once(':').unwrap().1.parse().unwrap() };
    for probe in ["livenessProbe", "readinessProbe"] {
        let port = str_of(&container[probe]["httpGet"]["port"]);
        assert_eq!(
            port_named(port),
            port_of(&flag_value("--admin-addr")),
            "{probe}"
        );
        assert!(
            container[probe]["httpGet"]["scheme"].is_null(),
            "{probe}: plain HTTP"
        );
    }
    assert!(!args.contains(&"--metrics-secure=false"), "{args:?}");
    assert_eq!(
        port_named("metrics"),
        port_of(&flag_value("--metrics-addr"))
    );

    // Other Pods reach only the secure metrics port.
    let policy = find(&objects, "NetworkPolicy", "weir");
    for (k, v) in policy["spec"]["podSelector"]["matchLabels"]
        .as_mapping()
        .unwrap()
    {
        assert_eq!(&pod_labels[k], v);
    }
    assert_eq!(
        policy["spec"]["policyTypes"],
        serde_yaml::from_str::<Value>("[Ingress]").unwrap()
    );
    let ingress = policy["spec"]["ingress"].as_sequence().unwrap();
    let open_ports: Vec<&Value> = ingress
        .iter()
        .flat_map(|rule| {
            rule["ports"]
                .as_sequence()
                .expect("every rule names its ports")
        })
        .map(|p| &p["port"])
        .collect();
    assert_eq!(open_ports, [&Value::from("metrics")], "{ingress:?}");

    // The PDB and the metrics Service select the Pods; the Service's port is the metrics port.
    let selects_pods = |selector: &Value| {
        let selector = selector.as_mapping().unwrap();
        assert!(!selector.is_empty());
        for (k, v) in selector {
            assert_eq!(&pod_labels[k], v, "selector {selector:?} vs {pod_labels:?}");
        }
    };
    selects_pods(&find(&objects, "PodDisruptionBudget", "weir")["spec"]["selector"]["matchLabels"]);
    let service = find(&objects, "Service", "weir-metrics");
    selects_pods(&service["spec"]["selector"]);
    let target = &service["spec"]["ports"][0]["targetPort"];
    assert_eq!(target, "metrics", "the metrics Service targets {target:?}");

    // Least privilege: the ConfigMap and the Lease are reachable by name only; nothing may
    // touch Secrets; events go through events.k8s.io.
    let role = find(&objects, "Role", "weir");
    let rules = role["rules"].as_sequence().unwrap();
    let for_resource = |resource: &str| -> Vec<&Value> { rules_for(rules, resource) };
    for rule in for_resource("configmaps") {
        assert!(rule["resourceNames"].is_sequence(), "{rule:?}");
    }
    for rule in for_resource("leases") {
        let verbs = rule["verbs"].as_sequence().unwrap();
        // `create` cannot be restricted by name; every other verb is.
        assert!(
            rule["resourceNames"].is_sequence() || verbs.iter().all(|v| v == "create"),
            "{rule:?}"
        );
    }
    // What leader election does with the Lease: create it once, get and patch it
    // (kube-lease-manager), and list and watch it by name (weir follows its renewals).
    let lease_verbs: Vec<&str> = for_resource("leases")
        .iter()
        .flat_map(|r| r["verbs"].as_sequence().unwrap())
        .filter_map(Value::as_str)
        .collect();
    for verb in ["create", "get", "patch", "list", "watch"] {
        assert!(
            lease_verbs.contains(&verb),
            "leases: {verb} missing from {lease_verbs:?}"
        );
    }
    let cluster_rules = find(&objects, "ClusterRole", "weir")["rules"]
        .as_sequence()
        .unwrap();
    let groups_for = |resource: &str| -> Vec<&str> {
        rules_for(cluster_rules, resource)
            .into_iter()
            .flat_map(|r| r["apiGroups"].as_sequence().unwrap().iter().map(str_of))
            .collect()
    };
    assert_eq!(groups_for("events"), ["events.k8s.io"]);
    assert_eq!(groups_for("endpointslices"), ["discovery.k8s.io"]);
    assert!(groups_for("secrets").is_empty());
    assert!(
        cluster_rules
            .iter()
            .all(|r| r["verbs"].as_sequence().unwrap().iter().all(|v| v != "*")),
        "no wildcard verbs"
    );
    // The secure metrics endpoint's reviews, create only.
    assert_eq!(groups_for("tokenreviews"), ["authentication.k8s.io"]);
    assert_eq!(groups_for("subjectaccessreviews"), ["authorization.k8s.io"]);
    for resource in ["tokenreviews", "subjectaccessreviews"] {
        for rule in rules_for(cluster_rules, resource) {
            assert_eq!(
                rule["verbs"],
                serde_yaml::from_str::<Value>("[create]").unwrap()
            );
        }
    }
    // Metrics readers may get /metrics and /guest, nothing else.
    let reader = find(&objects, "ClusterRole", "weir-metrics-reader");
    assert_eq!(
        reader["rules"],
        serde_yaml::from_str::<Value>("[{nonResourceURLs: [/metrics, /guest], verbs: [get]}]")
            .unwrap()
    );

    // The monitoring overlay: the base plus a ServiceMonitor scraping the metrics Service.
    let (text, objects) = render("deploy/kubernetes/monitoring");
    let mut unknown = validate(&text, "monitoring");
    unknown.sort();
    assert_eq!(unknown, ["PrometheusRule", "ServiceMonitor"]);
    let monitor = find(&objects, "ServiceMonitor", "weir");
    let service = find(&objects, "Service", "weir-metrics");
    for (k, v) in monitor["spec"]["selector"]["matchLabels"]
        .as_mapping()
        .unwrap()
    {
        assert_eq!(&service["metadata"]["labels"][k], v);
    }
    assert_eq!(
        monitor["spec"]["endpoints"][0]["port"],
        service["spec"]["ports"][0]["name"]
    );
    // HTTPS with Prometheus' token, and Prometheus bound to the reader role.
    let endpoint = &monitor["spec"]["endpoints"][0];
    assert_eq!(endpoint["scheme"], "https");
    assert_eq!(
        endpoint["bearerTokenFile"],
        "/var/run/secrets/kubernetes.io/serviceaccount/token"
    );
    let binding = find(&objects, "ClusterRoleBinding", "weir-metrics-reader");
    assert_eq!(binding["roleRef"]["name"], "weir-metrics-reader");
    assert_eq!(binding["subjects"][0]["kind"], "ServiceAccount");
}

/// The rule file inside the PrometheusRule, written where `rules-test.yaml` expects it.
fn rules_dir() -> PathBuf {
    let monitoring = repo().join("deploy/kubernetes/monitoring");
    let rule: Value = serde_yaml::from_str(
        &std::fs::read_to_string(monitoring.join("prometheusrule.yaml")).unwrap(),
    )
    .unwrap();
    let dir = support::scratch_dir("deploy-rules");
    std::fs::write(
        dir.join("weir-rules.yaml"),
        serde_yaml::to_string(&rule["spec"]).unwrap(),
    )
    .unwrap();
    std::fs::copy(
        monitoring.join("rules-test.yaml"),
        dir.join("rules-test.yaml"),
    )
    .unwrap();
    dir
}

#[test]
fn alert_rules_pass_promtool_and_their_unit_tests() {
    support::require_tool("promtool", &["--version"]);
    let dir = rules_dir();
    let checked = run(Command::new("promtool")
        .args(["check", "rules"])
        .arg(dir.join("weir-rules.yaml")));
    assert!(checked.contains("4 rules found"), "{checked}");
    run(Command::new("promtool")
        .args(["test", "rules"])
        .arg(dir.join("rules-test.yaml")));
}

#[test]
fn deploy_guest_cases_pass_with_the_default_guest() {
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .arg("test")
        .arg(repo().join("deploy/kubernetes/base/guest-cases"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
