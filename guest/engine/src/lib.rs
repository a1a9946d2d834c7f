//! weir's hooks engine: upstream's endpoint and EndpointSlice controllers (the `weir-policy`
//! SDK's drive) as a component of world `weir:hooks/engine@0.2.0`. It exports the ordinary
//! `weir:endpoints@0.2.0` functions and imports `weir:hooks/policy@0.2.0`, the hooks a policy
//! in any language exports; `weir policy build` composes the two into one guest.
//!
//! A sync asks the hooks `configure` (what the policy reads), then `begin` with the pods as
//! columns of only those reads ([`reads`]), then `decide` once per pass
//! ([`weir_policy::batch`]) with a byte per pod; the changes it answers are checked against
//! the candidates before upstream's steps use them.

mod reads;

use std::cell::{Cell, RefCell};

use weir_policy::batch::{self, Candidate, Choice, PassPolicy};
use weir_policy::types::{Decision, Request};
use weir_policy::{Context, Family, Output, Port};

/// Bindings generated from `wit/hooks/v0.2` (world `engine`). The `weir:endpoints` records
/// and the log import are the SDK's own, so the drive's values cross without conversion.
#[allow(missing_docs, clippy::all, unsafe_code)]
mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/hooks/v0.2",
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

/// Bits of a pod's byte in a pass (`candidates` in `wit/hooks/v0.2/hooks.wit`).
const ENDPOINT_PRESENT: u8 = 1;
const ENDPOINT_READY: u8 = 2;
const ENDPOINT_SERVING: u8 = 4;
const ENDPOINT_TERMINATING: u8 = 8;
const CANDIDATE: u8 = 16;

/// The policy behind the imported hooks, for one call.
struct Hooks<'r> {
    request: &'r Request,
    /// What `configure` said the policy reads; set by [`PassPolicy::validate`], which the
    /// drive calls before any pass.
    reads: RefCell<Option<hooks::Reads>>,
    /// Whether `begin` was called for this sync: at the first pass, so a sync without passes
    /// sends no pods.
    begun: Cell<bool>,
}

impl<'r> Hooks<'r> {
    fn new(request: &'r Request) -> Self {
        Hooks {
            request,
            reads: RefCell::new(None),
            begun: Cell::new(false),
        }
    }

    /// Sends the sync to the hooks, once, with the pods trimmed to what the policy reads.
    fn begin(&self, ctx: &Context<'_>, reads: &hooks::Reads) {
        if self.begun.replace(true) {
            return;
        }
        let sync = hooks::Sync {
            service: ctx.service.clone(),
            config: self.request.config.clone(),
            pods: reads::columns(&self.request.pods, reads),
        };
        hooks::begin(&sync);
    }
}

impl PassPolicy for Hooks<'_> {
    fn validate(&self) -> Result<(), String> {
        let reads = hooks::configure(&self.request.config)?;
        *self.reads.borrow_mut() = Some(reads);
        Ok(())
    }

    fn decide(
        &self,
        ctx: &Context<'_>,
        candidates: &[Candidate<'_>],
    ) -> Result<Vec<Choice>, String> {
        let reads = self.reads.borrow();
        let reads = reads.as_ref().ok_or("the hooks were not configured")?;
        self.begin(ctx, reads);
        let pass = hooks::Pass {
            output: match ctx.output {
                Output::Endpoints => hooks::Output::Endpoints,
                Output::EndpointSlices => hooks::Output::EndpointSlices,
            },
            family: match ctx.family {
                Family::V4 => hooks::Family::Ipv4,
                Family::V6 => hooks::Family::Ipv6,
            },
        };
        let pods = self.request.pods.len();
        let asked = to_hooks(candidates, pods, reads);
        let changes =
            hooks::decide(pass, &asked).map_err(|e| format!("the policy's decide failed: {e}"))?;
        choices(changes, candidates, pods)
    }
}

/// A pass as the hooks receive it: one entry per request pod (`pods` of them), each candidate
/// at its `index`.
fn to_hooks(candidates: &[Candidate<'_>], pods: usize, reads: &hooks::Reads) -> hooks::Candidates {
    let mut bits = vec![0u8; pods];
    let mut ports = if reads.ports {
        vec![Vec::new(); pods]
    } else {
        Vec::new()
    };
    let mut addresses = if reads.addresses {
        vec![None; pods]
    } else {
        Vec::new()
    };
    for c in candidates {
        let i = c.index;
        bits[i] = CANDIDATE
            | c.verdict.as_ref().map_or(0, |v| {
                ENDPOINT_PRESENT
                    | if v.ready { ENDPOINT_READY } else { 0 }
                    | if v.serving { ENDPOINT_SERVING } else { 0 }
                    | if v.terminating {
                        ENDPOINT_TERMINATING
                    } else {
                        0
                    }
            });
        if reads.ports {
            ports[i] = c.ports.iter().cloned().map(Port::into_owned).collect();
        }
        if reads.addresses {
            addresses[i] = c.verdict.as_ref().map(|v| v.address.clone().into_owned());
        }
    }
    hooks::Candidates {
        pods: bits,
        ports,
        addresses,
    }
}

/// One choice per candidate from the hooks' sparse changes, which name pods by their index
/// among the request's `pods`; an error for a change that names no candidate or a candidate
/// changed twice.
fn choices(
    changes: Vec<hooks::Change>,
    candidates: &[Candidate<'_>],
    pods: usize,
) -> Result<Vec<Choice>, String> {
    // Each request pod's position among the candidates, if it is one.
    let mut position = vec![None; pods];
    for (i, c) in candidates.iter().enumerate() {
        position[c.index] = Some(i);
    }
    let mut choices = vec![None; candidates.len()];
    for change in changes {
        let Some(&Some(i)) = position.get(change.pod as usize) else {
            return Err(format!(
                "the policy changed pod {}, which is not a candidate of this pass",
                change.pod
            ));
        };
        if choices[i].is_some() {
            return Err(format!(
                "the policy changed pod {} twice; answer at most one change per candidate",
                change.pod
            ));
        }
        choices[i] = Some(Choice {
            include: change.include,
            ports: change.ports,
            endpoint: change.endpoint.map(|e| batch::Endpoint {
                include: e.publish,
                ready: e.ready,
                serving: e.serving,
                terminating: e.terminating,
                address: e.address,
            }),
        });
    }
    Ok(choices
        .into_iter()
        .map(|c| c.unwrap_or(Choice::UNCHANGED))
        .collect())
}

/// The component's exports.
struct Engine;

impl bindings::Guest for Engine {
    fn validate_config(config: String) -> Result<(), String> {
        hooks::configure(&config).map(drop)
    }

    fn reconcile(request: Request) -> Result<Decision, String> {
        batch::reconcile_passes(&Hooks::new(&request), &request)
    }
}

weir_policy::arena_allocator!();

#[cfg(test)]
mod tests;
