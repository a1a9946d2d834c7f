//! discovery.k8s.io/v1 EndpointSlices and core/v1 Nodes to the 0.2.0 WIT views and back.
//! Pure functions, shared by the controller and the case runner.
//!
//! Rule numbers R1–R10 and scenarios S01–S98 are those of `docs/upstream-endpointslices.md`.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::view::{non_empty, object_reference};
use crate::runtime::bindings_v0_2 as wit;
use crate::runtime::convert::Convert;

/// Node label holding the zone (R1.6).
pub const ZONE_LABEL: &str = weir_policy::well_known::ZONE_LABEL;

fn pairs(map: &Option<BTreeMap<String, String>>) -> Vec<wit::KeyValue> {
    map.iter()
        .flatten()
        .map(|(key, value)| wit::KeyValue {
            key: key.clone(),
            value: value.clone(),
        })
        .collect()
}

fn map(pairs: Vec<wit::KeyValue>) -> Option<BTreeMap<String, String>> {
    (!pairs.is_empty()).then(|| pairs.into_iter().map(|kv| (kv.key, kv.value)).collect())
}

/// The view of a stored EndpointSlice. `namespace` stands in for an object whose metadata
/// lacks one.
pub fn slice(slice: &discovery::EndpointSlice, namespace: &str) -> wit::EndpointSlice {
    let meta = &slice.metadata;
    wit::EndpointSlice {
        namespace: meta
            .namespace
            .clone()
            .unwrap_or_else(|| namespace.to_string()),
        name: meta.name.clone().unwrap_or_default(),
        generate_name: meta.generate_name.clone().unwrap_or_default(),
        labels: pairs(&meta.labels),
        annotations: pairs(&meta.annotations),
        owner_references: meta
            .owner_references
            .iter()
            .flatten()
            .map(|r| wit::OwnerReference {
                api_version: r.api_version.clone(),
                kind: r.kind.clone(),
                name: r.name.clone(),
                uid: r.uid.clone(),
                controller: r.controller,
                block_owner_deletion: r.block_owner_deletion,
            })
            .collect(),
        resource_version: meta.resource_version.clone().unwrap_or_default(),
        deleting: meta.deletion_timestamp.is_some(),
        address_type: slice.address_type.clone(),
        endpoints: slice.endpoints.iter().flatten().map(endpoint).collect(),
        ports: slice.ports.as_ref().map(|ports| {
            ports
                .iter()
                .map(|p| wit::EndpointSlicePort {
                    name: p.name.clone(),
                    port: p.port,
                    protocol: p.protocol.clone(),
                    app_protocol: p.app_protocol.clone(),
                })
                .collect()
        }),
    }
}

fn endpoint(e: &discovery::Endpoint) -> wit::Endpoint {
    let conditions = e.conditions.clone().unwrap_or_default();
    wit::Endpoint {
        addresses: e.addresses.clone(),
        conditions: wit::EndpointConditions {
            ready: conditions.ready,
            serving: conditions.serving,
            terminating: conditions.terminating,
        },
        hostname: e.hostname.clone(),
        target_ref: e.target_ref.as_ref().map(|r| wit::ObjectReference {
            kind: r.kind.clone().unwrap_or_default(),
            namespace: r.namespace.clone().unwrap_or_default(),
            name: r.name.clone().unwrap_or_default(),
            uid: r.uid.clone().unwrap_or_default(),
            api_version: r.api_version.clone().unwrap_or_default(),
            field_path: r.field_path.clone().unwrap_or_default(),
        }),
        node_name: e.node_name.clone(),
        zone: e.zone.clone(),
        hints: e.hints.as_ref().map(|h| wit::EndpointHints {
            for_zones: h
                .for_zones
                .iter()
                .flatten()
                .map(|z| z.name.clone())
                .collect(),
            for_nodes: h
                .for_nodes
                .iter()
                .flatten()
                .map(|n| n.name.clone())
                .collect(),
        }),
    }
}

/// The EndpointSlice object a decision's slice describes. With `stored`, every metadata
/// field the contract does not carry (uid, finalizers, managed fields, ...) is kept from it.
/// The guest's strings move into the object: a 100-endpoint slice holds some 700 of them.
pub fn slice_object(
    s: wit::EndpointSlice,
    stored: Option<&discovery::EndpointSlice>,
) -> discovery::EndpointSlice {
    let mut metadata: ObjectMeta = stored.map(|o| o.metadata.clone()).unwrap_or_default();
    metadata.namespace = non_empty(s.namespace);
    metadata.name = non_empty(s.name);
    metadata.generate_name = non_empty(s.generate_name);
    metadata.labels = map(s.labels);
    metadata.annotations = map(s.annotations);
    metadata.resource_version = non_empty(s.resource_version);
    metadata.owner_references = (!s.owner_references.is_empty()).then(|| {
        s.owner_references
            .into_iter()
            .map(|r| OwnerReference {
                api_version: r.api_version,
                kind: r.kind,
                name: r.name,
                uid: r.uid,
                controller: r.controller,
                block_owner_deletion: r.block_owner_deletion,
            })
            .collect()
    });
    discovery::EndpointSlice {
        metadata,
        address_type: s.address_type,
        endpoints: Some(s.endpoints.into_iter().map(endpoint_object).collect()),
        ports: s.ports.map(|ports| {
            ports
                .into_iter()
                .map(|p| discovery::EndpointPort {
                    name: p.name,
                    port: p.port,
                    protocol: p.protocol,
                    app_protocol: p.app_protocol,
                })
                .collect()
        }),
    }
}

