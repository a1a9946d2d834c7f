//! Comparing a case's `expect` with the outcome of its run: each part the expectation gives
//! is checked, in the canonical form of [`crate::reconcile::canonical`], and every
//! difference is told as readable text.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::format::{
    Case, Counts, EventType, Expect, ExpectedAction, ExpectedEvent, ExpectedSlice,
};
use super::run::Outcome;
use crate::reconcile::canonical::{self, diff};
use crate::reconcile::validate::Action;

/// Differences between a case's `expect` and its outcome, as readable text; empty when it
/// passes.
pub fn compare_outcome(case: &Case, expect: &Expect, outcome: &Outcome) -> Vec<String> {
    let mut problems = compare(expect, &outcome.action);
    let Some(want) = &expect.endpoint_slices else {
        return problems;
    };
    if !outcome.world.has_slices() {
        problems.push(format!(
            "endpointSlices: the guest implements {} (Endpoints only) and cannot compute the EndpointSlices this case expects",
            outcome.world.package()
        ));
        return problems;
    }
    let counts = [
        ("creates", want.creates, outcome.slices.create.len()),
        ("updates", want.updates, outcome.slices.update.len()),
        ("deletes", want.deletes, outcome.slices.delete.len()),
        ("errors", want.errors, outcome.errors.len()),
    ];
    for (what, want, got) in counts {
        if let Some(want) = want
            && want != got
        {
            problems.push(format!("endpointSlices.{what}: expected {want}, got {got}"));
        }
    }
    let after = case.slices_after(&outcome.slices);
    if let Some(expected) = &want.slices {
        problems.extend(compare_slices(expected, &after));
    }
    if let Some(expected) = &want.all_endpoints {
        problems.extend(compare_all_endpoints(expected, &after));
    }
    if let Some(expected) = &want.events {
        problems.extend(compare_events(expected, &outcome.events));
    }
    let (by_zone, cross) = hint_counts(&after);
    if let Some(expected) = &want.zone_hints
        && *expected != by_zone
    {
        problems.push(format!(
            "endpointSlices.zoneHints: expected {expected:?}, got {by_zone:?}"
        ));
    }
    if let Some(expected) = want.cross_zone_hints
        && expected != cross
    {
        problems.push(format!(
            "endpointSlices.crossZoneHints: expected {expected}, got {cross}"
        ));
    }
    problems
}

/// Differences between `expect` and the actual Endpoints action, as readable text; empty
/// when it passes.
pub fn compare(expect: &Expect, actual: &Action) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(action) = expect.action {
        let want = match action {
            ExpectedAction::None => "none",
            ExpectedAction::Create => "create",
            ExpectedAction::Update => "update",
            ExpectedAction::Delete => "delete",
        };
        if want != actual.name() {
            problems.push(format!("action: expected {want}, got {}", actual.name()));
        }
    }
    if let Some(expected) = &expect.endpoints {
        match actual.endpoints() {
            None => problems.push(format!(
                "endpoints: expected an object, got none (action {})",
                actual.name()
            )),
            Some(got) => {
                let with_namespace = expected.metadata.namespace.is_some();
                let want = canonical::endpoints(expected, with_namespace);
                let got = canonical::endpoints(got, with_namespace);
                if want != got {
                    problems.push(format!(
                        "endpoints differ (- expected, + actual):\n{}",
                        diff(&want, &got)
                    ));
                }
            }
        }
    }
    if let Some(want) = expect.counts {
        let got = actual.endpoints().map(counts).unwrap_or(Counts {
            ready: 0,
            not_ready: 0,
        });
        if want != got {
            problems.push(format!(
                "counts: expected ready {} / notReady {}, got ready {} / notReady {}",
                want.ready, want.not_ready, got.ready, got.not_ready
            ));
        }
    }
    problems
}

/// Ready and not-ready address counts of an Endpoints object.
pub fn counts(e: &core::Endpoints) -> Counts {
    let subsets = e.subsets.iter().flatten();
    Counts {
        ready: subsets
            .clone()
            .map(|s| s.addresses.as_ref().map_or(0, Vec::len))
            .sum(),
        not_ready: subsets
            .map(|s| s.not_ready_addresses.as_ref().map_or(0, Vec::len))
            .sum(),
    }
}

