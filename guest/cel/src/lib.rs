//! weir's built-in CEL policy (`builtin:cel`): upstream's endpoint and EndpointSlice
//! controllers, with the endpoint rules written as CEL expressions in the configuration
//! instead of Rust.
//!
//! ```yaml
//! params: {annotation: weir.dev/drain}
//! variables:
//!   - name: draining
//!     expression: "params.annotation in pod.metadata.annotations"
//! ready: "endpoint.ready && !variables.draining"
//! ```
//!
//! The configuration is modelled on a ValidatingAdmissionPolicy: `params` (free-form values),
//! `variables` (evaluated in order for each pod, visible as `variables.NAME`) and four optional
//! rules, each defaulting to upstream's value: `include` (keep the pod as an endpoint at all),
//! `ready`, `serving` and `terminating`. Expressions see `service`, `pod`, `node` (`null` when
//! unknown) and `endpoint` (upstream's decision), with Kubernetes' JSON field names
//! ([`object`]). `docs/policy-authoring.md` §10 is the operator's guide.

pub mod check;
pub mod config;
pub mod library;
pub mod object;
pub mod parse;
pub mod plan;
pub mod policy;
pub mod projection;
pub mod scope;
pub mod syntax;
pub mod variable;

use weir_policy::types::{Decision, Request};

fn invalid(message: impl std::fmt::Display) -> String {
    format!("invalid policy configuration: {message}")
}

/// `validate-config`: the configuration parses, every expression compiles, and every rule
/// gives a bool for a synthetic pod ([`check::check`]).
pub fn validate_config(config: &str) -> Result<(), String> {
    let config = config::compile_checked(config).map_err(invalid)?;
    check::check(&config).map_err(invalid)
}

/// `reconcile`: the request's configuration compiled, then upstream's steps with its rules.
pub fn reconcile(request: &Request) -> Result<Decision, String> {
    let config = config::compile(&request.config).map_err(invalid)?;
    policy::reconcile(&config, request)
}

struct Component;

impl weir_policy::bindings::Guest for Component {
    fn validate_config(config: String) -> Result<(), String> {
        validate_config(&config)
    }

    fn reconcile(request: Request) -> Result<Decision, String> {
        reconcile(&request)
    }
}

weir_policy::bindings::export!(Component);

// Each instance serves one call and is dropped: the arena never needs to free.
weir_policy::arena_allocator!();
