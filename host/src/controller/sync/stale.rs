//! Stale tracking: a sync never decides from a cache that has not yet seen weir's own last
//! write, for either output (spec §5.9, §13.5; R1.26, R6.4). Endpoints are tracked here by
//! resourceVersion; slices by the [`SliceTracker`]'s generations.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::discovery::v1::EndpointSlice;
use prometheus_client::metrics::counter::Counter;

use super::super::cache::Cache;
use super::super::slice_tracker::{SliceTracker, is_managed, service_key};
use super::error::SyncError;

/// Remembers, per key, the resourceVersion weir's own last update superseded (upstream's
/// stale tracker) and the one its last write stored, until the Endpoints watch brings that
/// write back.
#[derive(Debug, Default)]
pub struct StaleTracker {
    stale: Mutex<HashMap<String, String>>,
    /// resourceVersions of weir's own writes whose watch event has not come yet.
    written: Mutex<HashMap<String, String>>,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl StaleTracker {
    /// Whether `resource_version` is one weir's own update of `key` superseded.
    pub fn is_stale(&self, key: &str, resource_version: &str) -> bool {
        locked(&self.stale)
            .get(key)
            .is_some_and(|rv| rv == resource_version)
    }

    /// Records that weir's update of `key` replaced `resource_version`.
    pub fn superseded(&self, key: &str, resource_version: String) {
        locked(&self.stale).insert(key.to_string(), resource_version);
    }

    /// Records the resourceVersion of an Endpoints object weir just wrote.
    pub fn wrote(&self, key: &str, resource_version: Option<String>) {
        if let Some(rv) = resource_version {
            locked(&self.written).insert(key.to_string(), rv);
        }
    }

    /// Whether a watched Endpoints version is weir's own last write of `key` coming back;
    /// once it has come back it is forgotten.
    pub fn is_own_write(&self, key: &str, resource_version: Option<&str>) -> bool {
        let mut written = locked(&self.written);
        let own =
            resource_version.is_some() && written.get(key).map(String::as_str) == resource_version;
        if own {
            written.remove(key);
        }
        own
    }

    /// Forgets every remembered resourceVersion (the API server's history was reset).
    pub fn clear(&self) {
        locked(&self.stale).clear();
        locked(&self.written).clear();
    }

    /// Forgets what is remembered of `key` (its Endpoints were deleted).
    pub fn forget(&self, key: &str) {
        locked(&self.stale).remove(key);
        locked(&self.written).remove(key);
    }
}

/// The cached slices a sync of `key` considers: labelled for it, managed by weir (or
/// kube-controller-manager, the same manager), not being deleted (R1.24, R1.25).
pub fn considered(slices: &[Arc<EndpointSlice>]) -> impl Iterator<Item = &EndpointSlice> {
    slices
        .iter()
        .map(Arc::as_ref)
        .filter(|s| is_managed(s) && s.metadata.deletion_timestamp.is_none())
}

/// Fails the sync when the cached slices of `key` predate weir's own last writes, counting it
/// in `stale_syncs`.
pub fn check_slices_fresh(
    tracker: &SliceTracker,
    stale_syncs: &Counter,
    key: &str,
    stored: &[Arc<EndpointSlice>],
) -> Result<(), SyncError> {
    if tracker.is_stale(key, considered(stored)) {
        stale_syncs.inc();
        tracker.wait_for_cache(key);
        return Err(SyncError::StaleSlices(key.to_string()));
    }
    tracker.stop_waiting(key);
    Ok(())
}

/// The Services of a slice event (its Service before and after) whose last sync failed as
/// stale and whose cached slices are now fresh: queued at once, so a stale cache costs the
/// watch delay, not the retry backoff. Upstream waits for the retry (R1.26); under churn
/// that backoff and the shared retry bucket held slice writes for tens of seconds.
pub fn slices_caught_up(
    tracker: &SliceTracker,
    cache: &Cache,
    old: Option<&EndpointSlice>,
    new: Option<&EndpointSlice>,
) -> Vec<String> {
    let mut keys: Vec<String> = old.into_iter().chain(new).filter_map(service_key).collect();
    keys.dedup();
    keys.retain(|key| {
        tracker.waiting_for(key)
            && !tracker.is_stale(key, considered(&cache.slices.for_service(key)))
            && tracker.stop_waiting(key)
    });
    keys
}
