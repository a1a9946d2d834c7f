//! A pod's address and readiness (spec §7, §9; upstream `podToEndpointAddressForService`,
//! `ShouldSetHostname`, `IsPodReady`).
//!
//! `spec §` numbers are those of `docs/upstream-behaviour.md`; R1–R10 and S01–S98 those of
//! `docs/upstream-endpointslices.md`.

use std::borrow::Cow;

use crate::address::Address;
use crate::context::{Context, Output};
use crate::ip::{self, Family};
use crate::types::{Pod, Service};
use crate::verdict::Verdict;

/// The family a Service publishes: its first `ipFamilies` entry (spec §7.1). The API server
/// always fills `ipFamilies` for Services with a selector; when it is empty anyway (an old
/// object), the family of a parseable `clusterIP` is used, else IPv4 (spec §16.3).
pub fn primary_family(service: &Service) -> Family {
    match service.ip_families.first() {
        Some(name) => Family::from_ip_family(name),
        None => ip::canonical(&service.cluster_ip).map_or(Family::V4, |(_, family)| family),
    }
}

/// The first of the pod's `podIPs` in `family`, in canonical form (spec §7.2, §7.3).
/// `status.podIP` is not consulted, as upstream; text that does not parse is skipped.
#[cfg(test)]
pub fn pod_ip(pod: &Pod, family: Family) -> Option<String> {
    first_ip(pod, family).map(|(_, ip)| ip.into_owned())
}

/// [`pod_ip`] with its index in `podIPs`, borrowed when already canonical.
fn first_ip(pod: &Pod, family: Family) -> Option<(usize, Cow<'_, str>)> {
    pod.pod_ips
        .iter()
        .enumerate()
        .find_map(|(at, text)| match ip::canonical_form(text) {
            Some((ip, f)) if f == family => Some((at, ip)),
            _ => None,
        })
}

/// The hostname the address carries: the pod's `spec.hostname` when its `subdomain` is the
/// Service's name in the same namespace, else empty (spec §7.5).
pub fn hostname<'p>(pod: &'p Pod, service: &Service) -> &'p str {
    if !pod.hostname.is_empty()
        && pod.subdomain == service.name
        && pod.namespace == service.namespace
    {
        &pod.hostname
    } else {
        ""
    }
}

/// Upstream's address for `pod`, or `None` when it has no IP of the family computed.
/// Endpoints: ready when the pod is ready or the Service publishes not-ready addresses (spec
/// §9.1). Slices: ready when published, or when the pod is ready and not terminating;
/// serving when the pod is ready (R2.14). The address borrows the pod's strings when its IP
/// is written in canonical form, as it nearly always is.
pub fn for_pod<'p>(ctx: &Context<'_>, pod: &'p Pod) -> Option<Verdict<'p>> {
    // A pod without an IP of the Service's family is left out (upstream logs it at V(2)).
    let (at, ip) = first_ip(pod, ctx.family)?;
    let service = ctx.service;
    let mut address = Address::of_pod(pod, at, !hostname(pod, service).is_empty());
    if let Cow::Owned(canonical) = ip {
        // Rare: the pod's text is not canonical, so the address is spelled out with the
        // canonical form.
        address.to_mut().ip = canonical;
    }
    let serving = pod.is_ready();
    let publish = service.publish_not_ready_addresses;
    let ready = match ctx.output {
        Output::Endpoints => publish || serving,
        Output::EndpointSlices => publish || (serving && !pod.terminating),
    };
    Some(Verdict {
        pod,
        include: true,
        address,
        ready,
        serving,
        terminating: pod.terminating,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::fixtures::{pod, service};

    #[test]
    fn first_ip_of_the_primary_family_wins() {
        let mut p = pod("a", "10.0.0.1", true);
        p.pod_ips = vec!["FD00::0:1".into(), "10.0.0.1".into(), "fd00::2".into()];
        assert_eq!(pod_ip(&p, Family::V6).as_deref(), Some("fd00::1"));
        assert_eq!(pod_ip(&p, Family::V4).as_deref(), Some("10.0.0.1"));
        p.pod_ips.clear();
        assert_eq!(
            pod_ip(&p, Family::V4),
            None,
            "status.podIP is not consulted"
        );
    }

    #[test]
    fn family_falls_back_to_cluster_ip() {
        let mut s = service();
        s.ip_families.clear();
        s.cluster_ip = "fd00::10".into();
        assert_eq!(primary_family(&s), Family::V6);
        s.cluster_ip = "None".into();
        assert_eq!(primary_family(&s), Family::V4);
    }

    #[test]
    fn readiness_uses_the_first_ready_condition() {
        let mut p = pod("a", "10.0.0.1", true);
        assert!(p.is_ready());
        p.conditions.insert(
            0,
            crate::types::PodCondition {
                condition_type: "Ready".into(),
                status: "False".into(),
                last_transition_time: None,
            },
        );
        assert!(!p.is_ready());
        p.conditions.clear();
        assert!(!p.is_ready());
    }

    #[test]
    fn hostname_needs_matching_subdomain_and_namespace() {
        let s = service();
        let mut p = pod("a", "10.0.0.1", true);
        p.hostname = "h".into();
        p.subdomain = s.name.clone();
        assert_eq!(hostname(&p, &s), "h");
        p.namespace = "other".into();
        assert_eq!(hostname(&p, &s), "");
        p.namespace = s.namespace.clone();
        p.subdomain = "other".into();
        assert_eq!(hostname(&p, &s), "");
    }
}
