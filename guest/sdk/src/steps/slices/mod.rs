//! The EndpointSlice output: upstream's EndpointSlice reconciler as steps (rules R1–R5 of
//! `docs/upstream-endpointslices.md`).
//!
//! [`reconcile`] runs them for one Service: per address type it builds the desired endpoints
//! grouped by port set from the policy's shared hooks ([`Policy::select`],
//! [`Policy::address`], [`Policy::addresses`], [`Policy::ports`]), matches them against the
//! stored slices the controller owns ([`plan_group`]), adds a placeholder when nothing else
//! is left ([`placeholder`]), sets or strips hints ([`hints`]), and turns create+delete pairs
//! into updates ([`finish`]).

pub mod hints;
pub mod identity;
pub mod location;
pub mod meta;

use std::collections::HashMap;

use crate::ip::Family;
use crate::policy::{Context, Output, PodAddress, Policy};
use crate::port::Port;
use crate::types::{
    Endpoint, EndpointConditions, EndpointSlice, EndpointSlicePort, Pod, Request, Service,
    ServiceEvent, SliceChanges,
};
use crate::well_known::LAST_CHANGE_TRIGGER_TIME_ANNOTATION;
use identity::{EndpointIndex, PortKey, endpoints_equal_beyond_identity, port_key};
pub use meta::{
    address_type, address_types, desired_labels, is_considered, is_owned, new_slice,
    owner_reference,
};

/// What the slice steps decided for one Service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceOutcome {
    /// The writes.
    pub changes: SliceChanges,
    /// Problems that fail the sync after the writes (R2.10).
    pub errors: Vec<String>,
    /// Events for the Service (R5.15).
    pub events: Vec<ServiceEvent>,
}

/// The slice changes planned for one address type, before recycling.
#[derive(Debug, Default)]
pub struct Plan<'a> {
    /// New slices.
    pub create: Vec<EndpointSlice>,
    /// Rewritten stored slices.
    pub update: Vec<EndpointSlice>,
    /// Stored slices left as they are.
    pub unchanged: Vec<&'a EndpointSlice>,
    /// Stored slices to delete.
    pub delete: Vec<&'a EndpointSlice>,
}

/// One desired port group: the port list every endpoint of it serves, and its endpoints.
#[derive(Debug)]
pub struct Group {
    /// The ports, in the order they are written: sorted by [`identity::port_sort_key`] and
    /// without duplicates, so the list is its own group key.
    pub ports: Vec<EndpointSlicePort>,
    endpoints: EndpointIndex,
}

/// The slice changes for the Service of `request` (which exists, is not ExternalName and has
/// a selector).
pub fn reconcile(policy: &impl Policy, request: &Request, service: &Service) -> SliceOutcome {
    let mut outcome = SliceOutcome {
        changes: no_changes(),
        errors: Vec::new(),
        events: Vec::new(),
    };
    let max = (request.max_endpoints_per_slice as usize).max(1);
    // R1.30: only slices of this Service managed by this controller, not being deleted.
    let considered: Vec<&EndpointSlice> = request
        .endpoint_slices
        .iter()
        .filter(|s| is_considered(s, service))
        .collect();
    let families = address_types(service);
    let mut outer_delete: Vec<&EndpointSlice> = considered
        .iter()
        .copied()
        .filter(|s| !families.iter().any(|f| address_type(*f) == s.address_type))
        .collect();
    for family in families {
        let ctx = Context {
            request,
            service,
            family,
            output: Output::EndpointSlices,
        };
        let existing: Vec<&EndpointSlice> = considered
            .iter()
            .copied()
            .filter(|s| s.address_type == address_type(family))
            .collect();
        let groups = desired_groups(policy, &ctx, &mut outcome.errors);
        let mut plan = plan_address_type(&ctx, &existing, groups, max);
        hints::apply(&ctx, &mut plan, &mut outcome.events);
        finish(&ctx, plan, &mut outcome.changes);
    }
    // R4.3: slices of address types the Service no longer has go last, never recycled.
    outcome
        .changes
        .delete
        .extend(outer_delete.drain(..).map(|s| s.name.clone()));
    outcome
}

