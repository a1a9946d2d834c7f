//! Upstream behaviour, except that for a Service labelled `weir.test/stall=true` it sleeps,
//! 10 ms at a time, forever. Each `std::thread::sleep` is a WASI monotonic-clock subscription
//! and a `poll`: time spent blocked in the host, which epoch interruption alone cannot stop.
//! The host must still end the call at its deadline.

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

struct Sleep;

impl weir_policy::bindings::Guest for Sleep {
    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }

    fn reconcile(request: Request) -> Result<Decision, String> {
        if marked(&request) {
            let mut naps = 0u64;
            while std::hint::black_box(true) {
                std::thread::sleep(std::time::Duration::from_millis(10));
                naps = naps.wrapping_add(1);
            }
            return Err(format!("unreachable after {naps} naps"));
        }
        let policy: weir_policy::DefaultPolicy = weir_policy::parse_config(&request.config)?;
        weir_policy::reconcile(&policy, &request)
    }
}

weir_policy::bindings::export!(Sleep);
