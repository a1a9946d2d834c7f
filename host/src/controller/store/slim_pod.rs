//! The pod cache's compact form: the guest's Pod view with its repeated parts shared.
//!
//! At 150,000 pods the pod cache is most of weir's memory. The pods of one workload repeat
//! almost everything but their name, uid and IPs: namespace, label and annotation sets, node
//! names, phase, conditions, named container ports. [`SlimPod`] keeps each such value once per
//! process (an `Arc` handed out by a pool) and only the pod's own strings per pod, about a
//! third of the WIT view's heap (docs/performance.md, "Controller convergence and memory"). The WIT view a
//! guest gets is rebuilt from it for each sync ([`SlimPod::view`]); the projection itself stays
//! in `reconcile::view::pod`, so the two cannot disagree.
//!
//! The pools hold values that no pod uses any more until their next prune, which runs when a
//! pool has doubled since the last one, so they stay within twice what live pods use.

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::{Arc, LazyLock, Mutex};

use crate::model;

/// Shared text.
pub type Text = Arc<str>;

/// One entry of `status.conditions`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Condition {
    /// `type`.
    pub kind: Text,
    /// `status`.
    pub status: Text,
    /// `lastTransitionTime`.
    pub since: Option<Text>,
}

/// A named container port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ContainerPort {
    /// `name`.
    pub name: Text,
    /// `containerPort`.
    pub port: i32,
    /// `protocol`.
    pub protocol: Text,
}

/// Values shared between pods, each kept once; see the module documentation.
struct Pool<T: ?Sized> {
    set: HashSet<Arc<T>>,
    /// Size after the last prune.
    mark: usize,
}

impl<T: ?Sized + Eq + Hash> Pool<T> {
    fn new() -> Self {
        Pool {
            set: HashSet::new(),
            mark: 0,
        }
    }

    /// The pooled copy of `value`; `make` builds it when there is none yet.
    fn get(&mut self, value: &T, make: impl FnOnce() -> Arc<T>) -> Arc<T> {
        if let Some(shared) = self.set.get(value) {
            return shared.clone();
        }
        if self.set.len() >= 2 * self.mark.max(1024) {
            // Only the pool holds these: no cached pod uses them any more.
            self.set.retain(|v| Arc::strong_count(v) > 1);
            self.mark = self.set.len();
        }
        let shared = make();
        self.set.insert(shared.clone());
        shared
    }
}

struct Pools {
    text: Pool<str>,
    pairs: Pool<[(Text, Text)]>,
    conditions: Pool<[Condition]>,
    ports: Pool<[ContainerPort]>,
}

/// One set of pools for the process: pods seen by any cache share them. Only the pod
/// informer's handler interns, one pod at a time, so the lock is not contended.
static POOLS: LazyLock<Mutex<Pools>> = LazyLock::new(|| {
    Mutex::new(Pools {
        text: Pool::new(),
        pairs: Pool::new(),
        conditions: Pool::new(),
        ports: Pool::new(),
    })
});

impl Pools {
    fn text(&mut self, s: &str) -> Text {
        self.text.get(s, || Arc::from(s))
    }

    fn pairs(&mut self, kvs: &[model::KeyValue]) -> Arc<[(Text, Text)]> {
        let pairs: Vec<(Text, Text)> = kvs
            .iter()
            .map(|kv| (self.text(&kv.key), self.text(&kv.value)))
            .collect();
        self.pairs
            .get(pairs.as_slice(), || Arc::from(pairs.as_slice()))
    }
}

