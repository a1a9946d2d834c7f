//! The [`Policy`] trait: the hooks a policy overrides to change upstream's decisions.

use crate::context::Context;
use crate::port::Port;
use crate::types::Pod;
use crate::verdict::Verdict;

/// An endpoint policy. Upstream's controllers decide first; each hook is handed their
/// decision and changes what the policy wants changed. Every hook defaults to changing
/// nothing, so a policy overrides only the hooks it needs:
///
/// | You want to | Override | Example |
/// |---|---|---|
/// | reject a bad configuration | [`validate`](Policy::validate) | every example |
/// | leave pods out, as if the selector missed them | [`include`](Policy::include) | `guest/examples/node-allowlist` |
/// | mark a pod not ready, or change its address | [`verdict`](Policy::verdict) | `guest/examples/drain-annotation` |
/// | decide from all pods together | [`verdicts`](Policy::verdicts) | `guest/examples/panic-threshold` |
/// | choose the ports a pod serves | [`ports`](Policy::ports) | |
///
/// A sync of a Service that exists, is not `ExternalName` and has a selector makes one pass
/// for the Endpoints and one per address type for the EndpointSlices. Each pass runs
/// [`include`](Policy::include) and [`ports`](Policy::ports) on the pods upstream would
/// publish, [`verdict`](Policy::verdict) on each pod upstream gives an address, then
/// [`verdicts`](Policy::verdicts) once on them all. The [`Context`] says which pass it is;
/// upstream's values already follow that output's rules, so a hook that decides from the pod
/// alone does the same in every pass without asking. [`validate`](Policy::validate) runs
/// first, once per call.
///
/// A filter, in full:
///
/// ```
/// use weir_policy::{Context, Policy, types::Pod};
///
/// /// Upstream behaviour, without pods labelled `example.com/hidden`.
/// #[derive(Default, serde::Deserialize)]
/// struct Hide {}
///
/// impl Policy for Hide {
///     fn include(&self, _ctx: &Context, pod: &Pod) -> bool {
///         pod.label("example.com/hidden").is_none()
///     }
/// }
///
/// use weir_policy::testing::{kv, pod, published, request, service};
/// let mut hidden = pod("b", "10.0.0.2", true);
/// hidden.labels.push(kv("example.com/hidden", ""));
/// let req = request(service(), vec![pod("a", "10.0.0.1", true), hidden]);
/// let decision = weir_policy::reconcile(&Hide {}, &req).unwrap();
/// assert_eq!(published(&decision).ready, ["a"]);
/// ```
///
/// A decision over every pod (here: if none is ready, publish them all as ready rather than
/// leave the Service without endpoints):
///
/// ```
/// use weir_policy::{Context, Policy, Verdict};
///
/// #[derive(Default, serde::Deserialize)]
/// struct NeverEmpty {}
///
/// impl Policy for NeverEmpty {
///     fn verdicts(&self, _ctx: &Context, verdicts: &mut [Verdict]) {
///         if !verdicts.iter().any(|v| v.ready) {
///             verdicts.iter_mut().for_each(|v| v.ready = true);
///         }
///     }
/// }
///
/// use weir_policy::testing::{pod, published, request, service};
/// let req = request(service(), vec![pod("a", "10.0.0.1", false)]);
/// let decision = weir_policy::reconcile(&NeverEmpty {}, &req).unwrap();
/// assert_eq!(published(&decision).ready, ["a"]);
/// ```
pub trait Policy {
    /// Checks the configuration this policy was parsed from, before any hook runs. An `Err`
    /// fails the call with that message (the host retries the key and writes nothing), so a
    /// misconfigured policy is loud instead of quietly publishing the wrong addresses. The
    /// default accepts everything serde accepted.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }

    /// Whether `pod` takes part at all; `false` leaves it out as if the Service's selector did
    /// not match it (no endpoint, no port group, no missing-Node error). Asked only about pods
    /// upstream would publish (spec §6, R2.4–R2.7: not terminal, with an IP; terminating
    /// pods only in slices or when the Service publishes not-ready addresses).
    fn include(&self, ctx: &Context, pod: &Pod) -> bool {
        let _ = (ctx, pod);
        true
    }

    /// Changes one pod's endpoint: its readiness, serving and terminating conditions, its
    /// address fields, or `include = false` to leave it out after upstream placed it (its
    /// port group stays, as for a pod upstream places without an endpoint). Upstream's values
    /// come in (spec §7, §9; R2.11–R2.18); a pod without an IP of [`Context::family`] is not
    /// asked about.
    fn verdict(&self, ctx: &Context, verdict: &mut Verdict) {
        let _ = (ctx, verdict);
    }

    /// Changes the endpoints of one pass together, after [`verdict`](Policy::verdict) (which
    /// left out the pods it excluded). For decisions over the whole set, such as a panic
    /// threshold; [`Context::output`] and [`Context::family`] say which set this is.
    fn verdicts(&self, ctx: &Context, verdicts: &mut [Verdict]) {
        let _ = (ctx, verdicts);
    }

    /// Changes the ports `pod` serves. Upstream's come in: each Service port the pod resolves
    /// (spec §5.7, §8; R3), in Service port order. Each [`Port`] reads its Service port's
    /// strings until a policy edits it ([`Port::to_mut`]); add one with [`Port::from`]. A pod
    /// left without ports is kept in the slices with `ports: []`, and in the Endpoints only
    /// when the Service is headless and declares no ports (a port-less entry).
    fn ports(&self, ctx: &Context, pod: &Pod, ports: &mut Vec<Port>) {
        let _ = (ctx, pod, ports);
    }
}

/// Upstream kube-controller-manager's endpoint and EndpointSlice controllers, unchanged.
///
/// It takes no configuration: an empty config or `{}`; any field is refused, so a config meant
/// for another policy is not silently ignored.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultPolicy {}

impl Policy for DefaultPolicy {}
