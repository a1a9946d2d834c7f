//! The objects expressions see, built from what the guest receives over WIT, with Kubernetes'
//! JSON field names so that an expression reads as it would in a ValidatingAdmissionPolicy.
//!
//! Every value borrows the request's strings, and each object is built with the fields the
//! configuration's expressions reach ([`crate::projection`]): a pod's object costs a few small
//! maps, not a copy of the pod. Which fields exist is listed in `docs/policy-authoring.md` (§10); the rule here:
//! a field the contract always carries is always present (an empty string, list or map, or
//! `false`, when Kubernetes would leave it out), and an `option` that is `none` is absent, so
//! `has()` tells. Labels and annotations are always maps, so `'k' in pod.metadata.labels`
//! works on a pod without labels.

use std::collections::HashMap;

use cel::common::types::{
    CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString, CelUInt,
};
use cel::common::value::Val;
use weir_policy::types::{KeyValue, Pod, PodCondition, Service, ServicePort, TargetPort};
use weir_policy::well_known;

use crate::projection::{Projection, WHOLE};

/// A CEL value that borrows for `'v`.
pub type Value<'v> = Box<dyn Val + 'v>;

/// The readiness upstream decided for one endpoint, before any rule ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

/// How a field of an object is made.
enum Make<'f, 'v> {
    /// A value with no fields of its own to select here (a string, a list, a map of labels):
    /// `None` leaves the field out.
    Leaf(&'f dyn Fn() -> Option<Value<'v>>),
    /// A nested object, made for its projection, or one of its fields for a path below it.
    Object(&'f dyn Fn(&Projection, &[&str]) -> Option<Value<'v>>),
}

/// A field of an object: its name, and how its value is made.
type Field<'f, 'v> = (&'static str, Make<'f, 'v>);

/// An object: the fields given, under their Kubernetes names, those `shape` reaches only, each
/// made only then.
fn object<'v>(shape: &Projection, fields: &[Field<'_, 'v>]) -> Value<'v> {
    let map: HashMap<CelMapKey<'v>, Value<'v>> = fields
        .iter()
        .filter_map(|(name, make)| {
            let value = match make {
                Make::Leaf(make) => make(),
                Make::Object(make) => make(shape.field(name)?, &[]),
            };
            Some((CelMapKey::from(*name), value?))
        })
        .collect();
    Box::new(CelMap::from(map))
}

/// The value at `path` below an object: the object itself (as [`object`] makes it) for an
/// empty path, else the field the path names, made alone, without the objects around it.
/// `None` when there is no such field, the field is absent, or the path goes below a leaf:
/// the interpreter then selects the rest of the path on a shorter one, as on a whole object.
fn object_at<'v>(shape: &Projection, path: &[&str], fields: &[Field<'_, 'v>]) -> Option<Value<'v>> {
    let Some((first, rest)) = path.split_first() else {
        return Some(object(shape, fields));
    };
    let (_, make) = fields.iter().find(|(name, _)| name == first)?;
    let shape = shape.field(first)?;
    match make {
        Make::Leaf(make) if rest.is_empty() => make(),
        Make::Leaf(_) => None,
        Make::Object(make) => make(shape, rest),
    }
}

/// Labels or annotations: a map from key to value, empty when there are none.
fn key_values(items: &[KeyValue]) -> Value<'_> {
    let map: HashMap<CelMapKey<'_>, Value<'_>> = items
        .iter()
        .map(|kv| (CelMapKey::from(kv.key.as_str()), string(&kv.value)))
        .collect();
    Box::new(CelMap::from(map))
}

