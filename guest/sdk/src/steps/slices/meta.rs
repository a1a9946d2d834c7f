//! Slice metadata: which slices are the controller's, their labels, owner and shape
//! (R1.30, R1.31, R2.1–R2.3, R4.15–R4.17, R4.23–R4.26).
//!
//! Rule numbers R1–R10 and scenarios S01–S98 are those of `docs/upstream-endpointslices.md`.

use crate::ip::{self, Family};
use crate::steps::decide::{get, is_headless};
use crate::types::{EndpointSlice, EndpointSlicePort, KeyValue, OwnerReference, Service};
use crate::well_known::{
    HEADLESS_LABEL, SERVICE_NAME_LABEL, SLICE_CONTROLLER_NAME, SLICE_MANAGED_BY_LABEL,
};

/// The labels a slice controller owns; never copied from the Service (R4.25).
const RESERVED: [&str; 3] = [SERVICE_NAME_LABEL, SLICE_MANAGED_BY_LABEL, HEADLESS_LABEL];

/// The `addressType` of a family.
pub fn address_type(family: Family) -> &'static str {
    match family {
        Family::V4 => "IPv4",
        Family::V6 => "IPv6",
    }
}

/// The address types the Service gets slices for, IPv4 first (R2.1, R2.2): one per
/// `ipFamilies` entry; without any, the family of a set cluster IP, or both for a headless
/// Service.
pub fn address_types(service: &Service) -> Vec<Family> {
    let mut families: Vec<Family> = Vec::with_capacity(2);
    for name in &service.ip_families {
        let family = match name.as_str() {
            "IPv4" => Family::V4,
            "IPv6" => Family::V6,
            _ => continue,
        };
        if !families.contains(&family) {
            families.push(family);
        }
    }
    if families.is_empty() {
        if is_headless(service) {
            families = vec![Family::V4, Family::V6];
        } else {
            // Upstream reads the text as IPv6 iff it parses as IPv6, else IPv4.
            let v6 = ip::canonical(&service.cluster_ip).is_some_and(|(_, f)| f == Family::V6);
            families.push(if v6 { Family::V6 } else { Family::V4 });
        }
    }
    families.sort_by_key(|f| *f == Family::V6);
    families
}

/// Whether a stored slice is one this controller looks at for `service` (R1.30, R1.25): same
/// namespace, the Service's name label, managed by the EndpointSlice controller, not being
/// deleted.
pub fn is_considered(slice: &EndpointSlice, service: &Service) -> bool {
    slice.namespace == service.namespace
        && !slice.deleting
        && get(&slice.labels, SERVICE_NAME_LABEL) == Some(service.name.as_str())
        && get(&slice.labels, SLICE_MANAGED_BY_LABEL) == Some(SLICE_CONTROLLER_NAME)
}

/// Whether the Service owns the slice: some ownerReference names its uid, kind `Service`
/// and apiVersion `v1` (R1.31).
pub fn is_owned(slice: &EndpointSlice, service: &Service) -> bool {
    slice
        .owner_references
        .iter()
        .any(|r| r.uid == service.uid && r.kind == "Service" && r.api_version == "v1")
}

/// The ownerReference every slice of the Service carries (R4.24).
pub fn owner_reference(service: &Service) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "Service".into(),
        name: service.name.clone(),
        uid: service.uid.clone(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The labels of the Service's slices (R4.25): the Service's own minus the reserved keys, the
/// headless label when it has no cluster IP, the Service name and the managed-by value.
/// Sorted by key.
pub fn desired_labels(service: &Service) -> Vec<KeyValue> {
    let mut labels: Vec<KeyValue> = service
        .labels
        .iter()
        .filter(|kv| !RESERVED.contains(&kv.key.as_str()))
        .cloned()
        .collect();
    let mut add = |key: &str, value: &str| {
        labels.push(KeyValue {
            key: key.into(),
            value: value.into(),
        })
    };
    if is_headless(service) {
        add(HEADLESS_LABEL, "");
    }
    add(SERVICE_NAME_LABEL, &service.name);
    add(SLICE_MANAGED_BY_LABEL, SLICE_CONTROLLER_NAME);
    labels.sort_by(|a, b| a.key.cmp(&b.key));
    labels
}

/// Whether a slice's labels need no write: apart from the reserved keys (ignored both ways)
/// they equal the Service's labels (R4.26).
pub fn reserved_free_labels_equal(slice: &[KeyValue], service: &[KeyValue]) -> bool {
    let free = |kv: &&KeyValue| !RESERVED.contains(&kv.key.as_str());
    slice
        .iter()
        .filter(free)
        .all(|kv| get(service, &kv.key) == Some(kv.value.as_str()))
        && service
            .iter()
            .filter(free)
            .all(|kv| get(slice, &kv.key) == Some(kv.value.as_str()))
}

/// A new, empty slice of the Service (R4.23): named by the API server from `<service>-`,
/// with its labels, ownerReference, address type and port list.
pub fn new_slice(
    service: &Service,
    family: Family,
    ports: Vec<EndpointSlicePort>,
) -> EndpointSlice {
    EndpointSlice {
        namespace: service.namespace.clone(),
        name: String::new(),
        generate_name: format!("{}-", service.name),
        labels: desired_labels(service),
        annotations: Vec::new(),
        owner_references: vec![owner_reference(service)],
        resource_version: String::new(),
        deleting: false,
        address_type: address_type(family).into(),
        endpoints: Vec::new(),
        ports: Some(ports),
    }
}

/// Whether a stored slice can stay as the placeholder (R4.17): same namespace, labels equal
/// where an absent key reads as empty, the same ownerReferences, same address type, and no
/// ports or endpoints.
pub fn placeholder_equal(stored: &EndpointSlice, placeholder: &EndpointSlice) -> bool {
    let covers = |a: &[KeyValue], b: &[KeyValue]| {
        a.iter().all(|kv| get(b, &kv.key).unwrap_or("") == kv.value)
    };
    stored.namespace == placeholder.namespace
        && covers(&stored.labels, &placeholder.labels)
        && covers(&placeholder.labels, &stored.labels)
        && stored.owner_references == placeholder.owner_references
        && stored.address_type == placeholder.address_type
        && stored.ports.as_ref().is_none_or(Vec::is_empty)
        && stored.endpoints.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{kv, service};

    #[test]
    fn address_types_follow_ip_families_then_cluster_ip() {
        let mut s = service();
        s.ip_families = vec!["IPv6".into(), "IPv4".into()];
        assert_eq!(address_types(&s), [Family::V4, Family::V6]);
        s.ip_families.clear();
        assert_eq!(address_types(&s), [Family::V4]);
        s.cluster_ip = "2000::1".into();
        assert_eq!(address_types(&s), [Family::V6]);
        s.cluster_ip = "None".into();
        assert_eq!(address_types(&s), [Family::V4, Family::V6]);
    }

    #[test]
    fn labels_drop_reserved_keys_and_add_the_controllers() {
        let mut s = service();
        s.labels = vec![kv("foo", "bar"), kv(SERVICE_NAME_LABEL, "bad")];
        let labels = desired_labels(&s);
        assert_eq!(
            labels,
            [
                kv(
                    "endpointslice.kubernetes.io/managed-by",
                    SLICE_CONTROLLER_NAME
                ),
                kv("foo", "bar"),
                kv(SERVICE_NAME_LABEL, "svc"),
            ]
        );
        assert!(reserved_free_labels_equal(&labels, &s.labels));
        assert!(!reserved_free_labels_equal(&[kv("x", "y")], &s.labels));
    }
}
