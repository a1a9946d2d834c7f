//! The sync of one Service key, as a pipeline whose stages each take only the parts they need:
//!
//! 1. [`request`]: read the caches once and build the guest's request (spec §5.1–5.9),
//!    behind the stale-cache guards of the [`ledger`](crate::controller::ledger);
//! 2. call the guest, within its deadline and memory cap;
//! 3. [`admit`]: validate both outputs' parts of the decision (spec §13, R10), with
//!    [`crate::reconcile::admit`];
//! 4. [`write`]: the Endpoints and the EndpointSlices, at once.
//!
//! The shadow guest's decision is compared off this path ([`crate::controller::shadow`]). `spec §` numbers are
//! those of `docs/upstream-behaviour.md`; R1–R10 and S01–S98 those of
//! `docs/upstream-endpointslices.md`.

pub mod admit;
mod error;
pub mod request;
pub mod slice_stats;
pub mod write;

use std::sync::Arc;

pub use error::{SyncError, SyncOutcome};
pub use slice_stats::SliceStats;

use crate::controller::ledger::Ledger;
use crate::controller::outputs::Outputs;
use crate::controller::shadow::{Job, Shadow};
use crate::controller::store::Cache;
use crate::controller::watch::consistency::ResetGate;
use crate::controller::writer::{EventRecorder, Writer};
use crate::metrics::{Metrics, ResultLabel};
use crate::model;
use crate::reconcile::admit::Target;
use crate::reconcile::trigger_time::TriggerTimeTracker;
use crate::runtime::ActiveGuest;
use crate::runtime::health::CallHealth;
use request::{Prepared, Reader};
use slice_stats::FAILED_TO_UPDATE;
use write::{EndpointsOutput, Sink, SlicesOutput};

/// Everything a sync needs; shared by all workers.
pub struct Syncer {
    /// The consistency epoch every write checks.
    pub consistency: Arc<ResetGate>,
    /// The caches.
    pub cache: Arc<Cache>,
    /// The guest to call.
    pub guest: ActiveGuest,
    /// Where decisions go.
    pub writer: Writer,
    /// Failure events.
    pub events: EventRecorder,
    /// Trigger times.
    pub trigger_times: TriggerTimeTracker,
    /// weir's own writes: recorded by the writes, checked before each decision.
    pub ledger: Arc<Ledger>,
    /// Outcomes of guest calls, per guest digest (hot-swap rollback reads it).
    pub health: Arc<CallHealth>,
    /// A second guest run after every sync for comparison only (`--shadow-guest`), off the
    /// sync's path.
    pub shadow: Option<Arc<Shadow>>,
    /// Guest call and shadow metrics.
    pub metrics: Arc<Metrics>,
    /// Which outputs weir writes, and how.
    pub outputs: Outputs,
    /// Counters of the slice path.
    pub slice_stats: SliceStats,
}

