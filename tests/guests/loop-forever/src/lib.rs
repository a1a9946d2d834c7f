//! A guest whose `reconcile` never returns. The host must interrupt it at the call deadline.

struct LoopForever;

impl weir_policy::bindings::Guest for LoopForever {
    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }

    fn reconcile(
        request: weir_policy::types::Request,
    ) -> Result<weir_policy::types::Decision, String> {
        // `black_box` keeps the optimiser from proving the loop side-effect free (and so from
        // turning it into an unreachable or removing the counter).
        let mut spins = request.pods.len() as u64;
        while std::hint::black_box(true) {
            spins = std::hint::black_box(spins.wrapping_add(1));
        }
        Err(format!("unreachable after {spins} spins"))
    }
}

weir_policy::bindings::export!(LoopForever);
