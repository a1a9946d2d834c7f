//! The slice path's caches and event mapping: EndpointSlices indexed by their Service, Nodes
//! reduced to their zone, and which Service keys their events enqueue (rules R1.15,
//! R1.16 of `docs/upstream-endpointslices.md`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1::EndpointSlice;

use crate::controller::store::packed::Packed;
use crate::model;
use crate::model::labels::service_key;

use weir_policy::well_known::{
    TOPOLOGY_AWARE_HINTS_ANNOTATION as TOPOLOGY_HINTS_ANNOTATION, TOPOLOGY_MODE_ANNOTATION,
    ZONE_LABEL,
};

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

/// Cached EndpointSlices of every manager, by `namespace/name`, indexed by the Service their
/// `kubernetes.io/service-name` label names. managedFields are dropped; nothing reads them.
/// Slices are kept packed (see [`Packed`]) and decoded when read.
#[derive(Debug, Default)]
pub struct SliceCache {
    inner: RwLock<SliceIndex>,
}

#[derive(Debug)]
struct CachedSlice {
    packed: Packed<EndpointSlice>,
    /// The Service key it is indexed under.
    service: Option<String>,
}

#[derive(Debug, Default)]
struct SliceIndex {
    slices: HashMap<String, CachedSlice>,
    by_service: HashMap<String, HashSet<String>>,
}

fn object_key(slice: &EndpointSlice) -> String {
    crate::controller::store::key::key(
        slice.metadata.namespace.as_deref().unwrap_or(""),
        slice.metadata.name.as_deref().unwrap_or(""),
    )
}

impl SliceIndex {
    /// Removes `k` from the index and returns what was cached.
    fn remove(&mut self, k: &String) -> Option<Arc<EndpointSlice>> {
        let old = self.slices.remove(k)?;
        if let Some(service) = &old.service
            && let Some(names) = self.by_service.get_mut(service)
        {
            names.remove(k);
            if names.is_empty() {
                self.by_service.remove(service);
            }
        }
        old.packed.unpack().map(Arc::new)
    }
}

impl SliceCache {
    /// Stores a slice, returning the previous version.
    pub fn apply(&self, mut slice: EndpointSlice) -> Option<Arc<EndpointSlice>> {
        slice.metadata.managed_fields = None;
        let k = object_key(&slice);
        let service = service_key(&slice);
        let mut index = write(&self.inner);
        let old = index.remove(&k);
        let Some(packed) = Packed::pack(&slice) else {
            return old;
        };
        if let Some(service) = &service {
            index
                .by_service
                .entry(service.clone())
                .or_default()
                .insert(k.clone());
        }
        index.slices.insert(k, CachedSlice { packed, service });
        old
    }

    /// Forgets a deleted slice, returning what was cached.
    pub fn delete(&self, namespace: &str, name: &str) -> Option<Arc<EndpointSlice>> {
        write(&self.inner).remove(&crate::controller::store::key::key(namespace, name))
    }

    /// Every cached slice labelled for the Service `key`, whoever manages it.
    pub fn for_service(&self, key: &str) -> Vec<Arc<EndpointSlice>> {
        let index = read(&self.inner);
        let mut slices: Vec<_> = index
            .by_service
            .get(key)
            .into_iter()
            .flatten()
            .filter_map(|k| index.slices.get(k)?.packed.unpack().map(Arc::new))
            .collect();
        // A stable order, so the same cache gives the guest the same request.
        slices.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        slices
    }

    /// `namespace/name` of every cached slice (for relists).
    pub fn keys(&self) -> Vec<String> {
        read(&self.inner).slices.keys().cloned().collect()
    }

    /// Number of cached slices.
    pub fn len(&self) -> usize {
        read(&self.inner).slices.len()
    }

    /// Whether no slice is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What weir keeps of a Node (a few dozen bytes instead of the decoded object): its zone, and
/// what topology-aware hints weigh zones by.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeView {
    /// The `topology.kubernetes.io/zone` label, when set and not empty.
    pub zone: Option<String>,
    /// Whether the Node's `Ready` condition is `True`.
    pub ready: bool,
    /// `status.allocatable.cpu` in millicores (0 when absent or unreadable).
    pub cpu_millis: u64,
    /// Whether the Node is labelled as a control-plane (or master) Node.
    pub control_plane: bool,
}

impl NodeView {
    /// Projects a Node.
    pub fn from_node(node: &core::Node) -> Self {
        let labels = node.metadata.labels.as_ref();
        let status = node.status.as_ref();
        NodeView {
            zone: labels
                .and_then(|l| l.get(ZONE_LABEL))
                .filter(|z| !z.is_empty())
                .cloned(),
            ready: status
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
                .is_some_and(|c| c.status == "True"),
            cpu_millis: status
                .and_then(|s| s.allocatable.as_ref())
                .and_then(|a| a.get("cpu"))
                .and_then(|q| crate::reconcile::view_slices::milli_cpu(&q.0))
                .unwrap_or(0),
            control_plane: labels.is_some_and(|l| {
                l.contains_key("node-role.kubernetes.io/control-plane")
                    || l.contains_key("node-role.kubernetes.io/master")
            }),
        }
    }

