//! Comparing with the stored Endpoints and building the object to write (spec §11, §12, and
//! weir's deviations D1 and D2 in §18).

use crate::context::Context;
use crate::steps::capacity::Capped;
use crate::steps::pack::{count, port_key};
use crate::types::{
    EndpointAddress, EndpointSubset, Endpoints, EndpointsDecision, KeyValue, Service,
};
use crate::well_known::{
    CLUSTER_IP_NONE, CONTROLLER_NAME, HEADLESS_LABEL, LAST_CHANGE_TRIGGER_TIME_ANNOTATION,
    MANAGED_BY_LABEL, MAX_CAPACITY, OVER_CAPACITY_ANNOTATION, TRUNCATED,
};

/// The value of `key` in a label or annotation list.
pub fn get<'a>(map: &'a [KeyValue], key: &str) -> Option<&'a str> {
    map.iter()
        .find(|kv| kv.key == key)
        .map(|kv| kv.value.as_str())
}

/// Sets `key` to `value`, or removes it when `value` is `None`; other entries keep their order.
pub fn set(map: &mut Vec<KeyValue>, key: &str, value: Option<&str>) {
    match (map.iter().position(|kv| kv.key == key), value) {
        (Some(i), Some(v)) => map[i].value = v.to_string(),
        (Some(i), None) => {
            map.remove(i);
        }
        (None, Some(v)) => map.push(KeyValue {
            key: key.to_string(),
            value: v.to_string(),
        }),
        (None, None) => {}
    }
}

/// Whether the Service has no cluster IP (`None` or empty; upstream `IsServiceIPSet` false).
pub fn is_headless(service: &Service) -> bool {
    service.cluster_ip.is_empty() || service.cluster_ip == CLUSTER_IP_NONE
}

/// The labels the controller writes: the Service's, plus the headless label when it has no
/// cluster IP, plus the managed-by label (spec §12.2). Sorted by key.
pub fn desired_labels(service: &Service) -> Vec<KeyValue> {
    let mut labels: Vec<KeyValue> = service.labels.clone();
    set(
        &mut labels,
        HEADLESS_LABEL,
        is_headless(service).then_some(""),
    );
    set(&mut labels, MANAGED_BY_LABEL, Some(CONTROLLER_NAME));
    labels.sort_by(|a, b| a.key.cmp(&b.key));
    labels
}

/// Whether stored labels are right (spec §11.3): managed-by is the controller, and apart from
/// managed-by and the headless label (ignored both ways) they equal the Service's labels.
pub fn labels_correct(stored: &[KeyValue], service: &Service) -> bool {
    let relevant = |kv: &&KeyValue| kv.key != MANAGED_BY_LABEL && kv.key != HEADLESS_LABEL;
    get(stored, MANAGED_BY_LABEL) == Some(CONTROLLER_NAME)
        && stored
            .iter()
            .filter(relevant)
            .all(|kv| get(&service.labels, &kv.key) == Some(&kv.value))
        && service
            .labels
            .iter()
            .filter(relevant)
            .all(|kv| get(stored, &kv.key) == Some(&kv.value))
}

// Borrowed, sortable forms of the subsets: comparing them copies no string.
type AddressForm<'a> = (&'a str, &'a str, Option<&'a str>, Option<[&'a str; 6]>);
type PortForm<'a> = (&'a str, i32, &'a str, Option<&'a str>);
type SubsetForm<'a> = (
    Vec<AddressForm<'a>>,
    Vec<AddressForm<'a>>,
    Vec<PortForm<'a>>,
);

fn address_form(a: &EndpointAddress) -> AddressForm<'_> {
    let target = a.target_ref.as_ref().map(|r| {
        [
            r.kind.as_str(),
            &r.namespace,
            &r.name,
            &r.uid,
            &r.api_version,
            &r.field_path,
        ]
    });
    (&a.ip, &a.hostname, a.node_name.as_deref(), target)
}

fn subsets_form(subsets: &[EndpointSubset]) -> Vec<SubsetForm<'_>> {
    fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
        v.sort_unstable();
        v
    }
    sorted(
        subsets
            .iter()
            .map(|s| {
                (
                    sorted(s.addresses.iter().map(address_form).collect()),
                    sorted(s.not_ready_addresses.iter().map(address_form).collect()),
                    sorted(s.ports.iter().map(port_key).collect()),
                )
            })
            .collect(),
    )
}

