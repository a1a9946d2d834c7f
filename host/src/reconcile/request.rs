//! The request of one reconcile, assembled in one place for the controller (from its
//! caches) and the case runner (from a case file), so that both ask a guest the same question.
//!
//! The callers differ only in where the pieces come from: which pods a Service selects, the
//! trigger time (the controller remembers it across syncs, a case starts afresh) and the Node
//! facts. Everything else, including the conversion of each view, happens here.
//!
//! Rule numbers R1–R10 and scenarios S01–S98 are those of `docs/upstream-endpointslices.md`.

use k8s_openapi::api::discovery::v1 as discovery;

use super::view_slices::{NodeZones, RequestPods, slice};
use crate::model;

/// What the callers choose differently: the Service, the pods it selects, the stored
/// Endpoints, the trigger time and the configuration.
#[derive(Debug, Clone)]
pub struct Selected {
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub name: String,
    /// The Service; `None` when it is gone.
    pub service: Option<model::Service>,
    /// The pods its selector selects (none without a selector, or for ExternalName).
    pub pods: Vec<model::Pod>,
    /// The stored Endpoints.
    pub current: Option<model::Endpoints>,
    /// The last-change-trigger-time to write.
    pub trigger_time: Option<String>,
    /// The policy configuration.
    pub config: String,
}

/// What the request carries for the slices, and the outputs the host manages.
pub struct SliceInputs<'a> {
    /// Known Nodes by name; `None` treats every named Node as existing, without a zone.
    pub nodes: Option<&'a NodeZones>,
    /// The stored slices of the Service, of every manager; sent only when `manage` has
    /// the slices.
    pub slices: Vec<&'a discovery::EndpointSlice>,
    /// `--max-endpoints-per-slice`.
    pub max_endpoints_per_slice: u32,
    /// Allocatable CPU per zone, for topology-aware hints.
    pub zone_capacities: Option<Vec<model::ZoneCapacity>>,
    /// The outputs the host manages.
    pub manage: model::Outputs,
}

/// The request: the `parts`, taken by value so that nothing is cloned, plus what only the
/// slices need. Each pod learns whether its Node exists and the Node's zone (R2.10, R2.17).
pub fn build(parts: Selected, inputs: SliceInputs<'_>) -> model::Request {
    let Selected {
        namespace,
        name,
        service,
        pods,
        current,
        trigger_time,
        config,
    } = parts;
    let pods: Vec<model::Pod> = pods
        .into_iter()
        .map(|mut view| {
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
    // Endpoints-only request carries none.
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
    model::Request {
        endpoint_slices,
        namespace,
        name,
        service,
        pods,
        current,
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

    fn build_managing(endpoint_slices: bool, stored: &discovery::EndpointSlice) -> model::Request {
        let parts = Selected {
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
                nodes: None,
                slices: vec![stored],
                max_endpoints_per_slice: 100,
                zone_capacities: None,
                manage: model::Outputs {
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
