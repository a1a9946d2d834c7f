//! The EndpointSlice half of a sync: the stale-cache guard before the guest call, and the
//! writes after its decision passed validation (rules R1.26, R4.22 and
//! R6 of `docs/upstream-endpointslices.md`).

use std::sync::Arc;

use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::consistency::Epoch;
use super::slice_tracker::{is_managed, service_key};
use super::sync::{SyncError, Syncer};
use super::writer::{SliceWrite, is_namespace_terminating};
use crate::metrics::Metrics;
use crate::reconcile::request::SliceInputs;
use crate::reconcile::validate_slices::{Refusal, SliceContext, SlicePlan, SliceViolation};
use crate::reconcile::view_slices::NodeZones;
use crate::runtime::bindings_v0_2 as v2;
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
    /// Guests made active that cannot render the EndpointSlices `--manage` asks for.
    pub unsupported_guests: Counter,
    /// Digest of the last guest reported as unable to render slices (reported once).
    noted_digest: Arc<std::sync::Mutex<Option<String>>>,
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
            unsupported_guests: metrics.guest_slices_unsupported.clone(),
            noted_digest: Arc::default(),
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
            self.slice_tracker.wait_for_cache(key);
            return Err(SyncError::StaleSlices(key.to_string()));
        }
        self.slice_tracker.stop_waiting(key);
        Ok(())
    }

    /// The Services of a slice event (its Service before and after) whose last sync failed as
    /// stale and whose cached slices are now fresh: queued at once, so a stale cache costs the
    /// watch delay, not the retry backoff. Upstream waits for the retry (R1.26); under churn
    /// that backoff and the shared retry bucket held slice writes for tens of seconds.
    pub fn slices_caught_up(
        &self,
        old: Option<&EndpointSlice>,
        new: Option<&EndpointSlice>,
    ) -> Vec<String> {
        let mut keys: Vec<String> = old.into_iter().chain(new).filter_map(service_key).collect();
        keys.dedup();
        keys.retain(|key| {
            self.slice_tracker.waiting_for(key)
                && !self
                    .slice_tracker
                    .is_stale(key, considered(&self.cache.slices.for_service(key)))
                && self.slice_tracker.stop_waiting(key)
        });
        keys
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
    /// Every write first checks that the caches the plan came from are still the current
    /// epoch's.
    pub async fn write_slices(
        &self,
        key: &str,
        (namespace, name, uid): (&str, &str, &str),
        plan: SlicePlan,
        service_deleting: bool,
        epoch: Epoch,
    ) -> Result<usize, SyncError> {
        let mut written = 0;
        let result = self
            .write_slices_in_order(
                key,
                namespace,
                plan,
                (service_deleting, epoch),
                &mut written,
            )
            .await;
        if let Err(e) = &result
            && !matches!(e, SyncError::Inconsistent(_))
        {
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
            self.consistency.check(epoch)?;
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
            self.consistency.check(epoch)?;
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
            self.consistency.check(epoch)?;
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

/// A slice plan in a form where order does not matter, to compare two guests' decisions.
pub fn comparable_plan(plan: &SlicePlan) -> Vec<String> {
    let canonical = |verb: &str, s: &EndpointSlice| {
        let mut v = serde_json::to_value(s).unwrap_or_default();
        for list in ["endpoints", "ports"] {
            if let Some(items) = v.get_mut(list).and_then(|l| l.as_array_mut()) {
                items.sort_by_key(|i| i.to_string());
            }
        }
        if let Some(meta) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            meta.remove("resourceVersion");
        }
        format!("{verb} {v}")
    };
    let mut out: Vec<String> = plan
        .create
        .iter()
        .map(|s| canonical("create", s))
        .chain(plan.update.iter().map(|s| canonical("update", s)))
        .chain(plan.delete.iter().map(|d| format!("delete {}", d.name)))
        .collect();
    out.sort();
    out
}

impl Syncer {
    /// The 0.2.0 request of a sync: the Endpoints request plus what slices need (stored
    /// slices, Node facts of each pod, zone capacities, limits and outputs). With the slice
    /// path off it carries no slices and asks for Endpoints only.
    pub fn request_v0_2(
        &self,
        request: crate::runtime::bindings::Request,
        stored: &[Arc<EndpointSlice>],
        slices_on: bool,
    ) -> v2::Request {
        let nodes: NodeZones = if slices_on {
            request
                .pods
                .iter()
                .filter(|p| !p.node_name.is_empty())
                .filter_map(|p| {
                    Some((
                        p.node_name.clone(),
                        self.cache.nodes.get(&p.node_name)?.zone,
                    ))
                })
                .collect()
        } else {
            NodeZones::new()
        };
        let zone_capacities = slices_on
            .then(|| self.cache.nodes.zone_capacities())
            .flatten()
            .map(|zones| {
                zones
                    .into_iter()
                    .map(|(zone, cpu_millis)| v2::ZoneCapacity { zone, cpu_millis })
                    .collect()
            });
        let cached = self.cache.service(&request.namespace, &request.name);
        crate::reconcile::request::build(
            request,
            SliceInputs {
                traffic_distribution: cached.as_ref().and_then(|c| c.traffic_distribution.clone()),
                deleting: cached.is_some_and(|c| c.deleting),
                nodes: Some(&nodes),
                slices: stored.iter().map(Arc::as_ref).collect(),
                max_endpoints_per_slice: u32::try_from(self.outputs.max_endpoints_per_slice)
                    .unwrap_or(u32::MAX),
                zone_capacities,
                manage: v2::Outputs {
                    endpoints: self.outputs.endpoints,
                    endpoint_slices: slices_on,
                },
            },
        )
    }

    /// Validates the slice part of a decision against the stored slices and the request's
    /// pods, which the decision's endpoints may name.
    pub fn plan_slices(
        &self,
        namespace: &str,
        name: &str,
        service_uid: &str,
        (stored, pods): (&[Arc<EndpointSlice>], &[v2::Pod]),
        changes: v2::SliceChanges,
    ) -> Result<SlicePlan, SliceViolation> {
        let stored: Vec<&EndpointSlice> = stored.iter().map(Arc::as_ref).collect();
        let ctx = SliceContext {
            namespace,
            name,
            service_uid: (!service_uid.is_empty()).then_some(service_uid),
            stored: &stored,
            max_endpoints_per_slice: self.outputs.max_endpoints_per_slice,
            pods,
        };
        crate::reconcile::validate_slices::plan(&ctx, changes)
    }

    /// Says once per guest, in the log and a counter, that the active guest cannot render
    /// the EndpointSlices `--manage` asked for.
    pub fn note_no_slices(&self, guest: &crate::runtime::Guest) {
        let mut noted = self
            .slice_stats
            .noted_digest
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if noted.as_deref() != Some(guest.digest()) {
            *noted = Some(guest.digest().to_string());
            self.slice_stats.unsupported_guests.inc();
            tracing::warn!(
                digest = guest.digest(),
                world = %guest.world(),
                "--manage asks for EndpointSlices, but the guest targets weir:endpoints@0.1.0 and renders Endpoints only; EndpointSlices are left as they are until a 0.2.0 guest is active"
            );
        }
    }
}
