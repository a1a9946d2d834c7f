//! What a decision would change, endpoint by endpoint (`weir diff`): which endpoints appear,
//! which go, and whose conditions change, in the Endpoints and in the EndpointSlices of one
//! Service. Pure: it compares objects and knows nothing of where they came from.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use serde::Serialize;

use crate::cases::{Case, Outcome};
use crate::reconcile::canonical;
use crate::reconcile::validate::Action;

/// One endpoint and its conditions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Endpoint {
    /// Its address (an IP, or a name in an FQDN slice).
    pub address: String,
    /// The pod (or other object) behind it, when the object names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Its conditions: `ready` alone in Endpoints, `ready`, `serving` and `terminating` in
    /// slices. An unset slice condition reads as upstream's consumers read it (ready and
    /// serving true, terminating false).
    pub conditions: BTreeMap<&'static str, bool>,
}

/// An endpoint whose conditions change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Changed {
    /// Its address.
    pub address: String,
    /// The conditions before.
    pub before: BTreeMap<&'static str, bool>,
    /// The conditions after.
    pub after: BTreeMap<&'static str, bool>,
}

/// How one output's endpoints change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EndpointChanges {
    /// Endpoints that appear.
    pub added: Vec<Endpoint>,
    /// Endpoints that go.
    pub removed: Vec<Endpoint>,
    /// Endpoints whose conditions change.
    pub changed: Vec<Changed>,
    /// Something else changes: ports, labels, annotations (not the trigger time), hints,
    /// or how the endpoints are grouped.
    pub other: bool,
}

impl EndpointChanges {
    /// Whether nothing changes.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty() && !self.other
    }

    fn between(before: &BTreeMap<String, Endpoint>, after: &BTreeMap<String, Endpoint>) -> Self {
        let mut changes = EndpointChanges::default();
        for (key, endpoint) in after {
            match before.get(key) {
                None => changes.added.push(endpoint.clone()),
                Some(old) if old.conditions != endpoint.conditions => {
                    changes.changed.push(Changed {
                        address: endpoint.address.clone(),
                        before: old.conditions.clone(),
                        after: endpoint.conditions.clone(),
                    })
                }
                Some(_) => {}
            }
        }
        changes.removed = before
            .iter()
            .filter(|(key, _)| !after.contains_key(*key))
            .map(|(_, e)| e.clone())
            .collect();
        changes
    }
}

/// What a Service's Endpoints would get.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EndpointsDiff {
    /// The write: `none`, `create`, `update` or `delete` (against the stored object), or
    /// `differs` / `same` when two guests are compared.
    pub action: &'static str,
    /// How the endpoints change.
    #[serde(flatten)]
    pub changes: EndpointChanges,
}

/// What a Service's EndpointSlices would get.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SlicesDiff {
    /// Slices created, updated and deleted (against the stored slices; zero when two
    /// guests are compared).
    pub creates: usize,
    /// Slices updated.
    pub updates: usize,
    /// Slices deleted.
    pub deletes: usize,
    /// How the endpoints, over all slices, change.
    #[serde(flatten)]
    pub changes: EndpointChanges,
}

/// What one Service would get.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServiceDiff {
    /// The Endpoints, when they are managed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<EndpointsDiff>,
    /// The EndpointSlices, when they are managed and the guest renders them.
    #[serde(rename = "endpointSlices", skip_serializing_if = "Option::is_none")]
    pub endpoint_slices: Option<SlicesDiff>,
}

impl ServiceDiff {
    /// Whether anything would be written (or, for two guests, whether they disagree).
    pub fn changes(&self) -> bool {
        let endpoints = self
            .endpoints
            .as_ref()
            .is_some_and(|e| !matches!(e.action, "none" | "same") || !e.changes.is_empty());
        let slices = self
            .endpoint_slices
            .as_ref()
            .is_some_and(|s| s.creates + s.updates + s.deletes > 0 || !s.changes.is_empty());
        endpoints || slices
    }

