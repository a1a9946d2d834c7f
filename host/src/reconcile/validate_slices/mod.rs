//! Checking a guest's EndpointSlice changes before anything is written, and turning them into
//! the objects to send. Pure: the controller and the case runner share it.
//!
//! A refused decision writes nothing at all (neither slices nor Endpoints): the controller
//! records an Event and a metric and retries the key with backoff.
//!
//! Rule numbers R1–R10 and scenarios S01–S98 are those of `docs/upstream-endpointslices.md`.

mod across_slices;
mod one_slice;

use std::collections::HashMap;

use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};

use super::view_slices::slice_object;
use crate::model::labels::{LABEL_MANAGED_BY, MANAGED_BY, label};
use across_slices::{check_duplicates, check_unique_names};
use one_slice::check_slice;

/// Most endpoints the API server accepts in one slice, whatever `--max-endpoints-per-slice`.
pub const API_MAX_ENDPOINTS: usize = 1000;
/// Most addresses the API server accepts in one endpoint.
const API_MAX_ADDRESSES: usize = 100;

/// The slice changes of one decision, as Kubernetes objects.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SliceChanges {
    /// Slices to create (with `generateName`).
    pub create: Vec<EndpointSlice>,
    /// Slices to replace, by name.
    pub update: Vec<EndpointSlice>,
    /// Names of slices to delete.
    pub delete: Vec<String>,
}

impl SliceChanges {
    /// Whether nothing is to be written.
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.update.is_empty() && self.delete.is_empty()
    }
}

/// A slice to delete, with the UID it had so the delete cannot hit a namesake made since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceDelete {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid` of the stored slice.
    pub uid: String,
}

/// Validated slice writes, ready to send.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SlicePlan {
    /// Objects to POST.
    pub create: Vec<EndpointSlice>,
    /// Objects to PUT; each carries the stored resourceVersion as precondition.
    pub update: Vec<EndpointSlice>,
    /// Slices to DELETE.
    pub delete: Vec<SliceDelete>,
}

impl SlicePlan {
    /// Whether nothing is to be written.
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.update.is_empty() && self.delete.is_empty()
    }

    /// How many writes the plan makes.
    pub fn writes(&self) -> usize {
        self.create.len() + self.update.len() + self.delete.len()
    }
}

/// Which rule a refused slice decision broke (the `reason` label of the refusal metric).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// A slice labelled, placed or owned for another Service.
    OtherService,
    /// An update without a name, or an update or delete of a slice weir does not manage, or a
    /// write that would leave a slice weir does not manage.
    Unmanaged,
    /// More endpoints in a slice than the maximum.
    TooManyEndpoints,
    /// An address that does not fit the slice's addressType, or an unknown addressType.
    AddressType,
    /// The same endpoint twice within one port group.
    DuplicateEndpoint,
    /// Any other field the API server would refuse.
    Invalid,
}

impl Refusal {
    /// Every reason, for metrics that list each one.
    pub const ALL: [Refusal; 6] = [
        Refusal::OtherService,
        Refusal::Unmanaged,
        Refusal::TooManyEndpoints,
        Refusal::AddressType,
        Refusal::DuplicateEndpoint,
        Refusal::Invalid,
    ];

    /// The metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::OtherService => "other_service",
            Refusal::Unmanaged => "unmanaged",
            Refusal::TooManyEndpoints => "too_many_endpoints",
            Refusal::AddressType => "address_type",
            Refusal::DuplicateEndpoint => "duplicate_endpoint",
            Refusal::Invalid => "invalid",
        }
    }
}

/// A slice decision that breaks the contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("guest EndpointSlice decision refused: {message}")]
pub struct SliceViolation {
    /// The broken rule.
    pub reason: Refusal,
    /// What is wrong, naming the slice and field.
    pub message: String,
}

/// A slice's endpoints (absent reads as none).
fn endpoints(slice: &EndpointSlice) -> &[Endpoint] {
    slice.endpoints.as_deref().unwrap_or_default()
}

fn refuse(reason: Refusal, message: String) -> SliceViolation {
    SliceViolation { reason, message }
}

