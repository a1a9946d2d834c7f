//! Policies that decide a whole pass in one call: [`PassPolicy`] and [`reconcile_passes`].
//!
//! The [`Policy`] hooks are asked pod by pod, which is cheap inside one component but costs a
//! boundary crossing per pod when the hooks live in another component (a policy written in
//! Python or JavaScript, composed with weir's engine). A [`PassPolicy`] is given every
//! [`Candidate`] of a pass at once, with upstream's ports and endpoint for each, and answers
//! with one [`Choice`] per candidate. [`reconcile_passes`] runs upstream's algorithm with
//! those answers, so they mean exactly what the [`Policy`] hooks mean:
//!
//! | [`Policy`] hook | [`Choice`] field |
//! |---|---|
//! | [`include`](Policy::include) | [`include`](Choice::include) |
//! | [`ports`](Policy::ports) | [`ports`](Choice::ports) |
//! | [`verdict`](Policy::verdict), [`verdicts`](Policy::verdicts) | [`endpoint`](Choice::endpoint) |

use std::cell::RefCell;
use std::collections::HashMap;

use crate::address::{Address, TargetRef};
use crate::context::{Context, Output};
use crate::drive;
use crate::ip::Family;
use crate::policy::Policy;
use crate::port::Port;
use crate::steps;
use crate::types::{Decision, EndpointAddress, EndpointPort, Pod, Request};
use crate::verdict::Verdict;

/// A pod upstream would publish in a pass (not terminal, with an IP; terminating pods only in
/// slices or when the Service publishes not-ready addresses: spec §6, R2.4–R2.7), with
/// upstream's decision for it.
#[derive(Debug, Clone)]
pub struct Candidate<'r> {
    /// The pod.
    pub pod: &'r Pod,
    /// Its position in the request's pods, by which a policy in another component names it.
    pub index: usize,
    /// The ports upstream gives it, in Service port order (spec §5.7, §8; R3).
    pub ports: Vec<Port<'r>>,
    /// Upstream's endpoint for it, or `None` when it has no IP of the pass's family.
    pub verdict: Option<Verdict<'r>>,
}

/// The candidates of the pass `ctx` describes, in request order.
pub fn candidates<'r>(ctx: &Context<'r>) -> Vec<Candidate<'r>> {
    let pods: &'r [Pod] = &ctx.request.pods;
    pods.iter()
        .enumerate()
        .filter(|(_, pod)| steps::select::is_eligible_for(ctx, pod))
        .map(|(index, pod)| Candidate {
            pod,
            index,
            ports: steps::ports::for_pod(ctx, pod),
            verdict: steps::address::for_pod(ctx, pod),
        })
        .collect()
}

/// A policy's answer for one [`Candidate`]: what it changes of upstream's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// Whether the pod takes part at all ([`Policy::include`]).
    pub include: bool,
    /// The ports the pod serves ([`Policy::ports`]); `None` keeps upstream's.
    pub ports: Option<Vec<EndpointPort>>,
    /// The pod's endpoint ([`Policy::verdict`]); `None` keeps upstream's. `Some` only when
    /// the candidate's `verdict` is.
    pub endpoint: Option<Endpoint>,
}

/// The endpoint a [`Choice`] publishes for its pod: the fields of a [`Verdict`] a policy may
/// change, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Whether the pod is published in this pass after upstream placed it.
    pub include: bool,
    /// Ready to receive traffic.
    pub ready: bool,
    /// `conditions.serving` in a slice.
    pub serving: bool,
    /// `conditions.terminating` in a slice.
    pub terminating: bool,
    /// `ip`, `hostname`, `nodeName` and `targetRef`; `None` keeps upstream's.
    pub address: Option<EndpointAddress>,
}

impl Choice {
    /// The choice that changes nothing: upstream's ports and endpoint, included.
    pub const UNCHANGED: Choice = Choice {
        include: true,
        ports: None,
        endpoint: None,
    };
}

/// An endpoint policy that decides each pass of a sync in one call.
pub trait PassPolicy {
    /// Checks the policy's configuration before any pass ([`Policy::validate`]).
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }

    /// One [`Choice`] per candidate, in the same order ([`Choice::UNCHANGED`] for a candidate
    /// the policy leaves as upstream decided it). An `Err` fails the whole call.
    fn decide(
        &self,
        ctx: &Context<'_>,
        candidates: &[Candidate<'_>],
    ) -> Result<Vec<Choice>, String>;
}

/// Runs `policy` on one request as [`reconcile`](crate::reconcile) runs a [`Policy`]: the
/// same passes and upstream steps, with `policy` asked once per pass that has candidates.
/// Fails when `policy` fails, or when its answer does not fit the candidates (another count
/// of choices, or an endpoint where upstream gives none).
pub fn reconcile_passes(policy: &impl PassPolicy, request: &Request) -> Result<Decision, String> {
    let adapter = PassAdapter {
        policy,
        pass: RefCell::new(None),
        error: RefCell::new(None),
    };
    let decision = drive::reconcile(&adapter, request);
    match adapter.error.into_inner() {
        Some(error) => Err(error),
        None => decision,
    }
}

/// The choices of the pass being driven, found by pod.
struct Pass {
    output: Output,
    family: Family,
    /// Each candidate's choice, by the address of its pod in the request.
    choices: HashMap<usize, Choice>,
}