/// The comparable form of `s` restricted to what `e` checks: name, labels, annotations and
/// ownerReferences only when `e` gives them, hints only when `e.compareHints`, an endpoint's
/// `targetRef.resourceVersion` and `deprecatedTopology` only when `e.compareAllFields`, and only the
/// number of endpoints when `e.endpointCount` is given. `e = None` shows everything a diff
/// needs.
fn slice_form(s: &discovery::EndpointSlice, e: Option<&ExpectedSlice>) -> Value {
    let meta = &s.metadata;
    let mut endpoints = s.endpoints.clone().unwrap_or_default();
    if e.is_some_and(|e| !e.compare_hints) {
        for endpoint in &mut endpoints {
            endpoint.hints = None;
        }
    }
    let no_labels = BTreeMap::new();
    let mut out = canonical::slice(
        &s.address_type,
        s.ports.as_deref().unwrap_or_default(),
        &endpoints,
        e.is_none_or(|e| e.name.is_some())
            .then(|| meta.name.as_deref().unwrap_or_default()),
        e.is_none_or(|e| e.labels.is_some())
            .then(|| meta.labels.as_ref().unwrap_or(&no_labels)),
    );
    if e.is_some_and(|e| e.compare_all_fields) {
        out["endpoints"] = canonical::slice_endpoints(&endpoints, true);
    }
    if e.is_some_and(|e| e.endpoint_count.is_some()) {
        out["endpoints"] = json!(endpoints.len());
    }
    if e.is_none_or(|e| e.annotations.is_some()) {
        out["annotations"] = json!(meta.annotations.clone().unwrap_or_default());
    }
    if e.is_none_or(|e| e.owner_references.is_some()) {
        out["ownerReferences"] = json!(meta.owner_references.clone().unwrap_or_default());
    }
    out
}

/// The comparable form of an expected slice (see [`slice_form`]).
fn expected_form(e: &ExpectedSlice) -> Value {
    let slice = discovery::EndpointSlice {
        metadata: ObjectMeta {
            name: e.name.clone(),
            labels: e.labels.clone(),
            annotations: e.annotations.clone(),
            owner_references: e.owner_references.clone(),
            ..ObjectMeta::default()
        },
        address_type: e.address_type.clone(),
        endpoints: Some(e.endpoints.clone()),
        ports: Some(e.ports.clone()),
    };
    let mut out = slice_form(&slice, Some(e));
    if let Some(count) = e.endpoint_count {
        out["endpoints"] = json!(count);
    }
    out
}

/// Differences between expected and actual slices (a multiset match), as readable text.
fn compare_slices(expected: &[ExpectedSlice], actual: &[discovery::EndpointSlice]) -> Vec<String> {
    // Most specific expectations first, so one that names labels or a name is not left
    // without its slice by a looser one.
    let specific = |e: &ExpectedSlice| {
        [
            e.name.is_some(),
            e.labels.is_some(),
            e.annotations.is_some(),
            e.owner_references.is_some(),
            e.endpoint_count.is_none(),
            e.compare_hints,
            e.compare_all_fields,
        ]
        .iter()
        .filter(|b| **b)
        .count()
    };
    let mut order: Vec<&ExpectedSlice> = expected.iter().collect();
    order.sort_by_key(|e| std::cmp::Reverse(specific(e)));
    let mut unmatched: Vec<&discovery::EndpointSlice> = actual.iter().collect();
    let mut missing = Vec::new();
    for e in order {
        let w = expected_form(e);
        match unmatched.iter().position(|s| slice_form(s, Some(e)) == w) {
            Some(i) => {
                unmatched.remove(i);
            }
            None => missing.push(w),
        }
    }
    if missing.is_empty() && unmatched.is_empty() {
        return Vec::new();
    }
    let extra: Vec<Value> = unmatched.iter().map(|s| slice_form(s, None)).collect();
    vec![format!(
        "endpointSlices.slices differ ({} expected not found, {} actual not expected; - expected, + actual):\n{}",
        missing.len(),
        extra.len(),
        diff(&Value::Array(missing), &Value::Array(extra))
    )]
}

/// Differences between the expected endpoints and those of all `slices` together, as
/// multisets (normalised as in [`canonical::slice`]).
fn compare_all_endpoints(
    expected: &[discovery::Endpoint],
    slices: &[discovery::EndpointSlice],
) -> Vec<String> {
    let actual: Vec<discovery::Endpoint> = slices
        .iter()
        .flat_map(|s| s.endpoints.iter().flatten().cloned())
        .collect();
    let form = |endpoints: &[discovery::Endpoint]| {
        canonical::slice("", &[], endpoints, None, None)["endpoints"].clone()
    };
    let (want, got) = (form(expected), form(&actual));
    if want == got {
        return Vec::new();
    }
    vec![format!(
        "endpointSlices.allEndpoints differ (expected {}, got {}; - expected, + actual):\n{}",
        expected.len(),
        actual.len(),
        diff(&want, &got)
    )]
}

