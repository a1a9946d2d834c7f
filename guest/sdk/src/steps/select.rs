//! Which pods may appear at all (spec §6, upstream `ShouldPodBeInEndpoints`).
//!
//! `spec §` numbers are those of `docs/upstream-behaviour.md`; R1–R10 and S01–S98 those of
//! `docs/upstream-endpointslices.md`.

use crate::context::{Context, Output};
use crate::types::Pod;

/// Whether `pod` may appear in the Endpoints of a Service with the given
/// `publishNotReadyAddresses`: terminal pods never, pods without any IP never, terminating pods
/// only when not-ready addresses are published.
pub fn is_eligible(pod: &Pod, publish_not_ready_addresses: bool) -> bool {
    if pod.phase == "Failed" || pod.phase == "Succeeded" {
        return false;
    }
    let has_ip = pod.pod_ip.as_deref().is_some_and(|ip| !ip.is_empty()) || !pod.pod_ips.is_empty();
    if !has_ip {
        return false;
    }
    !pod.terminating || publish_not_ready_addresses
}

/// Whether `pod` may appear in the output `ctx` computes. Slices keep terminating pods
/// whatever the Service publishes (R2.6); the Endpoints do not (spec §6).
pub fn is_eligible_for(ctx: &Context<'_>, pod: &Pod) -> bool {
    let publish = ctx.service.publish_not_ready_addresses || ctx.output == Output::EndpointSlices;
    is_eligible(pod, publish)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::fixtures::pod;

    #[test]
    fn terminal_phases_are_excluded_even_when_published() {
        for phase in ["Failed", "Succeeded"] {
            let mut p = pod("a", "10.0.0.1", true);
            p.phase = phase.into();
            assert!(!is_eligible(&p, true), "{phase}");
        }
        for phase in ["Pending", "Running", "Unknown", ""] {
            let mut p = pod("a", "10.0.0.1", false);
            p.phase = phase.into();
            assert!(is_eligible(&p, false), "{phase}");
        }
    }

    #[test]
    fn terminating_needs_publish_not_ready() {
        let mut p = pod("a", "10.0.0.1", true);
        p.terminating = true;
        assert!(!is_eligible(&p, false));
        assert!(is_eligible(&p, true));
    }

    #[test]
    fn no_ip_is_excluded_but_pod_ip_alone_is_enough() {
        let mut p = pod("a", "10.0.0.1", true);
        p.pod_ips.clear();
        assert!(is_eligible(&p, false));
        p.pod_ip = None;
        assert!(!is_eligible(&p, true));
    }
}
