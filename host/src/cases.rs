//! Golden case files: load, select, run, compare (`weir reconcile`, `weir test`, `weir bench`).
//!
//! A case is one reconcile with its inputs (`service`, `pods`, `endpoints`, `config`) and,
//! optionally, what must come out (`expect`). See `tests/cases/README.md` for the format.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1 as core;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::runtime::bindings as wit;
use crate::runtime::{CallError, CallTiming, Guest};
use crate::selector::service_selects;
use crate::trigger_time::TriggerTimeTracker;
use crate::validate::{Action, Violation, validate};
use crate::view;

/// Annotation ignored when comparing, since it carries a time.
const TRIGGER_TIME: &str = weir_policy::well_known::LAST_CHANGE_TRIGGER_TIME_ANNOTATION;

/// A case file that cannot be used. Displays as `FILE: FIELD: problem` on one line.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct CaseError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong, naming the field.
    pub message: String,
}

/// One case, parsed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// A human description.
    #[serde(default)]
    pub name: Option<String>,
    /// `namespace/name` of the Service reconciled.
    pub key: String,
    /// The Service, or null when it no longer exists.
    #[serde(default)]
    pub service: Option<core::Service>,
    /// Pods of the cluster; the runner selects the Service's own.
    #[serde(default)]
    pub pods: Vec<core::Pod>,
    /// The stored Endpoints, or null.
    #[serde(default)]
    pub endpoints: Option<core::Endpoints>,
    /// Policy configuration (a string, or any YAML/JSON value).
    #[serde(default)]
    pub config: Option<Value>,
    /// What the decision must be.
    #[serde(default)]
    pub expect: Option<Expect>,
}

/// Expected outcome of a case; every part given is checked.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// `none`, `create`, `update` or `delete`.
    #[serde(default)]
    pub action: Option<ExpectedAction>,
    /// The Endpoints written (compared as sets, see [`compare`]).
    #[serde(default)]
    pub endpoints: Option<core::Endpoints>,
    /// Address counts of the written Endpoints.
    #[serde(default)]
    pub counts: Option<Counts>,
}

/// An action name in a case file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExpectedAction {
    /// No write.
    None,
    /// Create.
    Create,
    /// Update.
    Update,
    /// Delete.
    Delete,
}

/// Ready and not-ready address counts, summed over subsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    /// Entries in `addresses`.
    pub ready: usize,
    /// Entries in `notReadyAddresses`.
    #[serde(rename = "notReady")]
    pub not_ready: usize,
}

