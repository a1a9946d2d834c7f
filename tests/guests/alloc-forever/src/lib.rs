//! A guest whose `reconcile` allocates without bound. The host must stop it at the memory cap.

struct AllocForever;

/// Grows in 1 MiB steps so the memory cap, not some allocator limit, is what stops it.
const CHUNK: usize = 1 << 20;

impl weir_policy::bindings::Guest for AllocForever {
    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }

    fn reconcile(
        request: weir_policy::types::Request,
    ) -> Result<weir_policy::types::Decision, String> {
        let mut chunks: Vec<Vec<u8>> = Vec::new();
        loop {
            // Filling each chunk touches every page, so the memory is really used.
            let fill = (chunks.len() as u8).wrapping_add(request.pods.len() as u8) | 1;
            chunks.push(vec![fill; CHUNK]);
            std::hint::black_box(&chunks);
        }
    }
}

weir_policy::bindings::export!(AllocForever);
