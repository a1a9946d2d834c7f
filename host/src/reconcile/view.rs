//! Kubernetes objects (k8s-openapi) to the host's model and back. Pure functions.
//!
//! Where the API server would have defaulted a field that a case file or an old object leaves
//! out, the view applies the same default: Service port protocol `TCP`, `targetPort` = `port`,
//! container port protocol `TCP`, Service type `ClusterIP`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::model;

fn pairs(map: &Option<BTreeMap<String, String>>) -> Vec<model::KeyValue> {
    map.as_ref().map(entries).unwrap_or_default()
}

fn entries(map: &BTreeMap<String, String>) -> Vec<model::KeyValue> {
    map.iter()
        .map(|(key, value)| model::KeyValue {
            key: key.clone(),
            value: value.clone(),
        })
        .collect()
}

fn owned_map(pairs: Vec<model::KeyValue>) -> BTreeMap<String, String> {
    pairs.into_iter().map(|kv| (kv.key, kv.value)).collect()
}

/// A Kubernetes time as the API serializes it (`2024-01-01T00:00:00Z`).
pub fn time(t: &Time) -> String {
    serde_json::to_value(t)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn target_port(port: &core::ServicePort) -> model::TargetPort {
    match &port.target_port {
        Some(IntOrString::Int(n)) if *n != 0 => model::TargetPort::Number(*n),
        Some(IntOrString::String(name)) if !name.is_empty() => {
            model::TargetPort::Name(name.clone())
        }
        // The API server defaults an absent or zero targetPort to the port itself.
        _ => model::TargetPort::Number(port.port),
    }
}

/// The Service view. `namespace` stands in for an object whose metadata lacks one.
pub fn service(svc: &core::Service, namespace: &str) -> model::Service {
    let meta = &svc.metadata;
    let default_spec = core::ServiceSpec::default();
    let spec = svc.spec.as_ref().unwrap_or(&default_spec);
    model::Service {
        namespace: meta
            .namespace
            .clone()
            .unwrap_or_else(|| namespace.to_string()),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        labels: pairs(&meta.labels),
        annotations: pairs(&meta.annotations),
        creation_timestamp: meta.creation_timestamp.as_ref().map(time),
        selector: spec.selector.as_ref().map(entries),
        service_type: spec.type_.clone().unwrap_or_else(|| "ClusterIP".into()),
        cluster_ip: spec.cluster_ip.clone().unwrap_or_default(),
        cluster_ips: spec.cluster_ips.clone().unwrap_or_default(),
        ip_families: spec.ip_families.clone().unwrap_or_default(),
        ports: spec
            .ports
            .iter()
            .flatten()
            .map(|p| model::ServicePort {
                name: p.name.clone().unwrap_or_default(),
                protocol: p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                port: p.port,
                target_port: target_port(p),
                app_protocol: p.app_protocol.clone(),
            })
            .collect(),
        publish_not_ready_addresses: spec.publish_not_ready_addresses.unwrap_or(false),
        traffic_distribution: spec.traffic_distribution.clone(),
        deleting: meta.deletion_timestamp.is_some(),
    }
}

fn named_ports<'a>(
    containers: impl Iterator<Item = &'a core::Container>,
) -> impl Iterator<Item = model::ContainerPort> {
    containers
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| {
            let name = p.name.clone().filter(|n| !n.is_empty())?;
            Some(model::ContainerPort {
                name,
                port: p.container_port,
                protocol: p.protocol.clone().unwrap_or_else(|| "TCP".into()),
            })
        })
}

