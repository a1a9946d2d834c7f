//! The shadow guest (`--shadow-guest`), off the live sync's path.
//!
//! A live sync hands the shadow a copy of its request and of the decision it is about to
//! write, and goes on writing: the shadow is called later, on a task of its own, one call at
//! a time, from a queue of at most [`QUEUE`] syncs. That is its whole budget: a slow shadow
//! costs the workers nothing, and when its queue is full a sync's comparison is skipped
//! (`weir_shadow_comparisons_total{result="skipped"}`).
//!
//! A shadow that keeps running into its deadline is suspended ([`Suspension`]): after
//! [`SUSPEND_AFTER`] timeouts in a row it is not called for a backoff (30 s, doubling at
//! every suspension in a row up to 10 min); syncs meanwhile count as `result="suspended"`.
//! After the backoff the next sync is its trial: a call that does not time out ends the
//! suspension (and resets the backoff), one that times out suspends it again.

pub mod compare;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::metrics::{Metrics, ResultLabel};
use crate::model;
use crate::reconcile::validate::Action;
use crate::reconcile::validate_slices::SlicePlan;
use crate::runtime::{CallError, Guest};

/// Syncs that may wait for the shadow; beyond, comparisons are skipped.
pub const QUEUE: usize = 256;

/// Timeouts in a row that suspend the shadow.
pub const SUSPEND_AFTER: u32 = 3;

/// The first suspension's length; each further one in a row doubles it.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(30);

/// The longest suspension.
pub const MAX_BACKOFF: Duration = Duration::from_secs(600);

/// Whether the shadow may be called, from the outcomes of its calls (see the module docs).
#[derive(Debug, Clone)]
pub struct Suspension {
    timeouts_in_a_row: u32,
    until: Option<Instant>,
    next_backoff: Duration,
    suspensions: u64,
}

impl Default for Suspension {
    fn default() -> Self {
        Suspension {
            timeouts_in_a_row: 0,
            until: None,
            next_backoff: FIRST_BACKOFF,
            suspensions: 0,
        }
    }
}

impl Suspension {
    /// Whether a call may be made at `now`.
    pub fn admits(&self, now: Instant) -> bool {
        self.until.is_none_or(|until| now >= until)
    }

    /// Whether the last outcomes suspended the shadow (its trial not yet passed).
    pub fn is_suspended(&self) -> bool {
        self.until.is_some()
    }

    /// When the suspension ends (its trial may run), if suspended.
    pub fn until(&self) -> Option<Instant> {
        self.until
    }

    /// Suspensions so far.
    pub fn suspensions(&self) -> u64 {
        self.suspensions
    }

    /// Timeouts in a row so far.
    pub fn timeouts_in_a_row(&self) -> u32 {
        self.timeouts_in_a_row
    }

    /// Takes the outcome of a call that ended at `now`; returns the backoff when it suspends
    /// the shadow.
    pub fn record(&mut self, timed_out: bool, now: Instant) -> Option<Duration> {
        if !timed_out {
            *self = Suspension {
                suspensions: self.suspensions,
                ..Suspension::default()
            };
            return None;
        }
        self.timeouts_in_a_row = self.timeouts_in_a_row.saturating_add(1);
        if self.timeouts_in_a_row < SUSPEND_AFTER {
            return None;
        }
        let backoff = self.next_backoff;
        self.until = Some(now + backoff);
        self.next_backoff = (backoff * 2).min(MAX_BACKOFF);
        self.suspensions += 1;
        Some(backoff)
    }
}

/// One live sync's part for the shadow: its request, and what the live decision writes,
/// checked against the same stored state.
pub struct Job {
    /// The Service key.
    pub key: String,
    /// The Service's UID ("" when none).
    pub uid: String,
    /// The live guest's request (its configuration is replaced by the shadow's own, if any).
    pub request: model::Request,
    /// What the live decision does to the Endpoints.
    pub action: Action,
    /// What the live decision does to the EndpointSlices.
    pub plan: SlicePlan,
    /// The stored Endpoints the request's `current` shows.
    pub stored: Option<Arc<Endpoints>>,
    /// The stored EndpointSlices the request shows.
    pub stored_slices: Vec<Arc<EndpointSlice>>,
    /// The live guest's limit on addresses, which the shadow's decision is validated with.
    pub max_addresses: usize,
}

/// The shadow guest, its configuration, its queue and its suspension state.
pub struct Shadow {
    guest: Guest,
    config: Option<String>,
    jobs: mpsc::Sender<Job>,
    suspension: Mutex<Suspension>,
    metrics: Arc<Metrics>,
}

impl Shadow {
    /// The shadow `guest` (with `config`, or the live guest's when `None`), and the receiving
    /// end of its queue, for [`Shadow::run`].
    pub fn new(
        guest: Guest,
        config: Option<String>,
        metrics: Arc<Metrics>,
    ) -> (Shadow, mpsc::Receiver<Job>) {
        let (jobs, receiver) = mpsc::channel(QUEUE);
        metrics.shadow_suspended.set(0);
        let shadow = Shadow {
            guest,
            config,
            jobs,
            suspension: Mutex::new(Suspension::default()),
            metrics,
        };
        (shadow, receiver)
    }