impl Case {
    /// Reads and checks a case file.
    pub fn load(path: &Path) -> Result<Case, CaseError> {
        let fail = |message: String| CaseError {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read: {e}")))?;
        let case: Case = if path.extension().is_some_and(|e| e == "json") {
            let mut de = serde_json::Deserializer::from_str(&text);
            serde_path_to_error::deserialize(&mut de)
                .map_err(|e| fail(field_error(e.path(), e.inner())))?
        } else {
            // Depth and alias expansion are bounded before serde_yaml parses the text.
            weir_apiserver::yaml_limits::check(&text).map_err(|e| fail(e.to_string()))?;
            let de = serde_yaml::Deserializer::from_str(&text);
            serde_path_to_error::deserialize(de)
                .map_err(|e| fail(field_error(e.path(), e.inner())))?
        };
        case.check().map_err(fail)?;
        Ok(case)
    }

    fn check(&self) -> Result<(), String> {
        let (namespace, name) = self
            .split_key()
            .ok_or_else(|| format!("key: {:?} is not namespace/name", self.key))?;
        if let Some(svc) = &self.service {
            let svc_name = svc.metadata.name.as_deref().unwrap_or("");
            let svc_namespace = svc.metadata.namespace.as_deref().unwrap_or(namespace);
            if svc_name != name || svc_namespace != namespace {
                return Err(format!(
                    "key: {:?} does not match service {svc_namespace}/{svc_name}",
                    self.key
                ));
            }
        }
        check_ports(self.service.as_ref(), &self.pods)?;
        if let Some(config) = &self.config {
            normalize_config(&config_text(config)).map_err(|e| format!("config: {e}"))?;
        }
        Ok(())
    }

    /// The key's namespace and name.
    pub fn split_key(&self) -> Option<(&str, &str)> {
        let (ns, name) = self.key.split_once('/')?;
        (!ns.is_empty() && !name.is_empty() && !name.contains('/')).then_some((ns, name))
    }

    /// The request the controller would send: the Service, the pods its selector picks in its
    /// namespace (as `weir run` selects them), the stored Endpoints and the configuration.
    pub fn request(&self) -> wit::Request {
        let (namespace, name) = self.split_key().unwrap_or(("", ""));
        let service = self.service.as_ref().map(|s| view::service(s, namespace));
        let selector = self
            .service
            .as_ref()
            .and_then(|s| s.spec.as_ref())
            .and_then(|s| s.selector.as_ref());
        let pods: Vec<wit::Pod> = if service.is_some() {
            self.pods
                .iter()
                .filter(|p| p.metadata.namespace.as_deref().unwrap_or(namespace) == namespace)
                .filter(|p| service_selects(selector, p.metadata.labels.as_ref()))
                .map(|p| {
                    let mut v = view::pod(p);
                    if v.namespace.is_empty() {
                        v.namespace = namespace.to_string();
                    }
                    v
                })
                .collect()
        } else {
            Vec::new()
        };
        let trigger_time = service
            .as_ref()
            .and_then(|s| TriggerTimeTracker::default().compute(&self.key, s, &pods));
        wit::Request {
            namespace: namespace.to_string(),
            name: name.to_string(),
            service,
            pods,
            current: self.endpoints.as_ref().map(|e| {
                let mut v = view::endpoints(e);
                if v.namespace.is_empty() {
                    v.namespace = namespace.to_string();
                }
                v
            }),
            trigger_time,
            config: self
                .config
                .as_ref()
                .map(|c| normalize_config(&config_text(c)).unwrap_or_default())
                .unwrap_or_default(),
        }
    }

    /// Runs the case on `guest`, validating the decision as the controller does.
    pub async fn run(&self, guest: &Guest) -> Result<Action, RunError> {
        self.run_timed(guest).await.0
    }

    /// Like [`Case::run`], with the time of each phase (instantiate, call, validate).
    pub async fn run_timed(
        &self,
        guest: &Guest,
    ) -> (Result<Action, RunError>, CallTiming, std::time::Duration) {
        let request = self.request();
        let (result, timing) = guest.call_timed(&request).await;
        let started = std::time::Instant::now();
        let result = result.map_err(RunError::Call).and_then(|decision| {
            validate(
                &request.namespace,
                &request.name,
                &decision,
                self.endpoints.as_ref(),
                guest.limits().max_addresses,
            )
            .map_err(RunError::Invalid)
        });
        (result, timing, started.elapsed())
    }
}

fn field_error(path: &serde_path_to_error::Path, inner: &dyn std::fmt::Display) -> String {
    let path = path.to_string();
    let inner = inner.to_string();
    // serde_yaml's messages already start with the path; print it once.
    if path == "." || path.is_empty() || inner.starts_with(&format!("{path}: ")) {
        inner
    } else {
        format!("{path}: {inner}")
    }
}

/// Ports the API server would refuse (valid: 1–65535), named by field path: a case must hold
/// objects a cluster could hold.
fn check_ports(service: Option<&core::Service>, pods: &[core::Pod]) -> Result<(), String> {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let in_range = |field: String, port: i32| {
        if (1..=65535).contains(&port) {
            Ok(())
        } else {
            Err(format!(
                "{field}: {port} is not a valid port number (1-65535)"
            ))
        }
    };
    let service_ports = service
        .and_then(|s| s.spec.as_ref())
        .and_then(|s| s.ports.as_deref())
        .unwrap_or_default();
    for (i, p) in service_ports.iter().enumerate() {
        in_range(format!("service.spec.ports[{i}].port"), p.port)?;
        if let Some(IntOrString::Int(t)) = p.target_port {
            in_range(format!("service.spec.ports[{i}].targetPort"), t)?;
        }
    }
    for (i, pod) in pods.iter().enumerate() {
        let Some(spec) = &pod.spec else { continue };
        let containers = [("containers", &spec.containers)]
            .into_iter()
            .chain(spec.init_containers.as_ref().map(|c| ("initContainers", c)));
        for (kind, list) in containers {
            for (j, c) in list.iter().enumerate() {
                for (k, p) in c.ports.iter().flatten().enumerate() {
                    in_range(
                        format!("pods[{i}].spec.{kind}[{j}].ports[{k}].containerPort"),
                        p.container_port,
                    )?;
                }
            }
        }
    }
    Ok(())
}

/// A case whose guest call gave no valid decision.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The call failed (guest error, trap, timeout, memory).
    #[error(transparent)]
    Call(#[from] CallError),
    /// The decision broke the contract.
    #[error(transparent)]
    Invalid(#[from] Violation),
}

fn config_text(config: &Value) -> String {
    match config {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Turns policy configuration written as JSON or YAML into the JSON text guests receive.
/// Empty text stays empty (no configuration).
pub fn normalize_config(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Ok(String::new());
    }
    weir_apiserver::yaml_limits::check(text).map_err(|e| format!("not usable YAML: {e}"))?;
    let value: Value = serde_yaml::from_str(text).map_err(|e| format!("not JSON or YAML: {e}"))?;
    Ok(value.to_string())
}

/// The JSON `weir reconcile` prints: `{"action": ..., "endpoints": <Endpoints> | null}`.
pub fn decision_json(action: &Action) -> Value {
    json!({ "action": action.name(), "endpoints": action.endpoints() })
}

/// Sorts a JSON array by each element's text, so lists compare as sets.
fn sorted(values: Vec<Value>) -> Value {
    let mut keyed: Vec<(String, Value)> = values.into_iter().map(|v| (v.to_string(), v)).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    Value::Array(keyed.into_iter().map(|(_, v)| v).collect())
}

/// The comparable form of an Endpoints object: name, labels, annotations (without the
/// trigger time), and subsets as a set of sets. Server-set metadata is left out.
pub fn comparable(e: &core::Endpoints, with_namespace: bool) -> Value {
    let address = |a: &core::EndpointAddress| {
        let mut a = a.clone();
        if let Some(r) = a.target_ref.as_mut() {
            r.resource_version = None;
        }
        serde_json::to_value(a).unwrap_or(Value::Null)
    };
    let subsets: Vec<Value> = e
        .subsets
        .iter()
        .flatten()
        .map(|s| {
            let ports = s.ports.iter().flatten().map(|p| {
                let mut p = p.clone();
                p.protocol.get_or_insert_with(|| "TCP".into());
                serde_json::to_value(p).unwrap_or(Value::Null)
            });
            json!({
                "addresses": sorted(s.addresses.iter().flatten().map(address).collect()),
                "notReadyAddresses": sorted(s.not_ready_addresses.iter().flatten().map(address).collect()),
                "ports": sorted(ports.collect()),
            })
        })
        .collect();
    let mut annotations: BTreeMap<String, String> =
        e.metadata.annotations.clone().unwrap_or_default();
    annotations.remove(TRIGGER_TIME);
    let mut out = json!({
        "name": e.metadata.name,
        "labels": e.metadata.labels.clone().unwrap_or_default(),
        "annotations": annotations,
        "subsets": sorted(subsets),
    });
    if with_namespace {
        out["namespace"] = json!(e.metadata.namespace);
    }
    out
}

/// Ready and not-ready address counts of an Endpoints object.
pub fn counts(e: &core::Endpoints) -> Counts {
    let subsets = e.subsets.iter().flatten();
    Counts {
        ready: subsets
            .clone()
            .map(|s| s.addresses.as_ref().map_or(0, Vec::len))
            .sum(),
        not_ready: subsets
            .map(|s| s.not_ready_addresses.as_ref().map_or(0, Vec::len))
            .sum(),
    }
}

/// Differences between `expect` and the actual action, as readable text; empty when it passes.
pub fn compare(expect: &Expect, actual: &Action) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(action) = expect.action {
        let want = match action {
            ExpectedAction::None => "none",
            ExpectedAction::Create => "create",
            ExpectedAction::Update => "update",
            ExpectedAction::Delete => "delete",
        };
        if want != actual.name() {
            problems.push(format!("action: expected {want}, got {}", actual.name()));
        }
    }
    if let Some(expected) = &expect.endpoints {
        match actual.endpoints() {
            None => problems.push(format!(
                "endpoints: expected an object, got none (action {})",
                actual.name()
            )),
            Some(got) => {
                let with_namespace = expected.metadata.namespace.is_some();
                let want = comparable(expected, with_namespace);
                let got = comparable(got, with_namespace);
                if want != got {
                    problems.push(format!(
                        "endpoints differ (- expected, + actual):\n{}",
                        diff(&want, &got)
                    ));
                }
            }
        }
    }
    if let Some(want) = expect.counts {
        let got = actual.endpoints().map(counts).unwrap_or(Counts {
            ready: 0,
            not_ready: 0,
        });
        if want != got {
            problems.push(format!(
                "counts: expected ready {} / notReady {}, got ready {} / notReady {}",
                want.ready, want.not_ready, got.ready, got.not_ready
            ));
        }
    }
    problems
}

/// A unified line diff of two JSON values, pretty-printed as YAML.
pub fn diff(want: &Value, got: &Value) -> String {
    let a = serde_yaml::to_string(want).unwrap_or_default();
    let b = serde_yaml::to_string(got).unwrap_or_default();
    similar::TextDiff::from_lines(&a, &b)
        .unified_diff()
        .context_radius(3)
        .to_string()
        .lines()
        .filter(|l| !l.starts_with("@@"))
        .map(|l| format!("    {l}\n"))
        .collect()
}

/// Every case file under `paths` (files as given; directories recursively, `*.json`,
/// `*.yaml`, `*.yml`), sorted. Symbolic links are followed, but each directory is read once, so
/// a link back to a parent (a loop) ends the descent instead of recursing forever.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CaseError> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut seen, &mut out)?;
        } else if path.exists() {
            out.push(path.clone());
        } else {
            return Err(CaseError {
                path: path.clone(),
                message: "no such file or directory".into(),
            });
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn walk(
    dir: &Path,
    seen: &mut std::collections::HashSet<PathBuf>,
    out: &mut Vec<PathBuf>,
) -> Result<(), CaseError> {
    let error = |e: std::io::Error| CaseError {
        path: dir.to_path_buf(),
        message: e.to_string(),
    };
    if !seen.insert(std::fs::canonicalize(dir).map_err(error)?) {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir).map_err(error)? {
        let path = entry.map_err(error)?.path();
        if path.is_dir() {
            walk(&path, seen, out)?;
        } else if path
            .extension()
            .is_some_and(|e| e == "json" || e == "yaml" || e == "yml")
        {
            out.push(path);
        }
    }
    Ok(())
}

/// The result of one case under `weir test`.
#[derive(Debug)]
pub struct Verdict {
    /// The file.
    pub path: PathBuf,
    /// The case's name, if it loaded.
    pub name: Option<String>,
    /// Problems; empty when the case passed.
    pub problems: Vec<String>,
    /// The file could not be used as a case (unreadable, not YAML/JSON, not a valid case): a
    /// usage error rather than a failing case.
    pub unusable: bool,
}

/// Loads and runs one case file, comparing with its `expect`. A case without `expect`
/// passes when the guest produces a valid decision.
pub async fn check_file(guest: &Guest, path: &Path) -> Verdict {
    let case = match Case::load(path) {
        Ok(case) => case,
        Err(e) => {
            return Verdict {
                path: path.to_path_buf(),
                name: None,
                problems: vec![e.message],
                unusable: true,
            };
        }
    };
    let problems = match case.run(guest).await {
        Ok(action) => case
            .expect
            .as_ref()
            .map(|e| compare(e, &action))
            .unwrap_or_default(),
        Err(e) => vec![e.to_string()],
    };
    Verdict {
        path: path.to_path_buf(),
        name: case.name.clone(),
        problems,
        unusable: false,
    }
}