/// The desired endpoints of one address type, grouped by port set (R2.9–R2.20, R3). Pods on
/// a missing Node are skipped with an error unless not-ready addresses are published (R2.10).
pub fn desired_groups(
    policy: &impl Policy,
    ctx: &Context<'_>,
    errors: &mut Vec<String>,
) -> Vec<Group> {
    let mut grouping = Grouping::default();
    let publish = ctx.service.publish_not_ready_addresses;
    let pods = policy.select(ctx, &ctx.request.pods);
    let mut staged: Vec<(&Pod, PodAddress<'_>)> = Vec::with_capacity(pods.len());
    // Each staged pod with its group, in staging order.
    let mut staged_groups: Vec<(&Pod, usize)> = Vec::with_capacity(pods.len());
    for pod in pods {
        // R2.12: the group exists even if the pod contributes no endpoint to it.
        let group = grouping.group_of(policy, ctx, pod);
        if !pod.node_exists && !publish {
            errors.push(format!(
                "skipping Pod {} for Service {}/{}: Node {} Not Found",
                pod.name, ctx.service.namespace, ctx.service.name, pod.node_name
            ));
            continue;
        }
        if let Some(address) = policy.address(ctx, pod) {
            staged.push((pod, address));
            staged_groups.push((pod, group));
        }
    }
    let addresses = policy.addresses(ctx, staged);
    let placed = place(&addresses, &staged_groups, |pod| {
        grouping.group_of(policy, ctx, pod)
    });
    let mut groups = grouping.groups;
    // Each group's index is sized once: its endpoints are large, and growing copies them.
    let mut sizes = vec![0; groups.len()];
    for &group in &placed {
        sizes[group] += 1;
    }
    for (group, size) in groups.iter_mut().zip(sizes) {
        group.endpoints.reserve(size);
    }
    let pods = &ctx.request.pods;
    for ((pod, address), group) in addresses.into_iter().zip(placed) {
        groups[group]
            .endpoints
            .insert(endpoint(pods, pod, address), pods);
    }
    groups
}

/// The group of each pod the `addresses` hook returned. A pod it kept keeps the group it was
/// staged with (`staged`: pod and group, in staging order); one it added gets its group from
/// `group_for`. The hook usually returns the staged pods in their order, so they are matched
/// by walking both lists; only a pod out of that order needs the map by name, built the first
/// time one turns up.
fn place<'p>(
    addresses: &[(&'p Pod, PodAddress<'p>)],
    staged: &[(&'p Pod, usize)],
    mut group_for: impl FnMut(&Pod) -> usize,
) -> Vec<usize> {
    let mut next = 0;
    let mut by_name: Option<HashMap<&'p str, usize>> = None;
    addresses
        .iter()
        .map(|(pod, _)| {
            if let Some(&(_, group)) = staged.get(next).filter(|(s, _)| std::ptr::eq(*s, *pod)) {
                next += 1;
                return group;
            }
            let by_name = by_name
                .get_or_insert_with(|| staged.iter().map(|(s, g)| (s.name.as_str(), *g)).collect());
            match by_name.get(pod.name.as_str()) {
                Some(&g) => g,
                None => group_for(pod),
            }
        })
        .collect()
}

/// The port groups found so far, and how to find a pod's quickly.
#[derive(Default)]
struct Grouping<'s> {
    groups: Vec<Group>,
    /// Port lists that missed this quick match, with their group's index: only lists whose
    /// every port is still the Service's own ([`Port::is_borrowed`]), so a policy that spells
    /// ports out adds none.
    listings: Vec<(Vec<Option<Port<'s>>>, usize)>,
}

impl<'s> Grouping<'s> {
    /// The index of `pod`'s port group, added when new.
    fn group_of(&mut self, policy: &impl Policy, ctx: &Context<'s>, pod: &Pod) -> usize {
        let ports = policy.ports(ctx, pod);
        // Pods of one Service mostly resolve the same Service ports to the same numbers:
        // such a list is known by where its ports come from, with no string compared.
        if let Some(&(_, i)) = self
            .listings
            .iter()
            .find(|(listing, _)| same_resolutions(listing, &ports))
        {
            return i;
        }
        // The policy lists ports in the Service's order, often already the group's sorted
        // order: such a list is matched as it is, without building, sorting and
        // deduplicating the slice form first.
        if let Some(i) = self
            .groups
            .iter()
            .position(|g| lists_group(&g.ports, &ports))
        {
            return i;
        }
        let borrowed = ports.iter().flatten().all(Port::is_borrowed);
        let listing = borrowed.then(|| ports.clone());
        let i = group_index(&mut self.groups, slice_ports(ports));
        self.listings.extend(listing.map(|l| (l, i)));
        i
    }
}

/// Whether `a` and `b` list the same Service ports resolved to the same numbers, in the same
/// order. `false` says nothing: the lists may still be equal.
fn same_resolutions(a: &[Option<Port<'_>>], b: &[Option<Port<'_>>]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|pair| match pair {
            (Some(x), Some(y)) => x.is_same_resolution(y),
            (None, None) => true,
            _ => false,
        })
}

/// Whether `ports`, the policy's list, is exactly `group` (sorted, without duplicates) in
/// the same order. `false` says nothing: the list may still be the group in another order.
fn lists_group(group: &[EndpointSlicePort], ports: &[Option<Port<'_>>]) -> bool {
    let mut ports = ports.iter().flatten();
    group.iter().all(|g| {
        ports.next().is_some_and(|p| {
            g.port == Some(p.port())
                && g.name.as_deref() == Some(p.name())
                && g.protocol.as_deref() == Some(p.protocol())
                && g.app_protocol.as_deref() == p.app_protocol()
        })
    }) && ports.next().is_none()
}

/// The slice form of the policy's ports of a pod: without the port-less marker (a headless
/// Service without ports gives `[]`, R3.1), as upstream writes them (name and protocol always
/// present, R3.3), sorted by their group key (R3.7).
fn slice_ports(ports: Vec<Option<Port<'_>>>) -> Vec<EndpointSlicePort> {
    let mut ports: Vec<EndpointSlicePort> = ports
        .into_iter()
        .flatten()
        .map(Port::into_owned)
        .map(|p| EndpointSlicePort {
            name: Some(p.name),
            port: Some(p.port),
            protocol: Some(p.protocol),
            app_protocol: p.app_protocol,
        })
        .collect();
    ports.sort_unstable_by(|a, b| identity::port_sort_key(a).cmp(&identity::port_sort_key(b)));
    // Equal keys are equal ports, so this leaves a set: the list is its own group key.
    ports.dedup();
    ports
}

fn group_index(groups: &mut Vec<Group>, ports: Vec<EndpointSlicePort>) -> usize {
    if let Some(i) = groups.iter().position(|g| g.ports == ports) {
        return i;
    }
    groups.push(Group {
        ports,
        endpoints: EndpointIndex::default(),
    });
    groups.len() - 1
}

/// The endpoint upstream builds for `pod` from its address (R2.13–R2.20): `nodeName` and
/// `hostname` only when non-empty, the Node's zone when known, no hints. When that is
/// exactly what the request's pod gives, the endpoint names the pod (`pods` are the
/// request's) rather than repeating its strings ([`location::source_of`]).
pub fn endpoint(pods: &[Pod], pod: &Pod, address: PodAddress<'_>) -> Endpoint {
    let PodAddress {
        address,
        ready,
        serving,
        terminating,
    } = address;
    let hostname = Some(address.hostname())
        .filter(|h| !h.is_empty())
        .map(str::to_owned);
    let zone = pod
        .zone
        .as_deref()
        .filter(|z| pod.node_exists && !z.is_empty());
    Endpoint {
        source: location::source_of(pods, pod, address, zone),
        conditions: EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        },
        hostname,
        hints: None,
    }
}

/// Matches the desired groups of one address type against its stored slices (R4.4–R4.19).
pub fn plan_address_type<'a>(
    ctx: &Context<'_>,
    existing: &[&'a EndpointSlice],
    groups: Vec<Group>,
    max: usize,
) -> Plan<'a> {
    let service = ctx.service;
    let mut plan = Plan::default();
    // R4.4: slices of another owner are deleted; owned ones are grouped by port set.
    let mut by_key: Vec<(PortKey, Vec<&'a EndpointSlice>)> = Vec::new();
    for &slice in existing {
        if !is_owned(slice, service) {
            plan.delete.push(slice);
            continue;
        }
        let key = port_key(slice.ports.as_deref());
        match by_key.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.push(slice),
            None => by_key.push((key, vec![slice])),
        }
    }
    for group in groups {
        let key = port_key(Some(&group.ports));
        let stored = by_key
            .iter()
            .position(|(k, _)| *k == key)
            .map(|i| by_key.swap_remove(i).1)
            .unwrap_or_default();
        plan_group(ctx, &stored, group, max, &mut plan);
    }
    // R4.7: groups no pod maps to any more.
    for (_, slices) in by_key {
        plan.delete.extend(slices);
    }
    // R4.15–R4.17: a placeholder when nothing else would be left.
    if existing.len() == plan.delete.len() && plan.create.is_empty() {
        let placeholder = new_slice(service, ctx.family, Vec::new());
        if plan.delete.len() == 1 && meta::placeholder_equal(plan.delete[0], &placeholder) {
            plan.unchanged.push(plan.delete.remove(0));
        } else {
            plan.create.push(placeholder);
        }
    }
    plan
}

