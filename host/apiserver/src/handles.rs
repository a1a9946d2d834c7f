//! Handles on a running server: its fault injection, and direct access to its store.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::error::Error;
use crate::faults::{FaultState, Faults, Partition};
use crate::resources;
use crate::seed::load_seed_object;
use crate::shared::Shared;

/// Changes fault injection of a running server.
#[derive(Debug, Clone)]
pub struct FaultHandle(pub(crate) Arc<Shared>);

impl FaultHandle {
    /// Current settings.
    pub fn get(&self) -> Faults {
        self.0.lock_faults().faults.clone()
    }
    /// Replaces all settings (re-seeding the random source).
    pub fn set(&self, faults: Faults) {
        *self.0.lock_faults() = FaultState::new(faults);
    }
    /// Latency added to each API request.
    pub fn set_latency(&self, latency: Duration) {
        self.0.lock_faults().faults.latency = latency;
    }
    /// Share of API requests answered 500.
    pub fn set_error_rate(&self, rate: f64) {
        self.0.lock_faults().faults.error_rate = rate;
    }
    /// Share of API requests answered 429 with `Retry-After`.
    pub fn set_throttle_rate(&self, rate: f64) {
        self.0.lock_faults().faults.throttle_rate = rate;
    }
    /// Answer the next `n` updates (PUT/PATCH) with 409 Conflict.
    pub fn conflict_next_updates(&self, n: u64) {
        self.0.lock_faults().faults.conflict_next_updates = n;
    }
    /// Cuts clients whose User-Agent contains `user_agent` off from `resource` (plural): their
    /// requests for it get 503 until [`FaultHandle::heal`].
    pub fn partition(&self, user_agent: &str, resource: &str) {
        self.0.lock_faults().faults.partitions.push(Partition {
            user_agent: user_agent.into(),
            resource: resource.into(),
        });
    }
    /// Ends every partition.
    pub fn heal(&self) {
        self.0.lock_faults().faults.partitions.clear();
    }
    /// Answer the next `n` watch requests with 410 Gone.
    pub fn expire_next_watches(&self, n: u64) {
        self.0.lock_faults().faults.expire_next_watches = n;
    }
    /// Drop every open watch connection now (clients see the connection end abruptly).
    pub fn drop_watches(&self) {
        self.0.drop_watches.send_modify(|g| *g += 1);
    }
    /// Makes every watch on `resource` (plural, e.g. `"pods"`) that resumes from a
    /// resourceVersion before now get 410 Gone, as after an etcd compaction.
    pub fn compact(&self, resource: &str) {
        let mut s = self.0.lock();
        let rv = s.rv;
        for (i, def) in resources::RESOURCES.iter().enumerate() {
            if def.name == resource {
                s.res[i].history.clear();
                s.res[i].compacted = rv;
            }
        }
    }
}

/// Direct in-process access to the stored objects (for tests).
#[derive(Debug, Clone)]
pub struct StoreHandle(pub(crate) Arc<Shared>);

impl StoreHandle {
    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.0.lock().rv
    }
    /// Gets an object by resource plural (`"pods"`, `"leases"`), namespace (empty for
    /// cluster-scoped) and name.
    pub fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<Value> {
        let r = resources::RESOURCES
            .iter()
            .position(|d| d.name == resource)?;
        self.0.lock().get(r, namespace, name).map(|o| o.value())
    }
    /// Number of stored objects of a resource.
    pub fn count(&self, resource: &str) -> usize {
        resources::RESOURCES
            .iter()
            .position(|d| d.name == resource)
            .map(|r| self.0.lock().res[r].objects.len())
            .unwrap_or(0)
    }
    /// Loads objects as the seed does (status kept, missing namespaces created).
    pub fn load(&self, objects: Vec<Value>) -> Result<(), Error> {
        let mut s = self.0.lock();
        for v in objects {
            load_seed_object(&mut s, v)?;
        }
        Ok(())
    }
}
