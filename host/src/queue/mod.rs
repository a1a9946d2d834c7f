//! A client-go-style rate-limited work queue for reconcile keys.
//!
//! The endpoints controller turns watch events into Service keys
//! (`"namespace/name"`) and reconciles them from a few worker tasks. The
//! upstream kube-controller-manager does this with client-go's
//! `workqueue.TypedRateLimitingInterface`, and this module reproduces the
//! semantics that controller relies on:
//!
//! * **dirty + processing sets**: a key is never handed to two workers at
//!   once; adding a queued key is a no-op (FIFO otherwise); adding a key that
//!   is being processed marks it dirty, and [`WorkQueue::done`] re-queues it
//!   exactly once.
//! * **delayed adds** that keep the *earliest* due time per key.
//! * **rate-limited retries**: the delay is the max of a per-key exponential
//!   backoff and a shared token bucket (client-go's
//!   `DefaultTypedControllerRateLimiter`), with a retry budget
//!   ([`DEFAULT_MAX_RETRIES`]) after which the key is dropped.
//!
//! # Why hand-written
//!
//! No well-kept Rust crate offers this combination. `kube-runtime`'s
//! `scheduler` deduplicates delayed messages but has no per-key failure
//! backoff or shared limiter (kube-rs issue #1916), and its `Controller`
//! owns the watch/reconcile loop in a shape that does not fit a controller
//! whose reconcile logic lives in a hot-swappable Wasm component. Generic
//! delay-queue crates lack the dirty/processing bookkeeping, which is the
//! part that is easy to get subtly wrong. The whole thing is one mutex-guarded
//! state machine plus two [`Notify`]s, so it is small enough to own.
//!
//! # Design
//!
//! * All state sits behind one `std::sync::Mutex` that is never held across
//!   an `.await`; lock poisoning is recovered from rather than propagated,
//!   because every critical section leaves the state usable.
//! * Delayed keys live in a min-heap of `(due, seq, key)` plus a map of each
//!   key's live entry. Lowering a key's due time pushes a new heap entry and
//!   leaves the old one stale (skipped when popped, compacted when the heap
//!   gets large), which avoids an indexed heap.
//! * One background Tokio task sleeps until the earliest due time (on Tokio's
//!   clock, so paused-clock tests work) and moves due keys to the ready
//!   queue. It is spawned when the queue is created inside a runtime, or
//!   lazily by the first delayed add / `get` that runs inside one, and ends on
//!   shut down or when the last handle is dropped.
//!
//! The module is split by concern: [`state`] holds the dirty/processing sets and the delayed
//! adds, [`rate_limit`] the per-key backoff and the shared token bucket, and this file the
//! handle that workers and event handlers use plus the task that promotes delayed keys.

mod rate_limit;
mod state;

use std::fmt;
use std::hash::Hash;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics::QueueMetrics;

pub use rate_limit::{DEFAULT_MAX_RETRIES, RateLimiterConfig};
use state::State;

/// Bounds every queue key must satisfy (the controller uses `String`).
pub trait QueueKey: Clone + Eq + Hash + Send + Sync + 'static {}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> QueueKey for T {}

/// Outcome of [`WorkQueue::retry_or_drop`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// The key was re-added after this rate-limited delay.
    Scheduled(Duration),
    /// The retry budget was spent; the key's failure count was reset and it
    /// was not re-added.
    Dropped {
        /// Retries the key had used when it was dropped.
        requeues: u32,
    },
}

/// Point-in-time counters for metrics export (client-go's workqueue metrics,
/// with durations as running sums so they can be exported as
/// `_sum`/`_count` pairs without a histogram dependency).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Adds that queued a key, i.e. not coalesced into an existing entry.
    pub adds_total: u64,
    /// Calls to [`WorkQueue::add_rate_limited`] (including via
    /// [`WorkQueue::retry_or_drop`]).
    pub retries_total: u64,
    /// Keys ready to be handed out (same as [`WorkQueue::len`]).
    pub depth: usize,
    /// Keys currently held by workers.
    pub processing: usize,
    /// Keys waiting for a delayed add to fire.
    pub delayed: usize,
    /// Keys handed out by [`WorkQueue::get`].
    pub gets_total: u64,
    /// Sum over handed-out keys of the time from being queued to `get`.
    pub queue_latency_total: Duration,
    /// Calls to [`WorkQueue::done`] that finished a processing key.
    pub dones_total: u64,
    /// Sum over finished keys of the time from `get` to `done`.
    pub work_duration_total: Duration,
}

/// A cheaply cloneable, rate-limited work queue of keys with client-go
/// workqueue semantics; see the [module docs](self).
pub struct WorkQueue<K> {
    owner: Arc<Owner<K>>,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        Self {
            owner: Arc::clone(&self.owner),
        }
    }
}

impl<K> fmt::Debug for WorkQueue<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.owner.shared.lock();
        f.debug_struct("WorkQueue")
            .field("depth", &st.queue.len())
            .field("processing", &st.processing.len())
            .field("delayed", &st.waiting.len())
            .field("shutting_down", &st.shutting_down)
            .finish()
    }
}

