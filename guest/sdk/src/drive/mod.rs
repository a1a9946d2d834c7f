//! The drivers: they run upstream's steps for each output and call the policy's hooks in
//! between. [`reconcile`] is the whole call.

mod endpoints;
mod slices;

use crate::context::Context;
use crate::policy::Policy;
use crate::port::Port;
use crate::steps;
use crate::types::{Decision, EndpointsDecision, Pod, Request};
use crate::verdict::Verdict;

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
        decision.endpoints = endpoints::decide(policy, request, service);
    }
    if request.manage.endpoint_slices {
        let outcome = slices::reconcile(policy, request, service);
        decision.slices = outcome.changes;
        decision.errors = outcome.errors;
        decision.events = outcome.events;
    }
    Ok(decision)
}

/// The pods of the request that take part in this pass: those upstream publishes that the
/// policy [includes](Policy::include), in request order.
fn selected<'r>(policy: &impl Policy, ctx: &Context<'r>) -> Vec<&'r Pod> {
    let pods: &'r [Pod] = &ctx.request.pods;
    pods.iter()
        .filter(|pod| steps::select::is_eligible_for(ctx, pod) && policy.include(ctx, pod))
        .collect()
}

/// `pod`'s verdict after the policy's [`verdict`](Policy::verdict) hook, or `None` when
/// upstream gives it no address or the hook left it out.
fn verdict<'p>(policy: &impl Policy, ctx: &Context<'_>, pod: &'p Pod) -> Option<Verdict<'p>> {
    let mut verdict = steps::address::for_pod(ctx, pod)?;
    policy.verdict(ctx, &mut verdict);
    verdict.include.then_some(verdict)
}

/// `pod`'s ports after the policy's [`ports`](Policy::ports) hook.
fn ports<'s>(policy: &impl Policy, ctx: &Context<'s>, pod: &Pod) -> Vec<Port<'s>> {
    let mut ports = steps::ports::for_pod(ctx, pod);
    policy.ports(ctx, pod, &mut ports);
    ports
}