/// A [`PassPolicy`] as the per-pod [`Policy`] the drive asks: the first hook of a pass asks
/// for the whole pass, and each hook then applies the choice for its pod.
struct PassAdapter<'a, P> {
    policy: &'a P,
    pass: RefCell<Option<Pass>>,
    /// The first failure; once set, the hooks change nothing and the call fails with it.
    error: RefCell<Option<String>>,
}

/// A pod's key: its address, which is stable for the request's lifetime.
fn key(pod: &Pod) -> usize {
    std::ptr::from_ref(pod) as usize
}

impl<P: PassPolicy> PassAdapter<'_, P> {
    /// Runs `apply` on the choice for `pod` in the pass `ctx` describes, deciding the pass
    /// first when it is new. `None` after a failure.
    fn with_choice<T>(
        &self,
        ctx: &Context<'_>,
        pod: &Pod,
        apply: impl FnOnce(&Choice) -> T,
    ) -> Option<T> {
        if self.error.borrow().is_some() {
            return None;
        }
        let mut pass = self.pass.borrow_mut();
        let current = pass
            .as_ref()
            .is_some_and(|p| p.output == ctx.output && p.family == ctx.family);
        if !current {
            match self.decide(ctx) {
                Ok(decided) => *pass = Some(decided),
                Err(error) => {
                    *self.error.borrow_mut() = Some(error);
                    *pass = None;
                    return None;
                }
            }
        }
        let choice = pass.as_ref()?.choices.get(&key(pod));
        debug_assert!(choice.is_some(), "the drive asks only about candidates");
        choice.map(apply)
    }

    fn decide(&self, ctx: &Context<'_>) -> Result<Pass, String> {
        let candidates = candidates(ctx);
        let choices = self.policy.decide(ctx, &candidates)?;
        check(ctx, &candidates, &choices)?;
        Ok(Pass {
            output: ctx.output,
            family: ctx.family,
            choices: candidates.iter().map(|c| key(c.pod)).zip(choices).collect(),
        })
    }
}

/// Whether `choices` answer `candidates`: one each, with an endpoint only where upstream
/// gives one.
fn check(
    ctx: &Context<'_>,
    candidates: &[Candidate<'_>],
    choices: &[Choice],
) -> Result<(), String> {
    let pass = match ctx.output {
        Output::Endpoints => "Endpoints".to_string(),
        Output::EndpointSlices => format!("{:?} EndpointSlices", ctx.family),
    };
    if choices.len() != candidates.len() {
        return Err(format!(
            "the policy answered the {pass} pass with {} choices for {} candidates; it must \
             return one choice per candidate, in order",
            choices.len(),
            candidates.len()
        ));
    }
    for (i, (candidate, choice)) in candidates.iter().zip(choices).enumerate() {
        let pod = candidate.pod;
        if candidate.verdict.is_none() && choice.endpoint.is_some() {
            return Err(format!(
                "the policy's choice {i} (Pod {}/{}) in the {pass} pass has an endpoint, but \
                 the pod has no IP of the pass's family; change an endpoint only where the \
                 candidate has one",
                pod.namespace, pod.name
            ));
        }
    }
    Ok(())
}

impl<P: PassPolicy> Policy for PassAdapter<'_, P> {
    fn validate(&self) -> Result<(), String> {
        self.policy.validate()
    }

    fn include(&self, ctx: &Context, pod: &Pod) -> bool {
        self.with_choice(ctx, pod, |c| c.include).unwrap_or(true)
    }

    fn verdict(&self, ctx: &Context, verdict: &mut Verdict) {
        let pod = verdict.pod;
        self.with_choice(ctx, pod, |choice| {
            let Some(endpoint) = &choice.endpoint else {
                return;
            };
            verdict.include = endpoint.include;
            verdict.ready = endpoint.ready;
            verdict.serving = endpoint.serving;
            verdict.terminating = endpoint.terminating;
            // An unchanged address stays borrowed from the pod, as the drive prefers.
            if let Some(address) = &endpoint.address
                && !reads_as(&verdict.address, address)
            {
                verdict.address = Address::from(address.clone());
            }
        });
    }

    fn ports(&self, ctx: &Context, pod: &Pod, ports: &mut Vec<Port>) {
        self.with_choice(ctx, pod, |choice| {
            let Some(chosen) = &choice.ports else {
                return;
            };
            // Unchanged ports stay borrowed from the Service, as the drive prefers.
            let same = chosen.len() == ports.len()
                && ports
                    .iter()
                    .zip(chosen)
                    .all(|(upstream, chosen)| port_reads_as(upstream, chosen));
            if !same {
                *ports = chosen.iter().cloned().map(Port::from).collect();
            }
        });
    }
}

/// Whether `address` reads as `owned`, without copying either.
fn reads_as(address: &Address<'_>, owned: &EndpointAddress) -> bool {
    address.ip() == owned.ip
        && address.hostname() == owned.hostname
        && address.node_name() == owned.node_name.as_deref()
        && address.target_ref() == owned.target_ref.as_ref().map(TargetRef::of)
}

/// Whether `port` reads as `owned`, without copying either.
fn port_reads_as(port: &Port<'_>, owned: &EndpointPort) -> bool {
    port.port() == owned.port
        && port.name() == owned.name
        && port.protocol() == owned.protocol
        && port.app_protocol() == owned.app_protocol.as_deref()
}

#[cfg(test)]
mod tests;
