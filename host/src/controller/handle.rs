//! A handle on a running controller: its caches, queue and guest, for the CLI, hot swap, the
//! admin endpoints and tests; and the one place keys are queued, so a standby queues nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::controller::outputs::Outputs;
use crate::controller::shadow::Shadow;
use crate::controller::store::Cache;
use crate::controller::watch::ApiHealth;
use crate::controller::watch::consistency::ResetGate;
use crate::leader::WriteGate;
use crate::metrics::Metrics;
use crate::queue::WorkQueue;
use crate::runtime::ActiveGuest;
use crate::runtime::health::CallHealth;

/// A handle on a running controller, for the CLI, hot swap and tests.
#[derive(Clone)]
pub struct Handle {
    /// The caches.
    pub cache: Arc<Cache>,
    /// The work queue.
    pub queue: WorkQueue<String>,
    /// The active guest.
    pub guest: ActiveGuest,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Guest call outcomes per digest.
    pub health: Arc<CallHealth>,
    /// Which outputs weir writes.
    pub outputs: Outputs,
    /// The shadow guest, when one runs (`--shadow-guest`).
    pub shadow: Option<Arc<Shadow>>,
    /// The connection to the API server.
    pub api: Arc<ApiHealth>,
    /// The leader-election gate all writes pass.
    pub gate: WriteGate,
    /// The consistency epoch: closed while the caches may mix two API servers' state.
    pub consistency: Arc<ResetGate>,
    pub(super) synced: Arc<AtomicBool>,
    pub(super) readyz_api_timeout: Duration,
}

impl Handle {
    /// Whether every cache has synced and workers run.
    pub fn is_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// Marks every cache synced: workers start.
    pub(super) fn set_synced(&self) {
        self.synced.store(true, Ordering::Release);
    }

    /// Why `/readyz` should fail, if it should: caches not synced yet, waiting for every
    /// informer to list afresh after an API server reset, or no successful list or watch for
    /// longer than `readyz_api_timeout`.
    pub fn readiness(&self) -> Result<(), String> {
        if !self.is_synced() {
            return Err("caches not synced".into());
        }
        if !self.consistency.is_open() {
            return Err(format!(
                "waiting for a consistent view of the API server after a reset (still listing: {})",
                self.consistency.waiting_for().join(", ")
            ));
        }
        let silent = self.api.since_contact();
        if silent > self.readyz_api_timeout {
            return Err(format!(
                "no successful list or watch of the API server for {}s",
                silent.as_secs()
            ));
        }
        Ok(())
    }

    /// Queues `key` for a sync. A standby queues nothing: it syncs every Service once it
    /// leads, so meanwhile its queue (and the workqueue metrics) stay empty.
    pub fn enqueue(&self, key: String) {
        if self.gate.is_leading() {
            self.queue.add(key);
        }
    }

    /// [`Handle::enqueue`] after `delay`.
    pub fn enqueue_after(&self, key: String, delay: Duration) {
        if self.gate.is_leading() {
            self.queue.add_after(key, delay);
        }
    }

    /// Enqueues every managed Service once (after a guest swap, the rules changed, and on
    /// every resync). Nothing on a standby (see [`Handle::enqueue`]).
    pub fn enqueue_all(&self) -> usize {
        if !self.gate.is_leading() {
            return 0;
        }
        let keys = self.cache.service_keys();
        let n = keys.len();
        for k in keys {
            self.queue.add(k);
        }
        n
    }
}
