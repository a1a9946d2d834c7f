//! Golden case files: load, select, run, compare (`weir reconcile`, `weir test`, `weir bench`).
//!
//! A case is one reconcile with its inputs (`service`, `pods`, `endpoints`, `nodes`,
//! `endpointSlices`, `config`, ...) and, optionally, what must come out (`expect`). See
//! `tests/cases/README.md` for the format.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::reconcile::request::{self, Selected, SliceInputs};
use crate::reconcile::trigger_time::TriggerTimeTracker;
use crate::reconcile::validate::{Action, Violation, validate};
use crate::reconcile::validate_slices::{self, SliceContext};
use crate::reconcile::view;
use crate::reconcile::view_slices;
use crate::model;
use crate::runtime::{CallError, CallTiming, Guest, World};
use crate::selector::service_selects;

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
    /// The cluster's Nodes (name and zone label are used; Ready, control-plane labels and
    /// allocatable CPU for topology-aware hints). Absent: every pod's named Node exists,
    /// without a zone.
    #[serde(default)]
    pub nodes: Option<Vec<core::Node>>,
    /// The stored EndpointSlices of the Service, of any manager.
    #[serde(default, rename = "endpointSlices")]
    pub endpoint_slices: Vec<discovery::EndpointSlice>,
    /// Most endpoints per slice (1..1000).
    #[serde(default = "default_max_endpoints", rename = "maxEndpointsPerSlice")]
    pub max_endpoints_per_slice: u32,
    /// The outputs the host manages; both when absent.
    #[serde(default)]
    pub manage: Option<Vec<ManagedOutput>>,
    /// What the decision must be.
    #[serde(default)]
    pub expect: Option<Expect>,
}

fn default_max_endpoints() -> u32 {
    weir_policy::well_known::DEFAULT_MAX_ENDPOINTS_PER_SLICE
}

/// An output a case lets the guest manage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum ManagedOutput {
    /// The core/v1 Endpoints object.
    #[serde(rename = "endpoints")]
    Endpoints,
    /// The discovery.k8s.io/v1 EndpointSlices.
    #[serde(rename = "endpointSlices")]
    EndpointSlices,
}

/// The address types an EndpointSlice may have (`IP` only on old objects).
const ADDRESS_TYPES: [&str; 4] = ["IPv4", "IPv6", "FQDN", "IP"];
/// Most endpoints the API server accepts in one slice.
const MAX_SLICE_ENDPOINTS: usize = 1000;

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
    /// The EndpointSlice changes and the slices that result.
    #[serde(default, rename = "endpointSlices")]
    pub endpoint_slices: Option<ExpectSlices>,
}

/// Expected EndpointSlice outcome; every part given is checked.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectSlices {
    /// Number of slices created.
    #[serde(default)]
    pub creates: Option<usize>,
    /// Number of slices updated.
    #[serde(default)]
    pub updates: Option<usize>,
    /// Number of slices deleted.
    #[serde(default)]
    pub deletes: Option<usize>,
    /// Number of sync errors reported after the writes (a pod on a missing Node, ...).
    #[serde(default)]
    pub errors: Option<usize>,
    /// Every slice of the Service after the changes are applied to the stored ones, as a
    /// multiset.
    #[serde(default)]
    pub slices: Option<Vec<ExpectedSlice>>,
    /// Every endpoint of the resulting slices, over all slices, as a multiset: the content
    /// check for slices given only by `endpointCount`.
    #[serde(default, rename = "allEndpoints")]
    pub all_endpoints: Option<Vec<discovery::Endpoint>>,
    /// The events the decision records on the Service, as a multiset of `{type, reason}`
    /// (and `message`, when given); `[]` means none.
    #[serde(default)]
    pub events: Option<Vec<ExpectedEvent>>,
    /// Per zone, how many endpoints of the resulting slices carry a hint for it (for
    /// topology-aware allocation, where which endpoint is moved to another zone is
    /// arbitrary). Zones not listed must have none.
    #[serde(default, rename = "zoneHints")]
    pub zone_hints: Option<BTreeMap<String, usize>>,
    /// How many endpoints of the resulting slices are hinted for a zone other than their own.
    #[serde(default, rename = "crossZoneHints")]
    pub cross_zone_hints: Option<usize>,
}

