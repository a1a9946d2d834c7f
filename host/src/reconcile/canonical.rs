//! The canonical, comparable form of what a sync writes, and the diff text between two forms.
//!
//! Two decisions are "the same" when their canonical forms are equal: lists whose order the
//! API server does not keep (addresses, ports, endpoints) become sorted sets, and what the
//! server or the clock sets (`resourceVersion`, the last-change trigger time, deprecated
//! topology) is left out. The case runner compares a case's `expect` with the guest's
//! decision in this form, `weir diff` compares two guests, and the controller's shadow
//! comparison compares the active guest's decision with the shadow's: one form for all three.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use serde_json::{Value, json};

use super::validate::Action;
use super::validate_slices::SlicePlan;

/// Annotation left out of the form, since it carries a time.
const TRIGGER_TIME: &str = weir_policy::well_known::LAST_CHANGE_TRIGGER_TIME_ANNOTATION;

/// Sorts a JSON array by each element's text, so lists compare as sets.
fn sorted(values: impl Iterator<Item = Value>) -> Value {
    let mut keyed: Vec<(String, Value)> = values.map(|v| (v.to_string(), v)).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    Value::Array(keyed.into_iter().map(|(_, v)| v).collect())
}

/// The canonical form of an Endpoints object: name, labels, annotations (without the
/// trigger time), and subsets as a set of sets; the namespace when `with_namespace`.
/// Server-set metadata is left out.
pub fn endpoints(e: &core::Endpoints, with_namespace: bool) -> Value {
    let address = |a: &core::EndpointAddress| {
        let mut a = a.clone();
        if let Some(r) = a.target_ref.as_mut() {
            r.resource_version = None;
        }
        serde_json::to_value(a).unwrap_or(Value::Null)
    };
    let subsets = e.subsets.iter().flatten().map(|s| {
        let ports = s.ports.iter().flatten().map(|p| {
            let mut p = p.clone();
            p.protocol.get_or_insert_with(|| "TCP".into());
            serde_json::to_value(p).unwrap_or(Value::Null)
        });
        json!({
            "addresses": sorted(s.addresses.iter().flatten().map(address)),
            "notReadyAddresses": sorted(s.not_ready_addresses.iter().flatten().map(address)),
            "ports": sorted(ports),
        })
    });
    let mut annotations: BTreeMap<String, String> =
        e.metadata.annotations.clone().unwrap_or_default();
    annotations.remove(TRIGGER_TIME);
    let mut out = json!({
        "name": e.metadata.name,
        "labels": e.metadata.labels.clone().unwrap_or_default(),
        "annotations": annotations,
        "subsets": sorted(subsets),
    });
    if with_namespace {
        out["namespace"] = json!(e.metadata.namespace);
    }
    out
}

/// The canonical form of a slice: address type, ports and endpoints as sorted sets (no
/// `targetRef.resourceVersion`, no `deprecatedTopology`), plus the name and labels when
/// given.
pub fn slice(
    address_type: &str,
    ports: &[discovery::EndpointPort],
    endpoints: &[discovery::Endpoint],
    name: Option<&str>,
    labels: Option<&BTreeMap<String, String>>,
) -> Value {
    let ports = ports
        .iter()
        .map(|p| serde_json::to_value(p).unwrap_or(Value::Null));
    let mut out = json!({
        "addressType": address_type,
        "ports": sorted(ports),
        "endpoints": slice_endpoints(endpoints, false),
    });
    if let Some(name) = name {
        out["name"] = json!(name);
    }
    if let Some(labels) = labels {
        out["labels"] = json!(labels);
    }
    out
}

/// A slice's endpoints as a sorted set; without `targetRef.resourceVersion` and
/// `deprecatedTopology` unless `all_fields`.
pub fn slice_endpoints(endpoints: &[discovery::Endpoint], all_fields: bool) -> Value {
    sorted(endpoints.iter().map(|e| {
        let mut e = e.clone();
        if !all_fields {
            if let Some(r) = e.target_ref.as_mut() {
                r.resource_version = None;
            }
            e.deprecated_topology = None;
        }
        serde_json::to_value(e).unwrap_or(Value::Null)
    }))
}

/// Whether writing `update` over `stored` would change nothing but order and what [`slice`]
/// leaves out: the same labels, annotations (the trigger time included: removing or moving it
/// is a change), owner references, finalizers, address type, and ports and endpoints as sets.
/// Such an update is not written (D15 of docs/upstream-behaviour.md §18): upstream's controller sends some of these,
/// for example on every sync of a Service whose hints a zoneless endpoint removed.
pub fn slice_unchanged(
    update: &discovery::EndpointSlice,
    stored: &discovery::EndpointSlice,
) -> bool {
    fn map(m: &Option<BTreeMap<String, String>>) -> Option<&BTreeMap<String, String>> {
        m.as_ref().filter(|m| !m.is_empty())
    }
    fn list<T>(l: &Option<Vec<T>>) -> &[T] {
        l.as_deref().unwrap_or_default()
    }
    let (u, s) = (&update.metadata, &stored.metadata);
    let form = |it: &discovery::EndpointSlice| {
        slice(
            &it.address_type,
            list(&it.ports),
            list(&it.endpoints),
            None,
            None,
        )
    };
    map(&u.labels) == map(&s.labels)
        && map(&u.annotations) == map(&s.annotations)
        && list(&u.owner_references) == list(&s.owner_references)
        && list(&u.finalizers) == list(&s.finalizers)
        && form(update) == form(stored)
}

/// An Endpoints action as JSON: `{"action": ..., "endpoints": <Endpoints> | null}`.
pub fn decision(action: &Action) -> Value {
    json!({ "action": action.name(), "endpoints": action.endpoints() })
}

