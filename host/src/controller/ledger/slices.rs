//! The EndpointSlice tracker: the stale-cache guard of the slice path (rules R6.1–R6.5 of
//! `docs/upstream-endpointslices.md`).
//!
//! After weir writes a slice it remembers the generation the API server returned (or that it
//! expects the slice to be gone). A sync whose cache still shows an older generation, a slice
//! weir deleted, or misses a slice weir created, would decide from a view that predates its own
//! write; it fails with a stale-cache error instead and the key is retried with backoff.
//! Generations, not resourceVersions, are compared because an annotation-only edit by someone
//! else does not bump the generation and must not make weir's view stale.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use k8s_openapi::api::discovery::v1::EndpointSlice;

use crate::controller::ledger::held::Held;
use crate::controller::writer::StoredMeta;
use crate::model::labels::service_key;

/// The special generation meaning "weir deleted it and expects it gone".
const DELETION_EXPECTED: i64 = -1;

/// What the tracker reads of a slice: its UID and generation. A write's response gives only
/// these ([`StoredMeta`]); a watch event gives the whole slice.
pub trait SliceVersion {
    /// `metadata.uid`, empty when unset.
    fn uid(&self) -> &str;
    /// `metadata.generation`, 0 when unset.
    fn generation(&self) -> i64;
}

impl SliceVersion for EndpointSlice {
    fn uid(&self) -> &str {
        self.metadata.uid.as_deref().unwrap_or("")
    }

    fn generation(&self) -> i64 {
        self.metadata.generation.unwrap_or(0)
    }
}

impl SliceVersion for StoredMeta {
    fn uid(&self) -> &str {
        self.uid.as_deref().unwrap_or("")
    }

    fn generation(&self) -> i64 {
        self.generation.unwrap_or(0)
    }
}

/// Per Service key, slice UID → the generation weir last wrote (or [`DELETION_EXPECTED`]).
#[derive(Debug, Default)]
pub struct SliceTracker {
    services: Mutex<HashMap<String, HashMap<String, i64>>>,
    /// Services whose last sync failed because the cache had not caught up yet: the slice
    /// event that catches it up queues them at once (see [`SliceTracker::waiting_for`]).
    waiting: Mutex<HashSet<String>>,
    /// Slice versions (UID, generation) watched while weir writes their Service's slices.
    held: Held<(String, i64)>,
}

impl SliceTracker {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, HashMap<String, i64>>> {
        self.services.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a slice weir created or updated, with the generation the API server returned.
    pub fn written(&self, service: &str, stored: &impl SliceVersion) {
        self.lock()
            .entry(service.to_string())
            .or_default()
            .insert(stored.uid().to_string(), stored.generation());
    }

    /// Records that weir deleted the slice with this UID.
    pub fn deleted(&self, service: &str, uid: &str) {
        self.lock()
            .entry(service.to_string())
            .or_default()
            .insert(uid.to_string(), DELETION_EXPECTED);
    }

    /// Whether a slice event calls for a sync of its Service (R6.3): the Service or the slice
    /// is unknown, or someone else moved the slice past the generation weir wrote. While weir
    /// writes the Service's slices the event is held instead, and judged when the writes end
    /// (see [`hold`](Self::hold)): false until then.
    pub fn should_sync(&self, slice: &EndpointSlice) -> bool {
        let Some(service) = service_key(slice) else {
            return true;
        };
        if self
            .held
            .holds(&service, || (slice.uid().to_string(), slice.generation()))
        {
            return false;
        }
        self.is_past_ours(&service, slice.uid(), slice.generation())
    }

    /// Whether a slice version is unknown to weir or past the generation weir wrote.
    fn is_past_ours(&self, service: &str, uid: &str, generation: i64) -> bool {
        match self.lock().get(service).and_then(|s| s.get(uid)) {
            None => true,
            Some(&tracked) => generation > tracked,
        }
    }

    /// Holds the slice events of `service` while weir writes its slices, until the returned
    /// guard drops (after every [`written`](Self::written), or early when a write failed);
    /// each is then judged as [`should_sync`](Self::should_sync) judges one that comes after.
    pub fn hold(&self, service: &str) -> impl Sized + '_ {
        self.held
            .hold(service, |service, (uid, generation): &(String, i64)| {
                self.is_past_ours(service, uid, *generation)
            })
    }

    /// Whether a slice event held while weir wrote `service`'s slices calls for a sync of it;
    /// answered once.
    pub fn take_asked(&self, service: &str) -> bool {
        self.held.take_asked(service)
    }

    /// Whether weir tracks this slice.
    pub fn has(&self, slice: &EndpointSlice) -> bool {
        service_key(slice).is_some_and(|service| {
            self.lock()
                .get(&service)
                .is_some_and(|s| s.contains_key(slice.uid()))
        })
    }

