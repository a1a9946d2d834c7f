//! Where a slice endpoint points: its `addresses`, `targetRef`, `nodeName` and `zone`.
//!
//! The contract carries them either as a pod of the request at one of its addresses
//! ([`EndpointSource::Pod`], the usual case: the fields the controller derives from that pod,
//! R2.13–R2.17) or in full ([`EndpointSource::Given`]). [`locate`] reads both the same way,
//! borrowing from the endpoint or the request, so identity and comparison (R4.9, R4.10) never
//! depend on how an endpoint was sent; [`source`] picks the short form whenever it says the
//! same thing.
//!
//! Rule numbers R1–R10 and scenarios S01–S98 are those of `docs/upstream-endpointslices.md`.

use crate::address::{Address, TargetRef};
use crate::types::{Endpoint, EndpointLocation, EndpointSource, Pod, PodIp};

/// An endpoint's `addresses`, `targetRef`, `nodeName` and `zone`, however they were sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location<'a> {
    /// `addresses`.
    pub addresses: &'a [String],
    /// `targetRef`.
    pub target_ref: Option<TargetRef<'a>>,
    /// `nodeName`.
    pub node_name: Option<&'a str>,
    /// `zone`.
    pub zone: Option<&'a str>,
}

impl<'a> Location<'a> {
    /// The location `l` spells out.
    pub fn of(l: &'a EndpointLocation) -> Self {
        Location {
            addresses: &l.addresses,
            target_ref: l.target_ref.as_ref().map(TargetRef::of),
            node_name: l.node_name.as_deref(),
            zone: l.zone.as_deref(),
        }
    }
}

/// What a pod index the request does not have points at: nothing. The host never sends one
/// and refuses a decision with one, so this only keeps [`locate`] total.
const NOWHERE: Location<'static> = Location {
    addresses: &[],
    target_ref: None,
    node_name: None,
    zone: None,
};

/// The location of `endpoint`, whose pod indices refer to `pods` (the request's).
pub fn locate<'a>(endpoint: &'a Endpoint, pods: &'a [Pod]) -> Location<'a> {
    match &endpoint.source {
        EndpointSource::Pod(at) => of_pod(pods, *at).unwrap_or(NOWHERE),
        EndpointSource::Given(l) => Location::of(l),
    }
}

/// What the controller derives from `pods[at.pod]` at its address `pod_ips[at.ip]` (R2.13,
/// R2.15–R2.17), as the contract defines `endpoint-source.pod`.
fn of_pod(pods: &[Pod], at: PodIp) -> Option<Location<'_>> {
    let pod = pods.get(usize::try_from(at.pod).ok()?)?;
    let ip = pod.pod_ips.get(usize::try_from(at.ip).ok()?)?;
    Some(Location {
        addresses: std::slice::from_ref(ip),
        target_ref: Some(TargetRef::pod(pod)),
        node_name: Some(pod.node_name.as_str()).filter(|n| !n.is_empty()),
        zone: pod.zone.as_deref(),
    })
}

/// The source that says `location` for an endpoint built from `pod`: the pod and address it
/// came from when that is exactly what they give, else `location` in full. `pod` counts as
/// the request's only when it is one of `pods` itself (a policy may add pods of its own).
pub fn source(pods: &[Pod], pod: &Pod, location: EndpointLocation) -> EndpointSource {
    let short = index_of(pods, pod).and_then(|i| {
        let [address] = location.addresses.as_slice() else {
            return None;
        };
        let ip = pod.pod_ips.iter().position(|ip| ip == address)?;
        let at = PodIp {
            pod: u32::try_from(i).ok()?,
            ip: u32::try_from(ip).ok()?,
        };
        (of_pod(pods, at)? == Location::of(&location)).then_some(at)
    });
    match short {
        Some(at) => EndpointSource::Pod(at),
        None => EndpointSource::Given(location),
    }
}

