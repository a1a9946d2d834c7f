//! The Pod as the pods watch decodes it: only the fields the pod cache keeps.
//!
//! A Pod on the wire carries its managedFields (each entry's `fieldsV1` a JSON tree that
//! k8s-openapi decodes into a `serde_json::Value`), every container's image, command, env,
//! resources and probes, volumes and container statuses. The pod cache reads none of them, yet
//! decoding them is most of what listing and watching 100,000 pods costs. [`WirePod`] lets
//! serde skip every other field without building it, and holds a `core::Pod` with only the
//! fields that `reconcile::view::pod` reads, so that projection stays the one place that
//! decides what a guest sees of a pod (a test below checks that it sees the same either way).

pub mod protobuf;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::Deserialize;

/// A Pod decoded with only what the pod cache reads; see the module documentation. It is the
/// type the pods informer lists and watches.
#[derive(Debug, Clone, PartialEq)]
pub struct WirePod(pub core::Pod);

super::wire::stands_for!(WirePod, core::Pod, Wire);

// The serde shapes name only the fields kept.

#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    metadata: Meta,
    spec: Option<Spec>,
    status: Option<Status>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Meta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
    deletion_timestamp: Option<Time>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    #[serde(default)]
    containers: Vec<Container>,
    init_containers: Option<Vec<Container>>,
    node_name: Option<String>,
    hostname: Option<String>,
    subdomain: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Container {
    #[serde(default)]
    name: String,
    restart_policy: Option<String>,
    ports: Option<Vec<core::ContainerPort>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    phase: Option<String>,
    #[serde(rename = "podIP")]
    pod_ip: Option<String>,
    #[serde(rename = "podIPs")]
    pod_ips: Option<Vec<core::PodIP>>,
    conditions: Option<Vec<Condition>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Condition {
    #[serde(rename = "type")]
    kind: String,
    status: String,
    last_transition_time: Option<Time>,
}

impl From<Container> for core::Container {
    fn from(c: Container) -> Self {
        core::Container {
            name: c.name,
            restart_policy: c.restart_policy,
            ports: c.ports,
            ..Default::default()
        }
    }
}

impl From<Wire> for core::Pod {
    fn from(w: Wire) -> Self {
        let m = w.metadata;
        core::Pod {
            metadata: ObjectMeta {
                name: m.name,
                namespace: m.namespace,
                uid: m.uid,
                resource_version: m.resource_version,
                labels: m.labels,
                annotations: m.annotations,
                deletion_timestamp: m.deletion_timestamp,
                ..Default::default()
            },
            spec: w.spec.map(|s| core::PodSpec {
                containers: s.containers.into_iter().map(Into::into).collect(),
                init_containers: s
                    .init_containers
                    .map(|cs| cs.into_iter().map(Into::into).collect()),
                node_name: s.node_name,
                hostname: s.hostname,
                subdomain: s.subdomain,
                ..Default::default()
            }),
            status: w.status.map(|s| core::PodStatus {
                phase: s.phase,
                pod_ip: s.pod_ip,
                pod_ips: s.pod_ips,
                conditions: s.conditions.map(|cs| {
                    cs.into_iter()
                        .map(|c| core::PodCondition {
                            type_: c.kind,
                            status: c.status,
                            last_transition_time: c.last_transition_time,
                            ..Default::default()
                        })
                        .collect()
                }),
                ..Default::default()
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::view;

    /// A pod with every field the view reads and many it does not, as kube-apiserver sends it.
    fn full_pod() -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "web-1",
                "namespace": "shop",
                "uid": "0b5e6c1e-1",
                "resourceVersion": "4711",
                "generation": 1,
                "creationTimestamp": "2026-12-01T10:00:00Z",
                "deletionTimestamp": "2026-12-01T11:00:00Z",
                "labels": {"app": "web", "tier": "front"},
                "annotations": {"endpoints.weir.dev/drain": "true"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                     "name": "web-abc", "uid": "u-rs", "controller": true}],
                "managedFields": [{
                    "manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                    "time": "2026-12-01T10:00:01Z", "fieldsType": "FieldsV1",
                    "subresource": "status",
                    "fieldsV1": {"f:status": {"f:conditions": {".": {},
                        "k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}}}}}
                }]
            },
            "spec": {
                "nodeName": "node-a",
                "hostname": "web-1",
                "subdomain": "web",
                "initContainers": [
                    {"name": "proxy", "image": "envoy", "restartPolicy": "Always",
                     "ports": [{"name": "admin", "containerPort": 9901}]},
                    {"name": "init", "image": "busybox",
                     "ports": [{"name": "ignored", "containerPort": 1}]}
                ],
                "containers": [{
                    "name": "web", "image": "nginx:1.27",
                    "command": ["nginx"], "args": ["-g", "daemon off;"],
                    "env": [{"name": "A", "value": "1"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/", "port": 80}},
                    "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"},
                              {"containerPort": 81},
                              {"name": "dns", "containerPort": 53, "protocol": "UDP"}]
                }],
                "volumes": [{"name": "v", "emptyDir": {}}],
                "restartPolicy": "Always",
                "serviceAccountName": "default"
            },
            "status": {
                "phase": "Running",
                "hostIP": "10.0.0.1",
                "podIP": "10.244.0.7",
                "podIPs": [{"ip": "10.244.0.7"}, {"ip": "fd00::7"}],
                "startTime": "2026-12-01T10:00:00Z",
                "conditions": [
                    {"type": "PodScheduled", "status": "True",
                     "lastTransitionTime": "2026-12-01T10:00:00Z"},
                    {"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                     "lastProbeTime": null,
                     "lastTransitionTime": "2026-12-01T10:00:05Z"}
                ],
                "containerStatuses": [{"name": "web", "ready": false, "restartCount": 0,
                    "image": "nginx:1.27", "imageID": "sha256:x",
                    "state": {"running": {"startedAt": "2026-12-01T10:00:02Z"}}}]
            }
        })
    }

    #[test]
    fn the_guest_sees_the_same_pod_as_from_the_full_decode() {
        let full: core::Pod = serde_json::from_value(full_pod()).unwrap();
        let wire: WirePod = serde_json::from_value(full_pod()).unwrap();
        let seen = view::pod(&wire.0);
        assert_eq!(seen, view::pod(&full));
        // The fixture exercises what the comparison is for.
        assert_eq!(seen.container_ports.len(), 3, "{:?}", seen.container_ports);
        assert!(seen.terminating);
        assert_eq!(seen.conditions.len(), 2);
        assert_eq!(
            wire.0.metadata.resource_version.as_deref(),
            full.metadata.resource_version.as_deref()
        );
    }

    #[test]
    fn what_the_cache_never_reads_is_not_kept() {
        let wire: WirePod = serde_json::from_value(full_pod()).unwrap();
        assert!(wire.0.metadata.managed_fields.is_none());
        assert!(wire.0.metadata.owner_references.is_none());
        let spec = wire.0.spec.unwrap();
        assert!(spec.volumes.is_none());
        assert!(spec.containers[0].image.is_none());
        assert!(spec.containers[0].env.is_none());
        assert!(wire.0.status.unwrap().container_statuses.is_none());
    }

    #[test]
    fn a_pod_with_only_a_name_decodes() {
        let wire: WirePod =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "p"}})).unwrap();
        assert_eq!(wire.0.metadata.name.as_deref(), Some("p"));
        assert!(wire.0.spec.is_none() && wire.0.status.is_none());
    }

    #[test]
    fn a_malformed_pod_is_an_error_not_a_default() {
        let bad = serde_json::json!({"metadata": {"name": "p"}, "spec": {"containers": "x"}});
        assert!(serde_json::from_value::<WirePod>(bad).is_err());
    }
}
