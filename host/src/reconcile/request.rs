//! The 0.2.0 request of one reconcile, assembled in one place for the controller (from its
//! caches) and the case runner (from a case file), so that both ask a guest the same question.
//!
//! The callers differ only in where the pieces come from: which pods a Service selects, the
//! trigger time (the controller remembers it across syncs, a case starts afresh) and the Node
//! facts. Everything else, including the conversion of each view, happens here.
//!
//! Rule numbers R1–R10 and scenarios S01–S98 are those of `docs/upstream-endpointslices.md`.

use k8s_openapi::api::discovery::v1 as discovery;

use super::view_slices::{NodeZones, RequestPods, slice};
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
    /// The stored slices of the Service, of every manager; sent only when `manage` has
    /// the slices.
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
    let pods: Vec<wit::Pod> = pods
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
    // Stored slices are the guest's to compare only when the host writes slices; the
    // Endpoints-only request stays as small as 0.1.0's.
    let endpoint_slices = if inputs.manage.endpoint_slices && !inputs.slices.is_empty() {
        let by_name = RequestPods::new(&pods);
        inputs
            .slices
            .iter()
            .map(|s| slice(s, &namespace, &by_name))
            .collect()
    } else {
        Vec::new()
    };
    wit::Request {
        endpoint_slices,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn build_managing(endpoint_slices: bool, stored: &discovery::EndpointSlice) -> wit::Request {
        let parts = v1::Request {
            namespace: "ns".into(),
            name: "web".into(),
            service: None,
            pods: Vec::new(),
            current: None,
            trigger_time: None,
            config: String::new(),
        };
        build(
            parts,
            SliceInputs {
                traffic_distribution: None,
                deleting: false,
                nodes: None,
                slices: vec![stored],
                max_endpoints_per_slice: 100,
                zone_capacities: None,
                manage: wit::Outputs {
                    endpoints: true,
                    endpoint_slices,
                },
            },
        )
    }

    #[test]
    fn stored_slices_are_sent_only_when_the_host_manages_slices() {
        let stored: discovery::EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web-abc", "namespace": "ns",
                "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"]}]
        }))
        .unwrap();
        let sent = build_managing(true, &stored).endpoint_slices;
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].name, "web-abc");
        assert!(build_managing(false, &stored).endpoint_slices.is_empty());
    }
}
