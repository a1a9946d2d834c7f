//! The [`Policy`] trait: upstream's sync as overridable steps, and [`reconcile`], which runs them.

use crate::address::Address;
use crate::ip::Family;
use crate::port::Port;
use crate::steps;
use crate::types::{
    Decision, EndpointAddress, EndpointPort, EndpointSubset, EndpointsDecision, Pod, Request,
    Service,
};

/// Which output the steps are computing. The shared hooks ([`Policy::select`],
/// [`Policy::address`], [`Policy::addresses`], [`Policy::ports`]) run once per output (and
/// per address type for slices); their defaults follow each output's own upstream controller
/// (`docs/upstream-endpointslices.md` §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The core/v1 Endpoints object.
    Endpoints,
    /// The discovery.k8s.io/v1 EndpointSlices of [`Context::family`].
    EndpointSlices,
}

/// What one reconcile knows: the request, the Service it is about, and which output and
/// address family is being computed.
pub struct Context<'a> {
    /// The whole request.
    pub request: &'a Request,
    /// The Service being reconciled (a reconcile without one never reaches the steps).
    pub service: &'a Service,
    /// The address family computed: for Endpoints the Service's primary IP family (spec
    /// §7.1), for slices the address type of the slices being built.
    pub family: Family,
    /// The output being computed.
    pub output: Output,
}

/// A pod's address and readiness, for either output. The address borrows the pod's own
/// strings until a policy edits it ([`Address::to_mut`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodAddress<'p> {
    /// The address (`ip`, `hostname`, `nodeName`, `targetRef`).
    pub address: Address<'p>,
    /// Whether the pod receives traffic: `addresses` rather than `notReadyAddresses` in the
    /// Endpoints, `conditions.ready` in a slice.
    pub ready: bool,
    /// `conditions.serving` in a slice (the pod is Ready, whether or not it terminates);
    /// unused by the Endpoints.
    pub serving: bool,
    /// `conditions.terminating` in a slice; unused by the Endpoints.
    pub terminating: bool,
}

/// One (address, port) pair before packing into subsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The address.
    pub address: EndpointAddress,
    /// Whether it is ready.
    pub ready: bool,
    /// The endpoint port, or `None` for a headless Service without ports.
    pub port: Option<EndpointPort>,
}

/// The desired subsets after the capacity step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capped {
    /// The subsets to write.
    pub subsets: Vec<EndpointSubset>,
    /// Whether addresses were dropped to fit the capacity (the over-capacity annotation).
    pub truncated: bool,
}

