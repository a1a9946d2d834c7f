//! The ledger: what the write stage did and what it still owes, kept apart from the caches,
//! which only mirror the API server.
//!
//! - weir's own writes that the watches have not yet brought back. A sync never decides from a
//!   cache that has not seen weir's own last write, for either output (spec §5.9, §13.5; R1.26,
//!   R6.4): Endpoints are tracked by resourceVersion ([`StaleTracker`]), slices by generation
//!   ([`SliceTracker`]).
//! - The Endpoints deletes weir owes ([`OwedDeletes`]).
//! - The watch events that come while weir writes their key, held until the write's response
//!   tells whether they are weir's own ([`held`]).
//!
//! It is the one piece of state the stages share, and a leaf: it knows the caches and nothing
//! of the stages. The write stage records into it; the sync's first stage asks whether the
//! caches are fresh and whether a delete is owed; the reflector asks whether an event is weir's
//! own write coming back and which stale syncs a slice event lets through, and posts what its
//! watches report about deletes ([`Ledger`]'s methods). After an API server reset the writes
//! are forgotten, since the new server's history has none of them; the owed deletes stay, for
//! the relist settles which Services are gone.

pub mod held;
pub mod owed;
pub mod slices;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::discovery::v1::EndpointSlice;

use crate::controller::store::Cache;
use crate::controller::store::Key;
use crate::model::labels::{is_managed, service_key};
use held::Held;
use owed::OwedDeletes;
use slices::SliceTracker;

/// Both outputs' records of weir's own writes.
#[derive(Debug, Default)]
pub struct Ledger {
    /// The Endpoints weir wrote, by resourceVersion.
    pub endpoints: StaleTracker,
    /// The EndpointSlices weir wrote, by generation.
    pub slices: SliceTracker,
    /// The Endpoints deletes weir owes.
    pub deletes: OwedDeletes,
}

impl Ledger {
    /// Forgets every write (the API server's history was reset); the owed deletes stay.
    pub fn clear(&self) {
        self.endpoints.clear();
        self.slices.clear();
    }

    /// Whether a watched Endpoints version is weir's own last write of `key` coming back, or
    /// held until weir's write of `key` in flight is recorded (see
    /// [`StaleTracker::is_own_write`]).
    pub fn is_own_endpoints_write(&self, key: &str, resource_version: Option<&str>) -> bool {
        self.endpoints.is_own_write(key, resource_version)
    }

    /// After a sync of `key`: whether a watch event held while it wrote turned out to be
    /// someone else's change, so the key needs another sync ([`held`]).
    pub fn take_requeue(&self, key: &str) -> Option<Requeue> {
        // Both are taken: each is answered once.
        let endpoints = self.endpoints.held.take_asked(key);
        let slices = self.slices.take_asked(key);
        if endpoints {
            Some(Requeue::Now)
        } else if slices {
            Some(Requeue::AfterSliceDelay)
        } else {
            None
        }
    }

    /// Whether the cached slices of `key` show every write weir made; when they do not, the
    /// key waits for the cache ([`Ledger::slices_caught_up`] lets it through).
    pub fn slices_fresh(&self, key: &str, stored: &[Arc<EndpointSlice>]) -> bool {
        if self.slices.is_stale(key, considered(stored)) {
            self.slices.wait_for_cache(key);
            return false;
        }
        self.slices.stop_waiting(key);
        true
    }

    /// The Services of a slice event (its Service before and after) whose last sync failed as
    /// stale and whose cached slices are now fresh: queued at once, so a stale cache costs the
    /// watch delay, not the retry backoff. Upstream waits for the retry (R1.26); under churn
    /// that backoff and the shared retry bucket held slice writes for tens of seconds.
    pub fn slices_caught_up(
        &self,
        cache: &Cache,
        old: Option<&EndpointSlice>,
        new: Option<&EndpointSlice>,
    ) -> Vec<Key> {
        let mut keys: Vec<Key> = old.into_iter().chain(new).filter_map(service_key).collect();
        keys.dedup();
        keys.retain(|key| {
            self.slices.waiting_for(key)
                && !self
                    .slices
                    .is_stale(key, considered(&cache.slices.for_service(key)))
                && self.slices.stop_waiting(key)
        });
        keys
    }
}

/// How soon a key goes back to the queue after a watch event held during its sync's writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requeue {
    /// At once, as an Endpoints event queues its key.
    Now,
    /// After the delay of slice-driven syncs, as a slice event queues its Service (R1.15).
    AfterSliceDelay,
}

/// Remembers, per key, the resourceVersion weir's own last update superseded (upstream's
/// stale tracker) and the one its last write stored, until the Endpoints watch brings that
/// write back.
#[derive(Debug, Default)]
pub struct StaleTracker {
    stale: Mutex<HashMap<String, String>>,
    /// resourceVersions of weir's own writes whose watch event has not come yet.
    written: Mutex<HashMap<String, String>>,
    /// resourceVersions watched while weir writes their key.
    held: Held<Option<String>>,
}

/// Locks `m`, also after a holder panicked: no holder leaves a map half-updated. Shared by the
/// ledger's modules.
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

    /// Holds the Endpoints events of `key` while weir writes them, until the returned guard
    /// drops (after [`wrote`](Self::wrote), or without it when the write failed); each is then
    /// judged as [`is_own_write`](Self::is_own_write) judges one that comes after the write.
    pub fn hold(&self, key: &str) -> impl Sized + '_ {
        self.held.hold(key, |key, rv: &Option<String>| {
            !self.came_back(key, rv.as_deref())
        })
    }

    /// Whether a watched Endpoints version is weir's own last write of `key` coming back;
    /// once it has come back it is forgotten. While weir writes `key` the version is held
    /// instead, and judged when the write ends (see [`hold`](Self::hold)): true until then.
    pub fn is_own_write(&self, key: &str, resource_version: Option<&str>) -> bool {
        self.held
            .holds(key, || resource_version.map(str::to_string))
            || self.came_back(key, resource_version)
    }

    /// Whether `resource_version` is weir's own last write of `key` (forgotten if so).
    fn came_back(&self, key: &str, resource_version: Option<&str>) -> bool {
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