/// The Pod view: only what endpoint policy reads (about 1 KB for a typical pod).
pub fn pod(pod: &core::Pod) -> model::Pod {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref();
    let status = pod.status.as_ref();
    // Lookup order of upstream's FindPort: containers, then sidecar init containers.
    let container_ports = spec
        .map(|s| {
            let sidecars = s
                .init_containers
                .iter()
                .flatten()
                .filter(|c| c.restart_policy.as_deref() == Some("Always"));
            named_ports(s.containers.iter())
                .chain(named_ports(sidecars))
                .collect()
        })
        .unwrap_or_default();
    model::Pod {
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        labels: pairs(&meta.labels),
        annotations: pairs(&meta.annotations),
        node_name: spec.and_then(|s| s.node_name.clone()).unwrap_or_default(),
        hostname: spec.and_then(|s| s.hostname.clone()).unwrap_or_default(),
        subdomain: spec.and_then(|s| s.subdomain.clone()).unwrap_or_default(),
        pod_ip: status
            .and_then(|s| s.pod_ip.clone())
            .filter(|ip| !ip.is_empty()),
        pod_ips: status
            .and_then(|s| s.pod_ips.as_ref())
            .into_iter()
            .flatten()
            .map(|ip| ip.ip.clone())
            .collect(),
        phase: status.and_then(|s| s.phase.clone()).unwrap_or_default(),
        conditions: status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .map(|c| model::PodCondition {
                condition_type: c.type_.clone(),
                status: c.status.clone(),
                last_transition_time: c.last_transition_time.as_ref().map(time),
            })
            .collect(),
        terminating: meta.deletion_timestamp.is_some(),
        // Facts of the pod's Node: the request builder fills them in, from the Node cache.
        node_exists: false,
        zone: None,
        container_ports,
    }
}

fn address_view(a: &core::EndpointAddress) -> model::EndpointAddress {
    model::EndpointAddress {
        ip: a.ip.clone(),
        hostname: a.hostname.clone().unwrap_or_default(),
        node_name: a.node_name.clone(),
        target_ref: a.target_ref.as_ref().map(reference_view),
    }
}

/// The contract's form of a reference: absent fields read as empty, and no resourceVersion,
/// which never matters (spec §11.2).
pub(super) fn reference_view(r: &core::ObjectReference) -> model::ObjectReference {
    model::ObjectReference {
        kind: r.kind.clone().unwrap_or_default(),
        namespace: r.namespace.clone().unwrap_or_default(),
        name: r.name.clone().unwrap_or_default(),
        uid: r.uid.clone().unwrap_or_default(),
        api_version: r.api_version.clone().unwrap_or_default(),
        field_path: r.field_path.clone().unwrap_or_default(),
    }
}

