//! Upstream behaviour, except for labelled Services: `weir.test/fail=error` makes it return an
//! error, and `weir.test/fail=invalid` a decision for another Service's Endpoints (which the
//! host's validation refuses). Neither is a trap: tests use it to show that rollback counts
//! every call that gave no usable decision.

use weir_policy::types::{Decision, EndpointsDecision, Request};

const FAIL_LABEL: &str = "weir.test/fail";

struct FailOnLabel;

impl weir_policy::bindings::Guest for FailOnLabel {
    fn validate_config(config: String) -> Result<(), String> {
        weir_policy::parse_config::<weir_policy::DefaultPolicy>(&config)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn reconcile(request: Request) -> Result<Decision, String> {
        let how = request.service.as_ref().and_then(|s| {
            s.labels
                .iter()
                .find(|l| l.key == FAIL_LABEL)
                .map(|l| l.value.clone())
        });
        let policy: weir_policy::DefaultPolicy = weir_policy::parse_config(&request.config)?;
        match how.as_deref() {
            Some("error") => Err(format!(
                "weir-test-fail-on-label: refusing {}/{}",
                request.namespace, request.name
            )),
            // Always a decision to write, even when the stored Endpoints are right: what
            // it would create from scratch, under another Service's name.
            Some("invalid") => {
                let fresh = Request {
                    current: None,
                    ..request
                };
                let mut decision = weir_policy::reconcile(&policy, &fresh)?;
                match &mut decision.endpoints {
                    EndpointsDecision::Create(e) => {
                        e.name = format!("{}-other", e.name);
                        Ok(decision)
                    }
                    other => Err(format!("expected a create, got {other:?}")),
                }
            }
            _ => weir_policy::reconcile(&policy, &request),
        }
    }
}

weir_policy::bindings::export!(FailOnLabel);
