//! The live state of a cluster, read once and read-only, as golden cases: one case per
//! Service, holding what a sync of it reads (`weir diff`, `weir snapshot`).
//!
//! A case built here is what the controller would ask its guest: the Service, the pods its
//! selector picks in its namespace, every Node, the stored Endpoints and the stored
//! EndpointSlices of the Service. Running it goes through the same request builder and the
//! same validation as a sync (`cases::Case::run`). The objects are trimmed to what a sync
//! reads, so case files stay small and carry no more of the cluster than they need.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::cases::{Case, CaseError};
use crate::model;
use crate::reconcile::view_slices::ZONE_LABEL;
use crate::selector::{LabelSelector, labels_match, service_selects};
use weir_policy::well_known::SERVICE_NAME_LABEL;

/// kubectl's copy of the applied object: it repeats every name and adds nothing a sync reads.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Node labels a sync reads: the zone (R1.6) and the control-plane roles left out of
/// topology-aware hints (R5.10).
const NODE_LABELS: [&str; 3] = [
    ZONE_LABEL,
    "node-role.kubernetes.io/control-plane",
    "node-role.kubernetes.io/master",
];
/// Objects per page of a list request.
const PAGE: u32 = 500;

/// Which Services to read.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Only this namespace; `None`: every namespace.
    pub namespace: Option<String>,
    /// Only Services whose labels match.
    pub selector: Option<LabelSelector>,
}

/// How the controller the cases stand for is set up (`weir run --manage`,
/// `--max-endpoints-per-slice`, `--policy-config`).
#[derive(Debug, Clone)]
pub struct Shape {
    /// The outputs managed and the most endpoints per slice, as the controller has them.
    pub outputs: crate::controller::Outputs,
    /// The policy configuration (JSON text), or empty.
    pub config: String,
}

/// The objects a sync reads, listed once.
#[derive(Debug, Default)]
pub struct ClusterState {
    /// The Services in scope, sorted by namespace and name.
    pub services: Vec<core::Service>,
    /// Pods by namespace.
    pods: HashMap<String, Vec<core::Pod>>,
    /// Every Node.
    nodes: Vec<core::Node>,
    /// Endpoints by `namespace/name`.
    endpoints: HashMap<String, core::Endpoints>,
    /// EndpointSlices by the `namespace/name` of their Service.
    slices: HashMap<String, Vec<discovery::EndpointSlice>>,
}

/// Lists every object of `api` in pages.
async fn list_all<K>(api: &Api<K>) -> Result<Vec<K>, kube::Error>
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut out = Vec::new();
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = api.list(&params).await?;
        out.extend(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(out),
        }
    }
}

fn api<K>(client: &kube::Client, namespace: Option<&str>) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// The `namespace/name` of the Service an EndpointSlice belongs to, from its
/// `kubernetes.io/service-name` label; `None` for a slice without it.
pub fn service_key_of_slice(slice: &discovery::EndpointSlice) -> Option<String> {
    let service = slice.metadata.labels.as_ref()?.get(SERVICE_NAME_LABEL)?;
    let namespace = slice.metadata.namespace.as_deref().unwrap_or_default();
    Some(format!("{namespace}/{service}"))
}

fn key_of(meta: &ObjectMeta) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    )
}

impl ClusterState {
    /// Reads the Services of `scope` and what their syncs read: list requests only.
    pub async fn read(client: &kube::Client, scope: &Scope) -> Result<ClusterState, kube::Error> {
        let ns = scope.namespace.as_deref();
        let mut services: Vec<core::Service> = list_all(&api(client, ns)).await?;
        if let Some(selector) = &scope.selector {
            services.retain(|s| labels_match(selector, s.metadata.labels.as_ref()));
        }
        services.sort_by_key(|s| key_of(&s.metadata));
        let mut state = ClusterState {
            services,
            nodes: list_all(&Api::all(client.clone())).await?,
            ..ClusterState::default()
        };
        for pod in list_all::<core::Pod>(&api(client, ns)).await? {
            let namespace = pod.metadata.namespace.clone().unwrap_or_default();
            state.pods.entry(namespace).or_default().push(pod);
        }
        for e in list_all::<core::Endpoints>(&api(client, ns)).await? {
            state.endpoints.insert(key_of(&e.metadata), e);
        }
        for s in list_all::<discovery::EndpointSlice>(&api(client, ns)).await? {
            if let Some(key) = service_key_of_slice(&s) {
                state.slices.entry(key).or_default().push(s);
            }
        }
        Ok(state)
    }

