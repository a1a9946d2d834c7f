//! The EndpointSlice passes of a sync: per address type, the policy's hooks give the desired
//! endpoints grouped by port set, and upstream's slice reconciler ([`crate::steps::slices`])
//! turns them into writes.

use std::collections::HashMap;

use crate::context::{Context, Output};
use crate::policy::Policy;
use crate::port::Port;
use crate::steps;
use crate::steps::slices::identity::port_sort_key;
use crate::steps::slices::{Group, address_type, address_types, is_considered};
use crate::types::{
    EndpointSlice, EndpointSlicePort, Pod, Request, Service, ServiceEvent, SliceChanges,
};
use crate::verdict::Verdict;

/// What the slice passes decided for one Service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SliceOutcome {
    /// The writes.
    pub changes: SliceChanges,
    /// Problems that fail the sync after the writes (R2.10).
    pub errors: Vec<String>,
    /// Events for the Service (R5.15).
    pub events: Vec<ServiceEvent>,
}

/// The slice changes for the Service of `request` (which exists, is not ExternalName and has
/// a selector).
pub(crate) fn reconcile(
    policy: &impl Policy,
    request: &Request,
    service: &Service,
) -> SliceOutcome {
    let mut outcome = SliceOutcome {
        changes: steps::slices::no_changes(),
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
        let mut plan = steps::slices::plan_address_type(&ctx, &existing, groups, max);
        steps::slices::hints::apply(&ctx, &mut plan, &mut outcome.events);
        steps::slices::finish(&ctx, plan, &mut outcome.changes);
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
fn desired_groups(policy: &impl Policy, ctx: &Context<'_>, errors: &mut Vec<String>) -> Vec<Group> {
    let mut grouping = Grouping::default();
    let publish = ctx.service.publish_not_ready_addresses;
    let pods = super::selected(policy, ctx);
    let mut verdicts: Vec<Verdict<'_>> = Vec::with_capacity(pods.len());
    // Each staged pod with its group, in staging order.
    let mut staged: Vec<(&Pod, usize)> = Vec::with_capacity(pods.len());
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
        if let Some(verdict) = super::verdict(policy, ctx, pod) {
            verdicts.push(verdict);
            staged.push((pod, group));
        }
    }
    policy.verdicts(ctx, &mut verdicts);
    verdicts.retain(|v| v.include);
    let placed = place(&verdicts, &staged, |pod| {
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
    for (verdict, group) in verdicts.into_iter().zip(placed) {
        groups[group]
            .endpoints
            .insert(steps::slices::endpoint(pods, verdict), pods);
    }
    groups
}

/// The group of each pod the `verdicts` hook left. A pod keeps the group it was staged with
/// (`staged`: pod and group, in staging order); one the hook swapped in gets its group from
/// `group_for`. The hook usually keeps the staged order, so both lists are walked together;
/// only a pod out of that order needs the map by name, built the first time one turns up.
fn place<'p>(
    verdicts: &[Verdict<'p>],
    staged: &[(&'p Pod, usize)],
    mut group_for: impl FnMut(&Pod) -> usize,
) -> Vec<usize> {
    let mut next = 0;
    let mut by_name: Option<HashMap<&'p str, usize>> = None;
    verdicts
        .iter()
        .map(|verdict| {
            let pod = verdict.pod;
            while let Some(&(s, group)) = staged.get(next) {
                next += 1;
                if std::ptr::eq(s, pod) {
                    return group;
                }
                // A pod left out by the hook: skip it, as long as the walk stays in order.
                if by_name.is_some() {
                    break;
                }
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
    listings: Vec<(Vec<Port<'s>>, usize)>,
}

impl<'s> Grouping<'s> {
    /// The index of `pod`'s port group, added when new.
    fn group_of(&mut self, policy: &impl Policy, ctx: &Context<'s>, pod: &Pod) -> usize {
        let ports = super::ports(policy, ctx, pod);
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
        let borrowed = ports.iter().all(Port::is_borrowed);
        let listing = borrowed.then(|| ports.clone());
        let i = group_index(&mut self.groups, slice_ports(ports));
        self.listings.extend(listing.map(|l| (l, i)));
        i
    }
}

/// Whether `a` and `b` list the same Service ports resolved to the same numbers, in the same
/// order. `false` says nothing: the lists may still be equal.
fn same_resolutions(a: &[Port<'_>], b: &[Port<'_>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.is_same_resolution(y))
}

/// Whether `ports`, the policy's list, is exactly `group` (sorted, without duplicates) in
/// the same order. `false` says nothing: the list may still be the group in another order.
fn lists_group(group: &[EndpointSlicePort], ports: &[Port<'_>]) -> bool {
    group.len() == ports.len()
        && group.iter().zip(ports).all(|(g, p)| {
            g.port == Some(p.port())
                && g.name.as_deref() == Some(p.name())
                && g.protocol.as_deref() == Some(p.protocol())
                && g.app_protocol.as_deref() == p.app_protocol()
        })
}

/// The slice form of the policy's ports of a pod: as upstream writes them (name and protocol
/// always present, R3.3), sorted by their group key (R3.7).
fn slice_ports(ports: Vec<Port<'_>>) -> Vec<EndpointSlicePort> {
    let mut ports: Vec<EndpointSlicePort> = ports
        .into_iter()
        .map(Port::into_owned)
        .map(|p| EndpointSlicePort {
            name: Some(p.name),
            port: Some(p.port),
            protocol: Some(p.protocol),
            app_protocol: p.app_protocol,
        })
        .collect();
    ports.sort_unstable_by(|a, b| port_sort_key(a).cmp(&port_sort_key(b)));
    // Equal keys are equal ports, so this leaves a set: the list is its own group key.
    ports.dedup();
    ports
}

fn group_index(groups: &mut Vec<Group>, ports: Vec<EndpointSlicePort>) -> usize {
    if let Some(i) = groups.iter().position(|g| g.ports == ports) {
        return i;
    }
    groups.push(Group::new(ports));
    groups.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::fixtures::pod;

    fn staged(pod: &Pod) -> Verdict<'_> {
        let address = crate::steps::fixtures::address(&pod.pod_ips[0], &pod.uid);
        Verdict {
            pod,
            include: true,
            address: address.into(),
            ready: true,
            serving: true,
            terminating: false,
        }
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
        // A pod left out in between: the walk skips it.
        let staged_pods = [(&pods[0], 4), (&pods[1], 7), (&pods[2], 9)];
        let without_b = [staged(&pods[0]), staged(&pods[2])];
        assert_eq!(place(&without_b, &staged_pods, |_| unreachable!()), [4, 9]);
    }

    #[test]
    fn endpoints_of_request_pods_name_them_and_rewritten_ones_are_spelled_out() {
        use crate::testing::{request, service};
        use crate::types::{EndpointSource, PodIp};
        use crate::{DefaultPolicy, reconcile};
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
            fn verdict(&self, _ctx: &Context, verdict: &mut Verdict) {
                if verdict.pod.name == "b" {
                    verdict.address.to_mut().ip = "10.9.9.9".into();
                }
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
            fn ports(&self, _ctx: &Context, pod: &Pod, ports: &mut Vec<Port>) {
                if pod.name == "c" {
                    return;
                }
                for port in ports.iter_mut() {
                    let mut owned = port.clone().into_owned();
                    if pod.name == "b" {
                        owned.port = 9999;
                    }
                    *port = Port::from(owned);
                }
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
        let group = slice_ports(vec![metrics.clone(), http.clone()]);
        let names: Vec<_> = group.iter().map(|p| p.name.as_deref().unwrap()).collect();
        assert_eq!(names, ["http", "metrics"], "sorted by the group key");
        assert!(lists_group(&group, &[http.clone(), metrics.clone()]));
        assert!(!lists_group(&group, &[metrics.clone(), http.clone()]));
        assert!(!lists_group(&group, std::slice::from_ref(&http)));
        assert!(!lists_group(
            &group,
            &[http.clone(), metrics.clone(), metrics.clone()]
        ));
        let mut other = metrics.clone();
        other.to_mut().app_protocol = Some("h2c".into());
        assert!(!lists_group(&group, &[http, other]));
        // Ports borrowed from the Service match the same way.
        let sp = service_port("http", 80, crate::types::TargetPort::Number(8080), "TCP");
        let sm = service_port("metrics", 90, crate::types::TargetPort::Number(9090), "TCP");
        assert!(lists_group(
            &group,
            &[Port::of_service(&sp, 8080), Port::of_service(&sm, 9090)]
        ));
        assert!(!lists_group(
            &group,
            &[Port::of_service(&sp, 8081), Port::of_service(&sm, 9090)]
        ));
        assert!(lists_group(&[], &[]));
    }
}
