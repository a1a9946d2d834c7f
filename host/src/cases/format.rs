//! The case file format: the serde types a case file parses into, and what they say
//! without running anything (the managed outputs, the key's parts, the configuration text).
//! See `tests/cases/README.md` for the format as authors write it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde::Deserialize;
use serde_json::Value;

use crate::model;

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

/// Expected outcome of a case; every part given is checked.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// `none`, `create`, `update` or `delete`.
    #[serde(default)]
    pub action: Option<ExpectedAction>,
    /// The Endpoints written (compared as sets).
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
    /// Whether endpoints also compare `targetRef.resourceVersion` and `deprecatedTopology`
    /// (default false): fields the controller never sets, which only an endpoint carried over
    /// from a stored slice holds.
    #[serde(default, rename = "compareAllFields")]
    pub compare_all_fields: bool,
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
}

pub(super) fn config_text(config: &Value) -> String {
    match config {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
