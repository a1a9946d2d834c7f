//! Upstream behaviour, except that its writes are for another Service (`<name>-other`): the
//! created or updated Endpoints by default, or, with the configuration `slices`, the
//! `kubernetes.io/service-name` label of every created or updated EndpointSlice. The host's
//! validation must refuse either decision.
//!
//! It wraps the whole reconcile rather than overriding `Policy::decide`, because the SDK does
//! not export the `Capped` type that `decide` takes.

use weir_policy::types::{Decision, EndpointsDecision, Request};

/// The label that names a slice's Service.
const SERVICE_NAME: &str = "kubernetes.io/service-name";

struct WrongName;

impl weir_policy::bindings::Guest for WrongName {
    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }

    fn reconcile(mut request: Request) -> Result<Decision, String> {
        let slices_only =
            request.config.trim() == "\"slices\"" || request.config.trim() == "slices";
        // The configuration picks what to break; the default policy takes none.
        request.config.clear();
        let policy: weir_policy::DefaultPolicy = weir_policy::parse_config(&request.config)?;
        let mut decision = weir_policy::reconcile(&policy, &request)?;
        if slices_only {
            let written = decision.slices.create.iter_mut();
            for slice in written.chain(decision.slices.update.iter_mut()) {
                for label in slice.labels.iter_mut().filter(|l| l.key == SERVICE_NAME) {
                    label.value = format!("{}-other", label.value);
                }
            }
        } else if let EndpointsDecision::Create(e) | EndpointsDecision::Update(e) =
            &mut decision.endpoints
        {
            e.name = format!("{}-other", e.name);
        }
        Ok(decision)
    }
}

weir_policy::bindings::export!(WrongName);