/// Whether two subset lists hold the same content: every field counts, order does not (D1).
/// `targetRef.resourceVersion` is not part of the contract, so it never counts (spec §11.2).
pub fn subsets_equal(a: &[EndpointSubset], b: &[EndpointSubset]) -> bool {
    a.len() == b.len() && subsets_form(a) == subsets_form(b)
}

/// Whether the stored over-capacity annotation matches the desired state: `truncated` when
/// truncating (D2), absent otherwise with the stored object within capacity (spec §11.3).
pub fn capacity_correct(stored: &Endpoints, truncated: bool) -> bool {
    let annotation = get(&stored.annotations, OVER_CAPACITY_ANNOTATION);
    if truncated {
        annotation == Some(TRUNCATED)
    } else {
        let (ready, not_ready) = count(&stored.subsets);
        annotation.is_none() && ready + not_ready <= MAX_CAPACITY
    }
}

/// Upstream's decision: nothing when the stored object is already right (spec §11.4, D1, D2),
/// else create or update with the object built as in spec §12.
pub fn decide(ctx: &Context<'_>, desired: Capped) -> EndpointsDecision {
    let service = ctx.service;
    let current = ctx
        .request
        .current
        .as_ref()
        .filter(|c| !c.resource_version.is_empty());
    if let Some(stored) = current
        && subsets_equal(&stored.subsets, &desired.subsets)
        && labels_correct(&stored.labels, service)
        && capacity_correct(stored, desired.truncated)
    {
        return EndpointsDecision::None;
    }
    // Unrelated annotations of the stored object survive (spec §12.1, §12.3).
    let mut annotations = current.map(|c| c.annotations.clone()).unwrap_or_default();
    set(
        &mut annotations,
        LAST_CHANGE_TRIGGER_TIME_ANNOTATION,
        ctx.request.trigger_time.as_deref(),
    );
    set(
        &mut annotations,
        OVER_CAPACITY_ANNOTATION,
        desired.truncated.then_some(TRUNCATED),
    );
    let endpoints = Endpoints {
        namespace: service.namespace.clone(),
        name: service.name.clone(),
        labels: desired_labels(service),
        annotations,
        resource_version: current
            .map(|c| c.resource_version.clone())
            .unwrap_or_default(),
        subsets: desired.subsets,
    };
    if current.is_some() {
        EndpointsDecision::Update(endpoints)
    } else {
        EndpointsDecision::Create(endpoints)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::fixtures::{kv, service};

    #[test]
    fn labels_ignore_headless_and_need_managed_by() {
        let mut s = service();
        s.labels = vec![kv("app", "web")];
        let good = vec![
            kv("app", "web"),
            kv(MANAGED_BY_LABEL, CONTROLLER_NAME),
            kv(HEADLESS_LABEL, ""),
        ];
        assert!(labels_correct(&good, &s));
        assert!(!labels_correct(&[kv("app", "web")], &s));
        assert!(!labels_correct(
            &[
                kv("app", "web"),
                kv(MANAGED_BY_LABEL, CONTROLLER_NAME),
                kv("x", "y")
            ],
            &s
        ));
        assert!(!labels_correct(
            &[kv(MANAGED_BY_LABEL, CONTROLLER_NAME)],
            &s
        ));
    }

    #[test]
    fn desired_labels_mark_headless_and_override_managed_by() {
        let mut s = service();
        s.labels = vec![kv(MANAGED_BY_LABEL, "someone"), kv(HEADLESS_LABEL, "")];
        s.cluster_ip = "10.0.0.1".into();
        assert_eq!(
            desired_labels(&s),
            vec![kv(MANAGED_BY_LABEL, CONTROLLER_NAME)]
        );
        s.cluster_ip = String::new();
        assert_eq!(
            desired_labels(&s),
            vec![
                kv(MANAGED_BY_LABEL, CONTROLLER_NAME),
                kv(HEADLESS_LABEL, "")
            ]
        );
    }
}
