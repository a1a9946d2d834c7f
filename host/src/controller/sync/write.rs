//! The last stage of a sync: write an admitted decision's Endpoints and EndpointSlices
//! (spec §5.10–5.13; R4.22, R6). Every write first checks that the caches the
//! decision came from are still the current epoch's.

use crate::controller::ledger::StaleTracker;
use crate::controller::ledger::owed::OwedDeletes;
use crate::controller::ledger::slices::SliceTracker;
use crate::controller::sync::error::{SyncError, SyncOutcome};
use crate::controller::sync::slice_stats::{FAILED_TO_UPDATE, SliceStats};
use crate::controller::watch::consistency::{Epoch, ResetGate};
use crate::controller::writer::{
    EventRecorder, SliceWrite, Writer, Written, is_namespace_terminating,
};
use crate::metrics::{Metrics, WriteLabels};
use crate::reconcile::admit::Target;
use crate::reconcile::trigger_time::TriggerTimeTracker;
use crate::reconcile::validate::Action;
use crate::reconcile::validate_slices::SlicePlan;

/// Where both outputs' writes go: each checks the epoch first, and a failure is reported as
/// an Event.
#[derive(Clone, Copy)]
pub struct Sink<'a> {
    /// The epoch every write checks.
    pub consistency: &'a ResetGate,
    /// Where writes go.
    pub writer: &'a Writer,
    /// Failure events.
    pub events: &'a EventRecorder,
}

/// What writing Endpoints touches.
pub struct EndpointsOutput<'a> {
    /// Where the write goes.
    pub sink: Sink<'a>,
    /// Learns the resourceVersions weir writes.
    pub stale: &'a StaleTracker,
    /// Forgets a deleted key's trigger time.
    pub trigger_times: &'a TriggerTimeTracker,
    /// Settles a done delete; knows keys whose Endpoints vanished.
    pub deletes: &'a OwedDeletes,
    /// Counts writes.
    pub metrics: &'a Metrics,
}

impl EndpointsOutput<'_> {
    /// Writes the Endpoints decision, then logs and counts it (`weir_endpoints_writes`).
    pub async fn write(
        &self,
        key: &str,
        target: Target<'_>,
        action: Action,
        epoch: Epoch,
    ) -> Result<SyncOutcome, SyncError> {
        let outcome = self.store(key, target, action, epoch).await?;
        if let SyncOutcome::Written(action) = outcome {
            let result = match self.sink.writer {
                Writer::DryRun => "dry_run",
                Writer::Api(..) => "success",
            };
            self.metrics
                .writes
                .get_or_create(&WriteLabels { action, result })
                .inc();
            tracing::info!(%key, action, "endpoints written");
        }
        Ok(outcome)
    }

    async fn store(
        &self,
        key: &str,
        Target {
            namespace,
            name,
            uid,
        }: Target<'_>,
        action: Action,
        epoch: Epoch,
    ) -> Result<SyncOutcome, SyncError> {
        if !matches!(action, Action::None) {
            self.sink.consistency.check(epoch)?;
        }
        let write_error = |action: &'static str, source| SyncError::Write {
            action,
            key: key.to_string(),
            source,
        };
        match action {
            Action::None => Ok(SyncOutcome::Unchanged),
            Action::Delete => {
                let written = self
                    .sink
                    .writer
                    .delete(key, namespace, name)
                    .await
                    .map_err(|e| write_error("delete", e))?;
                self.trigger_times.forget(key);
                self.stale.forget(key);
                self.deletes.settled(key);
                // Already gone (our own delete coming back as an event): not a second write.
                Ok(match written {
                    Written::NotFound => SyncOutcome::Unchanged,
                    _ => SyncOutcome::Written("delete"),
                })
            }
            // F6: the Endpoints vanished while the Service was cached. kube-apiserver deletes
            // a deleted Service's Endpoints itself, so the cache may still hold a Service the
            // server no longer has; creating its Endpoints again would be a write, and then a
            // delete, that nobody asked for.
            Action::Create(_)
                if self.deletes.take_vanished(key)
                    && !self.sink.writer.service_exists(namespace, name, uid).await =>
            {
                tracing::debug!(%key, "the Service is gone; not creating its Endpoints again");
                Ok(SyncOutcome::Unchanged)
            }
            Action::Create(ep) => {
                // The write's own event may come before its response (see `ledger::held`).
                let held = self.stale.hold(key);
                let written = self.sink.writer.store(key, namespace, &ep, true).await;
                if let Ok(Written::Stored(stored)) = &written {
                    self.stale.wrote(key, stored.resource_version.clone());
                }
                drop(held);
                match written {
                    Ok(_) => Ok(SyncOutcome::Written("create")),
                    Err(e) if is_namespace_terminating(&e) => {
                        tracing::debug!(%key, "namespace is terminating; not creating endpoints");
                        Ok(SyncOutcome::NamespaceTerminating)
                    }
                    Err(e) => {
                        let message = format!("Failed to create endpoint for service {key}: {e}");
                        self.sink
                            .events
                            .warn(namespace, name, uid, "FailedToCreateEndpoint", &message)
                            .await;
                        Err(write_error("create", e))
                    }
                }
            }
            Action::Update(ep) => {
                let sent = ep.metadata.resource_version.clone().unwrap_or_default();
                let _held = self.stale.hold(key);
                match self.sink.writer.store(key, namespace, &ep, false).await {
                    Ok(Written::Stored(stored)) => {
                        if stored
                            .resource_version
                            .as_deref()
                            .is_some_and(|rv| rv != sent)
                        {
                            self.stale.superseded(key, sent);
                        }
                        self.stale.wrote(key, stored.resource_version);
                        Ok(SyncOutcome::Written("update"))
                    }
                    Ok(_) => Ok(SyncOutcome::Written("update")),
                    Err(e) => {
                        let message = format!("Failed to update endpoint {key}: {e}");
                        self.sink
                            .events
                            .warn(namespace, name, uid, "FailedToUpdateEndpoint", &message)
                            .await;
                        Err(write_error("update", e))
                    }
                }
            }
        }
    }
}

