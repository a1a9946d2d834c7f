//! What a sync ends with: the outcome it reports, or the error that sends its key back to the
//! queue.

use crate::controller::watch::consistency::Inconsistent;
use crate::controller::writer::WriteError;
use crate::reconcile::validate::Violation;
use crate::reconcile::validate_slices::SliceViolation;
use crate::runtime::CallError;

/// Why a sync failed; the key goes back to the queue with backoff.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The key is not `namespace/name`.
    #[error("malformed key {0:?}")]
    BadKey(String),
    /// The cached Endpoints are older than our own last write (spec §5.9, §13.5).
    #[error("endpoints informer cache is out of date for {0} (resourceVersion {1})")]
    StaleCache(String, String),
    /// The guest failed.
    #[error(transparent)]
    Guest(#[from] CallError),
    /// The guest's decision was written but reported problems (for example a pod skipped
    /// because its Node is missing, R2.10); the key is retried.
    #[error("guest reported: {0}")]
    Decision(String),
    /// The guest's decision broke the contract.
    #[error(transparent)]
    Invalid(#[from] Violation),
    /// The cached EndpointSlices are older than weir's own last writes (upstream R6.4).
    #[error("endpointslice informer cache is out of date for {0}")]
    StaleSlices(String),
    /// The caches may mix two API servers' state, or a reset came since they were read: the
    /// sync writes nothing and waits for a consistent view.
    #[error(transparent)]
    Inconsistent(#[from] Inconsistent),
    /// The guest's slice changes broke the contract.
    #[error(transparent)]
    InvalidSlices(#[from] SliceViolation),
    /// The API server refused or failed a slice write.
    #[error("{action} of an endpoint slice of {key} failed: {source}")]
    SliceWrite {
        /// `create`, `update` or `delete`.
        action: &'static str,
        /// The Service key.
        key: String,
        /// Refused by the leader-election gate, or the API error.
        source: WriteError,
    },
    /// The API server refused or failed a write.
    #[error("{action} of endpoints {key} failed: {source}")]
    Write {
        /// `create`, `update` or `delete`.
        action: &'static str,
        /// The key.
        key: String,
        /// Refused by the leader-election gate, or the API error.
        source: WriteError,
    },
}

impl SyncError {
    /// Whether the guest misbehaved (trap, timeout, memory): what rollback counts.
    pub fn is_guest_fault(&self) -> bool {
        matches!(self, SyncError::Guest(e) if e.is_fault())
    }

    /// Whether either output's cache predates weir's own write (spec §5.9, R1.26, R1.29): an
    /// expected wait for the watch, not a fault.
    pub fn is_stale(&self) -> bool {
        matches!(self, SyncError::StaleCache(..) | SyncError::StaleSlices(_))
    }

    /// The `result` label of `weir_syncs` for a failed sync: `stale` for [`is_stale`]
    /// failures, `error` otherwise.
    ///
    /// [`is_stale`]: SyncError::is_stale
    pub fn result_label(&self) -> &'static str {
        if self.is_stale() { "stale" } else { "error" }
    }

    /// The `result` label of `weir_guest_calls` for a call that gave no usable decision.
    pub fn call_result_label(&self) -> &'static str {
        match self {
            SyncError::Guest(CallError::Guest(_)) => "error",
            SyncError::Guest(CallError::Timeout(_)) => "timeout",
            SyncError::Guest(CallError::OutOfMemory(_)) => "out_of_memory",
            SyncError::Guest(CallError::Trap(_)) => "trap",
            _ => "invalid",
        }
    }
}

/// What a successful sync did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncOutcome {
    /// Nothing to write, or the Service is not weir's to manage.
    Unchanged,
    /// Created, updated or deleted (or would have, in a dry run).
    Written(&'static str),
    /// Create refused because the namespace is terminating: dropped, as upstream does.
    NamespaceTerminating,
}