    fn count(&self, result: &'static str) {
        self.metrics
            .shadow
            .get_or_create(&ResultLabel { result })
            .inc();
    }

    fn suspension(&self) -> std::sync::MutexGuard<'_, Suspension> {
        self.suspension.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `job` for the shadow without waiting: counted as `suspended` or `skipped`
    /// instead when the shadow is suspended or its queue is full.
    pub fn offer(&self, job: Job) {
        if !self.suspension().admits(Instant::now()) {
            self.count("suspended");
            return;
        }
        if self.jobs.try_send(job).is_err() {
            self.count("skipped");
        }
    }

    /// Calls the shadow for each queued job, one at a time, and hands `compare` its decision.
    /// Runs until the queue's sending end (the [`Shadow`]) is dropped.
    pub async fn run(
        self: Arc<Self>,
        mut jobs: mpsc::Receiver<Job>,
        compare: impl Fn(Job, Result<model::Decision, CallError>),
    ) {
        while let Some(mut job) = jobs.recv().await {
            // Suspended while it waited in the queue.
            if !self.suspension().admits(Instant::now()) {
                self.count("suspended");
                continue;
            }
            if let Some(config) = &self.config {
                job.request.config = config.clone();
            }
            let decision = self.guest.call(&job.request).await;
            self.settle(matches!(decision, Err(CallError::Timeout(_))));
            compare(job, decision);
        }
    }

    /// Takes a call's outcome into the suspension state and its metric.
    fn settle(&self, timed_out: bool) {
        let mut suspension = self.suspension();
        let was_suspended = suspension.is_suspended();
        if let Some(backoff) = suspension.record(timed_out, Instant::now()) {
            self.metrics.shadow_suspended.set(1);
            self.metrics.shadow_suspensions.inc();
            tracing::warn!(
                shadow = self.guest.digest(),
                timeouts = suspension.timeouts_in_a_row(),
                ?backoff,
                "shadow guest keeps timing out; suspended"
            );
        } else if was_suspended && !suspension.is_suspended() {
            self.metrics.shadow_suspended.set(0);
            tracing::info!(shadow = self.guest.digest(), "shadow guest resumed");
        }
    }

    /// The shadow's state as `/guest` shows it.
    pub fn info(&self) -> serde_json::Value {
        let suspension = self.suspension();
        let resumes_in = suspension.until().map(|until| {
            let left = until.saturating_duration_since(Instant::now());
            humantime::format_duration(Duration::from_secs(left.as_secs())).to_string()
        });
        serde_json::json!({
            "digest": self.guest.digest(),
            "suspended": suspension.is_suspended(),
            "timeoutsInARow": suspension.timeouts_in_a_row(),
            "suspensions": suspension.suspensions(),
            "trialIn": resumes_in,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_in_a_row_suspend_and_a_good_trial_resumes() {
        let t0 = Instant::now();
        let mut s = Suspension::default();
        // Timeouts that are not in a row never suspend.
        for _ in 0..10 {
            assert_eq!(s.record(true, t0), None);
            assert_eq!(s.record(false, t0), None);
        }
        assert!(s.admits(t0));
        assert_eq!(s.record(true, t0), None);
        assert_eq!(s.record(true, t0), None);
        assert_eq!(s.record(true, t0), Some(FIRST_BACKOFF));
        assert!(s.is_suspended());
        assert!(!s.admits(t0 + FIRST_BACKOFF - Duration::from_millis(1)));
        // The backoff over, one trial: it times out again, so the next backoff is longer.
        let trial = t0 + FIRST_BACKOFF;
        assert!(s.admits(trial));
        assert_eq!(s.record(true, trial), Some(FIRST_BACKOFF * 2));
        assert!(!s.admits(trial + FIRST_BACKOFF));
        // A trial that answers in time resumes, and the backoff starts again from the first.
        let trial = trial + FIRST_BACKOFF * 2;
        assert_eq!(s.record(false, trial), None);
        assert!(!s.is_suspended() && s.admits(trial));
        assert_eq!(s.suspensions(), 2);
        for _ in 0..SUSPEND_AFTER - 1 {
            assert_eq!(s.record(true, trial), None);
        }
        assert_eq!(s.record(true, trial), Some(FIRST_BACKOFF));
    }

    #[test]
    fn the_backoff_stops_growing_at_its_cap() {
        let mut now = Instant::now();
        let mut s = Suspension::default();
        let mut last = None;
        for _ in 0..SUSPEND_AFTER + 20 {
            if let Some(backoff) = s.record(true, now) {
                last = Some(backoff);
                now += backoff;
            }
        }
        assert_eq!(last, Some(MAX_BACKOFF));
    }
}