/// What the decision is checked against.
#[derive(Debug, Clone, Copy)]
pub struct SliceContext<'a> {
    /// The Service's namespace.
    pub namespace: &'a str,
    /// The Service's name.
    pub name: &'a str,
    /// The Service's UID; `None` when it is gone or unknown.
    pub service_uid: Option<&'a str>,
    /// Every stored slice labelled for the Service, whoever manages it.
    pub stored: &'a [&'a EndpointSlice],
    /// `--max-endpoints-per-slice`.
    pub max_endpoints_per_slice: usize,
    /// The request's pods, which endpoints may name (`endpoint-source.pod`).
    pub pods: &'a [crate::model::Pod],
}

/// The slice part of a guest's 0.2.0 decision as Kubernetes objects (an update on the
/// stored object it replaces), validated for the Service of `ctx`: the writes the controller
/// sends, and what the case runner shows.
pub fn plan(
    ctx: &SliceContext<'_>,
    changes: crate::model::SliceChanges,
) -> Result<SlicePlan, SliceViolation> {
    let by_name = |n: &str| {
        ctx.stored
            .iter()
            .copied()
            .find(|s| s.metadata.name.as_deref() == Some(n))
    };
    // An endpoint naming a pod or address the request lacks is a contract breach.
    let object = |s: crate::model::EndpointSlice, stored: Option<&EndpointSlice>| {
        let name = if s.name.is_empty() {
            format!("{}*", s.generate_name)
        } else {
            s.name.clone()
        };
        slice_object(s, stored, ctx.pods)
            .map_err(|e| refuse(Refusal::Invalid, format!("slice {name}: {e}")))
    };
    let changes = SliceChanges {
        create: changes
            .create
            .into_iter()
            .map(|s| object(s, None))
            .collect::<Result<_, _>>()?,
        update: changes
            .update
            .into_iter()
            .map(|s| {
                let stored = by_name(&s.name);
                object(s, stored)
            })
            .collect::<Result<_, _>>()?,
        delete: changes.delete,
    };
    validate_slices(ctx, changes)
}

/// Validates `changes` for the Service of `ctx` and builds the writes. Takes the changes by
/// value: each slice becomes its write as it is, not a copy (a slice of 100 endpoints is some
/// 700 allocations to copy).
pub fn validate_slices(
    ctx: &SliceContext<'_>,
    changes: SliceChanges,
) -> Result<SlicePlan, SliceViolation> {
    let stored: HashMap<&str, &EndpointSlice> = ctx
        .stored
        .iter()
        .filter_map(|&s| Some((s.metadata.name.as_deref()?, s)))
        .collect();
    let mut plan = SlicePlan::default();
    for (i, slice) in changes.create.into_iter().enumerate() {
        let at = format!("endpointSlices.create[{i}]");
        check_slice(ctx, &at, &slice, None)?;
        if slice.metadata.name.as_deref().unwrap_or("").is_empty()
            && slice
                .metadata
                .generate_name
                .as_deref()
                .unwrap_or("")
                .is_empty()
        {
            return Err(refuse(
                Refusal::Invalid,
                format!("{at}.metadata: a create needs generateName (or a name)"),
            ));
        }
        if let Some(name) = slice.metadata.name.as_deref().filter(|n| !n.is_empty())
            && stored.contains_key(name)
        {
            return Err(refuse(
                Refusal::Invalid,
                format!("{at}.metadata.name: slice {name:?} already exists (use update)"),
            ));
        }
        let mut object = slice;
        object.metadata.namespace = Some(ctx.namespace.to_string());
        object.metadata.resource_version = None;
        object.metadata.uid = None;
        plan.create.push(object);
    }
    for (i, slice) in changes.update.into_iter().enumerate() {
        let name = slice.metadata.name.as_deref().unwrap_or("");
        let at = format!("endpointSlices.update[{i}]");
        if name.is_empty() {
            return Err(refuse(
                Refusal::Unmanaged,
                format!("{at}.metadata.name: an update needs the name of the slice it replaces"),
            ));
        }
        let old = managed_stored(ctx, &stored, name, &at, "update")?;
        check_slice(ctx, &at, &slice, Some(old))?;
        plan.update.push(updated_object(old, slice));
    }
    for (i, name) in changes.delete.into_iter().enumerate() {
        let at = format!("endpointSlices.delete[{i}]");
        let old = managed_stored(ctx, &stored, &name, &at, "delete")?;
        plan.delete.push(SliceDelete {
            name,
            uid: old.metadata.uid.clone().unwrap_or_default(),
        });
    }
    check_unique_names(&plan)?;
    check_duplicates(ctx, &plan)?;
    Ok(plan)
}

