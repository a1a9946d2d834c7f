//! The JSON form of a case's outcome, as `weir reconcile` prints it.

use serde_json::{Value, json};

use super::run::Outcome;

/// The JSON `weir reconcile` prints: `{"action": ..., "endpoints": <Endpoints> | null,
/// "endpointSlices": {"create": [...], "update": [...], "delete": ["name", ...]} | null,
/// "errors": [...], "events": [...]}`. `endpointSlices` is null for a 0.1.0 guest, which
/// cannot compute them.
pub fn outcome_json(outcome: &Outcome) -> Value {
    let slices = &outcome.slices;
    json!({
        "action": outcome.action.name(),
        "endpoints": outcome.action.endpoints(),
        "endpointSlices": outcome.world.has_slices().then(|| json!({
            "create": slices.create,
            "update": slices.update,
            "delete": slices.delete,
        })),
        "errors": outcome.errors,
        "events": outcome.events,
    })
}
