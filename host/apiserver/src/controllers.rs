//! The background tasks that stand in for kube-controller-manager and the kubelet: each
//! wakes when the store records work for it and does that work under the store's lock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::resources;
use crate::shared::Shared;

/// Deletes the contents of terminating namespaces, `delay` after they were marked.
pub(crate) async fn namespaces(shared: Arc<Shared>, delay: Duration) {
    let mut rx = shared.lock().res[resources::NAMESPACES].tx.subscribe();
    while rx.changed().await.is_ok() {
        let terminating = shared.lock().res[resources::NAMESPACES]
            .objects
            .values()
            .any(|o| !o.value()["metadata"]["deletionTimestamp"].is_null());
        if !terminating {
            continue;
        }
        tokio::time::sleep(delay).await;
        if let Err(e) = shared.lock().finalize_namespaces() {
            tracing::warn!(error = %e.message, "namespace controller");
        }
    }
}

/// The garbage collector: wakes when the store records work and drains it.
pub(crate) async fn garbage_collector(shared: Arc<Shared>) {
    let wake = shared.lock().gc.waker();
    loop {
        wake.notified().await;
        shared.lock().collect_garbage();
    }
}

/// The emulated kubelet: sleeps until the next terminating pod is due, then removes it.
pub(crate) async fn kubelet(shared: Arc<Shared>) {
    let wake = shared.lock().kubelet.waker();
    loop {
        let next = shared.lock().kubelet_tick(Instant::now());
        match next {
            Some(at) => {
                let at = tokio::time::Instant::from_std(at);
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => {}
                    _ = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}
