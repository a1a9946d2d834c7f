//! The workers and the periodic work around them: each worker takes a key, syncs it and
//! records the result (retry with backoff, or forget); the resync and the re-check after an
//! API server reset queue every Service again; the start-up sweep queues leftovers (spec §3, §4).

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::controller::handle::Handle;
use crate::controller::ledger::{Ledger, Requeue};
use crate::controller::sync::{SyncError, Syncer};
use crate::metrics::{ResultLabel, WriteLabels};
use crate::queue::Retry;

/// Enqueues every cached Endpoints without the leader-election annotation, and allows deleting
/// those without a Service, so they get deleted (spec §4). This is the only time weir deletes
/// Endpoints it did not see a Service for. Returns how many were enqueued.
pub fn sweep_leftovers(handle: &Handle, ledger: &Ledger) -> usize {
    let mut n = 0;
    for (k, leader) in handle.cache.endpoints_keys() {
        if !leader {
            if !handle.cache.has_service(&k) {
                ledger.deletes.owe(&k);
            }
            handle.queue.add(k);
            n += 1;
        }
    }
    n
}

/// Queues every managed Service, and every key whose Endpoints still wait for deletion.
/// Nothing on a standby.
pub fn enqueue_everything(handle: &Handle, ledger: &Ledger) -> usize {
    if !handle.gate.is_leading() {
        return 0;
    }
    let owed = ledger.deletes.keys();
    let n = owed.len();
    for k in owed {
        handle.enqueue(k);
    }
    n + handle.enqueue_all()
}

/// Queues every Service again after `period` to twice `period` (random, so replicas and
/// restarts spread out), for ever: a key dropped after its retries, or a change an event did not
/// report, gets another sync (upstream informers' resync, spec §3.6).
pub async fn resync(handle: Handle, ledger: Arc<Ledger>, period: Duration) {
    if period.is_zero() {
        return;
    }
    loop {
        tokio::time::sleep(period.mul_f64(1.0 + fastrand::f64())).await;
        let n = enqueue_everything(&handle, &ledger);
        tracing::debug!(keys = n, "periodic resync");
    }
}

/// Once the caches are consistent again after a reset, checks every Service, as at start:
/// the relists queued what changed, but a key whose sync was refused meanwhile is owed one.
pub async fn recheck_after_resets(handle: Handle, ledger: Arc<Ledger>) {
    // Epochs, not the gate's state: a reset that closed and reopened the gate between two
    // looks is still seen.
    let mut epochs = handle.consistency.subscribe_epochs();
    while epochs.changed().await.is_ok() {
        handle.consistency.opened().await;
        let n = enqueue_everything(&handle, &ledger);
        tracing::info!(
            keys = n,
            "consistent view of the API server again; checking every Service"
        );
    }
}

/// Takes keys from the queue and syncs each, until the queue shuts down. `slice_delay` is
/// how long a slice event waits before its Service's sync (R1.15).
pub async fn worker(
    syncer: Arc<Syncer>,
    handle: Handle,
    slice_delay: Duration,
    shutdown: CancellationToken,
) {
    let metrics = &handle.metrics;
    while let Some(k) = handle.queue.get().await {
        // No sync starts from caches that may mix two API servers (see `consistency`).
        if !handle.consistency.is_open() {
            tokio::select! {
                _ = handle.consistency.opened() => {}
                _ = shutdown.cancelled() => {
                    handle.queue.done(&k);
                    return;
                }
            }
        }
        let started = std::time::Instant::now();
        let result = syncer.sync(&k).await;
        requeue_held(&handle, &syncer.ledger, &k, slice_delay);
        if matches!(result, Err(SyncError::Inconsistent(_))) {
            // A reset came during the sync: it waits for the gate again, without a retry
            // counted against it.
            tracing::debug!(key = %k, "sync abandoned: the API server was reset during it");
            handle.queue.add(k.clone());
            handle.queue.done(&k);
            continue;
        }
        metrics
            .sync_duration
            .observe(started.elapsed().as_secs_f64());
        let write = |action, result| {
            metrics
                .writes
                .get_or_create(&WriteLabels { action, result })
                .inc();
        };
        let sync_result = match &result {
            Ok(_) => "success",
            Err(e) => e.result_label(),
        };
        metrics
            .syncs
            .get_or_create(&ResultLabel {
                result: sync_result,
            })
            .inc();
        match result {
            // Its Endpoints write, if any, was logged and counted by the sync.
            Ok(_) => handle.queue.forget(&k),
            Err(e) => {
                if let SyncError::Write { action, .. } = &e {
                    write(action, "error");
                }
                record_failure(&handle, &k, &e)
            }
        }
        handle.queue.done(&k);
    }
}

/// Queues `key` again when a watch event held while its sync wrote turned out to be someone
/// else's change (`ledger::held`): at once for Endpoints, after `slice_delay` for a slice.
pub(super) fn requeue_held(handle: &Handle, ledger: &Ledger, key: &str, slice_delay: Duration) {
    match ledger.take_requeue(key) {
        Some(Requeue::Now) => handle.enqueue(key.to_string()),
        Some(Requeue::AfterSliceDelay) => handle.enqueue_after(key.to_string(), slice_delay),
        None => {}
    }
}

fn record_failure(handle: &Handle, k: &str, e: &SyncError) {
    match handle.queue.retry_or_drop(k.to_string()) {
        // Right after weir's own write the watch has often not delivered it yet; the event
        // that does queues the key again. Routine under churn (counted as `stale` in
        // `weir_syncs_total`), so not a warning; one that exhausts its retries still is.
        Retry::Scheduled(delay) if e.is_stale() => {
            tracing::debug!(key = %k, reason = %e, retry_in = ?delay, "sync deferred until the cache catches up")
        }
        Retry::Scheduled(delay) => {
            tracing::warn!(key = %k, error = %e, retry_in = ?delay, "sync failed")
        }
        Retry::Dropped { requeues } => {
            handle.metrics.keys_dropped.inc();
            tracing::error!(key = %k, error = %e, requeues, "dropping service out of the queue");
        }
    }
}