/// What writing EndpointSlices touches.
pub struct SlicesOutput<'a> {
    /// Where the writes go.
    pub sink: Sink<'a>,
    /// Learns the generations weir writes.
    pub tracker: &'a SliceTracker,
    /// Counts writes.
    pub stats: &'a SliceStats,
}

impl SlicesOutput<'_> {
    /// Writes a validated plan: creates (none for a Service being deleted), then updates, then
    /// deletes, stopping at the first failure. Returns how many writes were made.
    pub async fn write(
        &self,
        key: &str,
        target: Target<'_>,
        plan: SlicePlan,
        service_deleting: bool,
        epoch: Epoch,
    ) -> Result<usize, SyncError> {
        let mut written = 0;
        // The writes' own events may come before their responses (see `ledger::held`).
        let _held =
            (!plan.create.is_empty() || !plan.update.is_empty()).then(|| self.tracker.hold(key));
        let result = self
            .write_in_order(
                key,
                target.namespace,
                plan,
                (service_deleting, epoch),
                &mut written,
            )
            .await;
        if let Err(e) = &result
            && !matches!(e, SyncError::Inconsistent(_))
        {
            let message = format!("Error updating Endpoint Slices for Service {key}: {e}");
            self.sink
                .events
                .warn(
                    target.namespace,
                    target.name,
                    target.uid,
                    FAILED_TO_UPDATE,
                    &message,
                )
                .await;
        }
        result.map(|()| written)
    }

    async fn write_in_order(
        &self,
        key: &str,
        namespace: &str,
        plan: SlicePlan,
        (service_deleting, epoch): (bool, Epoch),
        written: &mut usize,
    ) -> Result<(), SyncError> {
        let error = |action: &'static str, source| SyncError::SliceWrite {
            action,
            key: key.to_string(),
            source,
        };
        // Creating slices for a Service the garbage collector is removing would race it.
        let creates = if service_deleting {
            Vec::new()
        } else {
            plan.create
        };
        for slice in creates {
            self.sink.consistency.check(epoch)?;
            match self
                .sink
                .writer
                .store_slice(key, SliceWrite::Create, &slice)
                .await
            {
                Ok(stored) => {
                    if let Some(stored) = stored {
                        self.tracker.written(key, &stored);
                    }
                    self.stats.creates.inc();
                    *written += 1;
                }
                Err(e) if is_namespace_terminating(&e) => {
                    tracing::debug!(%key, "namespace is terminating; not creating endpoint slices");
                    return Ok(());
                }
                Err(e) => return Err(error("create", e)),
            }
        }
        for slice in plan.update {
            self.sink.consistency.check(epoch)?;
            let stored = self
                .sink
                .writer
                .store_slice(key, SliceWrite::Update, &slice)
                .await
                .map_err(|e| error("update", e))?;
            if let Some(stored) = stored {
                self.tracker.written(key, &stored);
            }
            self.stats.updates.inc();
            *written += 1;
        }
        for delete in plan.delete {
            self.sink.consistency.check(epoch)?;
            let deleted = self
                .sink
                .writer
                .delete_slice(key, namespace, &delete.name, &delete.uid)
                .await
                .map_err(|e| error("delete", e))?;
            if deleted {
                self.tracker.deleted(key, &delete.uid);
            }
            self.stats.deletes.inc();
            *written += 1;
        }
        Ok(())
    }
}