    /// What `outcome` would write over what `case` holds stored.
    pub fn against_stored(case: &Case, outcome: &Outcome) -> ServiceDiff {
        let outputs = case.outputs();
        let endpoints = outputs.endpoints.then(|| {
            let after = endpoints_after(case, &outcome.action);
            EndpointsDiff {
                action: outcome.action.name(),
                changes: endpoints_changes(case.endpoints.as_ref(), after.as_ref()),
            }
        });
        let endpoint_slices = (outputs.endpoint_slices && outcome.world.has_slices()).then(|| {
            let after = case.slices_after(&outcome.slices);
            SlicesDiff {
                creates: outcome.slices.create.len(),
                updates: outcome.slices.update.len(),
                deletes: outcome.slices.delete.len(),
                changes: slices_changes(&case.endpoint_slices, &after),
            }
        });
        ServiceDiff {
            endpoints,
            endpoint_slices,
        }
    }

    /// How `new`'s result differs from `old`'s, both decided on `case`.
    pub fn between_guests(case: &Case, old: &Outcome, new: &Outcome) -> ServiceDiff {
        let outputs = case.outputs();
        let endpoints = outputs.endpoints.then(|| {
            let (before, after) = (
                endpoints_after(case, &old.action),
                endpoints_after(case, &new.action),
            );
            let changes = endpoints_changes(before.as_ref(), after.as_ref());
            let same = changes.is_empty() && old.action.name() == new.action.name();
            EndpointsDiff {
                action: if same { "same" } else { "differs" },
                changes,
            }
        });
        let slices = outputs.endpoint_slices && (old.world.has_slices() || new.world.has_slices());
        let endpoint_slices = slices.then(|| {
            let rendered = |o: &Outcome| {
                if o.world.has_slices() {
                    case.slices_after(&o.slices)
                } else {
                    case.endpoint_slices.clone()
                }
            };
            SlicesDiff {
                creates: 0,
                updates: 0,
                deletes: 0,
                changes: slices_changes(&rendered(old), &rendered(new)),
            }
        });
        ServiceDiff {
            endpoints,
            endpoint_slices,
        }
    }
}

/// The Endpoints stored once `action` is carried out over the case's stored ones.
fn endpoints_after(case: &Case, action: &Action) -> Option<core::Endpoints> {
    match action {
        Action::None => case.endpoints.clone(),
        Action::Create(e) | Action::Update(e) => Some(e.clone()),
        Action::Delete => None,
    }
}

fn reference(r: Option<&core::ObjectReference>) -> Option<String> {
    let r = r?;
    Some(format!(
        "{}/{}",
        r.namespace.as_deref().unwrap_or_default(),
        r.name.as_deref()?
    ))
}

/// The endpoints of an Endpoints object by address (an address listed twice, in two
/// subsets, counts as ready when either lists it ready).
fn endpoints_of(e: Option<&core::Endpoints>) -> BTreeMap<String, Endpoint> {
    let mut out: BTreeMap<String, Endpoint> = BTreeMap::new();
    let subsets = e.into_iter().flat_map(|e| e.subsets.iter().flatten());
    for subset in subsets {
        let listed = [
            (true, subset.addresses.iter().flatten()),
            (false, subset.not_ready_addresses.iter().flatten()),
        ];
        for (ready, addresses) in listed {
            for a in addresses {
                let entry = out.entry(a.ip.clone()).or_insert_with(|| Endpoint {
                    address: a.ip.clone(),
                    target: reference(a.target_ref.as_ref()),
                    conditions: BTreeMap::from([("ready", ready)]),
                });
                if ready {
                    entry.conditions.insert("ready", true);
                }
            }
        }
    }
    out
}

fn endpoints_changes(
    before: Option<&core::Endpoints>,
    after: Option<&core::Endpoints>,
) -> EndpointChanges {
    let mut changes = EndpointChanges::between(&endpoints_of(before), &endpoints_of(after));
    let form = |e: Option<&core::Endpoints>| e.map(|e| canonical::endpoints(e, false));
    changes.other = changes.added.is_empty()
        && changes.removed.is_empty()
        && changes.changed.is_empty()
        && form(before) != form(after);
    changes
}

/// The endpoints of a set of slices by address type and address.
fn slice_endpoints(slices: &[discovery::EndpointSlice]) -> BTreeMap<String, Endpoint> {
    let mut out = BTreeMap::new();
    for slice in slices {
        for e in slice.endpoints.iter().flatten() {
            let c = e.conditions.as_ref();
            let ready = c.and_then(|c| c.ready).unwrap_or(true);
            let conditions = BTreeMap::from([
                ("ready", ready),
                ("serving", c.and_then(|c| c.serving).unwrap_or(ready)),
                (
                    "terminating",
                    c.and_then(|c| c.terminating).unwrap_or(false),
                ),
            ]);
            for address in &e.addresses {
                out.insert(
                    format!("{} {address}", slice.address_type),
                    Endpoint {
                        address: address.clone(),
                        target: reference(e.target_ref.as_ref()),
                        conditions: conditions.clone(),
                    },
                );
            }
        }
    }
    out
}

