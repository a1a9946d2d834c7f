//! The Node as the nodes watch decodes it from protobuf: the fields of the parent module's JSON
//! shapes, by their numbers in `k8s.io/api`'s `core/v1/generated.proto` and
//! `k8s.io/apimachinery`'s `pkg/apis/meta/v1/generated.proto` and `pkg/api/resource`. Every
//! other field is stepped over by its length, unread. As for pods, what protobuf carries empty
//! and JSON leaves out maps to `None` (see [`wire`](crate::controller::store::wire)), so a
//! Node is the same [`WireNode`] from either encoding (the watch's tests hold both to it, from
//! the bytes a real kube-apiserver sent).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity as FullQuantity;

use super::WireNode;
use crate::controller::store::wire::{non_empty, present};

/// `core.v1.Node`, with only what the Node cache reads.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Node {
    #[prost(message, optional, tag = "1")]
    metadata: Option<Meta>,
    #[prost(message, optional, tag = "3")]
    status: Option<Status>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Meta {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "6")]
    resource_version: Option<String>,
    #[prost(btree_map = "string, string", tag = "11")]
    labels: BTreeMap<String, String>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Status {
    #[prost(btree_map = "string, message", tag = "2")]
    allocatable: BTreeMap<String, Quantity>,
    #[prost(message, repeated, tag = "4")]
    conditions: Vec<Condition>,
}

/// `resource.Quantity`: its canonical text.
#[derive(Clone, PartialEq, prost::Message)]
struct Quantity {
    #[prost(string, optional, tag = "1")]
    string: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Condition {
    #[prost(string, optional, tag = "1")]
    kind: Option<String>,
    #[prost(string, optional, tag = "2")]
    status: Option<String>,
}

/// Into the JSON shapes of the parent module, which make the `core::Node`: one conversion for
/// both encodings.
impl From<Node> for WireNode {
    fn from(node: Node) -> Self {
        let m = node.metadata.unwrap_or_default();
        let wire = super::Wire {
            metadata: super::Meta {
                name: present(m.name),
                resource_version: present(m.resource_version),
                labels: non_empty(m.labels),
            },
            status: node.status.map(|s| super::Status {
                allocatable: non_empty(s.allocatable).map(|a| {
                    a.into_iter()
                        .map(|(name, q)| (name, FullQuantity(q.string.unwrap_or_default())))
                        .collect()
                }),
                conditions: non_empty(s.conditions).map(|cs| {
                    cs.into_iter()
                        .map(|c| super::Condition {
                            kind: c.kind.unwrap_or_default(),
                            status: c.status.unwrap_or_default(),
                        })
                        .collect()
                }),
            }),
        };
        WireNode(wire.into())
    }
}