impl<K: QueueKey> Default for WorkQueue<K> {
    fn default() -> Self {
        Self::new(RateLimiterConfig::default())
    }
}

impl<K: QueueKey> WorkQueue<K> {
    /// Creates an empty queue. Inside a Tokio runtime this spawns the delay
    /// task; outside one the task is spawned by the first delayed add or
    /// `get` that runs inside a runtime.
    pub fn new(config: RateLimiterConfig) -> Self {
        Self::with_metrics(config, QueueMetrics::default())
    }

    /// Like [`new`](Self::new), reporting to `metrics` (client-go's workqueue metrics).
    pub fn with_metrics(config: RateLimiterConfig, metrics: QueueMetrics) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(config, metrics)),
            ready: Notify::new(),
            timer: Notify::new(),
            drained: Notify::new(),
            timer_started: AtomicBool::new(false),
        });
        let queue = Self {
            owner: Arc::new(Owner { shared }),
        };
        queue.ensure_timer();
        queue
    }

    /// Queues `key` now. Coalesced if already queued; if a worker holds it,
    /// it is re-queued when that worker calls [`done`](Self::done). Ignored
    /// after shut down.
    pub fn add(&self, key: K) {
        let shared = &self.owner.shared;
        let pushed = shared.lock().add(key, Instant::now());
        if pushed {
            shared.ready.notify_one();
        }
    }

    /// Queues `key` after `delay`. If the key is already waiting, the earlier
    /// due time wins. A zero delay is an immediate [`add`](Self::add).
    pub fn add_after(&self, key: K, delay: Duration) {
        self.ensure_timer();
        let shared = &self.owner.shared;
        let wake = shared.lock().add_after(key, delay, Instant::now());
        shared.wake(wake);
    }

    /// Queues `key` after the rate limiter's delay (max of its exponential
    /// backoff and the shared token bucket) and returns that delay. Counts a
    /// failure for the key even after shut down, when the add is ignored.
    pub fn add_rate_limited(&self, key: K) -> Duration {
        self.ensure_timer();
        let (delay, wake) = {
            let mut st = self.owner.shared.lock();
            st.add_rate_limited(key, Instant::now())
        };
        self.owner.shared.wake(wake);
        delay
    }

    /// Retries `key` with [`add_rate_limited`](Self::add_rate_limited) unless
    /// it has used its retry budget ([`RateLimiterConfig::max_retries`]), in
    /// which case it is [forgotten](Self::forget) and dropped. Mirrors the
    /// upstream controller's `handleErr`; logging is left to the caller,
    /// which knows the error.
    pub fn retry_or_drop(&self, key: K) -> Retry {
        self.ensure_timer();
        let (retry, wake) = {
            let mut st = self.owner.shared.lock();
            let requeues = st.limiter.num_requeues(&key);
            if requeues < st.limiter.config.max_retries {
                let (delay, wake) = st.add_rate_limited(key, Instant::now());
                (Retry::Scheduled(delay), wake)
            } else {
                st.limiter.forget(&key);
                (Retry::Dropped { requeues }, Wake::default())
            }
        };
        self.owner.shared.wake(wake);
        retry
    }

    /// Resets `key`'s failure count, so its next backoff starts at the base
    /// delay. Call after a successful reconcile.
    pub fn forget(&self, key: &K) {
        self.owner.shared.lock().limiter.forget(key);
    }

    /// How many rate-limited retries `key` has had since it was last
    /// forgotten.
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.owner.shared.lock().limiter.num_requeues(key)
    }

    /// Waits for a key and marks it as processing; the caller must call
    /// [`done`](Self::done) with it. Returns `None` once the queue is shut
    /// down (after [`shut_down_with_drain`](Self::shut_down_with_drain):
    /// once nothing is queued or processing). Cancel-safe.
    pub async fn get(&self) -> Option<K> {
        self.ensure_timer();
        let shared = &self.owner.shared;
        loop {
            // Register before checking, so a notification sent between the
            // check and the await is not lost.
            let mut notified = pin!(shared.ready.notified());
            notified.as_mut().enable();
            let (outcome, more) = {
                let mut st = shared.lock();
                let outcome = st.try_get(Instant::now());
                (outcome, !st.queue.is_empty())
            };
            if let Some(key) = outcome {
                // Pass the wake-up on: Notify coalesces permits, so one
                // notify_one per add is not a guarantee one waiter per key.
                if more {
                    shared.ready.notify_one();
                }
                return key;
            }
            notified.await;
        }
    }

    /// Marks `key` as no longer processing. If it was added meanwhile, it is
    /// queued again (once). No-op for keys not being processed.
    pub fn done(&self, key: &K) {
        let shared = &self.owner.shared;
        let (requeued, drained) = shared.lock().done(key, Instant::now());
        if requeued {
            shared.ready.notify_one();
        }
        if drained {
            // Drain finished: release idle getters and drain waiters.
            shared.ready.notify_waiters();
            shared.drained.notify_waiters();
        }
    }

    /// Keys ready to be handed out (not counting processing or delayed ones).
    pub fn len(&self) -> usize {
        self.owner.shared.lock().queue.len()
    }

    /// Whether no key is ready to be handed out.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops the queue: adds are ignored, delayed keys are discarded, and
    /// pending and future [`get`](Self::get) calls return `None` promptly.
    /// Workers still processing may call [`done`](Self::done).
    pub fn shut_down(&self) {
        self.owner.shared.shut_down(false);
    }

    /// Stops accepting adds (delayed keys are discarded) but keeps handing
    /// out already-queued keys, including keys re-queued by `done`, and
    /// resolves once nothing is queued or processing. A concurrent
    /// [`shut_down`](Self::shut_down) ends the drain: getters then return
    /// `None` and this resolves once no key is processing.
    pub async fn shut_down_with_drain(&self) {
        let shared = &self.owner.shared;
        shared.shut_down(true);
        loop {
            let mut notified = pin!(shared.drained.notified());
            notified.as_mut().enable();
            if shared.lock().drain_complete() {
                return;
            }
            notified.await;
        }
    }

    /// Whether [`shut_down`](Self::shut_down) or
    /// [`shut_down_with_drain`](Self::shut_down_with_drain) was called.
    pub fn is_shutting_down(&self) -> bool {
        self.owner.shared.lock().shutting_down
    }

    /// Sets the in-flight gauges (`workqueue_unfinished_work_seconds`,
    /// `workqueue_longest_running_processor_seconds`) from the keys being processed now;
    /// call before a scrape.
    pub fn update_unfinished_work(&self) {
        let st = self.owner.shared.lock();
        let now = Instant::now();
        st.metrics.set_in_flight(
            st.processing
                .values()
                .map(|&started| now.saturating_duration_since(started)),
        );
    }

    /// A snapshot of the queue's counters.
    pub fn stats(&self) -> QueueStats {
        let st = self.owner.shared.lock();
        QueueStats {
            depth: st.queue.len(),
            processing: st.processing.len(),
            delayed: st.waiting.len(),
            ..st.stats
        }
    }

    /// Spawns the delay task once, if a Tokio runtime is available.
    fn ensure_timer(&self) {
        let shared = &self.owner.shared;
        if shared.timer_started.load(AtomicOrdering::Acquire) {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current()
            && !shared.timer_started.swap(true, AtomicOrdering::AcqRel)
        {
            handle.spawn(run_timer(Arc::clone(shared)));
        }
    }
}

