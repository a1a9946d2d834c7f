//! The Pod as the pods watch decodes it from protobuf: the same fields as the JSON shapes of
//! the parent module, by their field numbers in `k8s.io/api`'s `core/v1/generated.proto` and
//! `k8s.io/apimachinery`'s `pkg/apis/meta/v1/generated.proto`. Every other field is stepped
//! over by its length, unread.
//!
//! The two encodings differ where the JSON omits what is empty: kube-apiserver writes a Go
//! string, number, map or list in protobuf even when it is empty or zero, where its JSON
//! leaves the field out (`omitempty`). The conversion maps those to `None`, so that a pod is
//! the same [`WirePod`] from either encoding (a test below holds both to it, from the bytes a
//! real kube-apiserver sent).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use super::WirePod;
use crate::controller::store::wire::{non_empty, present};

/// `core.v1.Pod`, with only what the pod cache reads.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Pod {
    #[prost(message, optional, tag = "1")]
    metadata: Option<Meta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<Spec>,
    #[prost(message, optional, tag = "3")]
    status: Option<Status>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Meta {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "3")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "5")]
    uid: Option<String>,
    #[prost(string, optional, tag = "6")]
    resource_version: Option<String>,
    #[prost(message, optional, tag = "9")]
    deletion_timestamp: Option<Timestamp>,
    #[prost(btree_map = "string, string", tag = "11")]
    labels: BTreeMap<String, String>,
    #[prost(btree_map = "string, string", tag = "12")]
    annotations: BTreeMap<String, String>,
}

/// `meta.v1.Time`: seconds and nanoseconds since the Unix epoch.
#[derive(Clone, PartialEq, prost::Message)]
struct Timestamp {
    #[prost(int64, optional, tag = "1")]
    seconds: Option<i64>,
    #[prost(int32, optional, tag = "2")]
    nanos: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Spec {
    #[prost(message, repeated, tag = "2")]
    containers: Vec<Container>,
    #[prost(string, optional, tag = "10")]
    node_name: Option<String>,
    #[prost(string, optional, tag = "16")]
    hostname: Option<String>,
    #[prost(string, optional, tag = "17")]
    subdomain: Option<String>,
    #[prost(message, repeated, tag = "20")]
    init_containers: Vec<Container>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Container {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(message, repeated, tag = "6")]
    ports: Vec<ContainerPort>,
    #[prost(string, optional, tag = "24")]
    restart_policy: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ContainerPort {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(int32, optional, tag = "2")]
    host_port: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    container_port: Option<i32>,
    #[prost(string, optional, tag = "4")]
    protocol: Option<String>,
    #[prost(string, optional, tag = "5")]
    host_ip: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Status {
    #[prost(string, optional, tag = "1")]
    phase: Option<String>,
    #[prost(message, repeated, tag = "2")]
    conditions: Vec<Condition>,
    #[prost(string, optional, tag = "6")]
    pod_ip: Option<String>,
    #[prost(message, repeated, tag = "12")]
    pod_ips: Vec<PodIp>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Condition {
    #[prost(string, optional, tag = "1")]
    kind: Option<String>,
    #[prost(string, optional, tag = "2")]
    status: Option<String>,
    #[prost(message, optional, tag = "4")]
    last_transition_time: Option<Timestamp>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct PodIp {
    #[prost(string, optional, tag = "1")]
    ip: Option<String>,
}

/// A time as its JSON reads: to the second (metav1.Time's JSON drops the nanoseconds), and
/// absent when zero (a zero Go time is sent as an empty message).
fn time(t: Option<Timestamp>) -> Option<Time> {
    let seconds = t?.seconds.unwrap_or(0);
    if seconds == 0 {
        return None;
    }
    k8s_openapi::jiff::Timestamp::new(seconds, 0).ok().map(Time)
}

impl From<Container> for core::Container {
    fn from(c: Container) -> Self {
        core::Container {
            name: c.name.unwrap_or_default(),
            restart_policy: c.restart_policy,
            ports: non_empty(c.ports).map(|ports| {
                ports
                    .into_iter()
                    .map(|p| core::ContainerPort {
                        name: present(p.name),
                        host_port: p.host_port.filter(|&port| port != 0),
                        container_port: p.container_port.unwrap_or(0),
                        protocol: present(p.protocol),
                        host_ip: present(p.host_ip),
                    })
                    .collect()
            }),
            ..Default::default()
        }
    }
}

impl From<Pod> for WirePod {
    fn from(pod: Pod) -> Self {
        let m = pod.metadata.unwrap_or_default();
        WirePod(core::Pod {
            metadata: ObjectMeta {
                name: present(m.name),
                namespace: present(m.namespace),
                uid: present(m.uid),
                resource_version: present(m.resource_version),
                labels: non_empty(m.labels),
                annotations: non_empty(m.annotations),
                deletion_timestamp: time(m.deletion_timestamp),
                ..Default::default()
            },
            spec: pod.spec.map(|s| core::PodSpec {
                containers: s.containers.into_iter().map(Into::into).collect(),
                init_containers: non_empty(s.init_containers)
                    .map(|cs| cs.into_iter().map(Into::into).collect()),
                node_name: present(s.node_name),
                hostname: present(s.hostname),
                subdomain: present(s.subdomain),
                ..Default::default()
            }),
            status: pod.status.map(|s| core::PodStatus {
                phase: present(s.phase),
                pod_ip: present(s.pod_ip),
                pod_ips: non_empty(s.pod_ips).map(|ips| {
                    ips.into_iter()
                        .map(|ip| core::PodIP {
                            ip: ip.ip.unwrap_or_default(),
                        })
                        .collect()
                }),
                conditions: non_empty(s.conditions).map(|cs| {
                    cs.into_iter()
                        .map(|c| core::PodCondition {
                            type_: c.kind.unwrap_or_default(),
                            status: c.status.unwrap_or_default(),
                            last_transition_time: time(c.last_transition_time),
                            ..Default::default()
                        })
                        .collect()
                }),
                ..Default::default()
            }),
        })
    }
}
