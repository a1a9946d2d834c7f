//! The objects expressions see, built from what the guest receives over WIT, with Kubernetes'
//! JSON field names so that an expression reads as it would in a ValidatingAdmissionPolicy.
//!
//! Every value borrows the request's strings: a pod's object costs a few small maps, not a copy
//! of the pod. Which fields exist is listed in `docs/policy-authoring.md` (§10); the rule here:
//! a field the contract always carries is always present (an empty string, list or map, or
//! `false`, when Kubernetes would leave it out), and an `option` that is `none` is absent, so
//! `has()` tells. Labels and annotations are always maps, so `'k' in pod.metadata.labels`
//! works on a pod without labels.

use std::collections::HashMap;

use cel::common::types::{
    CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString, CelUInt,
};
use cel::common::value::Val;
use weir_policy::types::{KeyValue, Pod, Service, TargetPort};
use weir_policy::well_known;

/// A CEL value that borrows for `'v`.
pub type Value<'v> = Box<dyn Val + 'v>;

/// The readiness upstream decided for one endpoint, before any rule ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// `ready`: in `addresses` (Endpoints) or `conditions.ready` (slices).
    pub ready: bool,
    /// `serving`: the pod is Ready, terminating or not (slices).
    pub serving: bool,
    /// `terminating`: the pod has a deletion timestamp (slices).
    pub terminating: bool,
}

fn string(value: &str) -> Value<'_> {
    Box::new(CelString::from(value))
}

fn boolean<'v>(value: bool) -> Value<'v> {
    Box::new(CelBool::from(value))
}

fn int<'v>(value: i32) -> Value<'v> {
    Box::new(CelInt::from(i64::from(value)))
}

fn list<'v>(items: Vec<Value<'v>>) -> Value<'v> {
    Box::new(CelList::from(items))
}

fn strings(items: &[String]) -> Value<'_> {
    list(items.iter().map(|s| string(s)).collect())
}

/// An object: the fields given, under their Kubernetes names. `None` fields are left out.
fn object<'v, const N: usize>(fields: [(&'static str, Option<Value<'v>>); N]) -> Value<'v> {
    let map: HashMap<CelMapKey<'v>, Value<'v>> = fields
        .into_iter()
        .filter_map(|(name, value)| Some((CelMapKey::from(name), value?)))
        .collect();
    Box::new(CelMap::from(map))
}

/// Labels or annotations: a map from key to value, empty when there are none.
fn key_values(items: &[KeyValue]) -> Value<'_> {
    let map: HashMap<CelMapKey<'_>, Value<'_>> = items
        .iter()
        .map(|kv| (CelMapKey::from(kv.key.as_str()), string(&kv.value)))
        .collect();
    Box::new(CelMap::from(map))
}

/// `service`: metadata and spec, as far as the contract carries them.
pub fn service(service: &Service) -> Value<'_> {
    let ports = service
        .ports
        .iter()
        .map(|port| {
            let target: Value<'_> = match &port.target_port {
                TargetPort::Number(n) => int(*n),
                TargetPort::Name(name) => string(name),
            };
            object([
                ("name", Some(string(&port.name))),
                ("protocol", Some(string(&port.protocol))),
                ("port", Some(int(port.port))),
                ("targetPort", Some(target)),
                ("appProtocol", port.app_protocol.as_deref().map(string)),
            ])
        })
        .collect();
    let service_type = if service.service_type.is_empty() {
        "ClusterIP"
    } else {
        &service.service_type
    };
    object([
        (
            "metadata",
            Some(object([
                ("name", Some(string(&service.name))),
                ("namespace", Some(string(&service.namespace))),
                ("uid", Some(string(&service.uid))),
                ("labels", Some(key_values(&service.labels))),
                ("annotations", Some(key_values(&service.annotations))),
                (
                    "creationTimestamp",
                    service.creation_timestamp.as_deref().map(string),
                ),
            ])),
        ),
        (
            "spec",
            Some(object([
                ("selector", service.selector.as_deref().map(key_values)),
                ("type", Some(string(service_type))),
                ("clusterIP", Some(string(&service.cluster_ip))),
                ("clusterIPs", Some(strings(&service.cluster_ips))),
                ("ipFamilies", Some(strings(&service.ip_families))),
                ("ports", Some(list(ports))),
                (
                    "publishNotReadyAddresses",
                    Some(boolean(service.publish_not_ready_addresses)),
                ),
                (
                    "trafficDistribution",
                    service.traffic_distribution.as_deref().map(string),
                ),
            ])),
        ),
    ])
}

