//! The controller's slim caches: Services, Pods, Endpoints, EndpointSlices and Nodes as they
//! were last seen, with the indexes a sync needs. Pods are kept as a compact form of their WIT
//! view (a few hundred bytes each, see [`SlimPod`]), never as decoded `Pod` objects, and are
//! indexed by namespace and label so finding a Service's pods never scans the cluster. The
//! Endpoints and EndpointSlices weir writes are kept packed (see [`Packed`]).
//!
//! Rule numbers R1–R10 and scenarios S01–S98 are those of `docs/upstream-endpointslices.md`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, RwLock};

use k8s_openapi::api::core::v1 as core;

pub mod key;
pub mod packed;
pub mod slices;
pub mod slim_pod;
pub mod wire;
pub mod wire_node;
pub mod wire_pod;

use crate::model;
use crate::selector::{LabelSelector, labels_match};
use packed::Packed;
use slim_pod::{SlimPod, Text};

pub use key::{Key, key};

/// A cached pod: its compact view (see [`SlimPod`]) with the resourceVersion that tells a
/// resync from a change. Cloning shares it.
#[derive(Debug, Clone)]
pub struct CachedPod(Arc<SlimPod>);

impl CachedPod {
    /// Projects a Pod.
    pub fn from_pod(pod: &core::Pod) -> Self {
        CachedPod(Arc::new(SlimPod::new(
            crate::reconcile::view::pod(pod),
            pod.metadata.resource_version.as_deref().unwrap_or_default(),
        )))
    }

    fn label(&self, key: &str) -> Option<&str> {
        self.0
            .labels()
            .iter()
            .find(|(k, _)| &**k == key)
            .map(|(_, v)| &**v)
    }

    /// Whether a Service selector (a plain map) selects this pod.
    pub fn selected_by(&self, selector: &[model::KeyValue]) -> bool {
        selector
            .iter()
            .all(|s| self.label(&s.key) == Some(s.value.as_str()))
    }
}

impl std::ops::Deref for CachedPod {
    type Target = SlimPod;
    fn deref(&self) -> &SlimPod {
        &self.0
    }
}

#[derive(Debug, Default)]
struct NamespacePods {
    pods: HashMap<Text, CachedPod>,
    /// `(label key, value)` → names of the pods carrying it.
    by_label: HashMap<(Text, Text), HashSet<Text>>,
}

impl NamespacePods {
    fn insert(&mut self, pod: CachedPod) -> Option<CachedPod> {
        let name = pod.name().clone();
        let old = self.remove(&name);
        for pair in pod.labels() {
            self.by_label
                .entry(pair.clone())
                .or_default()
                .insert(name.clone());
        }
        self.pods.insert(name, pod);
        old
    }

    fn remove(&mut self, name: &str) -> Option<CachedPod> {
        let old = self.pods.remove(name)?;
        for pair in old.labels() {
            if let Some(names) = self.by_label.get_mut(pair) {
                names.remove(name);
                if names.is_empty() {
                    self.by_label.remove(pair);
                }
            }
        }
        Some(old)
    }

    /// Pods matching `selector`, starting from the smallest posting list of its pairs.
    fn select(&self, selector: &[model::KeyValue]) -> Vec<model::Pod> {
        if selector.is_empty() {
            return self.pods.values().map(|p| p.view()).collect();
        }
        let smallest = selector
            .iter()
            .map(|kv| {
                self.by_label
                    .get(&(Text::from(kv.key.as_str()), Text::from(kv.value.as_str())))
            })
            .min_by_key(|names| names.map_or(0, HashSet::len));
        let Some(Some(names)) = smallest else {
            return Vec::new();
        };
        names
            .iter()
            .filter_map(|n| self.pods.get(n))
            .filter(|p| p.selected_by(selector))
            .map(|p| p.view())
            .collect()
    }
}

/// A cached Service.
#[derive(Debug, Clone)]
pub struct CachedService {
    /// What guests see.
    pub view: Arc<model::Service>,
    /// `metadata.resourceVersion`.
    pub resource_version: String,
}

