//! The Node as the nodes watch decodes it: only what [`NodeView`] reads.
//!
//! A Node on the wire carries its managedFields (each entry's `fieldsV1` a JSON tree that
//! k8s-openapi decodes into a `serde_json::Value`), its addresses, images, system info and
//! capacity. Topology-aware hints read four things of it: the zone and role labels, the
//! `Ready` condition and the allocatable CPU. [`WireNode`] lets serde step over every other
//! field without building it, and holds a `core::Node` with only those, so
//! [`NodeView::from_node`] stays the one place that decides what a Node means to a sync (a test
//! below checks that it reads the same either way).
//!
//! [`NodeView`]: super::slices::NodeView
//! [`NodeView::from_node`]: super::slices::NodeView::from_node

pub mod protobuf;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

/// A Node decoded with only what the Node cache reads; see the module documentation. It is
/// the type the nodes informer lists and watches.
#[derive(Debug, Clone, PartialEq)]
pub struct WireNode(pub core::Node);

super::wire::stands_for!(WireNode, core::Node, Wire);

// The serde shapes name only the fields kept.

#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    metadata: Meta,
    status: Option<Status>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Meta {
    name: Option<String>,
    resource_version: Option<String>,
    labels: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
struct Status {
    allocatable: Option<BTreeMap<String, Quantity>>,
    conditions: Option<Vec<Condition>>,
}

#[derive(Deserialize)]
struct Condition {
    #[serde(rename = "type")]
    kind: String,
    status: String,
}

impl From<Wire> for core::Node {
    fn from(w: Wire) -> Self {
        core::Node {
            metadata: ObjectMeta {
                name: w.metadata.name,
                resource_version: w.metadata.resource_version,
                labels: w.metadata.labels,
                ..Default::default()
            },
            spec: None,
            status: w.status.map(|s| core::NodeStatus {
                allocatable: s.allocatable,
                conditions: s.conditions.map(|cs| {
                    cs.into_iter()
                        .map(|c| core::NodeCondition {
                            type_: c.kind,
                            status: c.status,
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
    use crate::controller::store::slices::NodeView;

    /// A Node as a kubelet keeps it, with what the view reads and much it does not.
    fn full_node() -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": "node-a",
                "uid": "5f1c",
                "resourceVersion": "812",
                "creationTimestamp": "2026-12-01T10:00:00Z",
                "labels": {
                    "kubernetes.io/hostname": "node-a",
                    "topology.kubernetes.io/zone": "zone-b",
                    "node-role.kubernetes.io/control-plane": ""
                },
                "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
                "managedFields": [{
                    "manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                    "time": "2026-12-01T10:00:01Z", "fieldsType": "FieldsV1",
                    "subresource": "status",
                    "fieldsV1": {"f:status": {"f:conditions": {".": {},
                        "k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}}}}}
                }]
            },
            "spec": {"podCIDR": "10.244.0.0/24", "providerID": "kind://node-a"},
            "status": {
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "allocatable": {"cpu": "7500m", "memory": "30Gi", "pods": "110"},
                "conditions": [
                    {"type": "MemoryPressure", "status": "False",
                     "lastHeartbeatTime": "2026-12-01T10:00:01Z",
                     "lastTransitionTime": "2026-12-01T10:00:01Z",
                     "reason": "KubeletHasSufficientMemory", "message": "ok"},
                    {"type": "Ready", "status": "True",
                     "lastHeartbeatTime": "2026-12-01T10:00:01Z",
                     "lastTransitionTime": "2026-12-01T10:00:01Z",
                     "reason": "KubeletReady", "message": "kubelet is posting ready status"}
                ],
                "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {"machineID": "m", "systemUUID": "s", "bootID": "b",
                    "kernelVersion": "6.1", "osImage": "Debian", "containerRuntimeVersion": "containerd://2.0",
                    "kubeletVersion": "v1.36.3", "kubeProxyVersion": "", "operatingSystem": "linux",
                    "architecture": "amd64"},
                "images": [{"names": ["registry.invalid/app:1"], "sizeBytes": 1000}]
            }
        })
    }

    #[test]
    fn the_cache_sees_the_same_node_as_from_the_full_decode() {
        let full: core::Node = serde_json::from_value(full_node()).unwrap();
        let wire: WireNode = serde_json::from_value(full_node()).unwrap();
        let seen = NodeView::from_node(&wire.0);
        assert_eq!(seen, NodeView::from_node(&full));
        // The fixture exercises every field of the view.
        assert_eq!(
            seen,
            NodeView {
                zone: Some("zone-b".into()),
                ready: true,
                cpu_millis: 7500,
                control_plane: true,
            }
        );
        assert_eq!(wire.0.metadata.resource_version.as_deref(), Some("812"));
    }

    #[test]
    fn what_the_cache_never_reads_is_not_kept() {
        let wire: WireNode = serde_json::from_value(full_node()).unwrap();
        assert!(wire.0.metadata.managed_fields.is_none());
        assert!(wire.0.metadata.annotations.is_none());
        assert!(wire.0.spec.is_none());
        let status = wire.0.status.unwrap();
        assert!(status.capacity.is_none() && status.node_info.is_none());
        assert!(status.images.is_none() && status.addresses.is_none());
        let conditions = status.conditions.unwrap();
        assert!(conditions.iter().all(|c| c.reason.is_none()));
    }

    #[test]
    fn a_node_with_only_a_name_decodes() {
        let wire: WireNode =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "n"}})).unwrap();
        assert_eq!(wire.0.metadata.name.as_deref(), Some("n"));
        assert!(wire.0.status.is_none());
        assert_eq!(NodeView::from_node(&wire.0), NodeView::default());
    }

    #[test]
    fn a_malformed_node_is_an_error_not_a_default() {
        for bad in [
            serde_json::json!({"metadata": {"name": "n"}, "status": {"conditions": "x"}}),
            serde_json::json!({"metadata": {"labels": ["a"]}}),
            serde_json::json!({"status": {"allocatable": ["4"]}}),
        ] {
            assert!(
                serde_json::from_value::<WireNode>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }
}
