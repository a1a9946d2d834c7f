//! The reflector: what each informer's changes do to weir's caches, and which keys they queue.
//!
//! Every watched kind is one [`CacheSide`]: how an object enters and leaves its cache, and
//! what it queues when it does ([`crate::controller::reflect::triggers`] says which keys). [`reflect`] holds the
//! relist bookkeeping they share: after a relist, whatever the cache holds that the relist did
//! not deliver again was deleted while the watch was down.

pub mod triggers;

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Resource;

use crate::controller::handle::Handle;
use crate::controller::ledger::Ledger;
use crate::controller::store::slices::NodeView;
use crate::controller::store::wire_node::WireNode;
use crate::controller::store::wire_pod::WirePod;
use crate::controller::store::{CachedPod, key};
use crate::controller::watch::Change;
use triggers::{node_enqueues, pod_enqueues, slice_enqueues};

/// One kind's cache, as its informer's changes reach it.
pub trait CacheSide<K> {
    /// What identifies an object across a relist.
    type Id: Eq + Hash;
    /// Stores (or replaces) `object` and queues what the change concerns; returns its identity.
    fn apply(&mut self, object: K) -> Self::Id;
    /// Removes `object`, which the watch saw deleted, and queues what that concerns.
    fn delete(&mut self, object: K);
    /// Every identity the cache holds.
    fn cached(&self) -> Vec<Self::Id>;
    /// Removes an object a relist did not deliver again, and queues what that concerns.
    fn vanished(&mut self, id: Self::Id);
    /// After a relist that delivered `seen`: removes every other cached object.
    fn relisted(&mut self, seen: &HashSet<Self::Id>) {
        for id in self.cached() {
            if !seen.contains(&id) {
                self.vanished(id);
            }
        }
    }
}

/// The informer callback of `side`: applies each change, and tracks what a relist delivers.
pub fn reflect<K, S: CacheSide<K>>(mut side: S) -> impl FnMut(Change<K>) {
    let mut seen: Option<HashSet<S::Id>> = None;
    move |change| match change {
        Change::Apply(object) => {
            side.apply(object);
        }
        Change::Delete(object) => side.delete(object),
        Change::RelistStart => seen = Some(HashSet::new()),
        Change::RelistItem(object) => {
            let id = side.apply(object);
            seen.get_or_insert_with(HashSet::new).insert(id);
        }
        Change::RelistDone => side.relisted(&seen.take().unwrap_or_default()),
    }
}

fn names<K: Resource>(o: &K) -> (String, String) {
    (
        o.meta().namespace.clone().unwrap_or_default(),
        o.meta().name.clone().unwrap_or_default(),
    )
}

/// Services: every change queues the Service itself; a managed one's deletion makes its
/// Endpoints weir's to delete.
pub struct Services {
    /// The controller.
    pub handle: Handle,
    /// Where the deletes weir owes are posted.
    pub ledger: Arc<Ledger>,
}

impl Services {
    fn forget(&self, ns: &str, name: &str) {
        let managed = self.handle.cache.delete_service(ns, name);
        self.ledger.deletes.service_deleted(&key(ns, name), managed);
    }
}

impl CacheSide<core::Service> for Services {
    type Id = String;

    fn apply(&mut self, svc: core::Service) -> String {
        let (ns, name) = names(&svc);
        self.ledger.deletes.service_exists(&key(&ns, &name));
        if self.handle.cache.apply_service(&svc) {
            self.handle.enqueue(key(&ns, &name));
        }
        key(&ns, &name)
    }

    fn delete(&mut self, svc: core::Service) {
        let (ns, name) = names(&svc);
        self.forget(&ns, &name);
        self.handle.enqueue(key(&ns, &name));
    }

    fn cached(&self) -> Vec<String> {
        self.handle.cache.service_keys()
    }

    fn vanished(&mut self, k: String) {
        if let Some((ns, name)) = k.split_once('/') {
            self.forget(ns, name);
        }
        self.handle.enqueue(k);
    }

    /// Also forgets the Services weir does not manage that the relist did not deliver.
    fn relisted(&mut self, seen: &HashSet<String>) {
        for k in self.handle.cache.retain_services(seen) {
            self.ledger.deletes.service_deleted(&k, true);
            self.handle.enqueue(k);
        }
    }
}

/// Pods: a change queues the Services selecting the pod before or after it, after the batch
/// period.
pub struct Pods {
    /// The controller.
    pub handle: Handle,
    /// The delay of pod-driven syncs (spec §3.5).
    pub batch: Duration,
}

impl Pods {
    fn enqueue(&self, ns: &str, old: Option<&CachedPod>, new: Option<&CachedPod>) {
        // Until the caches are synced no worker runs, and every managed Service is queued
        // once its informer sees it; matching each pod of the first list against every
        // Service of its namespace would only repeat that (10k Services, 150k pods: 150M
        // selector checks).
        if !self.handle.is_synced() {
            return;
        }
        let services = self.handle.cache.services_in(ns);
        for (k, delay) in pod_enqueues(&services, self.batch, old, new) {
            self.handle.enqueue_after(k, delay);
        }
    }
}

impl CacheSide<WirePod> for Pods {
    type Id = (String, String);

    fn apply(&mut self, WirePod(pod): WirePod) -> (String, String) {
        let new = CachedPod::from_pod(&pod);
        let ns = new.namespace().to_string();
        let old = self.handle.cache.apply_pod(new.clone());
        self.enqueue(&ns, old.as_ref(), Some(&new));
        names(&pod)
    }