    /// Whether a change from `old` matters to topology-aware hints (R1.16): the Node came or
    /// went, its readiness or its zone changed.
    pub fn topology_changed(old: Option<&NodeView>, new: Option<&NodeView>) -> bool {
        match (old, new) {
            (Some(o), Some(n)) => o.ready != n.ready || o.zone != n.zone,
            (None, None) => false,
            _ => true,
        }
    }
}

/// Nodes by name.
#[derive(Debug, Default)]
pub struct NodeCache {
    nodes: RwLock<Nodes>,
}

#[derive(Debug, Default)]
struct Nodes {
    by_name: HashMap<String, NodeView>,
    /// [`NodeCache::zone_capacities`]' answer, computed once after each change: every sync asks
    /// for it, a cluster may hold thousands of Nodes, and they change seldom (upstream's
    /// topology cache likewise recomputes on Node events, not per sync).
    capacities: std::sync::OnceLock<Option<Vec<(String, u64)>>>,
}

impl Nodes {
    fn changed(&mut self) {
        self.capacities = std::sync::OnceLock::new();
    }
}

impl NodeCache {
    /// Stores a Node's view, returning the previous one.
    pub fn apply(&self, name: &str, view: NodeView) -> Option<NodeView> {
        let mut nodes = write(&self.nodes);
        let old = nodes.by_name.insert(name.to_string(), view);
        if old.as_ref() != nodes.by_name.get(name) {
            nodes.changed();
        }
        old
    }

    /// Forgets a deleted Node.
    pub fn delete(&self, name: &str) -> Option<NodeView> {
        let mut nodes = write(&self.nodes);
        let old = nodes.by_name.remove(name);
        if old.is_some() {
            nodes.changed();
        }
        old
    }

    /// The Node `name`: `None` when it does not exist.
    pub fn get(&self, name: &str) -> Option<NodeView> {
        read(&self.nodes).by_name.get(name).cloned()
    }

    /// Names of every cached Node (for relists).
    pub fn names(&self) -> Vec<String> {
        read(&self.nodes).by_name.keys().cloned().collect()
    }

    /// Allocatable CPU per zone of the Nodes topology-aware hints count (R5.10): Ready and
    /// not control-plane. `None` when one of them lacks a zone or CPU, since upstream then
    /// gives no hints at all.
    pub fn zone_capacities(&self) -> Option<Vec<(String, u64)>> {
        let nodes = read(&self.nodes);
        nodes
            .capacities
            .get_or_init(|| {
                let mut zones: std::collections::BTreeMap<String, u64> = Default::default();
                for node in nodes.by_name.values() {
                    if node.control_plane || !node.ready {
                        continue;
                    }
                    let zone = node.zone.as_ref().filter(|_| node.cpu_millis > 0)?;
                    *zones.entry(zone.clone()).or_default() += node.cpu_millis;
                }
                Some(zones.into_iter().collect())
            })
            .clone()
    }
}