/// One port group against its stored slices (R4.8–R4.14): keep matching endpoints in place,
/// fill slices being updated fullest first, then the unchanged slice that takes all the rest
/// most tightly, then new slices.
pub fn plan_group<'a>(
    ctx: &Context<'_>,
    stored: &[&'a EndpointSlice],
    group: Group,
    max: usize,
    plan: &mut Plan<'a>,
) {
    let service = ctx.service;
    let pods = &ctx.request.pods;
    let Group {
        ports,
        mut endpoints,
        ..
    } = group;
    let mut updates: Vec<EndpointSlice> = Vec::new();
    let mut unchanged: Vec<&'a EndpointSlice> = Vec::new();
    for &slice in stored {
        let mut kept: Vec<Endpoint> = Vec::with_capacity(slice.endpoints.len());
        let mut changed = false;
        for stored_endpoint in &slice.endpoints {
            // R4.8a: the desired version takes the stored one's place; a second stored copy
            // of the same endpoint finds nothing and is dropped.
            if let Some(desired) = endpoints.take(stored_endpoint, pods) {
                changed |= !endpoints_equal_beyond_identity(&desired, stored_endpoint, pods);
                kept.push(desired);
            }
        }
        let labels_differ = !meta::reserved_free_labels_equal(&slice.labels, &service.labels);
        if changed || kept.len() != slice.endpoints.len() {
            if kept.is_empty() {
                plan.delete.push(slice);
            } else {
                let mut copy = slice.clone();
                copy.labels = desired_labels(service);
                copy.endpoints = kept;
                updates.push(copy);
            }
        } else if labels_differ {
            let mut copy = slice.clone();
            copy.labels = desired_labels(service);
            updates.push(copy);
        } else {
            unchanged.push(slice);
        }
    }
    let mut remaining = endpoints.into_remaining();
    // R4.12: slices already being written take endpoints first, fullest first.
    if !remaining.is_empty() && !updates.is_empty() {
        let mut order: Vec<usize> = (0..updates.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(updates[i].endpoints.len()));
        for i in order {
            let slice = &mut updates[i];
            let room = max
                .saturating_sub(slice.endpoints.len())
                .min(remaining.len());
            slice.endpoints.extend(remaining.drain(..room));
            if remaining.is_empty() {
                break;
            }
        }
    }
    // R4.13: the rest goes into the unchanged slice that takes all of it most tightly, else
    // into new slices.
    while !remaining.is_empty() {
        let pick = if remaining.len() < max {
            slice_to_fill(&unchanged, remaining.len(), max)
        } else {
            None
        };
        match pick {
            Some(i) => {
                let mut copy = unchanged.remove(i).clone();
                copy.endpoints.append(&mut remaining);
                updates.push(copy);
            }
            None => {
                let mut slice = new_slice(service, ctx.family, ports.clone());
                slice.endpoints = if remaining.len() <= max {
                    // The last new slice takes the list itself rather than a copy.
                    std::mem::take(&mut remaining)
                } else {
                    remaining.drain(..max).collect()
                };
                plan.create.push(slice);
            }
        }
    }
    plan.update.extend(updates);
    plan.unchanged.extend(unchanged);
}