/// An endpoint policy. Every method defaults to upstream's behaviour (the matching function
/// in [`steps`]); override the ones your policy changes and call the default from inside when
/// you only adjust its result.
///
/// The steps run in this order for a Service that exists, is not `ExternalName` and has a
/// selector, once for the Endpoints and once per address type for the EndpointSlices (the
/// [`Context`] says which): [`select`](Policy::select) → per pod
/// [`address`](Policy::address) → [`addresses`](Policy::addresses) → per pod
/// [`ports`](Policy::ports); then for the Endpoints [`entries`](Policy::entries) →
/// [`pack`](Policy::pack) → [`capacity`](Policy::capacity) → [`decide`](Policy::decide), and
/// for the slices upstream's slice reconciler ([`steps::slices`]).
/// [`validate`](Policy::validate) runs first, on every request. An override of a shared hook
/// changes both outputs.
///
/// Which method to override:
///
/// | You want to | Override | Example |
/// |---|---|---|
/// | leave pods out entirely | [`select`](Policy::select) | `guest/examples/node-allowlist` |
/// | change whether a pod is ready | [`address`](Policy::address) | `guest/examples/drain-annotation` |
/// | decide from all pods together | [`addresses`](Policy::addresses) | `guest/examples/panic-threshold` |
/// | post-process the Endpoints only | [`entries`](Policy::entries) | |
/// | reject a bad configuration | [`validate`](Policy::validate) | every example |
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
///     fn select<'p>(&self, ctx: &Context<'_>, pods: &'p [Pod]) -> Vec<&'p Pod> {
///         let mut pods = weir_policy::steps::select::eligible(ctx, pods);
///         pods.retain(|pod| pod.label("example.com/hidden").is_none());
///         pods
///     }
/// }
///
/// use weir_policy::testing::{kv, pod, published, request, service};
/// let mut hidden = pod("b", "10.0.0.2", true);
/// hidden.labels.push(kv("example.com/hidden", ""));
/// let decision = weir_policy::reconcile(&Hide {}, &request(service(), vec![pod("a", "10.0.0.1", true), hidden])).unwrap();
/// assert_eq!(published(&decision).ready, ["a"]);
/// ```
///
/// A post-processing step over every entry (here: if nothing is ready, publish everything
/// as ready rather than an empty Service):
///
/// ```
/// use weir_policy::{Context, Entry, Policy};
///
/// #[derive(Default, serde::Deserialize)]
/// struct NeverEmpty {}
///
/// impl Policy for NeverEmpty {
///     fn entries(&self, _ctx: &Context<'_>, mut entries: Vec<Entry>) -> Vec<Entry> {
///         if !entries.iter().any(|e| e.ready) {
///             entries.iter_mut().for_each(|e| e.ready = true);
///         }
///         entries
///     }
/// }
///
/// use weir_policy::testing::{pod, published, request, service};
/// let req = request(service(), vec![pod("a", "10.0.0.1", false)]);
/// let decision = weir_policy::reconcile(&NeverEmpty {}, &req).unwrap();
/// assert_eq!(published(&decision).ready, ["a"]);
/// ```
pub trait Policy {
    /// Checks the configuration this policy was parsed from, before any step runs. An `Err`
    /// fails the reconcile with that message (the host retries the key and writes nothing), so
    /// a misconfigured policy is loud instead of quietly publishing the wrong addresses. The
    /// default accepts everything serde accepted.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }

    /// The pods that may appear (spec §6, R2.4–R2.7): not terminal, with an IP; terminating
    /// pods only in slices, or in the Endpoints when the Service publishes not-ready
    /// addresses.
    fn select<'p>(&self, ctx: &Context<'_>, pods: &'p [Pod]) -> Vec<&'p Pod> {
        steps::select::eligible(ctx, pods)
    }

    /// The pod's address and readiness (spec §7, §9; R2.11–R2.18), or `None` to leave the
    /// pod out (upstream: no IP of [`Context::family`]).
    fn address<'p>(&self, ctx: &Context<'_>, pod: &'p Pod) -> Option<PodAddress<'p>> {
        steps::address::for_pod(ctx, pod)
    }

    /// A last look at every pod's address together, before ports; upstream changes nothing.
    /// Policies that need the whole picture (a panic threshold) work here, for both outputs.
    fn addresses<'p>(
        &self,
        ctx: &Context<'_>,
        addresses: Vec<(&'p Pod, PodAddress<'p>)>,
    ) -> Vec<(&'p Pod, PodAddress<'p>)> {
        let _ = ctx;
        addresses
    }

    /// The endpoint ports the pod serves (spec §5.7, §8; R3). `None` in the list is a
    /// port-less entry (headless Service without ports); a slice gets the `Some` ports only,
    /// so a pod without any is kept there with `ports: []`. Each [`Port`] borrows its Service
    /// port's strings until a policy edits it ([`Port::to_mut`]).
    fn ports<'s>(&self, ctx: &Context<'s>, pod: &Pod) -> Vec<Option<Port<'s>>> {
        steps::ports::for_pod(ctx, pod)
    }

    /// A last look at every (address, port) entry of the Endpoints before packing; upstream
    /// changes nothing. Affects the Endpoints only; [`addresses`](Policy::addresses) affects
    /// both outputs.
    fn entries(&self, ctx: &Context<'_>, entries: Vec<Entry>) -> Vec<Entry> {
        let _ = ctx;
        entries
    }

    /// Packs entries into canonical subsets (spec §10).
    fn pack(&self, ctx: &Context<'_>, entries: Vec<Entry>) -> Vec<EndpointSubset> {
        let _ = ctx;
        steps::pack::repack(entries)
    }

    /// Truncates to the capacity of one Endpoints object (spec §12.5, §12.6).
    fn capacity(&self, ctx: &Context<'_>, subsets: Vec<EndpointSubset>) -> Capped {
        let _ = ctx;
        steps::capacity::truncate(subsets, crate::well_known::MAX_CAPACITY)
    }

    /// Compares with the current Endpoints and decides (spec §11, §12; weir's D1, D2).
    fn decide(&self, ctx: &Context<'_>, desired: Capped) -> EndpointsDecision {
        steps::decide::decide(ctx, desired)
    }
}