/// Whether a Service asks for topology-aware hints (the annotation, not trafficDistribution).
pub fn wants_topology_hints(service: &model::Service) -> bool {
    let get = |key: &str| {
        service
            .annotations
            .iter()
            .find(|kv| kv.key == key)
            .map(|kv| kv.value.as_str())
    };
    // The deprecated annotation wins whenever it is present (R5.1).
    let value = get(TOPOLOGY_HINTS_ANNOTATION).or_else(|| get(TOPOLOGY_MODE_ANNOTATION));
    matches!(value, Some("Auto" | "auto"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::labels::{LABEL_MANAGED_BY, LABEL_SERVICE_NAME, MANAGED_BY};
    use serde_json::json;

    /// A slice `ns/name` of `service`, managed by `managed_by`, with a managedFields entry.
    pub(crate) fn slice(
        name: &str,
        service: &str,
        managed_by: &str,
        generation: i64,
    ) -> EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns", "uid": name, "generation": generation,
                         "labels": {LABEL_SERVICE_NAME: service, LABEL_MANAGED_BY: managed_by},
                         "managedFields": [{"manager": "x"}]},
            "addressType": "IPv4", "endpoints": []
        }))
        .unwrap()
    }

    #[test]
    fn cache_indexes_by_service_and_follows_relabels() {
        let cache = SliceCache::default();
        cache.apply(slice("a", "foo", MANAGED_BY, 1));
        cache.apply(slice("b", "foo", "other", 1));
        cache.apply(slice("c", "bar", MANAGED_BY, 1));
        let names = |v: Vec<Arc<EndpointSlice>>| -> Vec<String> {
            v.iter().map(|s| s.metadata.name.clone().unwrap()).collect()
        };
        assert_eq!(names(cache.for_service("ns/foo")), ["a", "b"]);
        assert!(
            cache.for_service("ns/foo")[0]
                .metadata
                .managed_fields
                .is_none()
        );
        cache.apply(slice("a", "bar", MANAGED_BY, 2));
        assert_eq!(names(cache.for_service("ns/foo")), ["b"]);
        assert_eq!(names(cache.for_service("ns/bar")), ["a", "c"]);
        cache.delete("ns", "c");
        assert_eq!(names(cache.for_service("ns/bar")), ["a"]);
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn topology_annotation_precedence() {
        let svc = |pairs: &[(&str, &str)]| model::Service {
            namespace: "ns".into(),
            name: "s".into(),
            uid: String::new(),
            labels: vec![],
            annotations: pairs
                .iter()
                .map(|(k, v)| model::KeyValue {
                    key: k.to_string(),
                    value: v.to_string(),
                })
                .collect(),
            creation_timestamp: None,
            selector: None,
            service_type: "ClusterIP".into(),
            cluster_ip: String::new(),
            cluster_ips: vec![],
            ip_families: vec![],
            ports: vec![],
            publish_not_ready_addresses: false,
            traffic_distribution: None,
            deleting: false,
        };
        assert!(wants_topology_hints(&svc(&[(
            TOPOLOGY_MODE_ANNOTATION,
            "auto"
        )])));
        assert!(!wants_topology_hints(&svc(&[(
            TOPOLOGY_MODE_ANNOTATION,
            "AUTO"
        )])));
        assert!(!wants_topology_hints(&svc(&[
            (TOPOLOGY_MODE_ANNOTATION, "auto"),
            (TOPOLOGY_HINTS_ANNOTATION, "disabled")
        ])));
        assert!(wants_topology_hints(&svc(&[
            (TOPOLOGY_MODE_ANNOTATION, "disabled"),
            (TOPOLOGY_HINTS_ANNOTATION, "Auto")
        ])));
    }

    fn node(zone: Option<&str>, ready: bool, cpu: &str, labels: serde_json::Value) -> core::Node {
        let mut labels = labels;
        if let Some(z) = zone {
            labels[ZONE_LABEL] = json!(z);
        }
        serde_json::from_value(json!({
            "metadata": {"name": "n", "labels": labels},
            "status": {"allocatable": {"cpu": cpu},
                       "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}
        }))
        .unwrap()
    }

    #[test]
    fn nodes_project_to_zone_readiness_and_cpu() {
        let v = NodeView::from_node(&node(Some("a"), true, "1500m", json!({})));
        assert_eq!(v.zone.as_deref(), Some("a"));
        assert!(v.ready && !v.control_plane);
        assert_eq!(v.cpu_millis, 1500);
        assert_eq!(
            NodeView::from_node(&node(None, true, "2", json!({}))).cpu_millis,
            2000
        );
        assert_eq!(
            NodeView::from_node(&node(Some(""), true, "0.5", json!({}))).zone,
            None
        );
        let cp = NodeView::from_node(&node(
            None,
            true,
            "1",
            json!({"node-role.kubernetes.io/control-plane": ""}),
        ));
        assert!(cp.control_plane);

        let a = NodeView::from_node(&node(Some("a"), true, "1", json!({})));
        let mut b = a.clone();
        b.cpu_millis = 5;
        assert!(
            !NodeView::topology_changed(Some(&a), Some(&b)),
            "CPU alone does not resync"
        );
        b.ready = false;
        assert!(NodeView::topology_changed(Some(&a), Some(&b)));
        assert!(NodeView::topology_changed(None, Some(&a)));

        let nodes = NodeCache::default();
        nodes.apply("n1", a.clone());
        nodes.apply(
            "n2",
            NodeView {
                zone: Some("b".into()),
                ..a.clone()
            },
        );
        nodes.apply(
            "n3",
            NodeView {
                zone: Some("b".into()),
                ..a.clone()
            },
        );
        nodes.apply("cp", cp);
        nodes.apply(
            "down",
            NodeView {
                ready: false,
                zone: None,
                ..a.clone()
            },
        );
        assert_eq!(
            nodes.zone_capacities(),
            Some(vec![("a".into(), 1000), ("b".into(), 2000)]),
            "control-plane and not-ready Nodes do not count"
        );
        nodes.apply(
            "nozone",
            NodeView {
                zone: None,
                ..a.clone()
            },
        );
        assert_eq!(nodes.zone_capacities(), None);
        // The answer is kept between changes, and every kind of change renews it.
        nodes.delete("nozone");
        assert_eq!(
            nodes.zone_capacities(),
            Some(vec![("a".into(), 1000), ("b".into(), 2000)])
        );
        nodes.apply(
            "n1",
            NodeView {
                cpu_millis: 4000,
                ..a
            },
        );
        assert_eq!(
            nodes.zone_capacities(),
            Some(vec![("a".into(), 4000), ("b".into(), 2000)])
        );
    }
}