/// The unchanged slice that would be closest to full after taking all `count` endpoints, or
/// `None` when none can take them all (R4.13a).
fn slice_to_fill(unchanged: &[&EndpointSlice], count: usize, max: usize) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (i, slice) in unchanged.iter().enumerate() {
        let Some(room) = max.checked_sub(count + slice.endpoints.len()) else {
            continue;
        };
        if best.is_none_or(|(_, best_room)| room < best_room) {
            best = Some((i, room));
            if room == 0 {
                break;
            }
        }
    }
    best.map(|(i, _)| i)
}

/// Turns the plan of one address type into writes (R4.21, R4.22, R4.27): creates are paired
/// with deletes of owned slices into updates that reuse the deleted slice's name; a Service
/// being deleted gets no creates; every written slice carries the trigger time.
pub fn finish(ctx: &Context<'_>, plan: Plan<'_>, changes: &mut SliceChanges) {
    let Plan {
        mut create,
        mut update,
        delete,
        ..
    } = plan;
    let mut kept_deletes = Vec::with_capacity(delete.len());
    for slice in delete {
        match (is_owned(slice, ctx.service), create.pop()) {
            (true, Some(mut recycled)) => {
                recycled.name = slice.name.clone();
                // The stored version is the precondition, as for every update (upstream sends
                // none here; a conflict is retried instead of overwriting a foreign edit).
                recycled.resource_version = slice.resource_version.clone();
                update.push(recycled);
            }
            (_, unused) => {
                create.extend(unused);
                kept_deletes.push(slice.name.clone());
            }
        }
    }
    if ctx.service.deleting {
        // R4.22a: racing the garbage collector with new slices is pointless.
        create.clear();
    }
    let trigger = ctx.request.trigger_time.as_deref();
    for slice in create.iter_mut().chain(update.iter_mut()) {
        crate::steps::decide::set(
            &mut slice.annotations,
            LAST_CHANGE_TRIGGER_TIME_ANNOTATION,
            trigger,
        );
    }
    changes.create.extend(create);
    changes.update.extend(update);
    changes.delete.extend(kept_deletes);
}