    /// The case document of the `i`th Service (in [`ClusterState::services`] order), without
    /// `expect`: what the controller would ask its guest under `shape`.
    pub fn case_document(&self, i: usize, shape: &Shape) -> Value {
        let service = &self.services[i];
        let key = key_of(&service.metadata);
        let namespace = service.metadata.namespace.as_deref().unwrap_or_default();
        let selector = service.spec.as_ref().and_then(|s| s.selector.as_ref());
        let pods: Vec<core::Pod> = self
            .pods
            .get(namespace)
            .into_iter()
            .flatten()
            .filter(|p| service_selects(selector, p.metadata.labels.as_ref()))
            .map(slim_pod)
            .collect();
        let mut slices: Vec<discovery::EndpointSlice> = self
            .slices
            .get(&key)
            .into_iter()
            .flatten()
            .map(|s| discovery::EndpointSlice {
                metadata: slim_meta(&s.metadata),
                ..s.clone()
            })
            .collect();
        slices.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut manage = Vec::new();
        if shape.outputs.endpoints {
            manage.push("endpoints");
        }
        if shape.outputs.endpoint_slices {
            manage.push("endpointSlices");
        }
        let mut case = json!({
            "name": format!("{key}, as stored"),
            "key": key,
            "service": core::Service {
                metadata: slim_meta(&service.metadata),
                spec: service.spec.clone(),
                status: None,
            },
            "pods": pods,
            "nodes": self.nodes.iter().map(slim_node).collect::<Vec<_>>(),
            "endpoints": self.endpoints.get(&key).map(|e| core::Endpoints {
                metadata: slim_meta(&e.metadata),
                subsets: e.subsets.clone(),
            }),
            "endpointSlices": slices,
            "maxEndpointsPerSlice": shape.outputs.max_endpoints_per_slice,
            "manage": manage,
        });
        if !shape.config.is_empty() {
            case["config"] = json!(shape.config);
        }
        case
    }

    /// The `i`th Service's case, parsed and checked as a case file is.
    pub fn case(&self, i: usize, shape: &Shape) -> Result<Case, CaseError> {
        let document = self.case_document(i, shape);
        let origin = format!("{} (live)", document["key"].as_str().unwrap_or_default());
        Case::from_value(document, std::path::Path::new(&origin))
    }
}

/// The `expect` of a snapshot: what is stored now. No Endpoints write, no slice write, and
/// the slices as stored (name, labels, ports, endpoints), so `weir test` with another guest
/// fails exactly the Services it would change, with a diff of their slices.
pub fn stored_expectation(case: &Value) -> Value {
    let mut expect = serde_json::Map::new();
    let manages = |what: &str| {
        case["manage"]
            .as_array()
            .is_none_or(|m| m.iter().any(|v| v == what))
    };
    if manages("endpoints") {
        expect.insert("action".into(), json!("none"));
    }
    if manages("endpointSlices") {
        let slices: Vec<Value> = case["endpointSlices"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                json!({
                    "name": s["metadata"]["name"],
                    "labels": s["metadata"]["labels"].as_object().cloned().unwrap_or_default(),
                    "addressType": s["addressType"],
                    "ports": s["ports"].as_array().cloned().unwrap_or_default(),
                    "endpoints": s["endpoints"].as_array().cloned().unwrap_or_default(),
                })
            })
            .collect();
        expect.insert(
            "endpointSlices".into(),
            json!({"creates": 0, "updates": 0, "deletes": 0, "slices": slices}),
        );
    }
    Value::Object(expect)
}

/// Object metadata without what no sync reads and what repeats the object
/// (managedFields, kubectl's last-applied copy).
fn slim_meta(meta: &ObjectMeta) -> ObjectMeta {
    let mut annotations = meta.annotations.clone();
    if let Some(a) = annotations.as_mut() {
        a.remove(LAST_APPLIED);
    }
    ObjectMeta {
        name: meta.name.clone(),
        generate_name: meta.generate_name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        generation: meta.generation,
        creation_timestamp: meta.creation_timestamp.clone(),
        deletion_timestamp: meta.deletion_timestamp.clone(),
        labels: meta.labels.clone(),
        annotations: annotations.filter(|a| !a.is_empty()),
        owner_references: meta.owner_references.clone(),
        ..ObjectMeta::default()
    }
}

/// Every field of the guest's Pod, each with the Kubernetes fields [`slim_pod`] keeps for it
/// (the reads of `reconcile::view::pod`). Without `..`: a field added to the contract fails to
/// compile here until the case files keep what it is read from.
const _: fn(&model::Pod) = |model::Pod {
                                namespace: _,       // metadata.namespace
                                name: _,            // metadata.name
                                uid: _,             // metadata.uid
                                labels: _,          // metadata.labels
                                annotations: _,     // metadata.annotations
                                node_name: _,       // spec.nodeName
                                hostname: _,        // spec.hostname
                                subdomain: _,       // spec.subdomain
                                pod_ip: _,          // status.podIP
                                pod_ips: _,         // status.podIPs
                                phase: _,           // status.phase
                                conditions: _,      // status.conditions
                                terminating: _,     // metadata.deletionTimestamp
                                node_exists: _,     // the case's Nodes
                                zone: _,            // the case's Nodes
                                container_ports: _, // (init) containers' name, ports, restartPolicy
                            }| {};