/// The delay task: moves due keys to the ready queue. One per queue, so a
/// delayed add costs a heap push, not a task.
async fn run_timer<K: QueueKey>(shared: Arc<Shared<K>>) {
    loop {
        let mut notified = pin!(shared.timer.notified());
        notified.as_mut().enable();
        let (promoted, next_due) = {
            let mut st = shared.lock();
            if st.shutting_down {
                st.clear_delayed();
                tracing::debug!("work queue delay task stopped");
                return;
            }
            let promoted = st.promote_due(Instant::now());
            (promoted, st.next_due())
        };
        for _ in 0..promoted {
            shared.ready.notify_one();
        }
        match next_due {
            Some(due) => {
                tokio::select! {
                    () = &mut notified => {}
                    () = tokio::time::sleep_until(due) => {}
                }
            }
            None => notified.await,
        }
    }
}

/// The state every handle and the delay task share.
struct Shared<K> {
    state: Mutex<State<K>>,
    /// Wakes getters: one `notify_one` per key made ready, `notify_waiters`
    /// on shut down / drain completion.
    ready: Notify,
    /// Wakes the delay task when the earliest due time moves earlier or the
    /// queue shuts down.
    timer: Notify,
    /// Wakes `shut_down_with_drain` callers.
    drained: Notify,
    timer_started: AtomicBool,
}

/// Which waiters an operation needs woken (done after unlocking).
#[derive(Debug, Default, Clone, Copy)]
struct Wake {
    ready: bool,
    timer: bool,
}

impl<K> Shared<K> {
    fn lock(&self) -> MutexGuard<'_, State<K>> {
        // Every critical section leaves the state consistent enough to keep
        // going, so a panic elsewhere (e.g. in a key's Hash) must not wedge
        // the controller.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wake(&self, wake: Wake) {
        if wake.ready {
            self.ready.notify_one();
        }
        if wake.timer {
            self.timer.notify_one();
        }
    }

    fn shut_down(&self, drain: bool) {
        {
            let mut st = self.lock();
            // A plain shut down always wins; a drain cannot restart one.
            st.draining = drain && (st.draining || !st.shutting_down);
            st.shutting_down = true;
        }
        tracing::debug!(drain, "work queue shutting down");
        self.ready.notify_waiters();
        self.timer.notify_one();
        self.drained.notify_waiters();
    }
}

/// Shuts the queue down when the last handle goes away, so the delay task
/// (which holds only `Shared`) does not outlive it.
struct Owner<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Drop for Owner<K> {
    fn drop(&mut self) {
        self.shared.shut_down(false);
    }
}

#[cfg(test)]
mod tests;