    /// Forgets a deleted slice; returns whether the deletion was expected (weir deleted it).
    pub fn handle_deletion(&self, slice: &EndpointSlice) -> bool {
        let Some(service) = service_key(slice) else {
            return true;
        };
        let mut services = self.lock();
        let Some(slices) = services.get_mut(&service) else {
            return true;
        };
        let tracked = slices.remove(slice.uid());
        tracked.is_none_or(|g| g == DELETION_EXPECTED)
    }

    /// Whether the cached slices of `service` predate weir's own writes (R6.4). `listed` are the
    /// cached slices weir manages for the Service, without those being deleted.
    pub fn is_stale<'a>(
        &self,
        service: &str,
        listed: impl IntoIterator<Item = &'a EndpointSlice>,
    ) -> bool {
        let services = self.lock();
        let Some(tracked) = services.get(service) else {
            return false;
        };
        let mut seen = 0usize;
        for slice in listed {
            if let Some(&g) = tracked.get(slice.uid()) {
                if g == DELETION_EXPECTED || g > slice.generation() {
                    return true;
                }
                seen += 1;
            }
        }
        // Every slice weir wrote and still expects must be listed.
        let expected = tracked.values().filter(|&&g| g >= 0).count();
        seen < expected
    }

    /// Forgets a Service (it was deleted; its slices go with it by garbage collection).
    pub fn forget(&self, service: &str) {
        self.lock().remove(service);
        self.waiting().remove(service);
    }

    /// Forgets every Service: the API server's state was reset, so the slices weir wrote to
    /// it before will never be listed again.
    pub fn clear(&self) {
        self.lock().clear();
        self.waiting().clear();
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes that a sync of `service` failed as stale: it waits for the slice cache.
    pub fn wait_for_cache(&self, service: &str) {
        self.waiting().insert(service.to_string());
    }

    /// Whether a sync of `service` is waiting for the slice cache.
    pub fn waiting_for(&self, service: &str) -> bool {
        self.waiting().contains(service)
    }

    /// Ends the wait of `service` (its cache caught up); returns whether it was waiting.
    pub fn stop_waiting(&self, service: &str) -> bool {
        self.waiting().remove(service)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::labels::{LABEL_MANAGED_BY, LABEL_SERVICE_NAME, MANAGED_BY};
    use serde_json::json;

    fn slice(uid: &str, generation: i64) -> EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"name": uid, "namespace": "ns", "uid": uid, "generation": generation,
                         "labels": {LABEL_SERVICE_NAME: "foo", LABEL_MANAGED_BY: MANAGED_BY}},
            "addressType": "IPv4", "endpoints": []
        }))
        .unwrap()
    }

    #[test]
    fn stale_when_the_cache_is_behind_our_write() {
        // S74: tracked 12 / cached 10 → stale; 10/10 and 1/10 → not.
        let t = SliceTracker::default();
        t.written("ns/foo", &slice("a", 12));
        assert!(t.is_stale("ns/foo", [&slice("a", 10)]));
        t.written("ns/foo", &slice("a", 10));
        assert!(!t.is_stale("ns/foo", [&slice("a", 10)]));
        t.written("ns/foo", &slice("a", 1));
        assert!(!t.is_stale("ns/foo", [&slice("a", 10)]));
    }

    #[test]
    fn stale_when_a_deleted_slice_is_listed_or_a_written_one_is_missing() {
        // S75.
        let t = SliceTracker::default();
        assert!(
            !t.is_stale("ns/foo", [&slice("a", 1)]),
            "untracked Service is never stale"
        );
        t.deleted("ns/foo", "a");
        assert!(t.is_stale("ns/foo", [&slice("a", 1)]));
        assert!(!t.is_stale("ns/foo", []));
        t.written("ns/foo", &slice("b", 1));
        assert!(
            t.is_stale("ns/foo", []),
            "our create is not in the cache yet"
        );
        assert!(!t.is_stale("ns/foo", [&slice("b", 1)]));
        t.forget("ns/foo");
        assert!(!t.is_stale("ns/foo", [&slice("a", 1)]));
    }

    #[test]
    fn events_sync_only_for_changes_by_others() {
        // S76.
        let t = SliceTracker::default();
        assert!(t.should_sync(&slice("a", 1)), "unknown Service");
        t.written("ns/foo", &slice("a", 2));
        assert!(!t.should_sync(&slice("a", 2)), "our own write coming back");
        assert!(t.should_sync(&slice("a", 3)), "someone else edited it");
        assert!(t.should_sync(&slice("b", 1)), "a slice we never wrote");
        assert!(t.has(&slice("a", 3)));
        assert!(
            !t.handle_deletion(&slice("a", 3)),
            "a tracked slice deleted by someone else"
        );
        assert!(!t.has(&slice("a", 3)));
        t.deleted("ns/foo", "b");
        assert!(t.handle_deletion(&slice("b", 1)), "our own delete");
        assert!(t.handle_deletion(&slice("c", 1)), "untracked");
    }
}
