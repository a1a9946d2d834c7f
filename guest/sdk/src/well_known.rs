//! Well-known Kubernetes keys and limits the endpoint controller uses (spec §1).
//!
//! `spec §` numbers are those of `docs/upstream-behaviour.md`; R1–R10 and S01–S98 those of
//! `docs/upstream-endpointslices.md`.

/// Most addresses (ready and not ready together) one Endpoints object holds (spec §1.1).
pub const MAX_CAPACITY: usize = 1000;

/// Annotation set on an Endpoints object whose addresses were truncated (spec §1.3).
pub const OVER_CAPACITY_ANNOTATION: &str = "endpoints.kubernetes.io/over-capacity";

/// Value of [`OVER_CAPACITY_ANNOTATION`] written by the controller.
pub const TRUNCATED: &str = "truncated";

/// Annotation holding the time of the change that triggered the last write (spec §1.4).
pub const LAST_CHANGE_TRIGGER_TIME_ANNOTATION: &str =
    "endpoints.kubernetes.io/last-change-trigger-time";

/// Label marking the Endpoints of a headless Service (spec §1.5).
pub const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";

/// Label naming the controller that manages an Endpoints object (spec §1.6).
pub const MANAGED_BY_LABEL: &str = "endpoints.kubernetes.io/managed-by";

/// Value of [`MANAGED_BY_LABEL`]; weir manages Endpoints as the upstream controller does.
pub const CONTROLLER_NAME: &str = "endpoint-controller";

/// Annotation of leader-election Endpoints, which the start-up sweep leaves alone (spec §1.7).
pub const LEADER_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";

/// `spec.clusterIP` of a headless Service.
pub const CLUSTER_IP_NONE: &str = "None";

/// Label naming the Service an EndpointSlice belongs to (R1.2).
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// Label naming the controller that manages an EndpointSlice (R1.1).
pub const SLICE_MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";

/// Value of [`SLICE_MANAGED_BY_LABEL`] on the slices of upstream's EndpointSlice controller;
/// weir writes the same, so it adopts correct slices without a write (R1.1).
pub const SLICE_CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";

/// Most endpoints per EndpointSlice when the host does not say (KCM's default, R1.8).
pub const DEFAULT_MAX_ENDPOINTS_PER_SLICE: u32 = 100;

/// Service annotation selecting topology-aware hints (R1.5).
pub const TOPOLOGY_MODE_ANNOTATION: &str = "service.kubernetes.io/topology-mode";

/// Deprecated form of [`TOPOLOGY_MODE_ANNOTATION`]; wins when present (R5.1).
pub const TOPOLOGY_AWARE_HINTS_ANNOTATION: &str = "service.kubernetes.io/topology-aware-hints";

/// Node label holding its zone (R1.6).
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
