//! Which resourceVersions this server can serve, as kube-apiserver's watch cache decides it
//! (docs/apiserver.md, "resourceVersions it cannot serve").
//!
//! - Older than the oldest event kept (the history starts where the server started, and
//!   shrinks as it fills): a watch, an `Exact` list or a continue token from there gets
//!   `410 Gone`, never a replay of a history the client did not follow.
//! - Ahead of the server (a client that followed another server with more history): a list,
//!   or a watch-list (`sendInitialEvents=true`), waits up to [`BLOCK_TIMEOUT`] for the server
//!   to catch up, then gets `504 Timeout` with a `ResourceVersionTooLarge` cause. A plain watch
//!   starts and waits for events after that resourceVersion, as kube-apiserver's does.

use std::time::Duration;

use serde_json::json;

use crate::shared::Shared;
use crate::store::Store;
use crate::util::ApiError;

/// How long a request for a resourceVersion ahead of the server waits for it (kube-apiserver's
/// watch cache `blockTimeout`).
pub(crate) const BLOCK_TIMEOUT: Duration = Duration::from_secs(3);

/// How often a waiting request looks at the store's resourceVersion. The store has no signal
/// for "any resource changed" (each resource has its own), and the wait is short and rare.
const POLL: Duration = Duration::from_millis(20);

/// kube-apiserver's answer to a resourceVersion it has not reached (storage's
/// `NewTooLargeResourceVersionError`): 504 Timeout, retry after a second.
pub(crate) fn too_large(requested: u64, current: u64) -> ApiError {
    let mut e = ApiError::new(
        504,
        "Timeout",
        format!("Timeout: Too large resource version: {requested}, current: {current}"),
    )
    .with_details(json!({
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]
    }));
    e.retry_after = Some(1);
    e
}

/// Waits until the store has reached `requested`, at most [`BLOCK_TIMEOUT`].
pub(crate) async fn wait_until_fresh(sh: &Shared, requested: u64) -> Result<(), ApiError> {
    let deadline = tokio::time::Instant::now() + BLOCK_TIMEOUT;
    loop {
        let current = sh.lock().rv;
        if current >= requested {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(too_large(requested, current));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether the current state of resource `r` is its state at `requested`: nothing of `r`
/// changed since, and that is known (`requested` is within the kept history). An `Exact` list
/// at any other resourceVersion asks for a snapshot this server does not keep.
pub(crate) fn check_exact(store: &Store, r: usize, requested: u64) -> Result<(), ApiError> {
    match store.events_since(r, requested) {
        Ok(events) if events.is_empty() => Ok(()),
        _ => Err(ApiError::expired(
            "The resourceVersion for the provided list is too old.",
        )),
    }
}

/// A continue token's snapshot must still be within the kept history (kube-apiserver: the
/// token's resourceVersion was compacted).
pub(crate) fn check_continue(store: &Store, r: usize, snapshot: u64) -> Result<(), ApiError> {
    if snapshot < store.compacted(r) {
        return Err(ApiError::expired(
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
        ));
    }
    Ok(())
}

/// The resourceVersion a list or watch asks for: `None` for "any" (empty or `0`).
pub(crate) fn requested(q: &std::collections::BTreeMap<String, String>) -> Option<u64> {
    q.get("resourceVersion")
        .filter(|v| !v.is_empty() && *v != "0")
        .and_then(|v| v.parse().ok())
}
