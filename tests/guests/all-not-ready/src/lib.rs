//! A policy visibly different from upstream: every address is published as not ready.
//! Hot-swap tests use it to see that the swap changed the Endpoints.

use weir_policy::types::Pod;
use weir_policy::{Context, PodAddress, Policy};

#[derive(Default, serde::Deserialize)]
struct AllNotReady {}

impl Policy for AllNotReady {
    fn address<'p>(&self, ctx: &Context<'_>, pod: &'p Pod) -> Option<PodAddress<'p>> {
        let mut address = weir_policy::steps::address::for_pod(ctx, pod)?;
        address.ready = false;
        Some(address)
    }
}

weir_policy::export_policy!(AllNotReady);
