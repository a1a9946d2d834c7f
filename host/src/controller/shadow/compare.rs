//! The shadow comparison: the shadow guest's decision admitted as the live one was, and
//! compared with it in the canonical form ([`crate::reconcile::canonical`]). Writes nothing.

use crate::controller::outputs::Outputs;
use crate::controller::shadow::Job;
use crate::metrics::{Metrics, ResultLabel};
use crate::model;
use crate::reconcile::admit::{self, Target};
use crate::reconcile::canonical::{self, same_action, slice_plan};
use crate::reconcile::validate::Action;
use crate::reconcile::validate_slices::SlicePlan;
use crate::runtime::CallError;

/// Records how the shadow guest's decision compares with the live one of `job` (Endpoints
/// and slices) in `weir_shadow_decisions`, and logs the difference.
pub fn compare_shadow(
    outputs: Outputs,
    metrics: &Metrics,
    job: &Job,
    shadow: Result<model::Decision, CallError>,
) {
    let key = job.key.as_str();
    let target = Target {
        namespace: &job.request.namespace,
        name: &job.request.name,
        uid: &job.uid,
    };
    let (active, active_plan) = (&job.action, &job.plan);
    let count = |result| metrics.shadow.get_or_create(&ResultLabel { result }).inc();
    let shadow = shadow.map_err(|e| e.to_string()).and_then(|d| {
        let action = if outputs.endpoints {
            admit::endpoints(
                target,
                d.endpoints,
                job.stored.as_deref(),
                job.max_addresses,
            )
            .map_err(|e| e.to_string())?
        } else {
            Action::None
        };
        let plan = if active_plan.is_empty()
            && d.slices.create.is_empty()
            && d.slices.update.is_empty()
            && d.slices.delete.is_empty()
        {
            SlicePlan::default()
        } else {
            let stored = (job.stored_slices.as_slice(), job.request.pods.as_slice());
            admit::slices(target, outputs.max_endpoints_per_slice, stored, d.slices)
                .map_err(|e| e.to_string())?
        };
        Ok((action, plan))
    });
    match shadow {
        Err(error) => {
            count("failed");
            tracing::debug!(%key, %error, "shadow guest failed");
        }
        Ok((shadow, shadow_plan)) => {
            let slices_differ = slice_plan(active_plan) != slice_plan(&shadow_plan);
            if same_action(active, &shadow) && !slices_differ {
                count("same");
            } else {
                count("different");
                let render = |a: &Action, p: &SlicePlan| {
                    let mut v = canonical::decision(a);
                    v["endpointSlices"] = serde_json::json!(slice_plan(p));
                    v
                };
                tracing::debug!(
                    %key,
                    active = active.name(),
                    shadow = shadow.name(),
                    "shadow decision differs:\n{}",
                    canonical::diff(&render(active, active_plan), &render(&shadow, &shadow_plan))
                );
            }
        }
    }
}
