//! The slice path's counters: handles of [`Metrics`]' `weir_endpointslice_*` families, and the
//! once-per-guest note that a guest cannot render slices.

use std::sync::{Arc, Mutex};

use prometheus_client::metrics::counter::Counter;

use crate::metrics::Metrics;
use crate::reconcile::validate_slices::Refusal;
use crate::runtime::Guest;

/// Event reason for a slice write that failed (upstream's).
pub const FAILED_TO_UPDATE: &str = "FailedToUpdateEndpointSlices";
/// Event reason for a guest decision weir refused to write.
pub const REFUSED: &str = "RefusedEndpointSliceDecision";

/// Counters of the slice path.
#[derive(Debug, Clone, Default)]
pub struct SliceStats {
    /// Slices created.
    pub creates: Counter,
    /// Slices updated.
    pub updates: Counter,
    /// Slices deleted.
    pub deletes: Counter,
    /// Syncs refused because the slice cache predates weir's own writes.
    pub stale: Counter,
    /// Guest slice decisions refused, per [`Refusal`] (in [`Refusal::ALL`] order).
    pub refused: [Counter; Refusal::ALL.len()],
    /// Guests made active that cannot render the EndpointSlices `--manage` asks for.
    pub unsupported_guests: Counter,
    /// Digest of the last guest reported as unable to render slices (reported once).
    noted_digest: Arc<Mutex<Option<String>>>,
}

impl SliceStats {
    /// The handles registered in `metrics`.
    pub fn registered(metrics: &Metrics) -> Self {
        let change = |operation| metrics.slice_change(operation);
        SliceStats {
            creates: change("create"),
            updates: change("update"),
            deletes: change("delete"),
            stale: metrics.slice_stale_syncs.clone(),
            refused: Refusal::ALL.map(|r| metrics.slice_refusal(r.as_str())),
            unsupported_guests: metrics.guest_slices_unsupported.clone(),
            noted_digest: Arc::default(),
        }
    }

    /// Refusals counted for `reason`.
    pub fn refused(&self, reason: Refusal) -> u64 {
        self.refusal_counter(reason).get()
    }

    /// The counter of refusals for `reason`.
    pub fn refusal_counter(&self, reason: Refusal) -> &Counter {
        let i = Refusal::ALL.iter().position(|r| *r == reason).unwrap_or(0);
        &self.refused[i]
    }

    /// Says once per guest, in the log and a counter, that the active guest cannot render
    /// the EndpointSlices `--manage` asked for.
    pub fn note_no_slices(&self, guest: &Guest) {
        let mut noted = self.noted_digest.lock().unwrap_or_else(|e| e.into_inner());
        if noted.as_deref() != Some(guest.digest()) {
            *noted = Some(guest.digest().to_string());
            self.unsupported_guests.inc();
            tracing::warn!(
                digest = guest.digest(),
                world = %guest.world(),
                "--manage asks for EndpointSlices, but the guest targets weir:endpoints@0.1.0 and renders Endpoints only; EndpointSlices are left as they are until a 0.2.0 guest is active"
            );
        }
    }
}