/// One expected event on the Service.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedEvent {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: EventType,
    /// The event's reason.
    pub reason: String,
    /// The full message; checked only when given.
    #[serde(default)]
    pub message: Option<String>,
}

/// The type of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum EventType {
    /// An informational event.
    Normal,
    /// A problem.
    Warning,
}

/// One expected slice: endpoints and ports compare as sets.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedSlice {
    /// `metadata.name`; checked only when given (a kept or recycled slice keeps its name).
    #[serde(default)]
    pub name: Option<String>,
    /// `addressType`.
    #[serde(rename = "addressType")]
    pub address_type: String,
    /// `ports`.
    #[serde(default)]
    pub ports: Vec<discovery::EndpointPort>,
    /// `endpoints`.
    #[serde(default)]
    pub endpoints: Vec<discovery::Endpoint>,
    /// Instead of `endpoints`: only how many the slice holds, for cases where which endpoint
    /// lands in which slice is arbitrary (R0.4).
    #[serde(default, rename = "endpointCount")]
    pub endpoint_count: Option<usize>,
    /// Whether endpoint `hints` take part in the comparison (default true); false where the
    /// topology-aware allocation picks arbitrary endpoints, checked instead by `zoneHints`.
    #[serde(default = "yes", rename = "compareHints")]
    pub compare_hints: bool,
    /// `metadata.labels`; checked only when given.
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
    /// `metadata.annotations`, the trigger time included; checked only when given.
    #[serde(default)]
    pub annotations: Option<BTreeMap<String, String>>,
    /// `metadata.ownerReferences`; checked only when given.
    #[serde(default, rename = "ownerReferences")]
    pub owner_references: Option<Vec<OwnerReference>>,
}

