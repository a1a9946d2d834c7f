//! weir's hooks engine: upstream's endpoint and EndpointSlice controllers (the `weir-policy`
//! SDK's drive) as a component of world `weir:hooks/engine@0.1.0`. It exports the ordinary
//! `weir:endpoints@0.2.0` functions and imports `weir:hooks/policy@0.1.0`, the hooks a policy
//! in any language exports; `weir policy build` composes the two into one guest.
//!
//! Each pass of a sync asks the hooks once ([`weir_policy::batch`]): `decide` gets every
//! candidate pod with upstream's ports and endpoint, and its choices are checked against the
//! candidates before upstream's steps use them.

use weir_policy::batch::{self, Candidate, Choice, PassPolicy};
use weir_policy::types::{Decision, Request};
use weir_policy::{Context, Family, Output};

/// Bindings generated from `wit/hooks/v0.1` (world `engine`). The `weir:endpoints` records
/// and the log import are the SDK's own, so the drive's values cross without conversion.
#[allow(missing_docs, clippy::all, unsafe_code)]
mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/hooks/v0.1",
        world: "engine",
        with: {
            "weir:endpoints/types@0.2.0": weir_policy::bindings::weir::endpoints::types,
            "weir:endpoints/log@0.2.0": weir_policy::bindings::weir::endpoints::log,
        },
    });

    use super::Engine;
    export!(Engine with_types_in self);
}

use bindings::weir::hooks::policy as hooks;

/// The policy behind the imported hooks, for one call.
struct Hooks<'c> {
    /// The request's configuration, handed to the hooks as it came.
    config: &'c str,
}

impl PassPolicy for Hooks<'_> {
    fn validate(&self) -> Result<(), String> {
        hooks::validate_config(self.config)
    }

    fn decide(
        &self,
        ctx: &Context<'_>,
        candidates: &[Candidate<'_>],
    ) -> Result<Vec<Choice>, String> {
        let pass = hooks::Pass {
            output: match ctx.output {
                Output::Endpoints => hooks::Output::Endpoints,
                Output::EndpointSlices => hooks::Output::EndpointSlices,
            },
            family: match ctx.family {
                Family::V4 => hooks::Family::Ipv4,
                Family::V6 => hooks::Family::Ipv6,
            },
            service: ctx.service.clone(),
            config: self.config.to_owned(),
        };
        let asked: Vec<hooks::Candidate> = candidates.iter().map(to_hooks).collect();
        let choices =
            hooks::decide(&pass, &asked).map_err(|e| format!("the policy's decide failed: {e}"))?;
        Ok(choices.into_iter().map(from_hooks).collect())
    }
}

/// A candidate as the hooks receive it.
fn to_hooks(candidate: &Candidate<'_>) -> hooks::Candidate {
    hooks::Candidate {
        pod: candidate.pod.clone(),
        ports: candidate
            .ports
            .iter()
            .cloned()
            .map(weir_policy::Port::into_owned)
            .collect(),
        verdict: candidate.verdict.as_ref().map(|v| hooks::Verdict {
            include: v.include,
            ready: v.ready,
            serving: v.serving,
            terminating: v.terminating,
            address: v.address.clone().into_owned(),
        }),
    }
}

/// The hooks' answer for one candidate, as the drive applies it.
fn from_hooks(choice: hooks::Choice) -> Choice {
    Choice {
        include: choice.include,
        ports: choice.ports,
        endpoint: choice.verdict.map(|v| batch::Endpoint {
            include: v.include,
            ready: v.ready,
            serving: v.serving,
            terminating: v.terminating,
            address: v.address,
        }),
    }
}

/// The component's exports.
struct Engine;

impl bindings::Guest for Engine {
    fn validate_config(config: String) -> Result<(), String> {
        Hooks { config: &config }.validate()
    }

    fn reconcile(request: Request) -> Result<Decision, String> {
        batch::reconcile_passes(
            &Hooks {
                config: &request.config,
            },
            &request,
        )
    }
}

weir_policy::arena_allocator!();
