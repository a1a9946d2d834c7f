//! Upstream behaviour, except that for a Service labelled `weir.test/stall=true` it
//! busy-waits for a second to pass on the monotonic clock. The host's clocks are frozen, so the
//! second never passes: the host must stop the spin at the call deadline.

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

struct ClockSpin;

impl weir_policy::bindings::Guest for ClockSpin {
    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }

    fn reconcile(request: Request) -> Result<Decision, String> {
        if marked(&request) {
            let started = std::time::Instant::now();
            let mut reads = 0u64;
            while started.elapsed() < std::time::Duration::from_secs(1) {
                reads = std::hint::black_box(reads.wrapping_add(1));
            }
            return Err(format!("a second passed after {reads} clock reads"));
        }
        let policy: weir_policy::DefaultPolicy = weir_policy::parse_config(&request.config)?;
        weir_policy::reconcile(&policy, &request)
    }
}

weir_policy::bindings::export!(ClockSpin);