    fn delete(&mut self, WirePod(pod): WirePod) {
        let (ns, name) = names(&pod);
        let old = self
            .handle
            .cache
            .delete_pod(&ns, &name)
            .unwrap_or_else(|| CachedPod::from_pod(&pod));
        self.enqueue(&ns, Some(&old), None);
    }

    fn cached(&self) -> Vec<(String, String)> {
        self.handle.cache.pod_keys()
    }

    fn vanished(&mut self, (ns, name): (String, String)) {
        if let Some(old) = self.handle.cache.delete_pod(&ns, &name) {
            self.enqueue(&ns, Some(&old), None);
        }
    }
}

/// Endpoints: a change by anyone but weir queues its Service (D3).
pub struct EndpointsObjects {
    /// The controller.
    pub handle: Handle,
    /// weir's own writes, whose coming back queues nothing.
    pub ledger: Arc<Ledger>,
}

impl CacheSide<core::Endpoints> for EndpointsObjects {
    type Id = String;

    fn apply(&mut self, ep: core::Endpoints) -> String {
        let h = &self.handle;
        let (ns, name) = names(&ep);
        let k = key(&ns, &name);
        let rv = ep.metadata.resource_version.clone();
        let old = h.cache.apply_endpoints(ep);
        self.ledger.deletes.endpoints_stored(&k);
        // D3: an Endpoints changed by anyone but weir is re-synced, so hand edits are
        // restored at once. weir's own write coming back is not: that sync would find
        // nothing to do, and it would race the watch of the slices written in the same
        // sync and fail as stale. Before the first sync the leftover sweep covers every
        // object instead.
        // Asked last: a version that would queue nothing is not held for a write in flight.
        let changed = old.is_none_or(|old_rv| old_rv != rv);
        if h.is_synced() && changed && !self.ledger.is_own_endpoints_write(&k, rv.as_deref()) {
            h.enqueue(k.clone());
        }
        k
    }

    fn delete(&mut self, ep: core::Endpoints) {
        let (ns, name) = names(&ep);
        self.vanished(key(&ns, &name));
    }

    fn cached(&self) -> Vec<String> {
        self.handle
            .cache
            .endpoints_keys()
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    }

    fn vanished(&mut self, k: String) {
        if self.handle.cache.has_service(&k) {
            self.ledger.deletes.endpoints_vanished(&k);
        }
        self.handle.cache.delete_endpoints(&k);
        self.handle.enqueue(k);
    }
}

/// EndpointSlices: a change queues its Service after at least a second (R1.15), and at once
/// a Service whose stale sync this change lets through.
pub struct Slices {
    /// The controller.
    pub handle: Handle,
    /// weir's own slice writes, which a stale sync waits for.
    pub ledger: Arc<Ledger>,
    /// The delay of pod-driven syncs, which slice-driven ones take at least.
    pub batch: Duration,
}

impl Slices {
    fn enqueue(&self, old: Option<&EndpointSlice>, new: Option<&EndpointSlice>) {
        let h = &self.handle;
        for (k, delay) in slice_enqueues(&self.ledger.slices, self.batch, old, new) {
            h.enqueue_after(k, delay);
        }
        for k in self.ledger.slices_caught_up(&h.cache, old, new) {
            h.enqueue(k);
        }
    }

    fn remove(&self, ns: &str, name: &str, last: Option<EndpointSlice>) {
        let old = self.handle.cache.slices.delete(ns, name);
        let old = old.as_deref().cloned().or(last);
        self.enqueue(old.as_ref(), None);
    }
}

impl CacheSide<EndpointSlice> for Slices {
    type Id = String;

    fn apply(&mut self, slice: EndpointSlice) -> String {
        let (ns, name) = names(&slice);
        let new = Arc::new(slice.clone());
        let old = self.handle.cache.slices.apply(slice);
        self.enqueue(old.as_deref(), Some(&new));
        key(&ns, &name)
    }

    fn delete(&mut self, slice: EndpointSlice) {
        let (ns, name) = names(&slice);
        self.remove(&ns, &name, Some(slice));
    }

    fn cached(&self) -> Vec<String> {
        self.handle.cache.slices.keys()
    }

    fn vanished(&mut self, k: String) {
        if let Some((ns, name)) = k.split_once('/') {
            self.remove(ns, name, None);
        }
    }
}

/// Nodes: a change of topology queues the Services asking for topology hints (D10).
pub struct Nodes(pub Handle);

impl Nodes {
    fn changed(&self, old: Option<&NodeView>, new: Option<&NodeView>) {
        if self.0.is_synced() {
            for k in node_enqueues(&self.0.cache, old, new) {
                self.0.enqueue(k);
            }
        }
    }
}

impl CacheSide<WireNode> for Nodes {
    type Id = String;

    fn apply(&mut self, WireNode(node): WireNode) -> String {
        let name = node.metadata.name.clone().unwrap_or_default();
        let view = NodeView::from_node(&node);
        let old = self.0.cache.nodes.apply(&name, view.clone());
        self.changed(old.as_ref(), Some(&view));
        name
    }

    fn delete(&mut self, WireNode(node): WireNode) {
        self.vanished(node.metadata.name.unwrap_or_default());
    }

    fn cached(&self) -> Vec<String> {
        self.0.cache.nodes.names()
    }

    fn vanished(&mut self, name: String) {
        let old = self.0.cache.nodes.delete(&name);
        self.changed(old.as_ref(), None);
    }
}
