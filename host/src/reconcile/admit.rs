//! Admission of a guest's decision: each output's part validated against the snapshot it was
//! decided on, before anything is written (spec §13; R10 of `docs/upstream-endpointslices.md`).
//! The live sync and the shadow comparison admit decisions alike through these functions.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;

use crate::model;
use crate::reconcile::canonical;
use crate::reconcile::validate::{Action, Violation, validate};
use crate::reconcile::validate_slices::{SliceContext, SlicePlan, SliceViolation};

/// The Service a decision is for.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// Its namespace.
    pub namespace: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Its uid; empty when the Service is gone.
    pub uid: &'a str,
}

/// The Endpoints part of a decision, checked against `stored` (the snapshot it was decided
/// on) and the address cap.
pub fn endpoints(
    target: Target<'_>,
    decision: model::EndpointsDecision,
    stored: Option<&Endpoints>,
    max_addresses: usize,
) -> Result<Action, Violation> {
    validate(
        target.namespace,
        target.name,
        decision,
        stored,
        max_addresses,
    )
}

/// The slice part of a decision, checked against the stored slices and the request's pods,
/// which the decision's endpoints may name.
pub fn slices(
    target: Target<'_>,
    max_endpoints_per_slice: usize,
    (stored, pods): (&[Arc<EndpointSlice>], &[model::Pod]),
    changes: model::SliceChanges,
) -> Result<SlicePlan, SliceViolation> {
    let stored: Vec<&EndpointSlice> = stored.iter().map(Arc::as_ref).collect();
    let ctx = SliceContext {
        namespace: target.namespace,
        name: target.name,
        service_uid: (!target.uid.is_empty()).then_some(target.uid),
        stored: &stored,
        max_endpoints_per_slice,
        pods,
    };
    let mut plan = crate::reconcile::validate_slices::plan(&ctx, changes)?;
    drop_unchanged_updates(&mut plan, &stored);
    Ok(plan)
}

/// Leaves out the updates that would change nothing (D15 of docs/upstream-behaviour.md §18):
/// upstream writes them, and the API server answers each without storing anything, but each is
/// a request, and a Service whose sync repeats one (a zoneless endpoint removing its hints, on
/// every Node change under D10) would send a stream of them.
fn drop_unchanged_updates(plan: &mut SlicePlan, stored: &[&EndpointSlice]) {
    plan.update.retain(|update| {
        let name = update.metadata.name.as_deref();
        let unchanged = stored
            .iter()
            .find(|s| s.metadata.name.as_deref() == name)
            .is_some_and(|old| canonical::slice_unchanged(update, old));
        if unchanged {
            tracing::debug!(
                slice = name.unwrap_or(""),
                "slice update changes nothing; not written"
            );
        }
        !unchanged
    });
}
