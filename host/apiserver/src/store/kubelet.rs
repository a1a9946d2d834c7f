//! The part of a kubelet that pod deletion depends on.
//!
//! In a cluster, deleting a pod that is bound to a node only marks it: kube-apiserver sets
//! `deletionTimestamp` (now + grace period) and `deletionGracePeriodSeconds`; the kubelet stops
//! the containers and then deletes the pod for good (grace period 0). Endpoint controllers act on
//! that terminating window. This module keeps the pods waiting for "their kubelet" and removes
//! each one when its grace period ends, or earlier when the server was configured with
//! `max_pod_grace_period` (as if the containers exited quickly on SIGTERM; the metadata still shows
//! the full grace period). Pod status is left as it is during termination.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::resources::PODS;
use crate::store::{DeleteOpts, Store};

/// Pods waiting for the emulated kubelet to finish terminating them.
#[derive(Debug, Default)]
pub(crate) struct KubeletState {
    /// `(namespace, name)` -> (when to remove, uid of the pod that was marked).
    pending: BTreeMap<(String, String), (Instant, String)>,
    /// Upper bound on how long a terminating pod stays.
    pub(crate) max_grace: Option<Duration>,
    wake: Arc<tokio::sync::Notify>,
}

impl KubeletState {
    pub(crate) fn waker(&self) -> Arc<tokio::sync::Notify> {
        self.wake.clone()
    }

    /// Schedules the final removal of a pod marked for graceful deletion `grace_seconds` ago.
    pub(crate) fn schedule(&mut self, ns: &str, name: &str, uid: &str, grace_seconds: i64) {
        let mut after = Duration::from_secs(u64::try_from(grace_seconds).unwrap_or(0));
        if let Some(max) = self.max_grace {
            after = after.min(max);
        }
        let due = Instant::now() + after;
        let key = (ns.to_string(), name.to_string());
        match self.pending.get(&key) {
            Some((d, u)) if *d <= due && u == uid => {}
            _ => {
                self.pending.insert(key, (due, uid.to_string()));
                self.wake.notify_one();
            }
        }
    }

    fn next_due(&self) -> Option<Instant> {
        self.pending.values().map(|(d, _)| *d).min()
    }
}

/// The grace period a pod deletion gets, as kube-apiserver computes it: the request's
/// `gracePeriodSeconds`, else the pod's `terminationGracePeriodSeconds`; 0 for pods not bound to
/// a node or already finished; a negative request means 1.
pub(crate) fn grace_period(pod: &Value, requested: Option<i64>) -> i64 {
    let mut period = requested
        .or_else(|| pod["spec"]["terminationGracePeriodSeconds"].as_i64())
        .unwrap_or(30);
    if pod["spec"]["nodeName"].as_str().is_none_or(str::is_empty) {
        period = 0;
    }
    if matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    ) {
        period = 0;
    }
    if period < 0 { 1 } else { period }
}

impl Store {
    /// Removes the pods whose time is up; returns when the next one is due.
    pub(crate) fn kubelet_tick(&mut self, now: Instant) -> Option<Instant> {
        let due: Vec<((String, String), String)> = self
            .kubelet
            .pending
            .iter()
            .filter(|(_, (d, _))| *d <= now)
            .map(|(k, (_, uid))| (k.clone(), uid.clone()))
            .collect();
        for (key, uid) in due {
            self.kubelet.pending.remove(&key);
            let (ns, name) = &key;
            let opts = DeleteOpts {
                uid: Some(uid),
                grace: Some(0),
                ..DeleteOpts::default()
            };
            // The pod may be gone already, or replaced (uid precondition): nothing to do then.
            if self.get(PODS, ns, name).is_some()
                && let Err(e) = self.delete(PODS, ns, name, &opts)
            {
                tracing::debug!(error = %e.message, name, "kubelet: final pod deletion");
            }
        }
        self.kubelet.next_due()
    }
}
