//! A policy visibly different from upstream: every address is published as not ready.
//! Hot-swap tests use it to see that the swap changed the Endpoints.

use weir_policy::{Context, Policy, Verdict};

#[derive(Default, serde::Deserialize)]
struct AllNotReady {}

impl Policy for AllNotReady {
    fn verdict(&self, _ctx: &Context, verdict: &mut Verdict) {
        verdict.ready = false;
    }
}

weir_policy::export_policy!(AllNotReady);
weir_policy::arena_allocator!();
