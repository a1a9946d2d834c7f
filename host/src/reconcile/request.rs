//! The 0.2.0 request of one reconcile, assembled in one place for the controller (from its
//! caches) and the case runner (from a case file), so that both ask a guest the same question.
//!
//! The callers differ only in where the pieces come from: which pods a Service selects, the
//! trigger time (the controller remembers it across syncs, a case starts afresh) and the Node
//! facts. Everything else, including the conversion of each view, happens here.
//!
//! Rule numbers R1–R10 and scenarios S01–S98 are those of `docs/upstream-endpointslices.md`.

use k8s_openapi::api::discovery::v1 as discovery;

use super::view_slices::{NodeZones, slice};
use crate::runtime::bindings as v1;
use crate::runtime::bindings_v0_2 as wit;
use crate::runtime::convert::Convert;

/// What the 0.2.0 request carries beyond the 0.1.0 one.
pub struct SliceInputs<'a> {
    /// The Service's `spec.trafficDistribution` (R5.2).
    pub traffic_distribution: Option<String>,
    /// Whether the Service has a deletionTimestamp (no creates then, R4.22a).
    pub deleting: bool,
    /// Known Nodes by name; `None` treats every named Node as existing, without a zone.
    pub nodes: Option<&'a NodeZones>,
    /// The stored slices of the Service, of every manager.
    pub slices: Vec<&'a discovery::EndpointSlice>,
    /// `--max-endpoints-per-slice`.
    pub max_endpoints_per_slice: u32,
    /// Allocatable CPU per zone, for topology-aware hints.
    pub zone_capacities: Option<Vec<wit::ZoneCapacity>>,
    /// The outputs the host manages.
    pub manage: wit::Outputs,
}

/// The 0.2.0 request: the 0.1.0-shaped `parts` (Service, selected pods, stored Endpoints,
/// trigger time, configuration), taken by value so that nothing is cloned, plus what only
/// the slices need. Each pod learns whether its Node exists and the Node's zone (R2.10,
/// R2.17).
pub fn build(parts: v1::Request, inputs: SliceInputs<'_>) -> wit::Request {
    let v1::Request {
        namespace,
        name,
        service,
        pods,
        current,
        trigger_time,
        config,
    } = parts;
    let service = service.map(|s| {
        let mut view: wit::Service = s.convert();
        view.traffic_distribution = inputs.traffic_distribution;
        view.deleting = inputs.deleting;
        view
    });
    let pods = pods
        .into_iter()
        .map(|p| {
            let mut view: wit::Pod = p.convert();
            let known = match inputs.nodes {
                Some(nodes) => nodes.get(&view.node_name).cloned(),
                None => (!view.node_name.is_empty()).then_some(None),
            };
            view.node_exists = known.is_some();
            view.zone = known.flatten();
            view
        })
        .collect();
    wit::Request {
        endpoint_slices: inputs.slices.iter().map(|s| slice(s, &namespace)).collect(),
        namespace,
        name,
        service,
        pods,
        current: current.map(Convert::convert),
        trigger_time,
        config,
        max_endpoints_per_slice: inputs.max_endpoints_per_slice,
        zone_capacities: inputs.zone_capacities,
        manage: inputs.manage,
    }
}
