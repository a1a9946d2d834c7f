//! Topology hints on the planned slices (R5): `trafficDistribution` hints, topology-aware
//! allocation for the `auto` annotation, or none at all.
//!
//! Rule numbers R1–R10 and scenarios S01–S98 are those of `docs/upstream-endpointslices.md`.

use std::collections::BTreeMap;

use super::Plan;
use super::location::locate;
use crate::context::Context;
use crate::types::{Endpoint, EndpointHints, EndpointSlice, Pod, ServiceEvent};
use crate::well_known::{TOPOLOGY_AWARE_HINTS_ANNOTATION, TOPOLOGY_MODE_ANNOTATION};

/// Share a zone may exceed its fair allocation by before hints are refused (R5.11).
const OVERLOAD_THRESHOLD: f64 = 0.2;
/// Reason of every topology failure event (R5.15).
const DISABLED: &str = "TopologyAwareHintsDisabled";

/// Whether the Service asks for topology-aware hints: the deprecated annotation when present,
/// else `topology-mode`, is exactly `auto` or `Auto` (R5.1).
pub fn topology_enabled(ctx: &Context<'_>) -> bool {
    let service = ctx.service;
    let value = service
        .annotation(TOPOLOGY_AWARE_HINTS_ANNOTATION)
        .or_else(|| service.annotation(TOPOLOGY_MODE_ANNOTATION));
    matches!(value, Some("auto" | "Auto"))
}

/// The `trafficDistribution` in effect, if any: a known value, unless topology-aware hints
/// take precedence (R5.2, R5.3).
pub fn traffic_distribution<'s>(ctx: &Context<'s>) -> Option<&'s str> {
    let value = ctx.service.traffic_distribution.as_deref()?;
    let known = matches!(value, "PreferClose" | "PreferSameZone" | "PreferSameNode");
    (known && !topology_enabled(ctx)).then_some(value)
}

/// Sets, strips or allocates hints on the plan of one address type (R5.4).
pub fn apply(ctx: &Context<'_>, plan: &mut Plan<'_>, events: &mut Vec<ServiceEvent>) {
    if topology_enabled(ctx) {
        topology_aware(ctx, plan, events);
    } else if let Some(distribution) = traffic_distribution(ctx) {
        let same_node = distribution == "PreferSameNode";
        let pods = &ctx.request.pods;
        move_unchanged_where(plan, |e| !has_wanted_hint(e, same_node, pods));
        for slice in plan.create.iter_mut().chain(plan.update.iter_mut()) {
            for endpoint in slice.endpoints.iter_mut().filter(|e| is_ready(e)) {
                endpoint.hints = wanted_hint(endpoint, same_node, pods);
            }
        }
    } else {
        if stored_zone_hints(ctx) {
            events.push(disabled(ctx, "Topology Aware Hints has been disabled"));
        }
        remove_hints(plan);
    }
}

/// Whether the stored slices of this Service and address type carry zone hints. Upstream
/// remembers in memory which Services topology-aware allocation gave hints (R5.4b); a guest
/// sees only the stored objects, so the hints themselves stand in for that memory.
fn stored_zone_hints(ctx: &Context<'_>) -> bool {
    let address_type = super::address_type(ctx.family);
    ctx.request
        .endpoint_slices
        .iter()
        .filter(|s| s.address_type == address_type && super::is_considered(s, ctx.service))
        .flat_map(|s| s.endpoints.iter())
        .any(|e| e.hints.as_ref().is_some_and(|h| !h.for_zones.is_empty()))
}

fn is_ready(endpoint: &Endpoint) -> bool {
    endpoint.conditions.ready == Some(true)
}

/// The hint a ready endpoint gets under `trafficDistribution` (R5.6): its own zone, and its
/// own node for `PreferSameNode`; `None` when it has neither.
fn wanted_hint(endpoint: &Endpoint, same_node: bool, pods: &[Pod]) -> Option<EndpointHints> {
    let location = locate(endpoint, pods);
    let for_zones: Vec<String> = location.zone.iter().map(|z| z.to_string()).collect();
    let for_nodes: Vec<String> = if same_node {
        location.node_name.iter().map(|n| n.to_string()).collect()
    } else {
        Vec::new()
    };
    (!for_zones.is_empty() || !for_nodes.is_empty()).then_some(EndpointHints {
        for_zones,
        for_nodes,
    })
}

