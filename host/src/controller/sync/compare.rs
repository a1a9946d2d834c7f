//! The shadow comparison: the shadow guest's decision admitted as the live one was, and
//! compared with it in a form where order does not matter. Writes nothing.

use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::super::Outputs;
use super::super::shadow::Job;
use super::admit::{self, Target};
use crate::metrics::{Metrics, ResultLabel};
use crate::reconcile::validate::Action;
use crate::reconcile::validate_slices::SlicePlan;
use crate::runtime::CallError;
use crate::model;

/// Whether two actions write the same thing (same action, same content in any order).
pub fn same_action(a: &Action, b: &Action) -> bool {
    a.name() == b.name()
        && match (a.endpoints(), b.endpoints()) {
            (Some(x), Some(y)) => {
                crate::cases::comparable(x, true) == crate::cases::comparable(y, true)
            }
            _ => true,
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
            let slices_differ = comparable_plan(active_plan) != comparable_plan(&shadow_plan);
            if same_action(active, &shadow) && !slices_differ {
                count("same");
            } else {
                count("different");
                let render = |a: &Action, p: &SlicePlan| {
                    let mut v =
                        serde_json::to_value(crate::cases::decision_json(a)).unwrap_or_default();
                    v["endpointSlices"] = serde_json::json!(comparable_plan(p));
                    v
                };
                tracing::debug!(
                    %key,
                    active = active.name(),
                    shadow = shadow.name(),
                    "shadow decision differs:\n{}",
                    crate::cases::diff(&render(active, active_plan), &render(&shadow, &shadow_plan))
                );
            }
        }
    }
}