/// The Endpoints view.
pub fn endpoints(ep: &core::Endpoints) -> model::Endpoints {
    let meta = &ep.metadata;
    model::Endpoints {
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        labels: pairs(&meta.labels),
        annotations: pairs(&meta.annotations),
        resource_version: meta.resource_version.clone().unwrap_or_default(),
        subsets: ep
            .subsets
            .iter()
            .flatten()
            .map(|s| model::EndpointSubset {
                addresses: s.addresses.iter().flatten().map(address_view).collect(),
                not_ready_addresses: s
                    .not_ready_addresses
                    .iter()
                    .flatten()
                    .map(address_view)
                    .collect(),
                ports: s
                    .ports
                    .iter()
                    .flatten()
                    .map(|p| model::EndpointPort {
                        name: p.name.clone().unwrap_or_default(),
                        port: p.port,
                        protocol: p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                        app_protocol: p.app_protocol.clone(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// `None` for an empty string: the API's optional fields, which the contract carries as "".
pub(super) fn non_empty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// Moves the guest's strings into the object: this runs once per address of every write.
fn address_object(a: model::EndpointAddress) -> core::EndpointAddress {
    core::EndpointAddress {
        ip: a.ip,
        hostname: non_empty(a.hostname),
        node_name: a.node_name,
        target_ref: a.target_ref.map(object_reference),
    }
}

/// The API's form of a contract reference: empty fields are absent, and no resourceVersion
/// (the contract does not carry one, spec §11.2).
pub(super) fn object_reference(r: model::ObjectReference) -> core::ObjectReference {
    core::ObjectReference {
        kind: non_empty(r.kind),
        namespace: non_empty(r.namespace),
        name: non_empty(r.name),
        uid: non_empty(r.uid),
        api_version: non_empty(r.api_version),
        field_path: non_empty(r.field_path),
        resource_version: None,
    }
}

/// The object to write for a guest's Endpoints: the stored object (if any) with the guest's
/// labels, annotations and subsets, so metadata the controller does not own (owner references,
/// finalizers, ...) survives (spec §12.1).
pub fn endpoints_object(
    desired: model::Endpoints,
    stored: Option<&core::Endpoints>,
) -> core::Endpoints {
    let model::Endpoints {
        namespace,
        name,
        labels,
        annotations,
        subsets,
        ..
    } = desired;
    let mut metadata = stored
        .map(|s| s.metadata.clone())
        .unwrap_or_else(|| ObjectMeta {
            name: Some(name),
            ..ObjectMeta::default()
        });
    metadata.labels = Some(owned_map(labels));
    metadata.annotations = Some(owned_map(annotations));
    if metadata.namespace.is_none() {
        metadata.namespace = Some(namespace);
    }
    let addresses = |list: Vec<model::EndpointAddress>| {
        (!list.is_empty()).then(|| list.into_iter().map(address_object).collect())
    };
    core::Endpoints {
        metadata,
        subsets: Some(
            subsets
                .into_iter()
                .map(|s| core::EndpointSubset {
                    addresses: addresses(s.addresses),
                    not_ready_addresses: addresses(s.not_ready_addresses),
                    ports: (!s.ports.is_empty()).then(|| {
                        s.ports
                            .into_iter()
                            .map(|p| core::EndpointPort {
                                name: non_empty(p.name),
                                port: p.port,
                                protocol: Some(p.protocol),
                                app_protocol: p.app_protocol,
                            })
                            .collect()
                    }),
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn service_defaults_match_the_api_server() {
        let svc: core::Service = serde_json::from_value(json!({
            "metadata": {"name": "s"},
            "spec": {"selector": {}, "ports": [{"port": 80}, {"port": 81, "targetPort": "web", "protocol": "UDP"}]}
        }))
        .unwrap();
        let view = service(&svc, "ns");
        assert_eq!(view.namespace, "ns");
        assert_eq!(view.service_type, "ClusterIP");
        assert_eq!(
            view.selector,
            Some(vec![]),
            "an empty selector is not an absent one"
        );
        assert_eq!(view.ports[0].target_port, model::TargetPort::Number(80));
        assert_eq!(view.ports[0].protocol, "TCP");
        assert_eq!(
            view.ports[1].target_port,
            model::TargetPort::Name("web".into())
        );
        let svc: core::Service =
            serde_json::from_value(json!({"metadata": {"name": "s"}, "spec": {}})).unwrap();
        assert_eq!(service(&svc, "ns").selector, None);
    }

    #[test]
    fn pod_ports_follow_lookup_order_and_skip_plain_init_containers() {
        let p: core::Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "deletionTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {
                "initContainers": [
                    {"name": "init", "ports": [{"name": "a", "containerPort": 1}]},
                    {"name": "sidecar", "restartPolicy": "Always", "ports": [{"name": "b", "containerPort": 2}]}
                ],
                "containers": [{"name": "c", "ports": [{"name": "c", "containerPort": 3}, {"containerPort": 4}]}]
            }
        }))
        .unwrap();
        let view = pod(&p);
        let names: Vec<_> = view
            .container_ports
            .iter()
            .map(|p| (p.name.as_str(), p.port))
            .collect();
        assert_eq!(names, [("c", 3), ("b", 2)]);
        assert!(view.terminating);
    }

    #[test]
    fn endpoints_round_trip_keeps_foreign_metadata() {
        let stored: core::Endpoints = serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "ns", "resourceVersion": "7", "finalizers": ["x"],
                          "labels": {"old": "1"}},
            "subsets": [{"addresses": [{"ip": "10.0.0.1", "nodeName": "",
                "targetRef": {"kind": "Pod", "name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "9"}}],
                "ports": [{"port": 80, "protocol": "TCP"}]}]
        }))
        .unwrap();
        let view = endpoints(&stored);
        assert_eq!(view.resource_version, "7");
        assert_eq!(view.subsets[0].addresses[0].node_name.as_deref(), Some(""));
        let written = endpoints_object(view.clone(), Some(&stored));
        assert_eq!(written.metadata.finalizers, Some(vec!["x".to_string()]));
        let again = endpoints(&written);
        assert_eq!(again, view);
    }
}