/// A unified line diff of two JSON values, pretty-printed as YAML and indented by four
/// spaces, without hunk headers.
pub fn diff(want: &Value, got: &Value) -> String {
    let a = serde_yaml::to_string(want).unwrap_or_default();
    let b = serde_yaml::to_string(got).unwrap_or_default();
    similar::TextDiff::from_lines(&a, &b)
        .unified_diff()
        .context_radius(3)
        .to_string()
        .lines()
        .filter(|l| !l.starts_with("@@"))
        .map(|l| format!("    {l}\n"))
        .collect()
}

/// Whether two actions write the same thing (same action, same content in any order).
pub fn same_action(a: &Action, b: &Action) -> bool {
    a.name() == b.name()
        && match (a.endpoints(), b.endpoints()) {
            (Some(x), Some(y)) => endpoints(x, true) == endpoints(y, true),
            _ => true,
        }
}

/// A slice plan in a form where order does not matter, to compare two guests' decisions.
pub fn slice_plan(plan: &SlicePlan) -> Vec<String> {
    let canonical = |verb: &str, s: &discovery::EndpointSlice| {
        let mut v = serde_json::to_value(s).unwrap_or_default();
        for list in ["endpoints", "ports"] {
            if let Some(items) = v.get_mut(list).and_then(|l| l.as_array_mut()) {
                items.sort_by_key(|i| i.to_string());
            }
        }
        if let Some(meta) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            meta.remove("resourceVersion");
        }
        format!("{verb} {v}")
    };
    let mut out: Vec<String> = plan
        .create
        .iter()
        .map(|s| canonical("create", s))
        .chain(plan.update.iter().map(|s| canonical("update", s)))
        .chain(plan.delete.iter().map(|d| format!("delete {}", d.name)))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoints_of(v: Value) -> core::Endpoints {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn endpoints_compare_as_sets_without_server_fields() {
        let a = endpoints_of(json!({
            "metadata": {"name": "foo", "namespace": "ns", "resourceVersion": "1",
                "annotations": {TRIGGER_TIME: "2025-01-02T03:04:05Z"}},
            "subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2",
                "targetRef": {"kind": "Pod", "name": "b", "resourceVersion": "7"}}],
                "ports": [{"port": 80}]}],
        }));
        let b = endpoints_of(json!({
            "metadata": {"name": "foo", "namespace": "other"},
            "subsets": [{"addresses": [{"ip": "10.0.0.2",
                "targetRef": {"kind": "Pod", "name": "b", "resourceVersion": "9"}},
                {"ip": "10.0.0.1"}], "ports": [{"port": 80, "protocol": "TCP"}]}],
        }));
        assert_eq!(endpoints(&a, false), endpoints(&b, false));
        assert_ne!(
            endpoints(&a, true),
            endpoints(&b, true),
            "namespaces differ"
        );
    }

    #[test]
    fn an_update_changing_nothing_but_order_is_unchanged_and_any_field_is_a_change() {
        let slice = |v: Value| -> discovery::EndpointSlice { serde_json::from_value(v).unwrap() };
        let stored = slice(json!({
            "metadata": {"name": "foo-a", "resourceVersion": "5", "uid": "u",
                "labels": {"kubernetes.io/service-name": "foo"},
                "annotations": {TRIGGER_TIME: "2025-01-02T03:04:05Z"}},
            "addressType": "IPv4",
            "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}],
            "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"],
                "hints": {"forZones": [{"name": "a"}]}}],
        }));
        let mut update = slice(json!({
            "metadata": {"name": "foo-a", "resourceVersion": "5",
                "labels": {"kubernetes.io/service-name": "foo"},
                "annotations": {TRIGGER_TIME: "2025-01-02T03:04:05Z"}},
            "addressType": "IPv4",
            "ports": [{"name": "b", "port": 81}, {"name": "a", "port": 80}],
            "endpoints": [{"addresses": ["10.0.0.2"], "hints": {"forZones": [{"name": "a"}]}},
                {"addresses": ["10.0.0.1"]}],
        }));
        assert!(
            slice_unchanged(&update, &stored),
            "order alone changes nothing"
        );

        let mut changed = update.clone();
        changed.endpoints.as_mut().unwrap()[0].hints = None;
        assert!(!slice_unchanged(&changed, &stored), "hints removed");
        let mut changed = update.clone();
        changed.metadata.annotations = None;
        assert!(!slice_unchanged(&changed, &stored), "trigger time removed");
        let mut changed = update.clone();
        changed
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("x".into(), "y".into());
        assert!(!slice_unchanged(&changed, &stored), "a label added");
        let mut changed = update.clone();
        changed.ports = Some(Vec::new());
        assert!(!slice_unchanged(&changed, &stored), "ports dropped");

        update.metadata.annotations = Some(BTreeMap::new());
        let mut bare = stored.clone();
        bare.metadata.annotations = None;
        assert!(
            slice_unchanged(&update, &bare),
            "no annotations reads as empty ones"
        );
    }

    #[test]
    fn decision_names_the_action_and_its_object() {
        let e = endpoints_of(json!({"metadata": {"name": "foo"}}));
        assert_eq!(
            decision(&Action::Create(e)),
            json!({"action": "create", "endpoints": {"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": "foo"}}})
        );
        assert_eq!(
            decision(&Action::Delete),
            json!({"action": "delete", "endpoints": null})
        );
    }

    #[test]
    fn diff_marks_removed_and_added_lines() {
        let text = diff(&json!({"a": 1, "b": 2}), &json!({"a": 1, "b": 3}));
        assert!(text.contains("    -b: 2\n"), "{text}");
        assert!(text.contains("    +b: 3\n"), "{text}");
        assert!(text.contains("     a: 1\n"), "{text}");
        assert!(diff(&json!([1]), &json!([1])).is_empty());
    }
}