/// A cached Endpoints object, packed (see [`Packed`]), with what the informer and the
/// start-up sweep read of every object.
#[derive(Debug)]
struct CachedEndpoints {
    packed: Packed<core::Endpoints>,
    resource_version: Option<String>,
    /// Carries the leader-election annotation (spec §4.2).
    leader: bool,
}

/// The three caches. Each has its own lock, so pod churn does not block Service reads.
#[derive(Debug, Default)]
pub struct Cache {
    services: RwLock<HashMap<String, HashMap<String, CachedService>>>,
    /// Keys of Services that exist but that `--service-selector` leaves to someone else.
    unmanaged: RwLock<HashSet<Key>>,
    pods: RwLock<HashMap<String, NamespacePods>>,
    endpoints: RwLock<HashMap<Key, CachedEndpoints>>,
    service_selector: Option<LabelSelector>,
    /// EndpointSlices of every manager, indexed by Service.
    pub slices: crate::controller::store::slices::SliceCache,
    /// Nodes, reduced to their zone.
    pub nodes: crate::controller::store::slices::NodeCache,
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

impl Cache {
    /// Empty caches; `service_selector` limits which Services weir manages.
    pub fn new(service_selector: Option<LabelSelector>) -> Self {
        Cache {
            service_selector,
            ..Cache::default()
        }
    }

    /// Stores a Service. Returns whether it is managed (matches `--service-selector`); an
    /// unmanaged Service is remembered only as such, so its key is never treated as gone.
    pub fn apply_service(&self, svc: &core::Service) -> bool {
        let namespace = svc.metadata.namespace.clone().unwrap_or_default();
        let name = svc.metadata.name.clone().unwrap_or_default();
        let k = key(&namespace, &name);
        let managed = self
            .service_selector
            .as_ref()
            .is_none_or(|s| labels_match(s, svc.metadata.labels.as_ref()));
        if managed {
            write(&self.unmanaged).remove(&k);
            let cached = CachedService {
                view: Arc::new(crate::reconcile::view::service(svc, &namespace)),
                resource_version: svc.metadata.resource_version.clone().unwrap_or_default(),
            };
            write(&self.services)
                .entry(namespace)
                .or_default()
                .insert(name, cached);
        } else {
            write(&self.unmanaged).insert(k);
            if let Some(ns) = write(&self.services).get_mut(&namespace) {
                ns.remove(&name);
            }
        }
        managed
    }

    /// Forgets a deleted Service; whether it was a managed one (whose Endpoints weir then owes
    /// a delete, [`crate::controller::ledger::owed`]).
    pub fn delete_service(&self, namespace: &str, name: &str) -> bool {
        write(&self.unmanaged).remove(&key(namespace, name));
        write(&self.services)
            .get_mut(namespace)
            .and_then(|ns| ns.remove(name))
            .is_some()
    }

    /// After a relist: forgets every Service (managed or not) whose key is not in `seen`, as
    /// if deleted, and returns the managed keys forgotten.
    pub fn retain_services(&self, seen: &HashSet<Key>) -> Vec<Key> {
        write(&self.unmanaged).retain(|k| seen.contains(k));
        let gone: Vec<Key> = self
            .service_keys()
            .into_iter()
            .filter(|k| !seen.contains(k))
            .collect();
        for k in &gone {
            if let Some((ns, name)) = k.split_once('/') {
                self.delete_service(ns, name);
            }
        }
        gone
    }

    /// Whether any Service, managed or not, has this key.
    pub fn has_service(&self, key: &str) -> bool {
        self.is_unmanaged(key)
            || key
                .split_once('/')
                .is_some_and(|(ns, name)| self.service(ns, name).is_some())
    }

    /// Whether the key belongs to a Service that exists but is not weir's to manage.
    pub fn is_unmanaged(&self, key: &str) -> bool {
        read(&self.unmanaged).contains(key)
    }

    /// The managed Service of `namespace/name`.
    pub fn service(&self, namespace: &str, name: &str) -> Option<CachedService> {
        read(&self.services)
            .get(namespace)
            .and_then(|ns| ns.get(name))
            .cloned()
    }

    /// Every managed Service of a namespace.
    pub fn services_in(&self, namespace: &str) -> Vec<Arc<model::Service>> {
        read(&self.services)
            .get(namespace)
            .map(|ns| ns.values().map(|s| s.view.clone()).collect())
            .unwrap_or_default()
    }

