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

/// A field of an object: its name, and what makes its value for its projection (`None` leaves
/// the field out).
type Field<'f, 'v> = (&'static str, &'f dyn Fn(&Projection) -> Option<Value<'v>>);

/// An object: the fields given, under their Kubernetes names, those `shape` reaches only, each
/// made only then.
fn object<'v>(shape: &Projection, fields: &[Field<'_, 'v>]) -> Value<'v> {
    let map: HashMap<CelMapKey<'v>, Value<'v>> = fields
        .iter()
        .filter_map(|(name, make)| Some((CelMapKey::from(*name), make(shape.field(name)?)?)))
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
                ("name", &|_| Some(string(&port.name))),
                ("protocol", &|_| Some(string(&port.protocol))),
                ("port", &|_| Some(int(port.port))),
                ("targetPort", &|_| {
                    Some(match &port.target_port {
                        TargetPort::Number(n) => int(*n),
                        TargetPort::Name(name) => string(name),
                    })
                }),
                ("appProtocol", &|_| port.app_protocol.as_deref().map(string)),
            ],
        )
    };
    object(
        shape,
        &[
            ("metadata", &|shape| {
                Some(object(
                    shape,
                    &[
                        ("name", &|_| Some(string(&service.name))),
                        ("namespace", &|_| Some(string(&service.namespace))),
                        ("uid", &|_| Some(string(&service.uid))),
                        ("labels", &|_| Some(key_values(&service.labels))),
                        ("annotations", &|_| Some(key_values(&service.annotations))),
                        ("creationTimestamp", &|_| {
                            service.creation_timestamp.as_deref().map(string)
                        }),
                    ],
                ))
            }),
            ("spec", &|shape| {
                Some(object(
                    shape,
                    &[
                        ("selector", &|_| service.selector.as_deref().map(key_values)),
                        ("type", &|_| Some(string(service_type))),
                        ("clusterIP", &|_| Some(string(&service.cluster_ip))),
                        ("clusterIPs", &|_| Some(strings(&service.cluster_ips))),
                        ("ipFamilies", &|_| Some(strings(&service.ip_families))),
                        ("ports", &|_| {
                            Some(list(service.ports.iter().map(port).collect()))
                        }),
                        ("publishNotReadyAddresses", &|_| {
                            Some(boolean(service.publish_not_ready_addresses))
                        }),
                        ("trafficDistribution", &|_| {
                            service.traffic_distribution.as_deref().map(string)
                        }),
                    ],
                ))
            }),
        ],
    )
}

/// `pod`: metadata, the scheduling fields of spec, and status, as far as `shape` reaches.
pub fn pod<'v>(pod: &'v Pod, shape: &Projection) -> Value<'v> {
    let condition = |condition: &'v PodCondition| {
        object(
            &WHOLE,
            &[
                ("type", &|_| Some(string(&condition.condition_type))),
                ("status", &|_| Some(string(&condition.status))),
                ("lastTransitionTime", &|_| {
                    condition.last_transition_time.as_deref().map(string)
                }),
            ],
        )
    };
    let pod_ip = |ip: &'v String| object(&WHOLE, &[("ip", &|_| Some(string(ip)))]);
    object(
        shape,
        &[
            ("metadata", &|shape| {
                Some(object(
                    shape,
                    &[
                        ("name", &|_| Some(string(&pod.name))),
                        ("namespace", &|_| Some(string(&pod.namespace))),
                        ("uid", &|_| Some(string(&pod.uid))),
                        ("labels", &|_| Some(key_values(&pod.labels))),
                        ("annotations", &|_| Some(key_values(&pod.annotations))),
                    ],
                ))
            }),
            ("spec", &|shape| {
                Some(object(
                    shape,
                    &[
                        ("nodeName", &|_| Some(string(&pod.node_name))),
                        ("hostname", &|_| Some(string(&pod.hostname))),
                        ("subdomain", &|_| Some(string(&pod.subdomain))),
                    ],
                ))
            }),
            ("status", &|shape| {
                Some(object(
                    shape,
                    &[
                        ("phase", &|_| Some(string(&pod.phase))),
                        ("podIP", &|_| pod.pod_ip.as_deref().map(string)),
                        ("podIPs", &|_| {
                            Some(list(pod.pod_ips.iter().map(pod_ip).collect()))
                        }),
                        ("conditions", &|_| {
                            Some(list(pod.conditions.iter().map(condition).collect()))
                        }),
                    ],
                ))
            }),
        ],
    )
}

/// `node`: the pod's Node as far as the contract carries it (its name, and its zone label
/// when set) and `shape` reaches, or `null` when the pod names no Node that exists.
pub fn node<'v>(pod: &'v Pod, shape: &Projection) -> Value<'v> {
    if !pod.node_exists || pod.node_name.is_empty() {
        return Box::new(CelNull);
    }
    let labels = || {
        let labels: HashMap<CelMapKey<'v>, Value<'v>> = pod
            .zone
            .as_deref()
            .map(|zone| (CelMapKey::from(well_known::ZONE_LABEL), string(zone)))
            .into_iter()
            .collect();
        Box::new(CelMap::from(labels)) as Value<'v>
    };
    object(
        shape,
        &[("metadata", &|shape| {
            Some(object(
                shape,
                &[
                    ("name", &|_| Some(string(&pod.node_name))),
                    ("labels", &|_| Some(labels())),
                ],
            ))
        })],
    )
}

/// `endpoint`: upstream's own decision for this pod.
pub fn endpoint<'v>(endpoint: Endpoint) -> Value<'v> {
    object(
        &WHOLE,
        &[
            ("ready", &|_| Some(boolean(endpoint.ready))),
            ("serving", &|_| Some(boolean(endpoint.serving))),
            ("terminating", &|_| Some(boolean(endpoint.terminating))),
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