/// A pod as endpoint policy reads it (see `reconcile::view::pod`): names, labels,
/// annotations, placement, container ports, phase, IPs and conditions.
fn slim_pod(pod: &core::Pod) -> core::Pod {
    let container = |c: &core::Container| core::Container {
        name: c.name.clone(),
        ports: c.ports.clone(),
        restart_policy: c.restart_policy.clone(),
        ..core::Container::default()
    };
    core::Pod {
        metadata: ObjectMeta {
            owner_references: None,
            ..slim_meta(&pod.metadata)
        },
        spec: pod.spec.as_ref().map(|s| core::PodSpec {
            node_name: s.node_name.clone(),
            hostname: s.hostname.clone(),
            subdomain: s.subdomain.clone(),
            containers: s.containers.iter().map(container).collect(),
            init_containers: s
                .init_containers
                .as_ref()
                .map(|c| c.iter().map(container).collect()),
            ..core::PodSpec::default()
        }),
        status: pod.status.as_ref().map(|s| core::PodStatus {
            phase: s.phase.clone(),
            pod_ip: s.pod_ip.clone(),
            pod_ips: s.pod_ips.clone(),
            conditions: s.conditions.clone(),
            ..core::PodStatus::default()
        }),
    }
}

/// A Node as the slice path reads it: name, zone and role labels, Ready, allocatable CPU.
fn slim_node(node: &core::Node) -> core::Node {
    let labels: BTreeMap<String, String> = node
        .metadata
        .labels
        .iter()
        .flatten()
        .filter(|(k, _)| NODE_LABELS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let status = node.status.as_ref();
    core::Node {
        metadata: ObjectMeta {
            name: node.metadata.name.clone(),
            labels: (!labels.is_empty()).then_some(labels),
            ..ObjectMeta::default()
        },
        spec: None,
        status: Some(core::NodeStatus {
            allocatable: status
                .and_then(|s| s.allocatable.as_ref())
                .and_then(|a| a.get("cpu"))
                .map(|cpu| BTreeMap::from([("cpu".to_string(), cpu.clone())])),
            conditions: status.and_then(|s| s.conditions.as_ref()).map(|c| {
                c.iter()
                    .filter(|c| c.type_ == "Ready")
                    .map(|c| core::NodeCondition {
                        type_: c.type_.clone(),
                        status: c.status.clone(),
                        ..core::NodeCondition::default()
                    })
                    .collect()
            }),
            ..core::NodeStatus::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A pod with every field the guest's view reads set, and more besides.
    fn full_pod() -> core::Pod {
        serde_json::from_value(json!({
            "metadata": {
                "name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                "labels": {"app": "web"},
                "annotations": {"drain": "true"},
                "deletionTimestamp": "2024-01-01T00:00:00Z",
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                     "name": "rs", "uid": "u2"}],
                "managedFields": [{"manager": "kubectl"}]
            },
            "spec": {
                "nodeName": "node-1", "hostname": "h", "subdomain": "sub",
                "serviceAccountName": "sa",
                "containers": [{"name": "c", "image": "app:1",
                                "ports": [{"name": "http", "containerPort": 8080,
                                           "protocol": "TCP"}]}],
                "initContainers": [
                    {"name": "sidecar", "image": "s:1", "restartPolicy": "Always",
                     "ports": [{"name": "metrics", "containerPort": 9090}]},
                    {"name": "init", "image": "i:1",
                     "ports": [{"name": "setup", "containerPort": 7070}]}
                ]
            },
            "status": {
                "phase": "Running", "podIP": "10.0.0.1",
                "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
                "hostIP": "192.168.0.1",
                "conditions": [
                    {"type": "Ready", "status": "True",
                     "lastTransitionTime": "2024-01-01T00:00:00Z"},
                    {"type": "example.com/gate", "status": "False"}
                ]
            }
        }))
        .unwrap()
    }

    #[test]
    fn a_slim_pod_reads_as_the_whole_pod_does() {
        let pod = full_pod();
        let slim = slim_pod(&pod);
        let whole = crate::reconcile::view::pod(&pod);
        assert_eq!(crate::reconcile::view::pod(&slim), whole);
        // The fixture sets every field the view reads, so a field it misses fails above.
        assert!(whole.pod_ip.is_some() && whole.pod_ips.len() == 2);
        assert!(whole.terminating && whole.container_ports.len() == 2);
        // What no policy reads stays out of case files.
        assert!(slim.metadata.managed_fields.is_none());
        assert!(slim.metadata.owner_references.is_none());
        assert!(slim.spec.unwrap().service_account_name.is_none());
        assert!(slim.status.unwrap().host_ip.is_none());
    }

    #[test]
    fn kubectls_copy_of_the_object_is_left_out_of_case_files() {
        let mut pod = full_pod();
        let annotations = pod.metadata.annotations.get_or_insert_default();
        annotations.insert(LAST_APPLIED.into(), "{}".into());
        let slim = slim_pod(&pod);
        let kept = slim.metadata.annotations.unwrap();
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["drain"]);
    }
}
