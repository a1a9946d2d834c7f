//! The third stage of a sync: admit the guest's decision ([`crate::reconcile::admit`]); a
//! refused slice part is counted and reported as an Event on the Service.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;

use crate::controller::sync::slice_stats::{REFUSED, SliceStats};
use crate::controller::sync::{SyncError, Syncer};
use crate::controller::writer::EventRecorder;
use crate::model;
use crate::reconcile::admit::{self, Target};
use crate::reconcile::validate::Action;
use crate::reconcile::validate_slices::{SlicePlan, SliceViolation};

/// An admitted decision: what to write, and what the guest reported.
pub(super) struct Admitted {
    pub(super) action: Action,
    pub(super) plan: SlicePlan,
    pub(super) events: Vec<model::ServiceEvent>,
    pub(super) errors: Vec<String>,
}

impl Syncer {
    /// Takes the decision apart and admits each output's part; a refused slice part is
    /// recorded as such (a counter and an Event).
    pub(super) async fn admit(
        &self,
        target: Target<'_>,
        decision: Result<model::Decision, crate::runtime::CallError>,
        stored: Option<&Endpoints>,
        stored_slices: (&[Arc<EndpointSlice>], &[model::Pod]),
        max_addresses: usize,
        slices_on: bool,
    ) -> Result<Admitted, SyncError> {
        // Taken apart, not cloned: each part goes where it is used.
        let model::Decision {
            endpoints,
            slices,
            errors,
            events,
        } = decision?;
        let action = if self.outputs.endpoints {
            admit::endpoints(target, endpoints, stored, max_addresses)?
        } else {
            Action::None
        };
        let plan = if slices_on {
            let max = self.outputs.max_endpoints_per_slice;
            match admit::slices(target, max, stored_slices, slices) {
                Ok(plan) => plan,
                Err(violation) => {
                    refuse_slices(&self.slice_stats, &self.events, target, &violation).await;
                    return Err(violation.into());
                }
            }
        } else {
            SlicePlan::default()
        };
        Ok(Admitted {
            action,
            plan,
            events,
            errors,
        })
    }
}

/// Records a refused slice decision: a counter and an Event on the Service.
async fn refuse_slices(
    stats: &SliceStats,
    events: &EventRecorder,
    target: Target<'_>,
    violation: &SliceViolation,
) {
    stats.refusal_counter(violation.reason).inc();
    events
        .warn(
            target.namespace,
            target.name,
            target.uid,
            REFUSED,
            &violation.to_string(),
        )
        .await;
}