/// Whether an unchanged slice's endpoint already carries the hint it should (R5.7); only
/// ready endpoints count, and absent lists read as empty.
fn has_wanted_hint(endpoint: &Endpoint, same_node: bool, pods: &[Pod]) -> bool {
    if !is_ready(endpoint) {
        return true;
    }
    fn lists(h: Option<&EndpointHints>) -> (&[String], &[String]) {
        h.map_or((&[], &[]), |h| (&h.for_zones, &h.for_nodes))
    }
    let wanted = wanted_hint(endpoint, same_node, pods);
    lists(wanted.as_ref()) == lists(endpoint.hints.as_ref())
}

/// Moves every unchanged slice with an endpoint matching `needs_write` into the updates.
fn move_unchanged_where(plan: &mut Plan<'_>, needs_write: impl Fn(&Endpoint) -> bool) {
    let mut i = 0;
    while i < plan.unchanged.len() {
        if plan.unchanged[i].endpoints.iter().any(&needs_write) {
            plan.update.push(plan.unchanged.remove(i).clone());
        } else {
            i += 1;
        }
    }
}

/// Strips every hint (R5.5): on creates and updates, and on unchanged slices that carry any,
/// which then need an update.
pub fn remove_hints(plan: &mut Plan<'_>) {
    move_unchanged_where(plan, |e| e.hints.is_some());
    for slice in plan.create.iter_mut().chain(plan.update.iter_mut()) {
        for endpoint in &mut slice.endpoints {
            endpoint.hints = None;
        }
    }
}

fn disabled(ctx: &Context<'_>, text: &str) -> ServiceEvent {
    ServiceEvent {
        warning: true,
        reason: DISABLED.into(),
        message: format!("{text}, addressType: {}", super::address_type(ctx.family)),
    }
}

/// A zone's share of the ready endpoints (R5.11).
#[derive(Debug, Clone, Copy)]
struct Allocation {
    minimum: usize,
    maximum: usize,
    target: f64,
}

/// Per-zone allocations for `total` ready endpoints, or the failure event's text.
fn allocations<'r>(
    ctx: &Context<'r>,
    total: usize,
) -> Result<BTreeMap<&'r str, Allocation>, String> {
    let insufficient =
        "Insufficient Node information: allocatable CPU or zone not specified on one or more nodes";
    let Some(zones) = ctx.request.zone_capacities.as_ref() else {
        return Err(insufficient.into());
    };
    let cpu: u64 = zones.iter().map(|z| z.cpu_millis).sum();
    // R5.10: fewer than two zones is insufficient Node information too (upstream's "Nodes
    // only ready in one zone" text is never reached, because the Node step already clears
    // the zone ratios).
    if cpu == 0 || zones.len() < 2 || zones.iter().any(|z| z.zone.is_empty() || z.cpu_millis == 0) {
        return Err(insufficient.into());
    }
    if zones.len() > total {
        return Err(format!(
            "Insufficient number of endpoints ({total} endpoints, {} zones)",
            zones.len()
        ));
    }
    let mut out = BTreeMap::new();
    let mut minimum_total = 0usize;
    for zone in zones {
        let desired = zone.cpu_millis as f64 / cpu as f64 * total as f64;
        let minimum = (desired / (1.0 + OVERLOAD_THRESHOLD)).ceil() as usize;
        minimum_total += minimum;
        if minimum_total > total {
            return Err(format!(
                "Unable to allocate minimum required endpoints to each zone without exceeding overload threshold ({total} endpoints, {} zones)",
                zones.len()
            ));
        }
        out.insert(
            zone.zone.as_str(),
            Allocation {
                minimum,
                maximum: 0,
                target: desired.max(minimum as f64),
            },
        );
    }
    for allocation in out.values_mut() {
        allocation.maximum = allocation.minimum + total - minimum_total;
    }
    Ok(out)
}

/// The zone hints an unchanged slice contributes, or `None` when it must be rewritten: a
/// ready endpoint without zone hints, a hint for a zone without allocation, or a zone pushed
/// past its maximum (R5.12).
fn kept_hints(
    slice: &EndpointSlice,
    allocated: &BTreeMap<String, usize>,
    allocations: &BTreeMap<&str, Allocation>,
) -> Option<BTreeMap<String, usize>> {
    let mut by_zone: BTreeMap<String, usize> = BTreeMap::new();
    for endpoint in slice.endpoints.iter().filter(|e| is_ready(e)) {
        let zones = endpoint.hints.as_ref().map(|h| &h.for_zones)?;
        if zones.is_empty() {
            return None;
        }
        for zone in zones {
            allocations.get(zone.as_str())?;
            *by_zone.entry(zone.clone()).or_default() += 1;
        }
    }
    for (zone, count) in &by_zone {
        let already = allocated.get(zone).copied().unwrap_or(0);
        if count + already > allocations.get(zone.as_str())?.maximum {
            return None;
        }
    }
    Some(by_zone)
}