    /// Keys of the managed Services that ask for topology-aware hints, whose hints depend on
    /// Nodes (upstream re-syncs such Services after Node changes, R1.16).
    pub fn topology_hint_service_keys(&self) -> Vec<Key> {
        read(&self.services)
            .iter()
            .flat_map(|(ns, svcs)| {
                svcs.iter()
                    .filter(|(_, s)| {
                        crate::controller::store::slices::wants_topology_hints(&s.view)
                    })
                    .map(move |(n, _)| key(ns, n))
            })
            .collect()
    }

    /// Keys of every managed Service.
    pub fn service_keys(&self) -> Vec<Key> {
        read(&self.services)
            .iter()
            .flat_map(|(ns, svcs)| svcs.keys().map(move |n| key(ns, n)))
            .collect()
    }

    /// Stores a pod, returning the previous version.
    pub fn apply_pod(&self, pod: CachedPod) -> Option<CachedPod> {
        let mut pods = write(&self.pods);
        match pods.get_mut(pod.namespace()) {
            Some(ns) => ns.insert(pod),
            None => pods
                .entry(pod.namespace().to_string())
                .or_default()
                .insert(pod),
        }
    }

    /// Removes a pod, returning what was cached.
    pub fn delete_pod(&self, namespace: &str, name: &str) -> Option<CachedPod> {
        let mut pods = write(&self.pods);
        let ns = pods.get_mut(namespace)?;
        let old = ns.remove(name);
        if ns.pods.is_empty() {
            pods.remove(namespace);
        }
        old
    }

    /// The guest's views of the pods of `namespace` that a Service selector selects.
    pub fn select_pods(&self, namespace: &str, selector: &[model::KeyValue]) -> Vec<model::Pod> {
        read(&self.pods)
            .get(namespace)
            .map(|ns| ns.select(selector))
            .unwrap_or_default()
    }

    /// Names of every cached pod, as `namespace/name` (for relists).
    pub fn pod_keys(&self) -> Vec<(String, String)> {
        read(&self.pods)
            .iter()
            .flat_map(|(ns, p)| p.pods.keys().map(move |n| (ns.clone(), n.to_string())))
            .collect()
    }

    /// Number of cached pods.
    pub fn pod_count(&self) -> usize {
        read(&self.pods).values().map(|ns| ns.pods.len()).sum()
    }

    /// Stores Endpoints (without managedFields, which nothing here reads), returning the
    /// previous version's resourceVersion (`Some(None)` when it had none).
    pub fn apply_endpoints(&self, mut ep: core::Endpoints) -> Option<Option<String>> {
        ep.metadata.managed_fields = None;
        let k = key(
            ep.metadata.namespace.as_deref().unwrap_or(""),
            ep.metadata.name.as_deref().unwrap_or(""),
        );
        let leader = ep
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(weir_policy::well_known::LEADER_ANNOTATION));
        let mut endpoints = write(&self.endpoints);
        let old = match Packed::pack(&ep) {
            Some(packed) => endpoints.insert(
                k,
                CachedEndpoints {
                    packed,
                    resource_version: ep.metadata.resource_version,
                    leader,
                },
            ),
            None => endpoints.remove(&k),
        };
        old.map(|o| o.resource_version)
    }

    /// Forgets deleted Endpoints; whether any were cached.
    pub fn delete_endpoints(&self, key: &str) -> bool {
        write(&self.endpoints).remove(key).is_some()
    }

    /// The cached Endpoints of a key.
    pub fn endpoints(&self, key: &str) -> Option<Arc<core::Endpoints>> {
        let endpoints = read(&self.endpoints);
        endpoints.get(key)?.packed.unpack().map(Arc::new)
    }

    /// Keys of every cached Endpoints object, with whether it carries the leader-election
    /// annotation (the start-up sweep skips those, spec §4.2).
    pub fn endpoints_keys(&self) -> Vec<(Key, bool)> {
        read(&self.endpoints)
            .iter()
            .map(|(k, ep)| (k.clone(), ep.leader))
            .collect()
    }
}

