//! The EndpointSlice half of a sync: the stale-cache guard before the guest call, and the
//! writes after its decision passed validation (upstream rules R1.26, R4.22, R6).

use std::sync::Arc;

use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::slice_tracker::is_managed;
use super::sync::{SyncError, Syncer};
use super::writer::{SliceWrite, is_namespace_terminating};
use crate::metrics::Metrics;
use crate::reconcile::slices::{Refusal, SlicePlan, SliceViolation};
use prometheus_client::metrics::counter::Counter;

/// Event reason for a slice write that failed (upstream's).
pub const FAILED_TO_UPDATE: &str = "FailedToUpdateEndpointSlices";
/// Event reason for a guest decision weir refused to write.
pub const REFUSED: &str = "RefusedEndpointSliceDecision";

/// Counters of the slice path: handles of [`Metrics`]' `weir_endpointslice_*` families.
#[derive(Debug, Clone, Default)]
pub struct SliceStats {
    /// Slices created.
    pub creates: Counter,
    /// Slices updated.
    pub updates: Counter,
    /// Slices deleted.
    pub deletes: Counter,
    /// Syncs refused because the slice cache predates weir's own writes.
    pub stale: Counter,
    /// Guest slice decisions refused, per [`Refusal`] (in [`Refusal::ALL`] order).
    pub refused: [Counter; Refusal::ALL.len()],
}

impl SliceStats {
    /// The handles registered in `metrics`.
    pub fn registered(metrics: &Metrics) -> Self {
        let change = |operation| metrics.slice_change(operation);
        SliceStats {
            creates: change("create"),
            updates: change("update"),
            deletes: change("delete"),
            stale: metrics.slice_stale_syncs.clone(),
            refused: Refusal::ALL.map(|r| metrics.slice_refusal(r.as_str())),
        }
    }

    /// Refusals counted for `reason`.
    pub fn refused(&self, reason: Refusal) -> u64 {
        let i = Refusal::ALL.iter().position(|r| *r == reason).unwrap_or(0);
        self.refused[i].get()
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

impl Syncer {
    /// Fails the sync when the cached slices of `key` predate weir's own last writes.
    pub fn check_slices_fresh(
        &self,
        key: &str,
        stored: &[Arc<EndpointSlice>],
    ) -> Result<(), SyncError> {
        if self.slice_tracker.is_stale(key, considered(stored)) {
            self.slice_stats.stale.inc();
            return Err(SyncError::StaleSlices(key.to_string()));
        }
        Ok(())
    }

    /// Records a refused slice decision: a metric, an Event on the Service, the error.
    pub async fn refuse_slices(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        violation: SliceViolation,
    ) -> SyncError {
        let i = Refusal::ALL
            .iter()
            .position(|r| *r == violation.reason)
            .unwrap_or(0);
        self.slice_stats.refused[i].inc();
        self.events
            .warn(namespace, name, uid, REFUSED, &violation.to_string())
            .await;
        SyncError::InvalidSlices(violation)
    }

    /// Writes a validated plan: creates (none for a Service being deleted), then updates, then
    /// deletes, stopping at the first failure. Returns how many writes were made.
    pub async fn write_slices(
        &self,
        key: &str,
        namespace: &str,
        name: &str,
        uid: &str,
        plan: SlicePlan,
        service_deleting: bool,
    ) -> Result<usize, SyncError> {
        let mut written = 0;
        let result = self
            .write_slices_in_order(key, namespace, plan, service_deleting, &mut written)
            .await;
        if let Err(e) = &result {
            let message = format!("Error updating Endpoint Slices for Service {key}: {e}");
            self.events
                .warn(namespace, name, uid, FAILED_TO_UPDATE, &message)
                .await;
        }
        result.map(|()| written)
    }

    async fn write_slices_in_order(
        &self,
        key: &str,
        namespace: &str,
        plan: SlicePlan,
        service_deleting: bool,
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
            match self
                .writer
                .store_slice(key, SliceWrite::Create, &slice)
                .await
            {
                Ok(stored) => {
                    if let Some(stored) = stored {
                        self.slice_tracker.written(key, &stored);
                    }
                    self.slice_stats.creates.inc();
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
            let stored = self
                .writer
                .store_slice(key, SliceWrite::Update, &slice)
                .await
                .map_err(|e| error("update", e))?;
            if let Some(stored) = stored {
                self.slice_tracker.written(key, &stored);
            }
            self.slice_stats.updates.inc();
            *written += 1;
        }
        for delete in plan.delete {
            let deleted = self
                .writer
                .delete_slice(key, namespace, &delete.name, &delete.uid)
                .await
                .map_err(|e| error("delete", e))?;
            if deleted {
                self.slice_tracker.deleted(key, &delete.uid);
            }
            self.slice_stats.deletes.inc();
            *written += 1;
        }
        Ok(())
    }
}
