//! A guest whose `reconcile` panics. The host must report a trap carrying the panic message.

struct Trap;

impl weir_policy::bindings::Guest for Trap {
    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }

    fn reconcile(
        request: weir_policy::types::Request,
    ) -> Result<weir_policy::types::Decision, String> {
        panic!(
            "weir-test-trap: deliberate panic reconciling {}/{}",
            request.namespace, request.name
        );
    }
}

weir_policy::bindings::export!(Trap);
