//! Per-guest call outcomes, so a swap can be judged by how the new guest behaves.

use std::collections::HashMap;
use std::sync::Mutex;

/// Calls and failed calls (no usable decision) counted per guest digest.
#[derive(Debug, Default)]
pub struct CallHealth {
    counts: Mutex<HashMap<String, (u64, u64)>>,
}

impl CallHealth {
    /// Records one call of the guest `digest`; `fault` when it gave no usable decision: a
    /// trap, a timeout, the memory cap, an error it returned, or a decision validation
    /// refused. API failures are not the module's.
    pub fn record(&self, digest: &str, fault: bool) {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let entry = counts.entry(digest.to_string()).or_default();
        entry.0 += 1;
        entry.1 += u64::from(fault);
    }

    /// (calls, faults) of `digest` since it was last reset.
    pub fn get(&self, digest: &str) -> (u64, u64) {
        self.counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(digest)
            .copied()
            .unwrap_or_default()
    }

    /// Starts counting `digest` from zero (when it becomes active).
    pub fn reset(&self, digest: &str) {
        self.counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(digest.to_string(), (0, 0));
    }
}