/// `service`: metadata and spec, as far as the contract carries them and `shape` reaches.
pub fn service<'v>(service: &'v Service, shape: &Projection) -> Value<'v> {
    let service_type = if service.service_type.is_empty() {
        "ClusterIP"
    } else {
        &service.service_type
    };
    let port = |port: &'v ServicePort| {
        object(
            &WHOLE,
            &[
                ("name", Make::Leaf(&|| Some(string(&port.name)))),
                ("protocol", Make::Leaf(&|| Some(string(&port.protocol)))),
                ("port", Make::Leaf(&|| Some(int(port.port)))),
                (
                    "targetPort",
                    Make::Leaf(&|| {
                        Some(match &port.target_port {
                            TargetPort::Number(n) => int(*n),
                            TargetPort::Name(name) => string(name),
                        })
                    }),
                ),
                (
                    "appProtocol",
                    Make::Leaf(&|| port.app_protocol.as_deref().map(string)),
                ),
            ],
        )
    };
    let metadata = |shape: &Projection, path: &[&str]| {
        object_at(
            shape,
            path,
            &[
                ("name", Make::Leaf(&|| Some(string(&service.name)))),
                (
                    "namespace",
                    Make::Leaf(&|| Some(string(&service.namespace))),
                ),
                ("uid", Make::Leaf(&|| Some(string(&service.uid)))),
                ("labels", Make::Leaf(&|| Some(key_values(&service.labels)))),
                (
                    "annotations",
                    Make::Leaf(&|| Some(key_values(&service.annotations))),
                ),
                (
                    "creationTimestamp",
                    Make::Leaf(&|| service.creation_timestamp.as_deref().map(string)),
                ),
            ],
        )
    };
    let spec = |shape: &Projection, path: &[&str]| {
        object_at(
            shape,
            path,
            &[
                (
                    "selector",
                    Make::Leaf(&|| service.selector.as_deref().map(key_values)),
                ),
                ("type", Make::Leaf(&|| Some(string(service_type)))),
                (
                    "clusterIP",
                    Make::Leaf(&|| Some(string(&service.cluster_ip))),
                ),
                (
                    "clusterIPs",
                    Make::Leaf(&|| Some(strings(&service.cluster_ips))),
                ),
                (
                    "ipFamilies",
                    Make::Leaf(&|| Some(strings(&service.ip_families))),
                ),
                (
                    "ports",
                    Make::Leaf(&|| Some(list(service.ports.iter().map(port).collect()))),
                ),
                (
                    "publishNotReadyAddresses",
                    Make::Leaf(&|| Some(boolean(service.publish_not_ready_addresses))),
                ),
                (
                    "trafficDistribution",
                    Make::Leaf(&|| service.traffic_distribution.as_deref().map(string)),
                ),
            ],
        )
    };
    object(
        shape,
        &[
            ("metadata", Make::Object(&metadata)),
            ("spec", Make::Object(&spec)),
        ],
    )
}

/// Every field of the contract's Pod and where a CEL expression finds it. Without `..`: a
/// field added to the contract fails to compile here until it is exposed or left out here.
const _: fn(&Pod) = |Pod {
                         namespace: _,       // pod.metadata.namespace
                         name: _,            // pod.metadata.name
                         uid: _,             // pod.metadata.uid
                         labels: _,          // pod.metadata.labels
                         annotations: _,     // pod.metadata.annotations
                         node_name: _,       // pod.spec.nodeName, node.metadata.name
                         hostname: _,        // pod.spec.hostname
                         subdomain: _,       // pod.spec.subdomain
                         pod_ip: _,          // pod.status.podIP
                         pod_ips: _,         // pod.status.podIPs
                         phase: _,           // pod.status.phase
                         conditions: _,      // pod.status.conditions
                         terminating: _,     // endpoint.terminating
                         node_exists: _,     // `node` is null without it
                         zone: _,            // node.metadata.labels
                         container_ports: _, // not exposed: upstream resolves target ports before rules run
                     }| {};

