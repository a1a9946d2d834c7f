//! The EndpointSlice output: upstream's EndpointSlice reconciler as steps (rules R1–R5 of
//! `docs/upstream-endpointslices.md`).
//!
//! Given the desired endpoints of one address type grouped by port set ([`Group`]), it
//! matches them against the stored slices the controller owns ([`plan_group`]), adds a
//! placeholder when nothing else is left, sets or strips hints ([`hints`]), and turns
//! create+delete pairs into updates ([`finish`]).

pub mod hints;
pub mod identity;
pub mod location;
pub mod meta;

use crate::context::Context;
use crate::types::Pod;
use crate::types::{Endpoint, EndpointConditions, EndpointSlice, EndpointSlicePort, SliceChanges};
use crate::verdict::Verdict;
use crate::well_known::LAST_CHANGE_TRIGGER_TIME_ANNOTATION;
use identity::{EndpointIndex, PortKey, endpoints_equal_beyond_identity, port_key};
pub use meta::{address_type, address_types, desired_labels, is_considered, is_owned, new_slice};

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
    /// The endpoints, by identity.
    pub endpoints: EndpointIndex,
}

impl Group {
    /// A group of `ports` without endpoints yet.
    pub fn new(ports: Vec<EndpointSlicePort>) -> Self {
        Group {
            ports,
            endpoints: EndpointIndex::default(),
        }
    }
}

/// The endpoint upstream builds for `pod` from its address (R2.13–R2.20): `nodeName` and
/// `hostname` only when non-empty, the Node's zone when known, no hints. When that is
/// exactly what the request's pod gives, the endpoint names the pod (`pods` are the
/// request's) rather than repeating its strings ([`location::source_of`]).
pub fn endpoint(pods: &[Pod], verdict: Verdict<'_>) -> Endpoint {
    let Verdict {
        pod,
        address,
        ready,
        serving,
        terminating,
        ..
    } = verdict;
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