fn yes() -> bool {
    true
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

    /// A case given as a JSON document (as `weir diff` builds one from live objects),
    /// checked as [`Case::load`] checks a file; `origin` names it in errors.
    pub fn from_value(document: Value, origin: &Path) -> Result<Case, CaseError> {
        let fail = |message: String| CaseError {
            path: origin.to_path_buf(),
            message,
        };
        let case: Case = serde_path_to_error::deserialize(document)
            .map_err(|e| fail(field_error(e.path(), e.inner())))?;
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
        if !(1..=1000).contains(&self.max_endpoints_per_slice) {
            return Err(format!(
                "maxEndpointsPerSlice: {} is outside 1..1000",
                self.max_endpoints_per_slice
            ));
        }
        for (i, node) in self.nodes.iter().flatten().enumerate() {
            if node.metadata.name.as_deref().unwrap_or("").is_empty() {
                return Err(format!("nodes[{i}].metadata.name: a Node needs a name"));
            }
        }
        let stored = self.endpoint_slices.iter().map(|s| {
            (
                s.address_type.as_str(),
                s.endpoints.as_ref().map_or(0, Vec::len),
            )
        });
        check_slices("endpointSlices", stored)?;
        if let Some(slices) = self
            .expect
            .as_ref()
            .and_then(|e| e.endpoint_slices.as_ref())
            .and_then(|e| e.slices.as_ref())
        {
            if let Some(i) = slices
                .iter()
                .position(|s| s.endpoint_count.is_some() && !s.endpoints.is_empty())
            {
                return Err(format!(
                    "expect.endpointSlices.slices[{i}]: give endpoints or endpointCount, not both"
                ));
            }
            let expected = slices.iter().map(|s| {
                (
                    s.address_type.as_str(),
                    s.endpoint_count.unwrap_or(s.endpoints.len()),
                )
            });
            check_slices("expect.endpointSlices.slices", expected)?;
        }
        Ok(())
    }

    /// The outputs this case manages.
    pub fn outputs(&self) -> model::Outputs {
        match &self.manage {
            None => model::Outputs {
                endpoints: true,
                endpoint_slices: true,
            },
            Some(list) => model::Outputs {
                endpoints: list.contains(&ManagedOutput::Endpoints),
                endpoint_slices: list.contains(&ManagedOutput::EndpointSlices),
            },
        }
    }

    /// The key's namespace and name.
    pub fn split_key(&self) -> Option<(&str, &str)> {
        let (ns, name) = self.key.split_once('/')?;
        (!ns.is_empty() && !name.is_empty() && !name.contains('/')).then_some((ns, name))
    }

    /// What the request is built from: the Service, the pods its selector picks in its
    /// namespace (as `weir run` selects them), the stored Endpoints and the configuration.
    fn selected(&self) -> Selected {
        let (namespace, name) = self.split_key().unwrap_or(("", ""));
        let service = self.service.as_ref().map(|s| view::service(s, namespace));
        let selector = self
            .service
            .as_ref()
            .and_then(|s| s.spec.as_ref())
            .and_then(|s| s.selector.as_ref());
        let pods: Vec<model::Pod> = if service.is_some() {
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
        Selected {
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

    /// The request the controller would send: the Service and its selected pods, the stored
    /// Endpoints and slices, the pods' Node facts, the slice size and the managed outputs.
    pub fn request(&self) -> model::Request {
        let nodes = self.nodes.as_deref().map(view_slices::node_zones);
        request::build(
            self.selected(),
            SliceInputs {
                nodes: nodes.as_ref(),
                slices: self.endpoint_slices.iter().collect(),
                max_endpoints_per_slice: self.max_endpoints_per_slice,
                zone_capacities: self.nodes.as_deref().and_then(view_slices::zone_capacities),
                manage: self.outputs(),
            },
        )
    }

    /// Runs the case on `guest`, validating the decision as the controller does.
    pub async fn run(&self, guest: &Guest) -> Result<Outcome, RunError> {
        self.check_config(guest).await?;
        self.run_timed(guest).await.0
    }

    /// Checks the case's `config` with the guest's `validate-config` (0.2.0), under the same
    /// deadline and memory cap as a call, as a controller does when it loads a guest. A case
    /// without `config`, and a 0.1.0 guest (no such export), pass.
    pub async fn check_config(&self, guest: &Guest) -> Result<(), RunError> {
        let Some(config) = &self.config else {
            return Ok(());
        };
        let text = normalize_config(&config_text(config)).unwrap_or_default();
        match guest.validate_config(&text).await {
            Ok(()) => Ok(()),
            Err(CallError::Guest(message)) => Err(RunError::Config(message)),
            Err(e) => Err(RunError::Call(e)),
        }
    }

    /// Like [`Case::run`], with the time of each phase (instantiate, call, validate).
    pub async fn run_timed(
        &self,
        guest: &Guest,
    ) -> (Result<Outcome, RunError>, CallTiming, std::time::Duration) {
        let request = self.request();
        let (result, timing) = guest.call_timed(&request).await;
        let started = std::time::Instant::now();
        let result = result
            .map_err(RunError::Call)
            .and_then(|decision| self.outcome(guest.world(), &request, decision));
        (result, timing, started.elapsed())
    }

    /// Validates a decision and applies its slice changes to the stored slices.
    fn outcome(
        &self,
        world: World,
        request: &model::Request,
        decision: model::Decision,
    ) -> Result<Outcome, RunError> {
        let model::Decision {
            endpoints,
            slices,
            errors,
            events,
        } = decision;
        let action = validate(
            &request.namespace,
            &request.name,
            endpoints,
            self.endpoints.as_ref(),
            crate::runtime::Limits::default().max_addresses,
        )?;
        let stored: Vec<&discovery::EndpointSlice> = self.endpoint_slices.iter().collect();
        let service_uid = self
            .service
            .as_ref()
            .and_then(|s| s.metadata.uid.as_deref());
        // The controller's own check (and objects), with what the case says about the
        // Service and its slices.
        let plan = validate_slices::plan(
            &SliceContext {
                namespace: &request.namespace,
                name: &request.name,
                service_uid,
                stored: &stored,
                max_endpoints_per_slice: usize::try_from(self.max_endpoints_per_slice)
                    .unwrap_or(usize::MAX),
                pods: &request.pods,
            },
            slices,
        )?;
        Ok(Outcome {
            action,
            world,
            slices: SliceWrites {
                create: plan.create,
                update: plan.update,
                delete: plan.delete.into_iter().map(|d| d.name).collect(),
            },
            errors,
            events: events
                .into_iter()
                .map(|e| {
                    json!({
                        "type": if e.warning { "Warning" } else { "Normal" },
                        "reason": e.reason,
                        "message": e.message,
                    })
                })
                .collect(),
        })
    }

    /// Every slice of the Service once `writes` are applied to the stored ones; created
    /// slices get the name `<generateName>created-<n>`.
    pub fn slices_after(&self, writes: &SliceWrites) -> Vec<discovery::EndpointSlice> {
        let name = |s: &discovery::EndpointSlice| s.metadata.name.clone().unwrap_or_default();
        let mut out: Vec<discovery::EndpointSlice> = self
            .endpoint_slices
            .iter()
            .filter(|s| !writes.delete.contains(&name(s)))
            .filter(|s| writes.update.iter().all(|u| name(u) != name(s)))
            .cloned()
            .collect();
        out.extend(writes.update.iter().cloned());
        for (i, created) in writes.create.iter().enumerate() {
            let mut created = created.clone();
            let prefix = created.metadata.generate_name.clone().unwrap_or_default();
            created.metadata.name = Some(format!("{prefix}created-{i}"));
            out.push(created);
        }
        out
    }
}

/// Checks stored or expected slices: a known address type, at most 1000 endpoints each.
fn check_slices<'a>(
    field: &str,
    slices: impl Iterator<Item = (&'a str, usize)>,
) -> Result<(), String> {
    for (i, (address_type, endpoints)) in slices.enumerate() {
        if !ADDRESS_TYPES.contains(&address_type) {
            return Err(format!(
                "{field}[{i}].addressType: {address_type:?} is not one of IPv4, IPv6, FQDN"
            ));
        }
        if endpoints > MAX_SLICE_ENDPOINTS {
            return Err(format!(
                "{field}[{i}].endpoints: {endpoints} endpoints, more than the {MAX_SLICE_ENDPOINTS} a slice may hold"
            ));
        }
    }
    Ok(())
}

/// The EndpointSlice writes of a decision, as discovery.k8s.io/v1 objects.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SliceWrites {
    /// Slices to create (named by the API server from `generateName`).
    pub create: Vec<discovery::EndpointSlice>,
    /// Stored slices to replace, by name, with the stored resourceVersion.
    pub update: Vec<discovery::EndpointSlice>,
    /// Names of stored slices to delete.
    pub delete: Vec<String>,
}

/// What a case's reconcile decided, validated.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// What happens to the Endpoints.
    pub action: Action,
    /// The contract version of the guest that decided.
    pub world: World,
    /// What happens to the EndpointSlices.
    pub slices: SliceWrites,
    /// Sync errors reported after the writes.
    pub errors: Vec<String>,
    /// Events for the Service, as `{type, reason, message}`.
    pub events: Vec<Value>,
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
    /// The slice changes broke the contract.
    #[error(transparent)]
    InvalidSlices(#[from] validate_slices::SliceViolation),
    /// The policy's `validate-config` refused the case's `config`.
    #[error("config: the policy refuses it: {0}")]
    Config(String),
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

/// The JSON of an Endpoints action: `{"action": ..., "endpoints": <Endpoints> | null}`.
pub fn decision_json(action: &Action) -> Value {
    json!({ "action": action.name(), "endpoints": action.endpoints() })
}

/// The JSON `weir reconcile` prints: `{"action": ..., "endpoints": <Endpoints> | null,
/// "endpointSlices": {"create": [...], "update": [...], "delete": ["name", ...]} | null,
/// "errors": [...], "events": [...]}`. `endpointSlices` is null for a 0.1.0 guest, which
/// cannot compute them.
pub fn outcome_json(outcome: &Outcome) -> Value {
    let slices = &outcome.slices;
    json!({
        "action": outcome.action.name(),
        "endpoints": outcome.action.endpoints(),
        "endpointSlices": outcome.world.has_slices().then(|| json!({
            "create": slices.create,
            "update": slices.update,
            "delete": slices.delete,
        })),
        "errors": outcome.errors,
        "events": outcome.events,
    })
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

/// The comparable form of a slice: address type, ports and endpoints as sorted sets (no
/// `targetRef.resourceVersion`), plus the name and labels when `with_name`/`with_labels`.
pub fn comparable_slice(
    address_type: &str,
    ports: &[discovery::EndpointPort],
    endpoints: &[discovery::Endpoint],
    name: Option<&str>,
    labels: Option<&BTreeMap<String, String>>,
) -> Value {
    let endpoints = endpoints.iter().map(|e| {
        let mut e = e.clone();
        if let Some(r) = e.target_ref.as_mut() {
            r.resource_version = None;
        }
        e.deprecated_topology = None;
        serde_json::to_value(e).unwrap_or(Value::Null)
    });
    let ports = ports
        .iter()
        .map(|p| serde_json::to_value(p).unwrap_or(Value::Null));
    let mut out = json!({
        "addressType": address_type,
        "ports": sorted(ports.collect()),
        "endpoints": sorted(endpoints.collect()),
    });
    if let Some(name) = name {
        out["name"] = json!(name);
    }
    if let Some(labels) = labels {
        out["labels"] = json!(labels);
    }
    out
}

/// The comparable form of `s` restricted to what `e` checks: name, labels, annotations and
/// ownerReferences only when `e` gives them, hints only when `e.compareHints`, and only the
/// number of endpoints when `e.endpointCount` is given. `e = None` shows everything a diff
/// needs.
fn slice_form(s: &discovery::EndpointSlice, e: Option<&ExpectedSlice>) -> Value {
    let meta = &s.metadata;
    let mut endpoints = s.endpoints.clone().unwrap_or_default();
    if e.is_some_and(|e| !e.compare_hints) {
        for endpoint in &mut endpoints {
            endpoint.hints = None;
        }
    }
    let no_labels = BTreeMap::new();
    let mut out = comparable_slice(
        &s.address_type,
        s.ports.as_deref().unwrap_or_default(),
        &endpoints,
        e.is_none_or(|e| e.name.is_some())
            .then(|| meta.name.as_deref().unwrap_or_default()),
        e.is_none_or(|e| e.labels.is_some())
            .then(|| meta.labels.as_ref().unwrap_or(&no_labels)),
    );
    if e.is_some_and(|e| e.endpoint_count.is_some()) {
        out["endpoints"] = json!(endpoints.len());
    }
    if e.is_none_or(|e| e.annotations.is_some()) {
        out["annotations"] = json!(meta.annotations.clone().unwrap_or_default());
    }
    if e.is_none_or(|e| e.owner_references.is_some()) {
        out["ownerReferences"] = json!(meta.owner_references.clone().unwrap_or_default());
    }
    out
}

/// The comparable form of an expected slice (see [`slice_form`]).
fn expected_form(e: &ExpectedSlice) -> Value {
    let slice = discovery::EndpointSlice {
        metadata: ObjectMeta {
            name: e.name.clone(),
            labels: e.labels.clone(),
            annotations: e.annotations.clone(),
            owner_references: e.owner_references.clone(),
            ..ObjectMeta::default()
        },
        address_type: e.address_type.clone(),
        endpoints: Some(e.endpoints.clone()),
        ports: Some(e.ports.clone()),
    };
    let mut out = slice_form(&slice, Some(e));
    if let Some(count) = e.endpoint_count {
        out["endpoints"] = json!(count);
    }
    out
}

/// Differences between expected and actual slices (a multiset match), as readable text.
fn compare_slices(expected: &[ExpectedSlice], actual: &[discovery::EndpointSlice]) -> Vec<String> {
    // Most specific expectations first, so one that names labels or a name is not left
    // without its slice by a looser one.
    let specific = |e: &ExpectedSlice| {
        [
            e.name.is_some(),
            e.labels.is_some(),
            e.annotations.is_some(),
            e.owner_references.is_some(),
            e.endpoint_count.is_none(),
            e.compare_hints,
        ]
        .iter()
        .filter(|b| **b)
        .count()
    };
    let mut order: Vec<&ExpectedSlice> = expected.iter().collect();
    order.sort_by_key(|e| std::cmp::Reverse(specific(e)));
    let mut unmatched: Vec<&discovery::EndpointSlice> = actual.iter().collect();
    let mut missing = Vec::new();
    for e in order {
        let w = expected_form(e);
        match unmatched.iter().position(|s| slice_form(s, Some(e)) == w) {
            Some(i) => {
                unmatched.remove(i);
            }
            None => missing.push(w),
        }
    }
    if missing.is_empty() && unmatched.is_empty() {
        return Vec::new();
    }
    let extra: Vec<Value> = unmatched.iter().map(|s| slice_form(s, None)).collect();
    vec![format!(
        "endpointSlices.slices differ ({} expected not found, {} actual not expected; - expected, + actual):\n{}",
        missing.len(),
        extra.len(),
        diff(&Value::Array(missing), &Value::Array(extra))
    )]
}

/// Differences between the expected endpoints and those of all `slices` together, as
/// multisets (normalised as in [`comparable_slice`]).
fn compare_all_endpoints(
    expected: &[discovery::Endpoint],
    slices: &[discovery::EndpointSlice],
) -> Vec<String> {
    let actual: Vec<discovery::Endpoint> = slices
        .iter()
        .flat_map(|s| s.endpoints.iter().flatten().cloned())
        .collect();
    let form = |endpoints: &[discovery::Endpoint]| {
        comparable_slice("", &[], endpoints, None, None)["endpoints"].clone()
    };
    let (want, got) = (form(expected), form(&actual));
    if want == got {
        return Vec::new();
    }
    vec![format!(
        "endpointSlices.allEndpoints differ (expected {}, got {}; - expected, + actual):\n{}",
        expected.len(),
        actual.len(),
        diff(&want, &got)
    )]
}

/// Differences between the expected and the decided events (a multiset match on type and
/// reason, and message where the expectation gives one).
fn compare_events(expected: &[ExpectedEvent], actual: &[Value]) -> Vec<String> {
    let form = |e: &Value, with_message: bool| {
        json!({
            "type": e["type"],
            "reason": e["reason"],
            "message": if with_message { e["message"].clone() } else { Value::Null },
        })
    };
    let mut unmatched: Vec<&Value> = actual.iter().collect();
    let mut missing = Vec::new();
    for e in expected {
        let kind = match e.type_ {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        };
        let w = json!({"type": kind, "reason": e.reason, "message": e.message});
        match unmatched
            .iter()
            .position(|a| form(a, e.message.is_some()) == w)
        {
            Some(i) => {
                unmatched.remove(i);
            }
            None => missing.push(w),
        }
    }
    if missing.is_empty() && unmatched.is_empty() {
        return Vec::new();
    }
    let extra: Vec<Value> = unmatched.into_iter().cloned().collect();
    vec![format!(
        "endpointSlices.events differ (- expected, + actual):\n{}",
        diff(&Value::Array(missing), &Value::Array(extra))
    )]
}

/// Per zone, the endpoints of `slices` hinted for it, and how many of those are hinted for a
/// zone other than their own.
fn hint_counts(slices: &[discovery::EndpointSlice]) -> (BTreeMap<String, usize>, usize) {
    let mut by_zone = BTreeMap::new();
    let mut cross = 0;
    let endpoints = slices.iter().flat_map(|s| s.endpoints.iter().flatten());
    for endpoint in endpoints {
        let zones = endpoint
            .hints
            .iter()
            .flat_map(|h| h.for_zones.iter().flatten());
        for zone in zones {
            *by_zone.entry(zone.name.clone()).or_insert(0) += 1;
            if endpoint.zone.as_deref() != Some(zone.name.as_str()) {
                cross += 1;
            }
        }
    }
    (by_zone, cross)
}

/// Differences between a case's `expect` and its outcome, as readable text; empty when it
/// passes.
pub fn compare_outcome(case: &Case, expect: &Expect, outcome: &Outcome) -> Vec<String> {
    let mut problems = compare(expect, &outcome.action);
    let Some(want) = &expect.endpoint_slices else {
        return problems;
    };
    if !outcome.world.has_slices() {
        problems.push(format!(
            "endpointSlices: the guest implements {} (Endpoints only) and cannot compute the EndpointSlices this case expects",
            outcome.world.package()
        ));
        return problems;
    }
    let counts = [
        ("creates", want.creates, outcome.slices.create.len()),
        ("updates", want.updates, outcome.slices.update.len()),
        ("deletes", want.deletes, outcome.slices.delete.len()),
        ("errors", want.errors, outcome.errors.len()),
    ];
    for (what, want, got) in counts {
        if let Some(want) = want
            && want != got
        {
            problems.push(format!("endpointSlices.{what}: expected {want}, got {got}"));
        }
    }
    let after = case.slices_after(&outcome.slices);
    if let Some(expected) = &want.slices {
        problems.extend(compare_slices(expected, &after));
    }
    if let Some(expected) = &want.all_endpoints {
        problems.extend(compare_all_endpoints(expected, &after));
    }
    if let Some(expected) = &want.events {
        problems.extend(compare_events(expected, &outcome.events));
    }
    let (by_zone, cross) = hint_counts(&after);
    if let Some(expected) = &want.zone_hints
        && *expected != by_zone
    {
        problems.push(format!(
            "endpointSlices.zoneHints: expected {expected:?}, got {by_zone:?}"
        ));
    }
    if let Some(expected) = want.cross_zone_hints
        && expected != cross
    {
        problems.push(format!(
            "endpointSlices.crossZoneHints: expected {expected}, got {cross}"
        ));
    }
    problems
}

/// Differences between `expect` and the actual Endpoints action, as readable text; empty
/// when it passes.
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
    check_file_with_config(guest, path, None).await
}

/// [`check_file`] with `config` (JSON text) in place of the case's own `config` when given,
/// as `weir test --policy-config` runs it.
pub async fn check_file_with_config(guest: &Guest, path: &Path, config: Option<&str>) -> Verdict {
    let case = match Case::load(path) {
        Ok(mut case) => {
            if let Some(config) = config {
                case.config = Some(Value::String(config.to_string()));
            }
            case
        }
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
        Ok(outcome) => case
            .expect
            .as_ref()
            .map(|e| compare_outcome(&case, e, &outcome))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(v: Value) -> discovery::EndpointSlice {
        serde_json::from_value(v).unwrap()
    }

    fn expected(yaml: &str) -> Vec<ExpectedSlice> {
        serde_yaml::from_str(yaml).unwrap()
    }

    /// A created slice of `foo` with two endpoints, one hinted for another zone.
    fn actual() -> Vec<discovery::EndpointSlice> {
        vec![slice(json!({
            "metadata": {"name": "foo-created-0", "labels": {"a": "b"},
                "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": "2025-01-02T03:04:05Z"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "foo",
                    "uid": "u", "controller": true, "blockOwnerDeletion": true}]},
            "addressType": "IPv4",
            "ports": [],
            "endpoints": [
                {"addresses": ["10.0.0.1"], "zone": "zone-a",
                    "hints": {"forZones": [{"name": "zone-a"}]}},
                {"addresses": ["10.0.0.2"], "zone": "zone-b",
                    "hints": {"forZones": [{"name": "zone-a"}]}},
            ],
        }))]
    }

    #[test]
    fn endpoint_count_checks_only_the_number() {
        let ok = expected("[{addressType: IPv4, endpointCount: 2}]");
        assert!(compare_slices(&ok, &actual()).is_empty());
        let wrong = expected("[{addressType: IPv4, endpointCount: 3}]");
        assert_eq!(compare_slices(&wrong, &actual()).len(), 1);
    }

    #[test]
    fn hints_are_ignored_only_when_asked() {
        let bare = "[{addressType: IPv4, compareHints: HINTS, endpoints: [
            {addresses: [10.0.0.1], zone: zone-a}, {addresses: [10.0.0.2], zone: zone-b}]}]";
        let ignoring = expected(&bare.replace("HINTS", "false"));
        assert!(compare_slices(&ignoring, &actual()).is_empty());
        let comparing = expected(&bare.replace("HINTS", "true"));
        assert_eq!(compare_slices(&comparing, &actual()).len(), 1);
    }

    #[test]
    fn annotations_and_owner_references_are_checked_when_given() {
        let ok = expected(
            "[{addressType: IPv4, endpointCount: 2,
               annotations: {endpoints.kubernetes.io/last-change-trigger-time: '2025-01-02T03:04:05Z'},
               ownerReferences: [{apiVersion: v1, kind: Service, name: foo, uid: u, controller: true,
                                  blockOwnerDeletion: true}]}]",
        );
        assert!(compare_slices(&ok, &actual()).is_empty());
        for wrong in [
            "[{addressType: IPv4, endpointCount: 2, annotations: {}}]",
            "[{addressType: IPv4, endpointCount: 2, ownerReferences: []}]",
        ] {
            assert_eq!(
                compare_slices(&expected(wrong), &actual()).len(),
                1,
                "{wrong}"
            );
        }
    }

    #[test]
    fn all_endpoints_compare_as_a_multiset_over_every_slice() {
        let endpoints =
            |yaml: &str| -> Vec<discovery::Endpoint> { serde_yaml::from_str(yaml).unwrap() };
        let ok = endpoints(
            "[{addresses: [10.0.0.2], zone: zone-b, hints: {forZones: [{name: zone-a}]}},
              {addresses: [10.0.0.1], zone: zone-a, hints: {forZones: [{name: zone-a}]}}]",
        );
        assert!(compare_all_endpoints(&ok, &actual()).is_empty());
        let one_missing = &ok[..1];
        assert_eq!(compare_all_endpoints(one_missing, &actual()).len(), 1);
        let twice = [ok.clone(), ok.clone()].concat();
        let doubled = [actual(), actual()].concat();
        assert!(compare_all_endpoints(&twice, &doubled).is_empty());
        assert_eq!(compare_all_endpoints(&ok, &doubled).len(), 1, "a multiset");
    }

    #[test]
    fn hint_counts_per_zone_and_across_zones() {
        let (by_zone, cross) = hint_counts(&actual());
        assert_eq!(by_zone, BTreeMap::from([("zone-a".to_string(), 2)]));
        assert_eq!(cross, 1);
    }

    #[test]
    fn events_compare_as_a_multiset_with_optional_messages() {
        let actual = vec![
            json!({"type": "Normal", "reason": "TopologyAwareHintsEnabled", "message": "on"}),
            json!({"type": "Warning", "reason": "TopologyAwareHintsDisabled", "message": "off"}),
        ];
        let events = |yaml: &str| -> Vec<ExpectedEvent> { serde_yaml::from_str(yaml).unwrap() };
        let ok = events(
            "[{type: Warning, reason: TopologyAwareHintsDisabled, message: 'off'},
              {type: Normal, reason: TopologyAwareHintsEnabled}]",
        );
        assert!(compare_events(&ok, &actual).is_empty());
        let wrong_message = events(
            "[{type: Warning, reason: TopologyAwareHintsDisabled, message: x},
              {type: Normal, reason: TopologyAwareHintsEnabled}]",
        );
        assert_eq!(compare_events(&wrong_message, &actual).len(), 1);
        assert_eq!(compare_events(&[], &actual).len(), 1, "[] means no event");
        assert!(compare_events(&[], &[]).is_empty());
    }

    #[test]
    fn endpoints_and_endpoint_count_together_are_refused() {
        let case: Case = serde_yaml::from_str(
            "key: ns/foo
expect: {endpointSlices: {slices: [{addressType: IPv4, endpointCount: 1,
                                    endpoints: [{addresses: [10.0.0.1]}]}]}}",
        )
        .unwrap();
        let err = case.check().unwrap_err();
        assert!(err.contains("expect.endpointSlices.slices[0]"), "{err}");
    }
}
