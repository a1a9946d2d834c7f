//! Which outputs weir writes, and how: read by the sync at every stage.

/// Which objects weir writes for each Service (`--manage`), from one guest decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outputs {
    /// core/v1 Endpoints.
    pub endpoints: bool,
    /// discovery.k8s.io/v1 EndpointSlices.
    pub endpoint_slices: bool,
    /// Most endpoints weir puts in one slice (kube-controller-manager's
    /// `--max-endpoints-per-slice`, 1..=1000).
    pub max_endpoints_per_slice: usize,
}

impl Default for Outputs {
    fn default() -> Self {
        Outputs {
            endpoints: true,
            endpoint_slices: true,
            max_endpoints_per_slice: 100,
        }
    }
}