fn endpoint_object(e: wit::Endpoint) -> discovery::Endpoint {
    discovery::Endpoint {
        addresses: e.addresses,
        conditions: Some(discovery::EndpointConditions {
            ready: e.conditions.ready,
            serving: e.conditions.serving,
            terminating: e.conditions.terminating,
        }),
        deprecated_topology: None,
        hints: e.hints.map(|h| discovery::EndpointHints {
            for_zones: (!h.for_zones.is_empty()).then(|| {
                h.for_zones
                    .into_iter()
                    .map(|name| discovery::ForZone { name })
                    .collect()
            }),
            for_nodes: (!h.for_nodes.is_empty()).then(|| {
                h.for_nodes
                    .into_iter()
                    .map(|name| discovery::ForNode { name })
                    .collect()
            }),
        }),
        hostname: e.hostname,
        node_name: e.node_name,
        // The two contract versions' references have the same fields; one conversion serves both.
        target_ref: e.target_ref.map(|r| object_reference(r.convert())),
        zone: e.zone,
    }
}

/// What a Node tells the slice controller: its zone label, when set and non-empty.
pub fn node_zone(node: &core::Node) -> Option<String> {
    node.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(ZONE_LABEL))
        .filter(|z| !z.is_empty())
        .cloned()
}

/// Allocatable CPU per zone of the Nodes usable for topology-aware hints (R5.10): Nodes
/// that are Ready and not control-plane. `None` when a usable Node lacks a zone or CPU.
pub fn zone_capacities(nodes: &[core::Node]) -> Option<Vec<wit::ZoneCapacity>> {
    let mut by_zone: BTreeMap<String, u64> = BTreeMap::new();
    for node in nodes {
        let labels = node.metadata.labels.clone().unwrap_or_default();
        if labels.contains_key("node-role.kubernetes.io/control-plane")
            || labels.contains_key("node-role.kubernetes.io/master")
        {
            continue;
        }
        let status = node.status.as_ref();
        let ready = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .is_some_and(|c| c.status == "True");
        if !ready {
            continue;
        }
        let zone = node_zone(node)?;
        let cpu = status
            .and_then(|s| s.allocatable.as_ref())
            .and_then(|a| a.get("cpu"))
            .and_then(|q| milli_cpu(&q.0))
            .filter(|m| *m > 0)?;
        *by_zone.entry(zone).or_default() += cpu;
    }
    Some(
        by_zone
            .into_iter()
            .map(|(zone, cpu_millis)| wit::ZoneCapacity { zone, cpu_millis })
            .collect(),
    )
}

/// A CPU quantity (`2`, `1500m`, `0.5`) in millicores; `None` when it does not parse.
pub fn milli_cpu(text: &str) -> Option<u64> {
    if let Some(m) = text.strip_suffix('m') {
        return m.parse().ok();
    }
    let value: f64 = text.parse().ok()?;
    (value.is_finite() && value >= 0.0).then(|| (value * 1000.0).round() as u64)
}

/// Node facts for pods: name → zone (`None` when unlabelled).
pub type NodeZones = HashMap<String, Option<String>>;

/// The Node facts of `nodes`.
pub fn node_zones(nodes: &[core::Node]) -> NodeZones {
    nodes
        .iter()
        .filter_map(|n| Some((n.metadata.name.clone()?, node_zone(n))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_quantities() {
        assert_eq!(milli_cpu("1500m"), Some(1500));
        assert_eq!(milli_cpu("2"), Some(2000));
        assert_eq!(milli_cpu("0.1"), Some(100));
        assert_eq!(milli_cpu("lots"), None);
    }

    #[test]
    fn slice_round_trips_through_the_view() {
        let object: discovery::EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "foo-abc", "namespace": "ns", "resourceVersion": "7",
                "labels": {"kubernetes.io/service-name": "foo"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "foo",
                    "uid": "u", "controller": true, "blockOwnerDeletion": true}]},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [{"addresses": ["10.0.0.1"],
                "conditions": {"ready": true, "serving": true, "terminating": false},
                "nodeName": "n", "zone": "a", "hints": {"forZones": [{"name": "a"}]},
                "targetRef": {"kind": "Pod", "namespace": "ns", "name": "p", "uid": "pu"}}]
        }))
        .unwrap();
        let view = slice(&object, "ns");
        assert_eq!(slice_object(view, None), object);
    }
}