/// The source of an endpoint built for `pod` at `address`, placed in `zone`. An address that
/// is still a request pod's own names that pod when the zone is the one the pod carries, with
/// nothing to copy or compare; any other is spelled out for [`source`] to recognise.
pub fn source_of(
    pods: &[Pod],
    pod: &Pod,
    address: Address<'_>,
    zone: Option<&str>,
) -> EndpointSource {
    if let Some((own, ip)) = address.pod_ip()
        && zone == own.zone.as_deref()
        && let Some(i) = index_of(pods, own)
        && let (Ok(pod), Ok(ip)) = (u32::try_from(i), u32::try_from(ip))
    {
        return EndpointSource::Pod(PodIp { pod, ip });
    }
    let address = address.into_owned();
    let location = EndpointLocation {
        addresses: vec![address.ip],
        target_ref: address.target_ref,
        node_name: address.node_name.filter(|n| !n.is_empty()),
        zone: zone.map(str::to_owned),
    };
    source(pods, pod, location)
}

/// The position of `pod` in `pods`, when it is one of them (not an equal copy).
pub(crate) fn index_of(pods: &[Pod], pod: &Pod) -> Option<usize> {
    let offset = (pod as *const Pod as usize).checked_sub(pods.as_ptr() as usize)?;
    let i = offset / std::mem::size_of::<Pod>().max(1);
    pods.get(i).filter(|p| std::ptr::eq(*p, pod)).map(|_| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::fixtures::pod;

    fn given(pod: &Pod) -> EndpointLocation {
        EndpointLocation {
            addresses: vec![pod.pod_ips[0].clone()],
            target_ref: Some(TargetRef::pod(pod).to_reference()),
            node_name: Some(pod.node_name.clone()).filter(|n| !n.is_empty()),
            zone: pod.zone.clone(),
        }
    }

    fn endpoint(source: EndpointSource) -> Endpoint {
        Endpoint {
            source,
            conditions: crate::types::EndpointConditions {
                ready: Some(true),
                serving: Some(true),
                terminating: Some(false),
            },
            hostname: None,
            hints: None,
        }
    }

    #[test]
    fn a_pods_own_endpoint_names_the_pod_and_reads_back_the_same() {
        let mut pods = vec![pod("a", "10.0.0.1", true), pod("b", "10.0.0.2", true)];
        pods[1].node_name = "node-1".into();
        pods[1].zone = Some("zone-a".into());
        pods[1].pod_ips.push("fd00::2".into());
        let mut location = given(&pods[1]);
        location.addresses = vec!["fd00::2".into()];
        let source = source(&pods, &pods[1], location.clone());
        assert_eq!(source, EndpointSource::Pod(PodIp { pod: 1, ip: 1 }));
        let e = endpoint(source);
        assert_eq!(locate(&e, &pods), Location::of(&location));
    }

    #[test]
    fn anything_the_pod_does_not_give_is_sent_in_full() {
        let pods = vec![pod("a", "10.0.0.1", true)];
        let mut changes: Vec<fn(&mut EndpointLocation)> = vec![
            |l| l.addresses = vec!["10.9.9.9".into()],
            |l| l.addresses.push("10.0.0.1".into()),
            |l| l.node_name = Some("elsewhere".into()),
            |l| l.zone = Some("zone-z".into()),
            |l| l.target_ref = None,
        ];
        changes.push(|l| l.target_ref.as_mut().unwrap().uid = "other".into());
        changes.push(|l| l.target_ref.as_mut().unwrap().field_path = "spec".into());
        for change in changes {
            let mut location = given(&pods[0]);
            change(&mut location);
            let source = source(&pods, &pods[0], location.clone());
            assert_eq!(source, EndpointSource::Given(location));
        }
        // An equal pod that is not the request's own is no index into it.
        let copy = pods[0].clone();
        let location = given(&copy);
        assert_eq!(
            super::source(&pods, &copy, location.clone()),
            EndpointSource::Given(location)
        );
    }

    #[test]
    fn an_index_out_of_range_points_nowhere() {
        let pods = vec![pod("a", "10.0.0.1", true)];
        for at in [PodIp { pod: 1, ip: 0 }, PodIp { pod: 0, ip: 1 }] {
            assert_eq!(locate(&endpoint(EndpointSource::Pod(at)), &pods), NOWHERE);
        }
    }
}
