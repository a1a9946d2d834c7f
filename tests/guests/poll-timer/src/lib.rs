//! Upstream behaviour, except that for a Service labelled `weir.test/stall=true` it
//! subscribes to a one-hour timer and polls it: one WASI call that would block for an hour.
//! The host must end the call at its deadline.

use weir_policy::types::{Decision, Request};

/// The label that makes this guest stall; other Services get upstream behaviour.
const STALL_LABEL: (&str, &str) = ("weir.test/stall", "true");

fn marked(request: &Request) -> bool {
    request.service.as_ref().is_some_and(|s| {
        s.labels
            .iter()
            .any(|l| l.key == STALL_LABEL.0 && l.value == STALL_LABEL.1)
    })
}

struct PollTimer;

impl weir_policy::bindings::Guest for PollTimer {
    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }

    fn reconcile(request: Request) -> Result<Decision, String> {
        if marked(&request) {
            let hour = wasip2::clocks::monotonic_clock::subscribe_duration(3_600_000_000_000);
            let ready = wasip2::io::poll::poll(&[&hour]);
            return Err(format!("the hour passed: {ready:?}"));
        }
        let policy: weir_policy::DefaultPolicy = weir_policy::parse_config(&request.config)?;
        weir_policy::reconcile(&policy, &request)
    }
}

weir_policy::bindings::export!(PollTimer);
