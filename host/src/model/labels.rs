//! The labels that tie an EndpointSlice to its Service and its manager, shared by the
//! controller (which slices are weir's) and slice validation (what a guest may write).

use k8s_openapi::api::discovery::v1::EndpointSlice;

/// `endpointslice.kubernetes.io/managed-by`.
pub const LABEL_MANAGED_BY: &str = weir_policy::well_known::SLICE_MANAGED_BY_LABEL;
/// The managed-by value of upstream's EndpointSlice controller, which weir writes too so it
/// adopts kube-controller-manager's slices (and they adopt weir's).
pub const MANAGED_BY: &str = weir_policy::well_known::SLICE_CONTROLLER_NAME;
/// `kubernetes.io/service-name`.
pub const LABEL_SERVICE_NAME: &str = weir_policy::well_known::SERVICE_NAME_LABEL;

/// The label `key` of a slice, if set.
pub fn label<'a>(slice: &'a EndpointSlice, key: &str) -> Option<&'a str> {
    slice
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

/// Whether weir (or kube-controller-manager's EndpointSlice controller) manages the slice.
pub fn is_managed(slice: &EndpointSlice) -> bool {
    label(slice, LABEL_MANAGED_BY) == Some(MANAGED_BY)
}

/// The Service key (`namespace/name`) a slice belongs to, from its service-name label; `None`
/// when the label is missing or empty.
pub fn service_key(slice: &EndpointSlice) -> Option<String> {
    let name = label(slice, LABEL_SERVICE_NAME).filter(|n| !n.is_empty())?;
    let namespace = slice.metadata.namespace.as_deref().unwrap_or("");
    Some(format!("{namespace}/{name}"))
}