impl Syncer {
    /// Syncs one key: one guest call decides both outputs, which are written at once. A
    /// decision refused in either part writes nothing.
    pub async fn sync(&self, key: &str) -> Result<SyncOutcome, SyncError> {
        // Noted before the caches are read: a reset after this voids the decision.
        let epoch = self.consistency.begin()?;
        // The guest and its configuration as one pair: a swap may change both at once.
        let active = self.guest.current_pair();
        let (request, stored) = match self.reader().prepare(key, active.config)? {
            Prepared::Done(outcome) => return Ok(outcome),
            Prepared::Call { request, stored } => (*request, stored),
        };
        let guest = active.guest;
        let renders_slices = guest.world().has_slices();
        if self.outputs.endpoint_slices && !renders_slices {
            self.slice_stats.note_no_slices(&guest);
        }
        let slices_on = self.outputs.endpoint_slices && renders_slices && request.service.is_some();
        let stored_slices = if slices_on {
            self.cache.slices.for_service(key)
        } else {
            Vec::new()
        };
        let request = self.reader().request(request, &stored_slices, slices_on);
        let uid = request
            .service
            .as_ref()
            .map(|s| s.uid.clone())
            .unwrap_or_default();
        let target = Target {
            namespace: &request.namespace,
            name: &request.name,
            uid: &uid,
        };
        // The decision was made for this view of the Service; its slice writes follow it
        // (no creates for a Service being deleted, R4.22a).
        let deleting = request.service.as_ref().is_some_and(|s| s.deleting);
        let max_addresses = guest.limits().max_addresses;
        // Awaited on the worker: the call is a future bounded by its deadline whatever the
        // guest does (see `Runtime::sandboxed`), so no blocking thread is needed.
        let started = std::time::Instant::now();
        let decision = guest.call(&request).await;
        self.metrics
            .guest_call_duration
            .observe(started.elapsed().as_secs_f64());
        let admitted = self
            .admit(
                target,
                decision,
                stored.as_deref(),
                (&stored_slices, &request.pods),
                max_addresses,
                slices_on,
            )
            .await;
        // Rollback judges the guest by every call that gave no usable decision: traps and
        // timeouts, and also errors it returned and decisions validation refused.
        self.health.record(guest.digest(), admitted.is_err());
        let result = admitted
            .as_ref()
            .map_or_else(SyncError::call_result_label, |_| "ok");
        self.metrics
            .guest_calls
            .get_or_create(&ResultLabel { result })
            .inc();
        let admitted = admitted?;
        if let Some(shadow) = &self.shadow {
            shadow.offer(Job {
                key: key.to_string(),
                uid: uid.clone(),
                request: request.clone(),
                action: admitted.action.clone(),
                plan: admitted.plan.clone(),
                stored: stored.clone(),
                stored_slices: stored_slices.clone(),
                max_addresses,
            });
        }
        // The two outputs are written at once, as upstream's two controllers write them: a
        // sync waits for the longer of the two, not their sum, and each write still checks the
        // epoch. Neither output reads the other, so a failure of one does not void the other's
        // writes (upstream retries each output on its own); the key is retried either way.
        let (endpoints_output, slices_output) = (self.endpoints_output(), self.slices_output());
        let (endpoints, slices) = tokio::join!(
            endpoints_output.write(key, target, admitted.action, epoch),
            slices_output.write(key, target, admitted.plan, deleting, epoch),
        );
        if let Ok(writes @ 1..) = slices {
            tracing::info!(%key, writes, "endpoint slices written");
        }
        let outcome = endpoints?;
        slices?;
        if slices_on {
            self.report(key, target, &admitted.events, &admitted.errors)
                .await?;
        }
        Ok(outcome)
    }

    /// Records the Events the guest asked for, and fails the sync (after its writes) when the
    /// guest reported errors, so the key is retried.
    async fn report(
        &self,
        key: &str,
        target: Target<'_>,
        events: &[model::ServiceEvent],
        errors: &[String],
    ) -> Result<(), SyncError> {
        let Target {
            namespace,
            name,
            uid,
        } = target;
        for event in events {
            self.events
                .record(
                    namespace,
                    name,
                    uid,
                    event.warning,
                    &event.reason,
                    &event.message,
                )
                .await;
        }
        if errors.is_empty() {
            return Ok(());
        }
        let errors = errors.join("; ");
        let message = format!("Error updating Endpoint Slices for Service {key}: {errors}");
        self.events
            .warn(namespace, name, uid, FAILED_TO_UPDATE, &message)
            .await;
        Err(SyncError::Decision(errors))
    }

    /// What a sync of `key` starts from (see [`Reader::prepare`]), with the active guest's
    /// configuration.
    pub fn prepare(&self, key: &str) -> Result<Prepared, SyncError> {
        self.reader().prepare(key, self.guest.config())
    }

    fn reader(&self) -> Reader<'_> {
        Reader {
            cache: &self.cache,
            outputs: self.outputs,
            trigger_times: &self.trigger_times,
            ledger: &self.ledger,
            stale_slice_syncs: &self.slice_stats.stale,
        }
    }

    fn sink(&self) -> Sink<'_> {
        Sink {
            consistency: &self.consistency,
            writer: &self.writer,
            events: &self.events,
        }
    }

    fn endpoints_output(&self) -> EndpointsOutput<'_> {
        EndpointsOutput {
            sink: self.sink(),
            stale: &self.ledger.endpoints,
            trigger_times: &self.trigger_times,
            deletes: &self.ledger.deletes,
            metrics: &self.metrics,
        }
    }

    fn slices_output(&self) -> SlicesOutput<'_> {
        SlicesOutput {
            sink: self.sink(),
            tracker: &self.ledger.slices,
            stats: &self.slice_stats,
        }
    }
}

#[cfg(test)]
mod tests;
