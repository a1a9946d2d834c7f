//! Upstream behaviour, except that it panics for a Service labelled `weir.test/trap=true`.
//! Tests use it to fault one key while the same guest keeps serving the others.

use weir_policy::types::{Decision, Request};

/// The label that makes this guest trap.
const TRAP_LABEL: (&str, &str) = ("weir.test/trap", "true");

struct TrapOnLabel;

impl weir_policy::bindings::Guest for TrapOnLabel {
    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }

    fn reconcile(request: Request) -> Result<Decision, String> {
        let marked = request.service.as_ref().is_some_and(|s| {
            s.labels
                .iter()
                .any(|l| l.key == TRAP_LABEL.0 && l.value == TRAP_LABEL.1)
        });
        if marked {
            panic!(
                "weir-test-trap-on-label: {}/{} carries {}={}",
                request.namespace, request.name, TRAP_LABEL.0, TRAP_LABEL.1
            );
        }
        let policy: weir_policy::DefaultPolicy = weir_policy::parse_config(&request.config)?;
        weir_policy::reconcile(&policy, &request)
    }
}

weir_policy::bindings::export!(TrapOnLabel);