/// The zone with the largest value, ties to the first by name.
fn most(values: &BTreeMap<String, f64>) -> Option<(String, f64)> {
    values
        .iter()
        .fold(
            None,
            |best: Option<(&String, f64)>, (zone, &v)| match best {
                Some((_, b)) if b >= v => best,
                _ => Some((zone, v)),
            },
        )
        .map(|(z, v)| (z.clone(), v))
}

/// Topology-aware allocation for the `auto` annotation (R5.10–R5.14, R5.17).
fn topology_aware(ctx: &Context<'_>, plan: &mut Plan<'_>, events: &mut Vec<ServiceEvent>) {
    let total = plan
        .create
        .iter()
        .chain(plan.update.iter())
        .chain(plan.unchanged.iter().copied())
        .flat_map(|s| s.endpoints.iter())
        .filter(|e| is_ready(e))
        .count();
    let had_hints = stored_zone_hints(ctx);
    let allocations = match allocations(ctx, total) {
        Ok(a) => a,
        Err(text) => {
            events.push(disabled(ctx, &text));
            remove_hints(plan);
            return;
        }
    };
    // R5.12: unchanged slices keep valid hints and count towards the totals.
    let mut allocated: BTreeMap<String, usize> = BTreeMap::new();
    let mut i = 0;
    while i < plan.unchanged.len() {
        match kept_hints(plan.unchanged[i], &allocated, &allocations) {
            Some(by_zone) => {
                for (zone, n) in by_zone {
                    *allocated.entry(zone).or_default() += n;
                }
                i += 1;
            }
            None => plan.update.push(plan.unchanged.remove(i).clone()),
        }
    }
    // R5.13: every ready endpoint being written starts with its own zone.
    let pods = &ctx.request.pods;
    for slice in plan.create.iter_mut().chain(plan.update.iter_mut()) {
        for endpoint in slice.endpoints.iter_mut().filter(|e| is_ready(e)) {
            let zone = locate(endpoint, pods).zone.filter(|z| !z.is_empty());
            let Some(zone) = zone.map(str::to_string) else {
                events.push(disabled(
                    ctx,
                    "One or more endpoints do not have a zone specified",
                ));
                remove_hints(plan);
                return;
            };
            *allocated.entry(zone.clone()).or_default() += 1;
            endpoint.hints = Some(EndpointHints {
                for_zones: vec![zone],
                for_nodes: Vec::new(),
            });
        }
    }
    // R5.14: whole endpoints move from zones above their target to zones below it.
    let mut surplus: BTreeMap<String, f64> = BTreeMap::new();
    let mut deficit: BTreeMap<String, f64> = BTreeMap::new();
    for (zone, allocation) in &allocations {
        let have = allocated.get(*zone).copied().unwrap_or(0) as f64;
        if have > allocation.target {
            surplus.insert(zone.to_string(), have - allocation.target);
        } else if have < allocation.target {
            deficit.insert(zone.to_string(), allocation.target - have);
        }
    }
    let mut giving: BTreeMap<String, usize> = BTreeMap::new();
    let mut receiving: BTreeMap<String, usize> = BTreeMap::new();
    while let (Some((g, give)), Some((r, take))) = (most(&surplus), most(&deficit)) {
        if (give < 1.0 && take < 1.0) || give < 0.5 || take < 0.5 {
            break;
        }
        *giving.entry(g.clone()).or_default() += 1;
        *surplus.entry(g).or_default() -= 1.0;
        *receiving.entry(r.clone()).or_default() += 1;
        *deficit.entry(r).or_default() -= 1.0;
    }
    'slices: for slice in plan.create.iter_mut().chain(plan.update.iter_mut()) {
        for endpoint in slice.endpoints.iter_mut().filter(|e| is_ready(e)) {
            if giving.is_empty() || receiving.is_empty() {
                break 'slices;
            }
            let Some(zone) = locate(endpoint, pods).zone.map(str::to_string) else {
                continue;
            };
            let Some(left) = giving.get_mut(&zone) else {
                continue;
            };
            *left -= 1;
            if *left == 0 {
                giving.remove(&zone);
            }
            let to = receiving
                .keys()
                .next()
                .cloned()
                .expect("receiving is not empty");
            if let Some(n) = receiving.get_mut(&to) {
                *n -= 1;
                if *n == 0 {
                    receiving.remove(&to);
                }
            }
            if let Some(n) = allocated.get_mut(&zone) {
                *n -= 1;
            }
            *allocated.entry(to.clone()).or_default() += 1;
            endpoint.hints = Some(EndpointHints {
                for_zones: vec![to],
                for_nodes: Vec::new(),
            });
        }
    }
    if allocated.is_empty() {
        events.push(disabled(ctx, "No hints allocated for zones"));
        remove_hints(plan);
        return;
    }
    if !had_hints {
        events.push(ServiceEvent {
            warning: false,
            reason: "TopologyAwareHintsEnabled".into(),
            message: format!(
                "Topology Aware Hints has been enabled, addressType: {}",
                super::address_type(ctx.family)
            ),
        });
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{kv, pod, request, service};
    use crate::types::{Decision, EndpointHints};
    use crate::{DefaultPolicy, reconcile};

    fn events(decision: &Decision) -> Vec<(bool, &str, &str)> {
        decision
            .events
            .iter()
            .map(|e| (e.warning, e.reason.as_str(), e.message.as_str()))
            .collect()
    }

    /// A sync whose first decision is stored back, with `hint` on every stored endpoint.
    fn stored_with_hints(svc: crate::types::Service, hint: Option<&str>) -> crate::types::Request {
        let mut req = request(svc.clone(), vec![pod("a", "10.0.0.1", true)]);
        let first = reconcile(&DefaultPolicy::default(), &req).unwrap();
        let mut slice = first.slices.create[0].clone();
        slice.name = "svc-abc".into();
        for e in &mut slice.endpoints {
            e.hints = hint.map(|z| EndpointHints {
                for_zones: vec![z.into()],
                for_nodes: vec![],
            });
        }
        req.endpoint_slices = vec![slice];
        req
    }

    #[test]
    fn hints_left_from_topology_mode_are_removed_with_a_warning() {
        // R5.4b (S89): neither mechanism applies any more, but the stored slices carry zone
        // hints: one Warning, and an update stripping them.
        let req = stored_with_hints(service(), Some("zone-a"));
        let decision = reconcile(&DefaultPolicy::default(), &req).unwrap();
        assert_eq!(
            events(&decision),
            [(
                true,
                "TopologyAwareHintsDisabled",
                "Topology Aware Hints has been disabled, addressType: IPv4"
            )]
        );
        assert_eq!(decision.slices.update.len(), 1);
        assert!(decision.slices.update[0].endpoints[0].hints.is_none());
    }

    #[test]
    fn a_single_zone_is_insufficient_node_information() {
        // R5.10: fewer than two zones clears the topology information.
        let mut svc = service();
        svc.annotations = vec![kv("service.kubernetes.io/topology-mode", "auto")];
        let mut req = request(
            svc,
            vec![pod("a", "10.0.0.1", true), pod("b", "10.0.0.2", true)],
        );
        for p in &mut req.pods {
            p.zone = Some("zone-a".into());
        }
        req.zone_capacities = Some(vec![crate::types::ZoneCapacity {
            zone: "zone-a".into(),
            cpu_millis: 1000,
        }]);
        let decision = reconcile(&DefaultPolicy::default(), &req).unwrap();
        assert_eq!(
            events(&decision),
            [(
                true,
                "TopologyAwareHintsDisabled",
                "Insufficient Node information: allocatable CPU or zone not specified on one or more nodes, addressType: IPv4"
            )]
        );
        assert!(
            decision.slices.create[0]
                .endpoints
                .iter()
                .all(|e| e.hints.is_none())
        );
    }

    #[test]
    fn no_warning_without_stored_hints_or_under_traffic_distribution() {
        let req = stored_with_hints(service(), None);
        let decision = reconcile(&DefaultPolicy::default(), &req).unwrap();
        assert!(decision.events.is_empty());
        assert!(decision.slices.update.is_empty());
        // PreferClose keeps managing hints itself: nothing was disabled.
        let mut svc = service();
        svc.traffic_distribution = Some("PreferClose".into());
        svc.annotations = vec![kv("unrelated", "x")];
        let req = stored_with_hints(svc, Some("zone-a"));
        let decision = reconcile(&DefaultPolicy::default(), &req).unwrap();
        assert!(decision.events.is_empty());
    }
}