/// Differences between the expected and the decided events (a multiset match on type and
/// reason, and message where the expectation gives one).
fn compare_events(expected: &[ExpectedEvent], actual: &[Value]) -> Vec<String> {
    let form = |e: &Value, with_message: bool| {
        json!({
            "type": e["type"],
            "reason": e["reason"],
            "message": if with_message { e["message"].clone() } else { Value::Null },
        })
    };
    let mut unmatched: Vec<&Value> = actual.iter().collect();
    let mut missing = Vec::new();
    for e in expected {
        let kind = match e.type_ {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        };
        let w = json!({"type": kind, "reason": e.reason, "message": e.message});
        match unmatched
            .iter()
            .position(|a| form(a, e.message.is_some()) == w)
        {
            Some(i) => {
                unmatched.remove(i);
            }
            None => missing.push(w),
        }
    }
    if missing.is_empty() && unmatched.is_empty() {
        return Vec::new();
    }
    let extra: Vec<Value> = unmatched.into_iter().cloned().collect();
    vec![format!(
        "endpointSlices.events differ (- expected, + actual):\n{}",
        diff(&Value::Array(missing), &Value::Array(extra))
    )]
}

/// Per zone, the endpoints of `slices` hinted for it, and how many of those are hinted for a
/// zone other than their own.
fn hint_counts(slices: &[discovery::EndpointSlice]) -> (BTreeMap<String, usize>, usize) {
    let mut by_zone = BTreeMap::new();
    let mut cross = 0;
    let endpoints = slices.iter().flat_map(|s| s.endpoints.iter().flatten());
    for endpoint in endpoints {
        let zones = endpoint
            .hints
            .iter()
            .flat_map(|h| h.for_zones.iter().flatten());
        for zone in zones {
            *by_zone.entry(zone.name.clone()).or_insert(0) += 1;
            if endpoint.zone.as_deref() != Some(zone.name.as_str()) {
                cross += 1;
            }
        }
    }
    (by_zone, cross)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(v: Value) -> discovery::EndpointSlice {
        serde_json::from_value(v).unwrap()
    }

    fn expected(yaml: &str) -> Vec<ExpectedSlice> {
        serde_yaml::from_str(yaml).unwrap()
    }

    /// A created slice of `foo` with two endpoints, one hinted for another zone.
    fn actual() -> Vec<discovery::EndpointSlice> {
        vec![slice(json!({
            "metadata": {"name": "foo-created-0", "labels": {"a": "b"},
                "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": "2025-01-02T03:04:05Z"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "foo",
                    "uid": "u", "controller": true, "blockOwnerDeletion": true}]},
            "addressType": "IPv4",
            "ports": [],
            "endpoints": [
                {"addresses": ["10.0.0.1"], "zone": "zone-a",
                    "hints": {"forZones": [{"name": "zone-a"}]}},
                {"addresses": ["10.0.0.2"], "zone": "zone-b",
                    "hints": {"forZones": [{"name": "zone-a"}]}},
            ],
        }))]
    }

    #[test]
    fn endpoint_count_checks_only_the_number() {
        let ok = expected("[{addressType: IPv4, endpointCount: 2}]");
        assert!(compare_slices(&ok, &actual()).is_empty());
        let wrong = expected("[{addressType: IPv4, endpointCount: 3}]");
        assert_eq!(compare_slices(&wrong, &actual()).len(), 1);
    }

    #[test]
    fn hints_are_ignored_only_when_asked() {
        let bare = "[{addressType: IPv4, compareHints: HINTS, endpoints: [
            {addresses: [10.0.0.1], zone: zone-a}, {addresses: [10.0.0.2], zone: zone-b}]}]";
        let ignoring = expected(&bare.replace("HINTS", "false"));
        assert!(compare_slices(&ignoring, &actual()).is_empty());
        let comparing = expected(&bare.replace("HINTS", "true"));
        assert_eq!(compare_slices(&comparing, &actual()).len(), 1);
    }

    #[test]
    fn fields_the_controller_never_sets_are_compared_only_when_asked() {
        let mut kept = actual();
        let endpoint = &mut kept[0].endpoints.as_mut().unwrap()[0];
        endpoint.deprecated_topology = Some([("k".to_string(), "v".to_string())].into());
        endpoint.target_ref = Some(Default::default());
        endpoint.target_ref.as_mut().unwrap().resource_version = Some("7".into());
        let bare = "[{addressType: IPv4, compareHints: false, compareAllFields: ALL, endpoints: [
            {addresses: [10.0.0.1], zone: zone-a, targetRef: {resourceVersion: '7'}, deprecatedTopology: {k: v}},
            {addresses: [10.0.0.2], zone: zone-b}]}]";
        let all = expected(&bare.replace("ALL", "true"));
        assert!(compare_slices(&all, &kept).is_empty());
        // The same expectation does not hold of a slice that lost both fields.
        let mut lost = kept.clone();
        let endpoint = &mut lost[0].endpoints.as_mut().unwrap()[0];
        endpoint.deprecated_topology = None;
        endpoint.target_ref.as_mut().unwrap().resource_version = None;
        assert_eq!(compare_slices(&all, &lost).len(), 1);
        let ignoring = expected(&bare.replace("ALL", "false"));
        assert!(compare_slices(&ignoring, &lost).is_empty());
    }

    #[test]
    fn annotations_and_owner_references_are_checked_when_given() {
        let ok = expected(
            "[{addressType: IPv4, endpointCount: 2,
               annotations: {endpoints.kubernetes.io/last-change-trigger-time: '2025-01-02T03:04:05Z'},
               ownerReferences: [{apiVersion: v1, kind: Service, name: foo, uid: u, controller: true,
                                  blockOwnerDeletion: true}]}]",
        );
        assert!(compare_slices(&ok, &actual()).is_empty());
        for wrong in [
            "[{addressType: IPv4, endpointCount: 2, annotations: {}}]",
            "[{addressType: IPv4, endpointCount: 2, ownerReferences: []}]",
        ] {
            assert_eq!(
                compare_slices(&expected(wrong), &actual()).len(),
                1,
                "{wrong}"
            );
        }
    }

    #[test]
    fn all_endpoints_compare_as_a_multiset_over_every_slice() {
        let endpoints =
            |yaml: &str| -> Vec<discovery::Endpoint> { serde_yaml::from_str(yaml).unwrap() };
        let ok = endpoints(
            "[{addresses: [10.0.0.2], zone: zone-b, hints: {forZones: [{name: zone-a}]}},
              {addresses: [10.0.0.1], zone: zone-a, hints: {forZones: [{name: zone-a}]}}]",
        );
        assert!(compare_all_endpoints(&ok, &actual()).is_empty());
        let one_missing = &ok[..1];
        assert_eq!(compare_all_endpoints(one_missing, &actual()).len(), 1);
        let twice = [ok.clone(), ok.clone()].concat();
        let doubled = [actual(), actual()].concat();
        assert!(compare_all_endpoints(&twice, &doubled).is_empty());
        assert_eq!(compare_all_endpoints(&ok, &doubled).len(), 1, "a multiset");
    }

    #[test]
    fn hint_counts_per_zone_and_across_zones() {
        let (by_zone, cross) = hint_counts(&actual());
        assert_eq!(by_zone, BTreeMap::from([("zone-a".to_string(), 2)]));
        assert_eq!(cross, 1);
    }

    #[test]
    fn events_compare_as_a_multiset_with_optional_messages() {
        let actual = vec![
            json!({"type": "Normal", "reason": "TopologyAwareHintsEnabled", "message": "on"}),
            json!({"type": "Warning", "reason": "TopologyAwareHintsDisabled", "message": "off"}),
        ];
        let events = |yaml: &str| -> Vec<ExpectedEvent> { serde_yaml::from_str(yaml).unwrap() };
        let ok = events(
            "[{type: Warning, reason: TopologyAwareHintsDisabled, message: 'off'},
              {type: Normal, reason: TopologyAwareHintsEnabled}]",
        );
        assert!(compare_events(&ok, &actual).is_empty());
        let wrong_message = events(
            "[{type: Warning, reason: TopologyAwareHintsDisabled, message: x},
              {type: Normal, reason: TopologyAwareHintsEnabled}]",
        );
        assert_eq!(compare_events(&wrong_message, &actual).len(), 1);
        assert_eq!(compare_events(&[], &actual).len(), 1, "[] means no event");
        assert!(compare_events(&[], &[]).is_empty());
    }
}