/// `pod`, or the value at `path` below it (`["metadata", "annotations"]`): metadata, the
/// scheduling fields of spec, and status, as far as `shape` reaches ([`object_at`]).
pub fn pod<'v>(pod: &'v Pod, shape: &Projection, path: &[&str]) -> Option<Value<'v>> {
    let condition = |condition: &'v PodCondition| {
        object(
            &WHOLE,
            &[
                (
                    "type",
                    Make::Leaf(&|| Some(string(&condition.condition_type))),
                ),
                ("status", Make::Leaf(&|| Some(string(&condition.status)))),
                (
                    "lastTransitionTime",
                    Make::Leaf(&|| condition.last_transition_time.as_deref().map(string)),
                ),
            ],
        )
    };
    let pod_ip = |ip: &'v String| object(&WHOLE, &[("ip", Make::Leaf(&|| Some(string(ip))))]);
    let metadata = |shape: &Projection, path: &[&str]| {
        object_at(
            shape,
            path,
            &[
                ("name", Make::Leaf(&|| Some(string(&pod.name)))),
                ("namespace", Make::Leaf(&|| Some(string(&pod.namespace)))),
                ("uid", Make::Leaf(&|| Some(string(&pod.uid)))),
                ("labels", Make::Leaf(&|| Some(key_values(&pod.labels)))),
                (
                    "annotations",
                    Make::Leaf(&|| Some(key_values(&pod.annotations))),
                ),
            ],
        )
    };
    let spec = |shape: &Projection, path: &[&str]| {
        object_at(
            shape,
            path,
            &[
                ("nodeName", Make::Leaf(&|| Some(string(&pod.node_name)))),
                ("hostname", Make::Leaf(&|| Some(string(&pod.hostname)))),
                ("subdomain", Make::Leaf(&|| Some(string(&pod.subdomain)))),
            ],
        )
    };
    let status = |shape: &Projection, path: &[&str]| {
        object_at(
            shape,
            path,
            &[
                ("phase", Make::Leaf(&|| Some(string(&pod.phase)))),
                ("podIP", Make::Leaf(&|| pod.pod_ip.as_deref().map(string))),
                (
                    "podIPs",
                    Make::Leaf(&|| Some(list(pod.pod_ips.iter().map(pod_ip).collect()))),
                ),
                (
                    "conditions",
                    Make::Leaf(&|| Some(list(pod.conditions.iter().map(condition).collect()))),
                ),
            ],
        )
    };
    object_at(
        shape,
        path,
        &[
            ("metadata", Make::Object(&metadata)),
            ("spec", Make::Object(&spec)),
            ("status", Make::Object(&status)),
        ],
    )
}

/// `node`, or the value at `path` below it: the pod's Node as far as the contract carries it
/// (its name, and its zone label when set) and `shape` reaches, or `null` when the pod names
/// no Node that exists.
pub fn node<'v>(pod: &'v Pod, shape: &Projection, path: &[&str]) -> Option<Value<'v>> {
    if !pod.node_exists || pod.node_name.is_empty() {
        return path.is_empty().then(|| Box::new(CelNull) as Value<'v>);
    }
    let labels = || {
        let labels: HashMap<CelMapKey<'v>, Value<'v>> = pod
            .zone
            .as_deref()
            .map(|zone| (CelMapKey::from(well_known::ZONE_LABEL), string(zone)))
            .into_iter()
            .collect();
        Some(Box::new(CelMap::from(labels)) as Value<'v>)
    };
    let metadata = |shape: &Projection, path: &[&str]| {
        object_at(
            shape,
            path,
            &[
                ("name", Make::Leaf(&|| Some(string(&pod.node_name)))),
                ("labels", Make::Leaf(&labels)),
            ],
        )
    };
    object_at(shape, path, &[("metadata", Make::Object(&metadata))])
}

/// `endpoint`, or one of its fields: upstream's own decision for this pod.
pub fn endpoint<'v>(endpoint: Endpoint, path: &[&str]) -> Option<Value<'v>> {
    object_at(
        &WHOLE,
        path,
        &[
            ("ready", Make::Leaf(&|| Some(boolean(endpoint.ready)))),
            ("serving", Make::Leaf(&|| Some(boolean(endpoint.serving)))),
            (
                "terminating",
                Make::Leaf(&|| Some(boolean(endpoint.terminating))),
            ),
        ],
    )
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
