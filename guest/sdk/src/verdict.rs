//! [`Verdict`]: what a sync publishes for one pod.

use crate::address::Address;
use crate::types::Pod;

/// One pod's endpoint as a pass will publish it: upstream's decision, which the
/// [`verdict`](crate::Policy::verdict) and [`verdicts`](crate::Policy::verdicts) hooks may
/// change.
///
/// Upstream's values are the same in every pass that publishes the pod, so a policy that
/// decides from the pod alone need not ask which output it serves. For the Endpoints,
/// `ready` chooses between `addresses` and `notReadyAddresses`, and `serving` and
/// `terminating` are not written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict<'p> {
    /// The pod.
    pub pod: &'p Pod,
    /// Whether the pod is published; `false` leaves it out of this pass.
    pub include: bool,
    /// Whether the pod receives traffic: `addresses` rather than `notReadyAddresses` in the
    /// Endpoints, `conditions.ready` in a slice.
    pub ready: bool,
    /// `conditions.serving` in a slice: the pod is Ready, whether or not it terminates.
    pub serving: bool,
    /// `conditions.terminating` in a slice.
    pub terminating: bool,
    /// The address (`ip`, `hostname`, `nodeName`, `targetRef`). It reads the pod's own
    /// strings until a policy edits it ([`Address::to_mut`]).
    pub address: Address<'p>,
}