/// `pod`: metadata, the scheduling fields of spec, and status.
pub fn pod(pod: &Pod) -> Value<'_> {
    let conditions = pod
        .conditions
        .iter()
        .map(|condition| {
            object([
                ("type", Some(string(&condition.condition_type))),
                ("status", Some(string(&condition.status))),
                (
                    "lastTransitionTime",
                    condition.last_transition_time.as_deref().map(string),
                ),
            ])
        })
        .collect();
    let pod_ips = pod
        .pod_ips
        .iter()
        .map(|ip| object([("ip", Some(string(ip)))]))
        .collect();
    object([
        (
            "metadata",
            Some(object([
                ("name", Some(string(&pod.name))),
                ("namespace", Some(string(&pod.namespace))),
                ("uid", Some(string(&pod.uid))),
                ("labels", Some(key_values(&pod.labels))),
                ("annotations", Some(key_values(&pod.annotations))),
            ])),
        ),
        (
            "spec",
            Some(object([
                ("nodeName", Some(string(&pod.node_name))),
                ("hostname", Some(string(&pod.hostname))),
                ("subdomain", Some(string(&pod.subdomain))),
            ])),
        ),
        (
            "status",
            Some(object([
                ("phase", Some(string(&pod.phase))),
                ("podIP", pod.pod_ip.as_deref().map(string)),
                ("podIPs", Some(list(pod_ips))),
                ("conditions", Some(list(conditions))),
            ])),
        ),
    ])
}

/// `node`: the pod's Node as far as the contract carries it (its name, and its zone label
/// when set), or `null` when the pod names no Node that exists.
pub fn node(pod: &Pod) -> Value<'_> {
    if !pod.node_exists || pod.node_name.is_empty() {
        return Box::new(CelNull);
    }
    let labels: HashMap<CelMapKey<'_>, Value<'_>> = pod
        .zone
        .as_deref()
        .map(|zone| (CelMapKey::from(well_known::ZONE_LABEL), string(zone)))
        .into_iter()
        .collect();
    object([(
        "metadata",
        Some(object([
            ("name", Some(string(&pod.node_name))),
            ("labels", Some(Box::new(CelMap::from(labels)) as Value<'_>)),
        ])),
    )])
}

/// `endpoint`: upstream's own decision for this pod.
pub fn endpoint<'v>(endpoint: Endpoint) -> Value<'v> {
    object([
        ("ready", Some(boolean(endpoint.ready))),
        ("serving", Some(boolean(endpoint.serving))),
        ("terminating", Some(boolean(endpoint.terminating))),
    ])
}

/// `params`: the configuration's free-form values, as JSON maps to CEL (an integer stays an
/// `int`, or a `uint` above `int`'s range; other numbers are `double`).
pub fn params(value: &serde_json::Value) -> Value<'_> {
    match value {
        serde_json::Value::Null => Box::new(CelNull),
        serde_json::Value::Bool(b) => boolean(*b),
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Box::new(CelInt::from(i))
            } else if let Some(u) = n.as_u64() {
                Box::new(CelUInt::from(u))
            } else {
                Box::new(CelDouble::from(n.as_f64().unwrap_or(f64::NAN)))
            }
        }
        serde_json::Value::String(s) => string(s),
        serde_json::Value::Array(items) => list(items.iter().map(params).collect()),
        serde_json::Value::Object(fields) => {
            let map: HashMap<CelMapKey<'_>, Value<'_>> = fields
                .iter()
                .map(|(k, v)| (CelMapKey::from(k.as_str()), params(v)))
                .collect();
            Box::new(CelMap::from(map))
        }
    }
}