/// Slice changes that write nothing.
pub fn no_changes() -> SliceChanges {
    SliceChanges {
        create: Vec::new(),
        update: Vec::new(),
        delete: Vec::new(),
    }
}

/// The family an `addressType` names, if it is one the controller produces.
pub fn family_of(address_type: &str) -> Option<Family> {
    match address_type {
        "IPv4" => Some(Family::V4),
        "IPv6" => Some(Family::V6),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::fixtures::pod;

    fn staged(pod: &Pod) -> (&Pod, PodAddress<'_>) {
        let address = crate::steps::fixtures::address(&pod.pod_ips[0], &pod.uid);
        let staged = PodAddress {
            address: address.into(),
            ready: true,
            serving: true,
            terminating: false,
        };
        (pod, staged)
    }

    #[test]
    fn pods_keep_their_staged_group_in_any_order_and_added_ones_get_theirs() {
        let pods = [
            pod("a", "10.0.0.1", true),
            pod("b", "10.0.0.2", true),
            pod("c", "10.0.0.3", true),
        ];
        let staged_pods = [(&pods[0], 4), (&pods[1], 7)];
        let mut asked = Vec::new();
        // In order, then reversed with an added pod between: `group_for` only for the new one.
        let in_order = [staged(&pods[0]), staged(&pods[1])];
        assert_eq!(
            place(&in_order, &staged_pods, |p| {
                asked.push(p.name.clone());
                0
            }),
            [4, 7]
        );
        let shuffled = [staged(&pods[1]), staged(&pods[2]), staged(&pods[0])];
        assert_eq!(
            place(&shuffled, &staged_pods, |p| {
                asked.push(p.name.clone());
                9
            }),
            [7, 9, 4]
        );
        assert_eq!(asked, ["c"]);
    }

    #[test]
    fn endpoints_of_request_pods_name_them_and_rewritten_ones_are_spelled_out() {
        use crate::testing::{request, service};
        use crate::types::{EndpointSource, PodIp};
        use crate::{DefaultPolicy, Policy, reconcile};
        let req = request(
            service(),
            vec![pod("a", "10.0.0.1", true), pod("b", "10.0.0.2", true)],
        );
        let sources = |decision: &crate::types::Decision| -> Vec<EndpointSource> {
            decision.slices.create[0]
                .endpoints
                .iter()
                .map(|e| e.source.clone())
                .collect()
        };
        let decision = reconcile(&DefaultPolicy::default(), &req).unwrap();
        assert_eq!(
            sources(&decision),
            [
                EndpointSource::Pod(PodIp { pod: 0, ip: 0 }),
                EndpointSource::Pod(PodIp { pod: 1, ip: 0 })
            ]
        );
        /// Moves pod `b` to another address.
        struct Moved;
        impl Policy for Moved {
            fn address<'p>(&self, ctx: &Context<'_>, pod: &'p Pod) -> Option<PodAddress<'p>> {
                let mut address = crate::steps::address::for_pod(ctx, pod)?;
                if pod.name == "b" {
                    address.address.to_mut().ip = "10.9.9.9".into();
                }
                Some(address)
            }
        }
        let decision = reconcile(&Moved, &req).unwrap();
        let sources = sources(&decision);
        assert_eq!(sources[0], EndpointSource::Pod(PodIp { pod: 0, ip: 0 }));
        let EndpointSource::Given(moved) = &sources[1] else {
            panic!("a rewritten address is spelled out: {:?}", sources[1]);
        };
        assert_eq!(moved.addresses, ["10.9.9.9"]);
        assert_eq!(
            moved.target_ref.as_ref().map(|r| r.name.as_str()),
            Some("b")
        );
        assert_eq!(moved.node_name.as_deref(), Some("node-1"));
    }

    #[test]
    fn a_pod_whose_endpoint_differs_from_what_it_names_is_spelled_out() {
        use crate::testing::{request, service};
        use crate::types::EndpointSource;
        use crate::{DefaultPolicy, reconcile};
        // `a`: an IP not in canonical form; `b`: a zone, but its Node is gone (the zone is
        // dropped, R2.16) while not-ready addresses are published; `c`: as it should be.
        let mut a = pod("a", "010.0.0.1", true);
        a.node_name = String::new();
        let mut b = pod("b", "10.0.0.2", true);
        b.zone = Some("zone-a".into());
        b.node_exists = false;
        let mut c = pod("c", "10.0.0.3", true);
        c.zone = Some("zone-a".into());
        let mut svc = service();
        svc.publish_not_ready_addresses = true;
        let req = request(svc, vec![a, b, c]);
        let decision = reconcile(&DefaultPolicy::default(), &req).unwrap();
        let endpoints = &decision.slices.create[0].endpoints;
        let given = |i: usize| match &endpoints[i].source {
            EndpointSource::Given(l) => l.clone(),
            other => panic!("endpoint {i} should be spelled out: {other:?}"),
        };
        assert_eq!(given(0).addresses, ["10.0.0.1"]);
        assert_eq!(given(0).node_name, None, "an empty nodeName is left out");
        assert_eq!(given(1).zone, None);
        assert_eq!(given(1).addresses, ["10.0.0.2"]);
        assert!(matches!(endpoints[2].source, EndpointSource::Pod(_)));
    }

    #[test]
    fn pods_group_by_what_their_ports_say_however_the_ports_are_held() {
        use crate::testing::{request, service};
        use crate::{DefaultPolicy, reconcile};
        /// Spells the ports of `a` and `b` out (`c` keeps the Service's), and moves `b`'s to
        /// another number: `a` and `c` say the same, held differently.
        struct Spelled;
        impl Policy for Spelled {
            fn ports<'s>(&self, ctx: &Context<'s>, pod: &Pod) -> Vec<Option<Port<'s>>> {
                let mut ports = crate::steps::ports::for_pod(ctx, pod);
                if pod.name == "c" {
                    return ports;
                }
                for port in ports.iter_mut().flatten() {
                    let mut owned = port.clone().into_owned();
                    if pod.name == "b" {
                        owned.port = 9999;
                    }
                    *port = Port::from(owned);
                }
                ports
            }
        }
        let req = request(
            service(),
            vec![
                pod("a", "10.0.0.1", true),
                pod("b", "10.0.0.2", true),
                pod("c", "10.0.0.3", true),
            ],
        );
        let groups = |decision: &crate::types::Decision| -> Vec<(Vec<Option<i32>>, usize)> {
            let mut groups: Vec<_> = decision
                .slices
                .create
                .iter()
                .map(|s| {
                    let ports = s.ports.iter().flatten().map(|p| p.port).collect();
                    (ports, s.endpoints.len())
                })
                .collect();
            groups.sort();
            groups
        };
        let spelled = reconcile(&Spelled, &req).unwrap();
        assert_eq!(
            groups(&spelled),
            [(vec![Some(8080)], 2), (vec![Some(9999)], 1)]
        );
        let borrowed = reconcile(&DefaultPolicy::default(), &req).unwrap();
        assert_eq!(groups(&borrowed), [(vec![Some(8080)], 3)]);
    }

    #[test]
    fn a_port_list_is_matched_as_is_only_in_the_groups_order() {
        use crate::steps::fixtures::{port, service_port};
        let (http, metrics) = (
            Port::from(port("http", 8080)),
            Port::from(port("metrics", 9090)),
        );
        let group = slice_ports(vec![Some(metrics.clone()), Some(http.clone())]);
        let names: Vec<_> = group.iter().map(|p| p.name.as_deref().unwrap()).collect();
        assert_eq!(names, ["http", "metrics"], "sorted by the group key");
        assert!(lists_group(
            &group,
            &[Some(http.clone()), Some(metrics.clone())]
        ));
        // The port-less marker is not a port.
        assert!(lists_group(
            &group,
            &[Some(http.clone()), None, Some(metrics.clone())]
        ));
        assert!(!lists_group(
            &group,
            &[Some(metrics.clone()), Some(http.clone())]
        ));
        assert!(!lists_group(&group, &[Some(http.clone())]));
        assert!(!lists_group(
            &group,
            &[
                Some(http.clone()),
                Some(metrics.clone()),
                Some(metrics.clone())
            ]
        ));
        let mut other = metrics.clone();
        other.to_mut().app_protocol = Some("h2c".into());
        assert!(!lists_group(&group, &[Some(http), Some(other)]));
        // Ports borrowed from the Service match the same way.
        let sp = service_port("http", 80, crate::types::TargetPort::Number(8080), "TCP");
        let sm = service_port("metrics", 90, crate::types::TargetPort::Number(9090), "TCP");
        assert!(lists_group(
            &group,
            &[
                Some(Port::of_service(&sp, 8080)),
                Some(Port::of_service(&sm, 9090))
            ]
        ));
        assert!(!lists_group(
            &group,
            &[
                Some(Port::of_service(&sp, 8081)),
                Some(Port::of_service(&sm, 9090))
            ]
        ));
        assert!(lists_group(&[], &[None]));
    }
}