/// Upstream kube-controller-manager's endpoint controller, unchanged.
///
/// It takes no configuration: an empty config or `{}`; any field is refused, so a config meant
/// for another policy is not silently ignored.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultPolicy {}

impl Policy for DefaultPolicy {}

/// Runs `policy` on one request: the whole reconcile of one Service key (spec §5), for the
/// outputs the host manages.
pub fn reconcile(policy: &impl Policy, request: &Request) -> Result<Decision, String> {
    policy
        .validate()
        .map_err(|e| format!("invalid policy configuration: {e}"))?;
    let mut decision = Decision {
        endpoints: EndpointsDecision::None,
        slices: steps::slices::no_changes(),
        errors: Vec::new(),
        events: Vec::new(),
    };
    let Some(service) = request.service.as_ref() else {
        // Service gone: delete its Endpoints, whether or not any are cached (spec §5.2). Its
        // slices go with it through their ownerReference (R1.20).
        if request.manage.endpoints {
            decision.endpoints = EndpointsDecision::Delete;
        }
        return Ok(decision);
    };
    if service.namespace != request.namespace || service.name != request.name {
        return Err(format!(
            "request for {}/{} carries Service {}/{}",
            request.namespace, request.name, service.namespace, service.name
        ));
    }
    // ExternalName Services and Services without a selector are left alone (spec §5.3, §5.4;
    // R1.21, R1.22).
    if service.service_type == "ExternalName" || service.selector.is_none() {
        return Ok(decision);
    }
    if request.manage.endpoints {
        decision.endpoints = endpoints(policy, request, service);
    }
    if request.manage.endpoint_slices {
        let outcome = steps::slices::reconcile(policy, request, service);
        decision.slices = outcome.changes;
        decision.errors = outcome.errors;
        decision.events = outcome.events;
    }
    Ok(decision)
}

/// The Endpoints decision (spec §5–§12).
fn endpoints(policy: &impl Policy, request: &Request, service: &Service) -> EndpointsDecision {
    let ctx = Context {
        request,
        service,
        family: steps::address::primary_family(service),
        output: Output::Endpoints,
    };
    let pods = policy.select(&ctx, &request.pods);
    // Sized up front: an entry is a few hundred bytes, and growing a vector of them copies it.
    let mut addresses: Vec<(&Pod, PodAddress<'_>)> = Vec::with_capacity(pods.len());
    addresses.extend(
        pods.into_iter()
            .filter_map(|pod| Some((pod, policy.address(&ctx, pod)?))),
    );
    let addresses = policy.addresses(&ctx, addresses);
    let mut entries = Vec::with_capacity(addresses.len() * service.ports.len().max(1));
    for (pod, PodAddress { address, ready, .. }) in addresses {
        let ports = policy.ports(&ctx, pod);
        let last = ports.len().saturating_sub(1);
        let mut address = Some(address.into_owned());
        for (i, port) in ports.into_iter().enumerate() {
            // The last port takes the address itself; only the others need a copy.
            let address = if i == last {
                address.take()
            } else {
                address.clone()
            };
            if let Some(address) = address {
                entries.push(Entry {
                    address,
                    ready,
                    port: port.map(Port::into_owned),
                });
            }
        }
    }
    let entries = policy.entries(&ctx, entries);
    let subsets = policy.pack(&ctx, entries);
    let desired = policy.capacity(&ctx, subsets);
    policy.decide(&ctx, desired)
}