/// A cached pod: what the guest's Pod view holds, with the shared parts pooled.
///
/// The fields are visible to the crate so that the code that must decide about each of them
/// (the re-sync trigger, `reflect::triggers::pod_change`) destructures it without `..`: a field
/// added here fails to compile there until it is decided. Pods are made only by
/// [`SlimPod::new`], which pools the shared parts.
#[derive(Debug)]
pub struct SlimPod {
    pub(crate) namespace: Text,
    pub(crate) name: Text,
    pub(crate) uid: Box<str>,
    pub(crate) labels: Arc<[(Text, Text)]>,
    pub(crate) annotations: Arc<[(Text, Text)]>,
    pub(crate) node_name: Text,
    pub(crate) hostname: Text,
    pub(crate) subdomain: Text,
    pub(crate) pod_ip: Option<Box<str>>,
    pub(crate) pod_ips: Box<[Box<str>]>,
    pub(crate) phase: Text,
    pub(crate) conditions: Arc<[Condition]>,
    pub(crate) container_ports: Arc<[ContainerPort]>,
    pub(crate) terminating: bool,
    pub(crate) resource_version: Box<str>,
}

fn texts(pairs: &[(Text, Text)]) -> Vec<model::KeyValue> {
    pairs
        .iter()
        .map(|(k, v)| model::KeyValue {
            key: k.to_string(),
            value: v.to_string(),
        })
        .collect()
}

impl SlimPod {
    /// Compacts a Pod view; `resource_version` is the pod's `metadata.resourceVersion`.
    pub fn new(view: model::Pod, resource_version: &str) -> Self {
        // Every field of the view, without `..`: a field added to the contract fails to
        // compile here until the cache decides whether to keep it.
        let model::Pod {
            namespace,
            name,
            uid,
            labels,
            annotations,
            node_name,
            hostname,
            subdomain,
            pod_ip,
            pod_ips,
            phase,
            conditions,
            terminating,
            // Both come from the Node cache at each sync, so a Node change is seen without
            // touching the pods.
            node_exists: _,
            zone: _,
            container_ports,
        } = view;
        let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
        let conditions: Vec<Condition> = conditions
            .iter()
            .map(|c| Condition {
                kind: pools.text(&c.condition_type),
                status: pools.text(&c.status),
                since: c.last_transition_time.as_deref().map(|t| pools.text(t)),
            })
            .collect();
        let ports: Vec<ContainerPort> = container_ports
            .iter()
            .map(|p| ContainerPort {
                name: pools.text(&p.name),
                port: p.port,
                protocol: pools.text(&p.protocol),
            })
            .collect();
        SlimPod {
            namespace: pools.text(&namespace),
            name: Arc::from(name),
            uid: uid.into_boxed_str(),
            labels: pools.pairs(&labels),
            annotations: pools.pairs(&annotations),
            node_name: pools.text(&node_name),
            hostname: pools.text(&hostname),
            subdomain: pools.text(&subdomain),
            pod_ip: pod_ip.map(String::into_boxed_str),
            pod_ips: pod_ips.into_iter().map(String::into_boxed_str).collect(),
            phase: pools.text(&phase),
            conditions: pools
                .conditions
                .get(conditions.as_slice(), || Arc::from(conditions.as_slice())),
            container_ports: pools
                .ports
                .get(ports.as_slice(), || Arc::from(ports.as_slice())),
            terminating,
            resource_version: resource_version.into(),
        }
    }

    /// The guest's view of the pod, as `reconcile::view::pod` made it.
    pub fn view(&self) -> model::Pod {
        model::Pod {
            namespace: self.namespace.to_string(),
            name: self.name.to_string(),
            uid: self.uid.to_string(),
            labels: texts(&self.labels),
            annotations: texts(&self.annotations),
            node_name: self.node_name.to_string(),
            hostname: self.hostname.to_string(),
            subdomain: self.subdomain.to_string(),
            pod_ip: self.pod_ip.as_deref().map(str::to_string),
            pod_ips: self.pod_ips.iter().map(|ip| ip.to_string()).collect(),
            phase: self.phase.to_string(),
            conditions: self
                .conditions
                .iter()
                .map(|c| model::PodCondition {
                    condition_type: c.kind.to_string(),
                    status: c.status.to_string(),
                    last_transition_time: c.since.as_deref().map(str::to_string),
                })
                .collect(),
            terminating: self.terminating,
            node_exists: false,
            zone: None,
            container_ports: self
                .container_ports
                .iter()
                .map(|p| model::ContainerPort {
                    name: p.name.to_string(),
                    port: p.port,
                    protocol: p.protocol.to_string(),
                })
                .collect(),
        }
    }