fn slices_changes(
    before: &[discovery::EndpointSlice],
    after: &[discovery::EndpointSlice],
) -> EndpointChanges {
    let mut changes = EndpointChanges::between(&slice_endpoints(before), &slice_endpoints(after));
    // Names are left out: two guests name the slices they create differently.
    let form = |slices: &[discovery::EndpointSlice]| {
        let mut forms: Vec<String> = slices
            .iter()
            .map(|s| {
                canonical::slice(
                    &s.address_type,
                    s.ports.as_deref().unwrap_or_default(),
                    s.endpoints.as_deref().unwrap_or_default(),
                    None,
                    s.metadata.labels.as_ref(),
                )
                .to_string()
            })
            .collect();
        forms.sort();
        forms
    };
    changes.other = changes.added.is_empty()
        && changes.removed.is_empty()
        && changes.changed.is_empty()
        && form(before) != form(after);
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn endpoints(ready: &[&str], not_ready: &[&str]) -> core::Endpoints {
        let address = |ip: &&str| json!({"ip": ip});
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns"},
            "subsets": [{
                "addresses": ready.iter().map(address).collect::<Vec<_>>(),
                "notReadyAddresses": not_ready.iter().map(address).collect::<Vec<_>>(),
                "ports": [{"port": 80, "protocol": "TCP"}],
            }],
        }))
        .unwrap()
    }

    fn slice(endpoints: serde_json::Value) -> discovery::EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"name": "web-1"},
            "addressType": "IPv4",
            "endpoints": endpoints,
        }))
        .unwrap()
    }

    #[test]
    fn endpoints_added_removed_and_flipped_are_told_apart() {
        let before = endpoints(&["10.0.0.1", "10.0.0.2"], &[]);
        let after = endpoints(&["10.0.0.1"], &["10.0.0.2", "10.0.0.3"]);
        let c = endpoints_changes(Some(&before), Some(&after));
        assert_eq!(c.added.len(), 1);
        assert_eq!(c.added[0].address, "10.0.0.3");
        assert!(!c.added[0].conditions["ready"]);
        assert!(c.removed.is_empty());
        assert_eq!(c.changed.len(), 1);
        assert_eq!(c.changed[0].address, "10.0.0.2");
        assert_eq!(
            (c.changed[0].before["ready"], c.changed[0].after["ready"]),
            (true, false)
        );
        assert!(!c.other);
        let gone = endpoints_changes(Some(&before), None);
        assert_eq!(gone.removed.len(), 2);
    }

    #[test]
    fn a_port_change_alone_is_another_change() {
        let before = endpoints(&["10.0.0.1"], &[]);
        let mut after = before.clone();
        after.subsets.as_mut().unwrap()[0].ports.as_mut().unwrap()[0].port = 81;
        let c = endpoints_changes(Some(&before), Some(&after));
        assert!(c.added.is_empty() && c.removed.is_empty() && c.changed.is_empty());
        assert!(c.other);
        assert!(endpoints_changes(Some(&before), Some(&before)).is_empty());
    }

    #[test]
    fn slice_conditions_read_unset_as_consumers_do() {
        let before = [slice(json!([
            {"addresses": ["10.0.0.1"]},
            {"addresses": ["10.0.0.2"], "conditions": {"ready": true}},
        ]))];
        let after = [slice(json!([
            {"addresses": ["10.0.0.1"], "conditions": {"ready": true, "serving": true, "terminating": false}},
            {"addresses": ["10.0.0.2"], "conditions": {"ready": false, "serving": true, "terminating": true}},
        ]))];
        let c = slices_changes(&before, &after);
        assert!(c.added.is_empty() && c.removed.is_empty());
        assert_eq!(c.changed.len(), 1, "{c:?}");
        assert_eq!(c.changed[0].address, "10.0.0.2");
        assert!(c.changed[0].after["terminating"]);
        assert!(!c.other);
    }
}
