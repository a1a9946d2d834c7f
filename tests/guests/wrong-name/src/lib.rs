//! Upstream behaviour, except that created or updated Endpoints are named for another Service
//! (`<name>-other`). The host's validation must refuse the decision.
//!
//! It wraps the whole reconcile rather than overriding `Policy::decide`, because the SDK does
//! not export the `Capped` type that `decide` takes.

use weir_policy::types::{Decision, EndpointsDecision, Request};

struct WrongName;

impl weir_policy::bindings::Guest for WrongName {
    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }

    fn reconcile(request: Request) -> Result<Decision, String> {
        let policy: weir_policy::DefaultPolicy = weir_policy::parse_config(&request.config)?;
        let mut decision = weir_policy::reconcile(&policy, &request)?;
        if let EndpointsDecision::Create(e) | EndpointsDecision::Update(e) = &mut decision.endpoints
        {
            e.name = format!("{}-other", e.name);
        }
        Ok(decision)
    }
}

weir_policy::bindings::export!(WrongName);