/// The stored slice `name`, if weir may write it.
fn managed_stored<'a>(
    ctx: &SliceContext<'_>,
    stored: &HashMap<&str, &'a EndpointSlice>,
    name: &str,
    at: &str,
    verb: &str,
) -> Result<&'a EndpointSlice, SliceViolation> {
    let Some(old) = stored.get(name) else {
        return Err(refuse(
            Refusal::Unmanaged,
            format!(
                "{at}: {verb} of slice {name:?}, which is not a slice of Service {}/{}",
                ctx.namespace, ctx.name
            ),
        ));
    };
    if label(old, LABEL_MANAGED_BY) != Some(MANAGED_BY) {
        return Err(refuse(
            Refusal::Unmanaged,
            format!(
                "{at}: {verb} of slice {name:?}, which is managed by {:?}, not {MANAGED_BY}",
                label(old, LABEL_MANAGED_BY).unwrap_or("")
            ),
        ));
    }
    Ok(old)
}

/// The object to PUT: the guest's slice on the stored object's identity, with the stored
/// resourceVersion as precondition so a concurrent change fails instead of being overwritten.
fn updated_object(old: &EndpointSlice, new: EndpointSlice) -> EndpointSlice {
    let mut object = new;
    let meta = &mut object.metadata;
    meta.namespace = old.metadata.namespace.clone();
    meta.uid = old.metadata.uid.clone();
    meta.resource_version = old.metadata.resource_version.clone();
    meta.creation_timestamp = old.metadata.creation_timestamp.clone();
    meta.generation = old.metadata.generation;
    if meta.finalizers.is_none() {
        meta.finalizers = old.metadata.finalizers.clone();
    }
    meta.managed_fields = None;
    object
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::labels::LABEL_SERVICE_NAME;
    use k8s_openapi::api::discovery::v1::EndpointPort;
    use serde_json::{Value, json};
    use std::sync::Arc;

    fn slice(name: Option<&str>, service: &str, managed_by: &str, ips: &[&str]) -> EndpointSlice {
        let mut metadata = json!({
            "namespace": "ns", "uid": format!("uid-{}", name.unwrap_or("new")),
            "resourceVersion": "5",
            "labels": {LABEL_SERVICE_NAME: service, LABEL_MANAGED_BY: managed_by},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "foo", "uid": "svc-uid", "controller": true, "blockOwnerDeletion": true}]
        });
        match name {
            Some(n) => metadata["name"] = json!(n),
            None => metadata["generateName"] = json!("foo-"),
        }
        let endpoints: Vec<Value> = ips
            .iter()
            .enumerate()
            .map(|(i, ip)| json!({"addresses": [ip], "targetRef": {"kind": "Pod", "namespace": "ns", "name": format!("pod-{ip}-{i}")}}))
            .collect();
        serde_json::from_value(json!({
            "metadata": metadata,
            "addressType": if ips.first().is_some_and(|i| i.contains(':')) { "IPv6" } else { "IPv4" },
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": endpoints
        }))
        .unwrap()
    }

    fn stored() -> Vec<Arc<EndpointSlice>> {
        vec![
            Arc::new(slice(Some("foo-a"), "foo", MANAGED_BY, &["10.0.0.1"])),
            Arc::new(slice(
                Some("foo-mirror"),
                "foo",
                "someone-else",
                &["10.0.0.9"],
            )),
        ]
    }

    /// The context of Service ns/foo with these stored slices.
    fn context<'a>(stored: &'a [&'a EndpointSlice], max: usize) -> SliceContext<'a> {
        SliceContext {
            namespace: "ns",
            name: "foo",
            service_uid: Some("svc-uid"),
            stored,
            max_endpoints_per_slice: max,
            pods: &[],
        }
    }

    fn check(changes: SliceChanges, max: usize) -> Result<SlicePlan, SliceViolation> {
        let stored = stored();
        let stored: Vec<&EndpointSlice> = stored.iter().map(Arc::as_ref).collect();
        validate_slices(&context(&stored, max), changes)
    }

    fn reason(changes: SliceChanges, max: usize) -> Refusal {
        check(changes, max).unwrap_err().reason
    }

    #[test]
    fn accepts_a_good_decision_and_adds_the_precondition() {
        let mut update = slice(Some("foo-a"), "foo", MANAGED_BY, &["10.0.0.1", "10.0.0.2"]);
        update.metadata.resource_version = None;
        update.metadata.uid = None;
        let plan = check(
            SliceChanges {
                create: vec![slice(None, "foo", MANAGED_BY, &["10.0.0.3"])],
                update: vec![update],
                delete: vec![],
            },
            100,
        )
        .unwrap();
        assert_eq!(plan.writes(), 2);
        assert_eq!(
            plan.update[0].metadata.resource_version.as_deref(),
            Some("5")
        );
        assert_eq!(plan.update[0].metadata.uid.as_deref(), Some("uid-foo-a"));
        assert_eq!(plan.create[0].metadata.uid, None);
        let plan = check(
            SliceChanges {
                delete: vec!["foo-a".into()],
                ..Default::default()
            },
            100,
        )
        .unwrap();
        assert_eq!(
            plan.delete,
            [SliceDelete {
                name: "foo-a".into(),
                uid: "uid-foo-a".into()
            }]
        );
    }

    #[test]
    fn refuses_an_endpoint_naming_a_pod_the_request_lacks() {
        use crate::model;
        use crate::reconcile::view_slices::{RequestPods, slice as view};
        let decided = |at: model::PodIp| {
            let new = slice(None, "foo", MANAGED_BY, &["10.0.0.1"]);
            let mut new = view(&new, "ns", &RequestPods::new(&[]));
            new.endpoints[0].source = model::EndpointSource::Pod(at);
            let stored = stored();
            let stored: Vec<&EndpointSlice> = stored.iter().map(Arc::as_ref).collect();
            plan(
                &context(&stored, 100),
                model::SliceChanges {
                    create: vec![new],
                    update: Vec::new(),
                    delete: Vec::new(),
                },
            )
        };
        let refused = decided(model::PodIp { pod: 0, ip: 0 }).unwrap_err();
        assert_eq!(refused.reason, Refusal::Invalid);
        assert_eq!(
            refused.message,
            "slice foo-*: endpoints[0]: names pod 0 of the request, which has 0 pods"
        );
    }

    #[test]
    fn refuses_a_slice_for_another_service() {
        let create = |s| SliceChanges {
            create: vec![s],
            ..Default::default()
        };
        assert_eq!(
            reason(create(slice(None, "bar", MANAGED_BY, &["10.0.0.3"])), 100),
            Refusal::OtherService
        );
        let mut s = slice(None, "foo", MANAGED_BY, &["10.0.0.3"]);
        s.metadata.namespace = Some("other".into());
        assert_eq!(reason(create(s), 100), Refusal::OtherService);
        let mut s = slice(None, "foo", MANAGED_BY, &["10.0.0.3"]);
        s.metadata.owner_references.as_mut().unwrap()[0].uid = "old-uid".into();
        let err = check(create(s), 100).unwrap_err();
        assert_eq!(err.reason, Refusal::OtherService);
        assert!(err.message.contains("ownerReferences[0]"), "{err}");
    }

    #[test]
    fn the_owner_reference_uid_decides_not_its_name() {
        // A stored slice whose reference names the Service's uid under an old name is the
        // Service's (R1.31): its update, keeping that reference, is accepted as it is.
        let renamed = |s: &mut EndpointSlice| {
            s.metadata.owner_references.as_mut().unwrap()[0].name = "foo-renamed".into();
        };
        let mut old = slice(Some("foo-a"), "foo", MANAGED_BY, &["10.0.0.1"]);
        renamed(&mut old);
        let stored = [&old];
        let mut update = slice(Some("foo-a"), "foo", MANAGED_BY, &["10.0.0.1", "10.0.0.2"]);
        renamed(&mut update);
        let changes = SliceChanges {
            update: vec![update],
            ..Default::default()
        };
        let plan = validate_slices(&context(&stored, 100), changes.clone()).unwrap();
        let owners = plan.update[0].metadata.owner_references.as_ref().unwrap();
        assert_eq!(owners[0].name, "foo-renamed");
        assert_eq!(owners[0].uid, "svc-uid");
        // Without the Service's uid the name is all there is to go by.
        let unknown = SliceContext {
            service_uid: None,
            ..context(&stored, 100)
        };
        let err = validate_slices(&unknown, changes).unwrap_err();
        assert_eq!(err.reason, Refusal::OtherService);
    }

    #[test]
    fn refuses_updates_without_a_name_or_of_slices_weir_does_not_manage() {
        let update = |s| SliceChanges {
            update: vec![s],
            ..Default::default()
        };
        assert_eq!(
            reason(update(slice(None, "foo", MANAGED_BY, &["10.0.0.3"])), 100),
            Refusal::Unmanaged
        );
        assert_eq!(
            reason(
                update(slice(Some("foo-mirror"), "foo", MANAGED_BY, &["10.0.0.3"])),
                100
            ),
            Refusal::Unmanaged
        );
        assert_eq!(
            reason(
                update(slice(Some("foo-nope"), "foo", MANAGED_BY, &["10.0.0.3"])),
                100
            ),
            Refusal::Unmanaged
        );
        assert_eq!(
            reason(
                SliceChanges {
                    delete: vec!["foo-mirror".into()],
                    ..Default::default()
                },
                100
            ),
            Refusal::Unmanaged
        );
        assert_eq!(
            reason(
                SliceChanges {
                    create: vec![slice(None, "foo", "someone-else", &["10.0.0.3"])],
                    ..Default::default()
                },
                100
            ),
            Refusal::Unmanaged,
            "weir does not create slices it would not manage"
        );
    }

    #[test]
    fn refuses_more_endpoints_than_the_maximum() {
        let ips: Vec<String> = (1..=3).map(|i| format!("10.0.1.{i}")).collect();
        let ips: Vec<&str> = ips.iter().map(String::as_str).collect();
        let create = SliceChanges {
            create: vec![slice(None, "foo", MANAGED_BY, &ips)],
            ..Default::default()
        };
        assert_eq!(reason(create.clone(), 2), Refusal::TooManyEndpoints);
        assert!(check(create, 3).is_ok());
    }

    #[test]
    fn refuses_addresses_that_do_not_fit_the_address_type() {
        // A slice of one address under the given addressType.
        let typed = |ip: &str, address_type: &str| {
            let mut s = slice(None, "foo", MANAGED_BY, &[ip]);
            s.address_type = address_type.into();
            s
        };
        let create = |s| SliceChanges {
            create: vec![s],
            ..Default::default()
        };
        let err = check(create(typed("10.0.0.3", "IPv6")), 100).unwrap_err();
        assert_eq!(err.reason, Refusal::AddressType);
        assert!(
            err.message
                .contains("endpointSlices.create[0].endpoints[0].addresses[0]"),
            "{err}"
        );
        assert_eq!(
            reason(create(typed("fd00::1", "IPv4")), 100),
            Refusal::AddressType
        );
        assert_eq!(
            reason(create(typed("10.0.0.3", "IP")), 100),
            Refusal::AddressType
        );
        assert_eq!(
            reason(create(slice(None, "foo", MANAGED_BY, &["010.0.0.3"])), 100),
            Refusal::AddressType
        );
        assert!(check(create(slice(None, "foo", MANAGED_BY, &["fd00::1"])), 100).is_ok());
        assert!(
            check(create(typed("web-0.example", "FQDN")), 100).is_ok(),
            "a DNS subdomain fits FQDN"
        );
        assert_eq!(
            reason(create(typed("Web_0.example", "FQDN")), 100),
            Refusal::AddressType
        );
        // The right family, but an address the API server refuses.
        assert_eq!(
            reason(create(slice(None, "foo", MANAGED_BY, &["127.0.0.1"])), 100),
            Refusal::Invalid
        );
        assert_eq!(
            reason(create(slice(None, "foo", MANAGED_BY, &["fd00:0::1"])), 100),
            Refusal::Invalid
        );
    }

    #[test]
    fn refuses_duplicate_endpoints_within_a_port_group() {
        // The create repeats the endpoint kept in the stored slice foo-a.
        let dup = slice(None, "foo", MANAGED_BY, &["10.0.0.1"]);
        let mut renamed = dup.clone();
        renamed.endpoints.as_mut().unwrap()[0]
            .target_ref
            .as_mut()
            .unwrap()
            .name = Some("pod-10.0.0.1-0".into());
        let err = check(
            SliceChanges {
                create: vec![renamed.clone()],
                ..Default::default()
            },
            100,
        )
        .unwrap_err();
        assert_eq!(err.reason, Refusal::DuplicateEndpoint, "{err}");
        // Moving it (deleting foo-a in the same decision) is fine.
        assert!(
            check(
                SliceChanges {
                    create: vec![renamed.clone()],
                    delete: vec!["foo-a".into()],
                    ..Default::default()
                },
                100
            )
            .is_ok()
        );
        // Another port group may hold the same endpoint.
        let mut other_ports = renamed;
        other_ports.ports.as_mut().unwrap()[0].port = Some(9090);
        assert!(
            check(
                SliceChanges {
                    create: vec![other_ports],
                    ..Default::default()
                },
                100
            )
            .is_ok()
        );
        // The same IP behind two pods is two endpoints (upstream keeps both).
        let mut twice = slice(None, "foo", MANAGED_BY, &["10.0.0.7", "10.0.0.7"]);
        assert!(
            check(
                SliceChanges {
                    create: vec![twice.clone()],
                    ..Default::default()
                },
                100
            )
            .is_ok()
        );
        let e = twice.endpoints.as_mut().unwrap();
        e[1].target_ref = e[0].target_ref.clone();
        assert_eq!(
            reason(
                SliceChanges {
                    create: vec![twice],
                    ..Default::default()
                },
                100
            ),
            Refusal::DuplicateEndpoint
        );
        // An endpoint's addresses are a set: the same two addresses in another order, for the
        // same pod, are the same endpoint; a different set is not.
        let mut pair = slice(None, "foo", MANAGED_BY, &["10.0.0.7", "10.0.0.8"]);
        let e = pair.endpoints.as_mut().unwrap();
        e[1].target_ref = e[0].target_ref.clone();
        e[0].addresses = vec!["10.0.0.7".into(), "10.0.0.8".into()];
        e[1].addresses = vec!["10.0.0.8".into(), "10.0.0.7".into()];
        let create = |s: &EndpointSlice| SliceChanges {
            create: vec![s.clone()],
            ..Default::default()
        };
        assert_eq!(reason(create(&pair), 100), Refusal::DuplicateEndpoint);
        pair.endpoints.as_mut().unwrap()[1].addresses = vec!["10.0.0.8".into(), "10.0.0.9".into()];
        assert!(check(create(&pair), 100).is_ok());
        // Port order does not make another port group.
        let mut two_ports = slice(None, "foo", MANAGED_BY, &["10.0.0.1"]);
        let metrics = EndpointPort {
            name: Some("metrics".into()),
            port: Some(9090),
            protocol: Some("TCP".into()),
            app_protocol: None,
        };
        two_ports.ports.as_mut().unwrap().push(metrics.clone());
        let mut reversed = two_ports.clone();
        reversed.ports.as_mut().unwrap().reverse();
        reversed.metadata.generate_name = Some("bar-".into());
        let both = SliceChanges {
            create: vec![two_ports, reversed],
            ..Default::default()
        };
        assert_eq!(reason(both, 100), Refusal::DuplicateEndpoint);
    }

    #[test]
    fn only_port_groups_written_to_are_checked_for_duplicates() {
        let port = |name: &str, number: i32| EndpointPort {
            name: Some(name.into()),
            port: Some(number),
            protocol: Some("TCP".into()),
            app_protocol: None,
        };
        // Two stored slices already repeat an endpoint (written by another weir version, say).
        let mut kept = slice(Some("foo-b"), "foo", MANAGED_BY, &["10.0.0.5"]);
        kept.ports = Some(vec![port("metrics", 9090), port("http", 8080)]);
        let mut repeat = kept.clone();
        repeat.metadata.name = Some("foo-c".into());
        let mut stored = stored();
        stored.extend([Arc::new(kept.clone()), Arc::new(repeat)]);
        let stored: Vec<&EndpointSlice> = stored.iter().map(Arc::as_ref).collect();
        let ctx = context(&stored, 100);
        // Writing nothing, or writing to another port group, leaves them be.
        assert!(validate_slices(&ctx, SliceChanges::default()).is_ok());
        let elsewhere = slice(None, "foo", MANAGED_BY, &["10.0.0.6"]);
        let create = |s: EndpointSlice| SliceChanges {
            create: vec![s],
            ..Default::default()
        };
        assert!(validate_slices(&ctx, create(elsewhere)).is_ok());
        // A write to their group (its ports listed in another order) is checked against them.
        let mut joining = kept;
        joining.metadata.name = None;
        joining.metadata.generate_name = Some("foo-".into());
        joining.ports.as_mut().unwrap().reverse();
        let err = validate_slices(&ctx, create(joining)).unwrap_err();
        assert_eq!(err.reason, Refusal::DuplicateEndpoint, "{err}");
    }
}
