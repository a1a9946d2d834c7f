//! Upstream behaviour plus 1.6 MB of initialised data, so the component is about 2 MB: the
//! size of a realistic policy with dependencies, for measuring how long a swap takes.

use weir_policy::types::{Decision, Request};

/// Non-zero, so it lands in a data segment (zeroed statics would take no space in the file).
static PAD: [u8; 1_600_000] = [0xa5; 1_600_000];

struct Big;

impl weir_policy::bindings::Guest for Big {
    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }

    fn reconcile(request: Request) -> Result<Decision, String> {
        // Reading through `black_box` keeps the whole array alive in the output.
        let pad = std::hint::black_box(&PAD);
        if pad[request.pods.len() % pad.len()] != 0xa5 {
            return Err("padding corrupted".into());
        }
        let policy: weir_policy::DefaultPolicy = weir_policy::parse_config(&request.config)?;
        weir_policy::reconcile(&policy, &request)
    }
}

weir_policy::bindings::export!(Big);
