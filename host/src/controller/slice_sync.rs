//! The EndpointSlice half of a sync: the stale-cache guard before the guest call, and the
//! writes after its decision passed validation (upstream rules R1.26, R4.22, R6).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::slice_tracker::is_managed;
use super::sync::{SyncError, Syncer};
use super::writer::{SliceWrite, is_namespace_terminating};
use crate::reconcile::slices::{Refusal, SlicePlan, SliceViolation};

/// Event reason for a slice write that failed (upstream's).
pub const FAILED_TO_UPDATE: &str = "FailedToUpdateEndpointSlices";
/// Event reason for a guest decision weir refused to write.
pub const REFUSED: &str = "RefusedEndpointSliceDecision";

/// Counters of the slice path.
#[derive(Debug, Default)]
pub struct SliceStats {
    /// Slices created.
    pub creates: AtomicU64,
    /// Slices updated.
    pub updates: AtomicU64,
    /// Slices deleted.
    pub deletes: AtomicU64,
    /// Syncs refused because the slice cache predates weir's own writes.
    pub stale: AtomicU64,
    /// Guest slice decisions refused, per [`Refusal`] (in [`Refusal::ALL`] order).
    pub refused: [AtomicU64; Refusal::ALL.len()],
}

impl SliceStats {
    /// Refusals counted for `reason`.
    pub fn refused(&self, reason: Refusal) -> u64 {
        let i = Refusal::ALL.iter().position(|r| *r == reason).unwrap_or(0);
        self.refused[i].load(Relaxed)
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
            self.slice_stats.stale.fetch_add(1, Relaxed);
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
        self.slice_stats.refused[i].fetch_add(1, Relaxed);
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
                    self.slice_stats.creates.fetch_add(1, Relaxed);
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
            self.slice_stats.updates.fetch_add(1, Relaxed);
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
            self.slice_stats.deletes.fetch_add(1, Relaxed);
            *written += 1;
        }
        Ok(())
    }
}