    /// `metadata.namespace`.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// `metadata.name`, shared with the cache's indexes.
    pub fn name(&self) -> &Text {
        &self.name
    }

    /// `metadata.labels`.
    pub fn labels(&self) -> &[(Text, Text)] {
        &self.labels
    }

    /// `metadata.annotations`.
    pub fn annotations(&self) -> &[(Text, Text)] {
        &self.annotations
    }

    /// `metadata.resourceVersion`.
    pub fn resource_version(&self) -> &str {
        &self.resource_version
    }

    /// `spec.hostname` and `spec.subdomain`.
    pub fn dns_names(&self) -> (&str, &str) {
        (&self.hostname, &self.subdomain)
    }

    /// The pod's IPs (`status.podIPs`).
    pub fn pod_ips(&self) -> &[Box<str>] {
        &self.pod_ips
    }

    /// Whether `metadata.deletionTimestamp` is set.
    pub fn terminating(&self) -> bool {
        self.terminating
    }

    /// Whether the `Ready` condition is `True`.
    pub fn ready(&self) -> bool {
        self.conditions
            .iter()
            .find(|c| &*c.kind == "Ready")
            .is_some_and(|c| &*c.status == "True")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1 as core;
    use serde_json::json;

    fn pod(name: &str, ip: &str, ready: &str) -> core::Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "resourceVersion": "7",
                         "labels": {"app": "web", "tier": "1"}, "annotations": {"a": "b"},
                         "deletionTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"nodeName": "node-1", "hostname": "h", "subdomain": "sub",
                     "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}, {"containerPort": 9}]}],
                     "initContainers": [{"name": "side", "restartPolicy": "Always", "ports": [{"name": "dns", "containerPort": 53, "protocol": "UDP"}]}]},
            "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}, {"ip": "fd00::1"}],
                       "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": "2024-01-01T00:00:00Z"},
                                      {"type": "PodScheduled", "status": "True"}]}
        }))
        .unwrap()
    }

    #[test]
    fn the_view_comes_back_whole_and_shared_parts_are_shared() {
        let a = pod("a", "10.0.0.1", "True");
        let slim_a = SlimPod::new(crate::reconcile::view::pod(&a), "7");
        assert_eq!(slim_a.view(), crate::reconcile::view::pod(&a));
        assert!(slim_a.ready() && slim_a.terminating());
        assert_eq!(slim_a.resource_version(), "7");

        let slim_b = SlimPod::new(
            crate::reconcile::view::pod(&pod("b", "10.0.0.2", "False")),
            "8",
        );
        assert!(!slim_b.ready());
        assert!(Arc::ptr_eq(&slim_a.labels, &slim_b.labels));
        assert!(Arc::ptr_eq(
            &slim_a.container_ports,
            &slim_b.container_ports
        ));
        assert!(Arc::ptr_eq(&slim_a.namespace, &slim_b.namespace));
        assert!(!Arc::ptr_eq(&slim_a.conditions, &slim_b.conditions));
    }

    #[test]
    fn a_pool_drops_what_only_it_holds_once_it_doubled() {
        let mut pool: Pool<str> = Pool::new();
        let kept = pool.get("kept", || Arc::from("kept"));
        for i in 0..2047 {
            pool.get(&i.to_string(), || Arc::from(i.to_string()));
        }
        // With 2,048 values pooled, the next new one prunes every value nobody else holds.
        pool.get("new", || Arc::from("new"));
        assert_eq!(pool.set.len(), 2);
        assert!(Arc::ptr_eq(&kept, &pool.get("kept", || Arc::from("other"))));
    }
}