/// A Service selector as a sorted map, for matching raw label maps.
pub fn selector_map(selector: &[model::KeyValue]) -> BTreeMap<String, String> {
    selector
        .iter()
        .map(|kv| (kv.key.clone(), kv.value.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, labels: serde_json::Value) -> CachedPod {
        let p: core::Pod =
            serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ns", "labels": labels, "resourceVersion": "1"}}))
                .unwrap();
        CachedPod::from_pod(&p)
    }

    fn sel(pairs: &[(&str, &str)]) -> Vec<model::KeyValue> {
        pairs
            .iter()
            .map(|(k, v)| model::KeyValue {
                key: k.to_string(),
                value: v.to_string(),
            })
            .collect()
    }

    #[test]
    fn selects_by_label_index_and_follows_label_changes() {
        let cache = Cache::default();
        cache.apply_pod(pod("a", json!({"app": "web", "tier": "1"})));
        cache.apply_pod(pod("b", json!({"app": "web"})));
        cache.apply_pod(pod("c", json!({"app": "db"})));
        let names = |v: Vec<model::Pod>| {
            let mut n: Vec<_> = v.iter().map(|p| p.name.clone()).collect();
            n.sort();
            n
        };
        assert_eq!(
            names(cache.select_pods("ns", &sel(&[("app", "web")]))),
            ["a", "b"]
        );
        assert_eq!(
            names(cache.select_pods("ns", &sel(&[("app", "web"), ("tier", "1")]))),
            ["a"]
        );
        assert_eq!(names(cache.select_pods("ns", &sel(&[]))), ["a", "b", "c"]);
        assert!(cache.select_pods("other", &sel(&[])).is_empty());
        let old = cache.apply_pod(pod("a", json!({"app": "db"}))).unwrap();
        assert_eq!(old.labels().len(), 2);
        assert_eq!(
            names(cache.select_pods("ns", &sel(&[("app", "web")]))),
            ["b"]
        );
        assert_eq!(
            names(cache.select_pods("ns", &sel(&[("tier", "1")]))),
            Vec::<String>::new()
        );
        cache.delete_pod("ns", "b");
        assert!(cache.select_pods("ns", &sel(&[("app", "web")])).is_empty());
        assert_eq!(cache.pod_count(), 2);
    }

    #[test]
    fn service_selector_marks_services_unmanaged() {
        let cache = Cache::new(Some("weir=on".parse().unwrap()));
        let svc = |labels: serde_json::Value| -> core::Service {
            serde_json::from_value(
                json!({"metadata": {"name": "s", "namespace": "ns", "labels": labels}, "spec": {}}),
            )
            .unwrap()
        };
        assert!(!cache.apply_service(&svc(json!({}))));
        assert!(cache.is_unmanaged("ns/s"));
        assert!(cache.service("ns", "s").is_none());
        assert!(cache.apply_service(&svc(json!({"weir": "on"}))));
        assert!(!cache.is_unmanaged("ns/s"));
        assert!(cache.service("ns", "s").is_some());
    }

    #[test]
    fn a_relist_forgets_services_of_both_kinds_that_are_gone() {
        let cache = Cache::new(Some("weir=on".parse().unwrap()));
        let svc = |name: &str, labels: serde_json::Value| -> core::Service {
            serde_json::from_value(
                json!({"metadata": {"name": name, "namespace": "ns", "labels": labels}, "spec": {}}),
            )
            .unwrap()
        };
        cache.apply_service(&svc("mine", json!({"weir": "on"})));
        cache.apply_service(&svc("kept", json!({"weir": "on"})));
        cache.apply_service(&svc("theirs", json!({})));
        cache.apply_service(&svc("theirs-kept", json!({})));
        let seen: HashSet<Key> = ["ns/kept".to_string(), "ns/theirs-kept".to_string()].into();
        assert_eq!(cache.retain_services(&seen), ["ns/mine"]);
        assert!(!cache.is_unmanaged("ns/theirs"), "unmanaged record leaked");
        assert!(cache.is_unmanaged("ns/theirs-kept"));
        assert_eq!(cache.service_keys(), ["ns/kept"]);
    }
}
