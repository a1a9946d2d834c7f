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

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics::QueueMetrics;

/// Failed retries after which the controller drops a key (upstream
/// endpoints controller's `maxRetries`).
pub const DEFAULT_MAX_RETRIES: u32 = 15;

/// Delay used when a due time cannot be represented (absurd configs only);
/// long enough to mean "effectively never" without overflowing `Instant`.
const FAR_FUTURE: Duration = Duration::from_secs(60 * 60 * 24 * 365 * 30);

/// Bounds every queue key must satisfy (the controller uses `String`).
pub trait QueueKey: Clone + Eq + Hash + Send + Sync + 'static {}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> QueueKey for T {}

/// Retry policy: per-key exponential backoff, a shared token bucket, and the
/// retry budget used by [`WorkQueue::retry_or_drop`].
///
/// [`Default`] matches client-go's `DefaultTypedControllerRateLimiter` and the
/// upstream endpoints controller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimiterConfig {
    /// Backoff after a key's first failure; doubles with each further one.
    pub base_delay: Duration,
    /// Upper bound of the per-key backoff.
    pub max_delay: Duration,
    /// Token bucket refill rate (tokens per second) shared by all keys. Zero,
    /// negative or non-finite disables the bucket.
    pub qps: f64,
    /// Token bucket capacity; the bucket starts full.
    pub burst: u32,
    /// Retries allowed by [`WorkQueue::retry_or_drop`] before it drops a key.
    pub max_retries: u32,
}

impl Default for RateLimiterConfig {
    fn default() -> Self {
        Self {
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_secs(1000),
            qps: 10.0,
            burst: 100,
            max_retries: DEFAULT_MAX_RETRIES,
        }
    }
}

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

/// A delayed add in the heap. Ordered by `(due, seq)` reversed, so
/// `BinaryHeap` (a max-heap) pops the earliest; `seq` identifies the entry.
struct Delayed<K> {
    due: Instant,
    seq: u64,
    key: K,
}

impl<K> PartialEq for Delayed<K> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<K> Eq for Delayed<K> {}

impl<K> PartialOrd for Delayed<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> Ord for Delayed<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.due, other.seq).cmp(&(self.due, self.seq))
    }
}

struct State<K> {
    /// Ready keys in FIFO order; each is also in `dirty`.
    queue: VecDeque<K>,
    /// Keys that need processing (queued, or added while processing), with
    /// the time they were queued.
    dirty: HashMap<K, Instant>,
    /// Keys held by workers, with the time they were handed out.
    processing: HashMap<K, Instant>,
    /// Each delayed key's live heap entry: `(due, seq)`.
    waiting: HashMap<K, (Instant, u64)>,
    /// Delayed adds, including stale entries superseded by an earlier due.
    heap: BinaryHeap<Delayed<K>>,
    next_seq: u64,
    limiter: RateLimiter<K>,
    shutting_down: bool,
    draining: bool,
    /// Counters only; gauges are filled in by `WorkQueue::stats`.
    stats: QueueStats,
    /// The exported metrics (updated along with `stats`).
    metrics: QueueMetrics,
}

impl<K> State<K> {
    fn clear_delayed(&mut self) {
        self.waiting.clear();
        self.heap.clear();
    }

    /// Whether `shut_down_with_drain` may return.
    fn drain_complete(&self) -> bool {
        self.shutting_down
            && self.processing.is_empty()
            && (self.queue.is_empty() || !self.draining)
    }
}

impl<K: QueueKey> State<K> {
    fn new(config: RateLimiterConfig, metrics: QueueMetrics) -> Self {
        Self {
            queue: VecDeque::new(),
            dirty: HashMap::new(),
            processing: HashMap::new(),
            waiting: HashMap::new(),
            heap: BinaryHeap::new(),
            next_seq: 0,
            limiter: RateLimiter::new(config),
            shutting_down: false,
            draining: false,
            stats: QueueStats::default(),
            metrics,
        }
    }

    fn set_depth(&self) {
        self.metrics
            .depth
            .set(i64::try_from(self.queue.len()).unwrap_or(i64::MAX));
    }

    /// Returns whether `key` was pushed onto the ready queue.
    fn add(&mut self, key: K, now: Instant) -> bool {
        if self.shutting_down || self.dirty.contains_key(&key) {
            return false;
        }
        self.stats.adds_total = self.stats.adds_total.saturating_add(1);
        self.metrics.adds.inc();
        if self.processing.contains_key(&key) {
            // `done` will queue it; queuing now would hand it to a second
            // worker.
            self.dirty.insert(key, now);
            return false;
        }
        self.dirty.insert(key.clone(), now);
        self.queue.push_back(key);
        self.set_depth();
        true
    }

    fn add_after(&mut self, key: K, delay: Duration, now: Instant) -> Wake {
        if self.shutting_down {
            return Wake::default();
        }
        if delay.is_zero() {
            return Wake {
                ready: self.add(key, now),
                timer: false,
            };
        }
        let due = now
            .checked_add(delay)
            .or_else(|| now.checked_add(FAR_FUTURE))
            .unwrap_or(now);
        if let Some(&(existing, _)) = self.waiting.get(&key)
            && existing <= due
        {
            return Wake::default();
        }
        // Only an earlier wake-up than the current one needs the timer
        // (its current deadline is the heap top, stale or not).
        let timer = self.heap.peek().is_none_or(|top| due < top.due);
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        self.waiting.insert(key.clone(), (due, seq));
        self.heap.push(Delayed { due, seq, key });
        if self.heap.len() > 2 * self.waiting.len() + 64 {
            let waiting = &self.waiting;
            self.heap
                .retain(|d| waiting.get(&d.key).is_some_and(|&(_, s)| s == d.seq));
        }
        Wake {
            ready: false,
            timer,
        }
    }

    fn add_rate_limited(&mut self, key: K, now: Instant) -> (Duration, Wake) {
        self.stats.retries_total = self.stats.retries_total.saturating_add(1);
        self.metrics.retries.inc();
        let delay = self.limiter.when(&key, now);
        (delay, self.add_after(key, delay, now))
    }

    /// Moves due keys to the ready queue; returns how many were pushed.
    fn promote_due(&mut self, now: Instant) -> usize {
        let mut pushed = 0;
        while let Some(top) = self.heap.peek() {
            let live = self
                .waiting
                .get(&top.key)
                .is_some_and(|&(_, seq)| seq == top.seq);
            if live && top.due > now {
                break;
            }
            let Some(entry) = self.heap.pop() else { break };
            if live {
                self.waiting.remove(&entry.key);
                if self.add(entry.key, now) {
                    pushed += 1;
                }
            }
        }
        pushed
    }

    /// Due time of the earliest live delayed key (stale tops are popped by
    /// `promote_due` first).
    fn next_due(&self) -> Option<Instant> {
        self.heap.peek().map(|top| top.due)
    }

    /// `Some(outcome)` if `get` can return now, `None` if it must wait.
    fn try_get(&mut self, now: Instant) -> Option<Option<K>> {
        if self.shutting_down && !self.draining {
            return Some(None);
        }
        if let Some(key) = self.queue.pop_front() {
            let queued = self.dirty.remove(&key).unwrap_or(now);
            self.set_depth();
            self.metrics
                .queue_duration
                .observe(now.saturating_duration_since(queued).as_secs_f64());
            self.stats.gets_total = self.stats.gets_total.saturating_add(1);
            self.stats.queue_latency_total = self
                .stats
                .queue_latency_total
                .saturating_add(now.saturating_duration_since(queued));
            self.processing.insert(key.clone(), now);
            return Some(Some(key));
        }
        // Draining: a processing key may still be re-queued by `done`.
        if self.shutting_down && self.processing.is_empty() {
            return Some(None);
        }
        None
    }

    /// Returns `(requeued, drain_finished)`.
    fn done(&mut self, key: &K, now: Instant) -> (bool, bool) {
        let Some(started) = self.processing.remove(key) else {
            return (false, false);
        };
        self.stats.dones_total = self.stats.dones_total.saturating_add(1);
        self.metrics
            .work_duration
            .observe(now.saturating_duration_since(started).as_secs_f64());
        self.stats.work_duration_total = self
            .stats
            .work_duration_total
            .saturating_add(now.saturating_duration_since(started));
        // Re-queue even while shutting down: a drain must still run it.
        let requeued = self.dirty.contains_key(key);
        if requeued {
            self.queue.push_back(key.clone());
            self.set_depth();
        }
        (requeued, self.drain_complete())
    }
}

/// Max of a per-key exponential backoff and a shared token bucket (client-go
/// `MaxOfRateLimiter` of `ItemExponentialFailureRateLimiter` and
/// `BucketRateLimiter`). Both are consulted on every call, as upstream, so a
/// backed-off key still spends a token.
struct RateLimiter<K> {
    config: RateLimiterConfig,
    failures: HashMap<K, u32>,
    /// Tokens available at `last`; negative when reservations are queued
    /// (golang.org/x/time/rate accounting).
    tokens: f64,
    last: Option<Instant>,
}

impl<K: QueueKey> RateLimiter<K> {
    fn new(config: RateLimiterConfig) -> Self {
        Self {
            config,
            failures: HashMap::new(),
            tokens: f64::from(config.burst),
            last: None,
        }
    }

    fn when(&mut self, key: &K, now: Instant) -> Duration {
        let failures = self.failures.entry(key.clone()).or_insert(0);
        let exp = *failures;
        *failures = failures.saturating_add(1);
        self.backoff(exp).max(self.reserve(now))
    }

    /// `base_delay * 2^exp`, capped at `max_delay` (overflow counts as over).
    fn backoff(&self, exp: u32) -> Duration {
        let max = self.config.max_delay;
        1u128
            .checked_shl(exp)
            .and_then(|factor| self.config.base_delay.as_nanos().checked_mul(factor))
            .filter(|&nanos| nanos < max.as_nanos())
            .and_then(duration_from_nanos)
            .unwrap_or(max)
    }

    /// Reserves one token and returns how long until it is available
    /// (x/time/rate `Reserve().Delay()`).
    fn reserve(&mut self, now: Instant) -> Duration {
        let qps = self.config.qps;
        if !(qps.is_finite() && qps > 0.0) {
            return Duration::ZERO;
        }
        let elapsed = self
            .last
            .map_or(Duration::ZERO, |last| now.saturating_duration_since(last))
            .as_secs_f64();
        let tokens = (self.tokens + elapsed * qps).min(f64::from(self.config.burst)) - 1.0;
        self.tokens = tokens;
        self.last = Some(self.last.map_or(now, |last| last.max(now)));
        if tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::try_from_secs_f64(-tokens / qps).unwrap_or(FAR_FUTURE)
        }
    }

    fn forget(&mut self, key: &K) {
        self.failures.remove(key);
    }

    fn num_requeues(&self, key: &K) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }
}

fn duration_from_nanos(nanos: u128) -> Option<Duration> {
    let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
    let sub = u32::try_from(nanos % 1_000_000_000).ok()?;
    Some(Duration::new(secs, sub))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::AtomicUsize;
    use tokio::time::{sleep, timeout};

    const MS: Duration = Duration::from_millis(1);

    fn queue() -> WorkQueue<String> {
        WorkQueue::new(RateLimiterConfig::default())
    }

    /// Default limits with the token bucket off, to observe the backoff alone.
    fn backoff_only() -> WorkQueue<String> {
        WorkQueue::new(RateLimiterConfig {
            qps: 0.0,
            ..RateLimiterConfig::default()
        })
    }

    fn k(s: &str) -> String {
        s.to_owned()
    }

    /// Lets spawned tasks run up to their next await without moving time.
    async fn settle() {
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
    }

    /// A hang fails the test instead of stalling it: the paused clock
    /// auto-advances to the timeout once every task is idle.
    const HANG: Duration = Duration::from_secs(3600);

    async fn next<K: QueueKey>(q: &WorkQueue<K>) -> Option<K> {
        timeout(HANG, q.get()).await.expect("get() hung")
    }

    async fn join<T>(task: tokio::task::JoinHandle<T>) -> T {
        timeout(HANG, task)
            .await
            .expect("task hung")
            .expect("task panicked")
    }

    /// Timer ticks are 1 ms, so allow that much rounding.
    #[track_caller]
    fn assert_near(actual: Duration, expected: Duration) {
        assert!(
            actual >= expected.saturating_sub(MS) && actual <= expected + MS,
            "{actual:?} is not within 1ms of {expected:?}"
        );
    }

    async fn assert_nothing_ready(q: &WorkQueue<String>, within: Duration) {
        let got = timeout(within, q.get()).await;
        assert!(got.is_err(), "unexpected key {got:?}");
    }

    #[test]
    fn default_config_matches_client_go() {
        let c = RateLimiterConfig::default();
        assert_eq!(c.base_delay, Duration::from_millis(5));
        assert_eq!(c.max_delay, Duration::from_secs(1000));
        assert_eq!(c.qps, 10.0);
        assert_eq!(c.burst, 100);
        assert_eq!(c.max_retries, DEFAULT_MAX_RETRIES);
        assert_eq!(DEFAULT_MAX_RETRIES, 15);
    }

    #[tokio::test(start_paused = true)]
    async fn fifo_and_coalescing() {
        let q = queue();
        for key in ["a", "b", "a", "c", "b", "a"] {
            q.add(k(key));
        }
        assert_eq!(q.len(), 3);
        assert_eq!(q.stats().adds_total, 3);
        for want in ["a", "b", "c"] {
            assert_eq!(next(&q).await.as_deref(), Some(want));
        }
        assert!(q.is_empty());
        assert_eq!(q.stats().processing, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn key_is_never_held_by_two_workers() {
        let q = queue();
        let held = Arc::new(Mutex::new(HashSet::new()));
        let max_held = Arc::new(AtomicUsize::new(0));
        let runs = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let (q, held) = (q.clone(), Arc::clone(&held));
                let (max_held, runs) = (Arc::clone(&max_held), Arc::clone(&runs));
                tokio::spawn(async move {
                    while let Some(key) = next(&q).await {
                        {
                            let mut held = held.lock().unwrap();
                            assert!(held.insert(key.clone()), "{key} given to two workers");
                            max_held.fetch_max(held.len(), AtomicOrdering::Relaxed);
                        }
                        sleep(3 * MS).await;
                        held.lock().unwrap().remove(&key);
                        runs.fetch_add(1, AtomicOrdering::Relaxed);
                        q.done(&key);
                    }
                })
            })
            .collect();
        for i in 0..300 {
            q.add(format!("k{}", i % 3));
            if i % 2 == 0 {
                sleep(MS).await;
            }
        }
        timeout(HANG, q.shut_down_with_drain())
            .await
            .expect("drain hung (a worker panicked?)");
        for w in workers {
            join(w).await;
        }
        let runs = runs.load(AtomicOrdering::Relaxed);
        // Workers really overlapped, and coalescing kept runs well below adds.
        assert!(max_held.load(AtomicOrdering::Relaxed) >= 2);
        assert!((3..300).contains(&runs), "runs = {runs}");
        let stats = q.stats();
        assert_eq!(stats.gets_total, runs as u64);
        assert_eq!(stats.dones_total, runs as u64);
        assert_eq!((stats.depth, stats.processing), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn add_while_processing_reruns_exactly_once() {
        let q = queue();
        q.add(k("a"));
        assert_eq!(next(&q).await.as_deref(), Some("a"));
        q.add(k("a"));
        q.add(k("a"));
        // Not handed to a second worker while the first holds it.
        assert_eq!(q.len(), 0);
        assert_nothing_ready(&q, Duration::from_secs(1)).await;
        q.done(&k("a"));
        assert_eq!(q.len(), 1);
        assert_eq!(next(&q).await.as_deref(), Some("a"));
        q.done(&k("a"));
        assert_nothing_ready(&q, Duration::from_secs(60)).await;
        assert_eq!(q.stats().adds_total, 2);
        // done for a key nobody holds is a no-op.
        q.done(&k("a"));
        assert_eq!(q.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_getters_each_receive_a_key() {
        let q = queue();
        let getters: Vec<_> = (0..5)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move { next(&q).await })
            })
            .collect();
        settle().await;
        for i in 0..5 {
            q.add(format!("k{i}"));
        }
        let mut got = HashSet::new();
        for g in getters {
            let key = timeout(MS, g).await.expect("getter stuck").unwrap();
            assert!(got.insert(key.expect("queue not shut down")));
        }
        assert_eq!(got.len(), 5);
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_keeps_earliest_due_time() {
        let q = queue();
        let start = Instant::now();
        q.add_after(k("a"), Duration::from_secs(10));
        q.add_after(k("a"), Duration::from_secs(1));
        q.add_after(k("b"), Duration::from_secs(2));
        q.add_after(k("b"), Duration::from_secs(20));
        assert_eq!(q.stats().delayed, 2);
        assert_eq!(q.len(), 0);

        assert_eq!(next(&q).await.as_deref(), Some("a"));
        assert_near(start.elapsed(), Duration::from_secs(1));
        q.done(&k("a"));
        assert_eq!(next(&q).await.as_deref(), Some("b"));
        assert_near(start.elapsed(), Duration::from_secs(2));
        q.done(&k("b"));
        // The superseded 10s / 20s entries do not deliver again.
        assert_nothing_ready(&q, Duration::from_secs(60)).await;
        assert_eq!(q.stats().delayed, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn keys_due_together_wake_every_waiting_getter() {
        let q = queue();
        let getters: Vec<_> = (0..3)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move { next(&q).await })
            })
            .collect();
        settle().await;
        let start = Instant::now();
        for key in ["a", "b", "c"] {
            q.add_after(k(key), Duration::from_secs(1));
        }
        let mut got = HashSet::new();
        for g in getters {
            assert!(got.insert(join(g).await.expect("key")));
        }
        assert_eq!(got.len(), 3);
        assert_near(start.elapsed(), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_zero_is_immediate() {
        let q = queue();
        q.add_after(k("a"), Duration::ZERO);
        assert_eq!(q.len(), 1);
        assert_eq!(q.stats().delayed, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_adds_share_one_task_and_fire_in_due_order() {
        let q = queue();
        settle().await;
        let metrics = tokio::runtime::Handle::current().metrics();
        let tasks = metrics.num_alive_tasks();
        for i in (0..500u64).rev() {
            q.add_after(format!("k{i}"), Duration::from_millis(i + 1));
        }
        assert_eq!(metrics.num_alive_tasks(), tasks);
        let start = Instant::now();
        for i in 0..500u64 {
            assert_eq!(next(&q).await, Some(format!("k{i}")));
        }
        assert_near(start.elapsed(), Duration::from_millis(500));
    }

    #[tokio::test(start_paused = true)]
    async fn per_key_backoff_doubles_up_to_cap() {
        let q = backoff_only();
        let cap = Duration::from_secs(1000);
        let mut want = Duration::from_millis(5);
        for n in 1..=200 {
            assert_eq!(q.add_rate_limited(k("a")), want.min(cap), "failure {n}");
            assert_eq!(q.num_requeues(&k("a")), n);
            want = want.saturating_mul(2);
        }
        // 5ms * 2^17 is the last uncapped step.
        assert!(Duration::from_millis(5 << 17) < cap && Duration::from_millis(5 << 18) > cap);
        // Backoff is per key.
        assert_eq!(q.add_rate_limited(k("b")), Duration::from_millis(5));
        // Keys really become ready after the delay they were first scheduled
        // with (later retries of "a" coalesced into its first, earliest one).
        let start = Instant::now();
        assert_eq!(next(&q).await.as_deref(), Some("a"));
        assert_eq!(next(&q).await.as_deref(), Some("b"));
        assert_near(start.elapsed(), Duration::from_millis(5));
    }

    #[tokio::test(start_paused = true)]
    async fn token_bucket_delays_past_burst() {
        let q = queue();
        let start = Instant::now();
        for i in 0..100 {
            assert_eq!(q.add_rate_limited(format!("k{i}")), 5 * MS);
        }
        assert_near(q.add_rate_limited(k("k100")), 100 * MS);
        assert_near(q.add_rate_limited(k("k101")), 200 * MS);
        for _ in 0..100 {
            assert!(next(&q).await.is_some());
        }
        assert_near(start.elapsed(), 5 * MS);
        assert_eq!(next(&q).await.as_deref(), Some("k100"));
        assert_near(start.elapsed(), 100 * MS);
        // 10 tokens/s refill the bucket.
        sleep(Duration::from_secs(1)).await;
        assert_eq!(q.add_rate_limited(k("fresh")), 5 * MS);
        assert_eq!(q.stats().retries_total, 103);
    }

    #[tokio::test(start_paused = true)]
    async fn absurd_configs_do_not_panic() {
        for config in [
            RateLimiterConfig {
                base_delay: Duration::MAX,
                max_delay: Duration::MAX,
                qps: 1e-300,
                burst: 0,
                max_retries: u32::MAX,
            },
            RateLimiterConfig {
                base_delay: Duration::ZERO,
                max_delay: Duration::ZERO,
                qps: f64::NAN,
                burst: u32::MAX,
                max_retries: 0,
            },
        ] {
            let q = WorkQueue::<String>::new(config);
            for _ in 0..3 {
                q.add_rate_limited(k("a"));
                q.retry_or_drop(k("b"));
            }
            q.add_after(k("c"), Duration::MAX);
            assert_eq!(q.num_requeues(&k("a")), 3);
        }
        // Zero backoff and no bucket: retries are immediate.
        let q = WorkQueue::<String>::new(RateLimiterConfig {
            base_delay: Duration::ZERO,
            qps: f64::INFINITY,
            ..RateLimiterConfig::default()
        });
        assert_eq!(q.add_rate_limited(k("a")), Duration::ZERO);
        assert_eq!(q.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn forget_resets_backoff() {
        let q = backoff_only();
        for want in [5, 10, 20] {
            assert_eq!(q.add_rate_limited(k("a")), want * MS);
            assert_eq!(q.add_rate_limited(k("b")), want * MS);
        }
        assert_eq!(q.num_requeues(&k("a")), 3);
        q.forget(&k("a"));
        assert_eq!(q.num_requeues(&k("a")), 0);
        assert_eq!(q.add_rate_limited(k("a")), 5 * MS);
        assert_eq!(q.add_rate_limited(k("b")), 40 * MS);
    }

    #[tokio::test(start_paused = true)]
    async fn retry_or_drop_drops_after_max_retries() {
        let q = queue();
        for n in 0..DEFAULT_MAX_RETRIES {
            let want = Duration::from_millis(5 << n);
            assert_eq!(q.retry_or_drop(k("a")), Retry::Scheduled(want));
        }
        assert_eq!(q.num_requeues(&k("a")), 15);
        assert_eq!(q.retry_or_drop(k("a")), Retry::Dropped { requeues: 15 });
        assert_eq!(q.num_requeues(&k("a")), 0);
        assert_eq!(q.stats().retries_total, 15);
        // The 15 retries coalesced into one delivery at the earliest due time.
        assert_eq!(next(&q).await.as_deref(), Some("a"));
        q.done(&k("a"));
        assert_nothing_ready(&q, Duration::from_secs(3600)).await;

        let q = WorkQueue::<String>::new(RateLimiterConfig {
            max_retries: 2,
            ..RateLimiterConfig::default()
        });
        assert!(matches!(q.retry_or_drop(k("a")), Retry::Scheduled(_)));
        assert!(matches!(q.retry_or_drop(k("a")), Retry::Scheduled(_)));
        assert_eq!(q.retry_or_drop(k("a")), Retry::Dropped { requeues: 2 });
    }

    #[tokio::test(start_paused = true)]
    async fn shut_down_wakes_waiting_getters() {
        let q = queue();
        q.add(k("held"));
        let held = next(&q).await.expect("key");
        let getters: Vec<_> = (0..3)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move { next(&q).await })
            })
            .collect();
        settle().await;
        q.add_after(k("later"), Duration::from_secs(1));
        let start = Instant::now();
        q.shut_down();
        assert!(q.is_shutting_down());
        for g in getters {
            assert_eq!(join(g).await, None);
        }
        assert_eq!(start.elapsed(), Duration::ZERO);

        // Queued keys are not handed out; adds are ignored; done still works.
        q.add(k("x"));
        assert_eq!(q.len(), 0);
        assert_eq!(next(&q).await, None);
        q.add(held.clone());
        q.done(&held);
        let stats = q.stats();
        assert_eq!((stats.depth, stats.processing), (0, 0));
        // The delayed key never fires.
        sleep(Duration::from_secs(2)).await;
        assert_eq!(q.stats().delayed, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn delay_task_ends_on_shut_down_and_on_drop() {
        let q = queue();
        q.add_after(k("a"), Duration::from_secs(1));
        settle().await;
        // The handle's Arc plus the delay task's.
        assert_eq!(Arc::strong_count(&q.owner.shared), 2);
        q.shut_down();
        settle().await;
        assert_eq!(Arc::strong_count(&q.owner.shared), 1);

        let q = queue();
        let shared = Arc::downgrade(&q.owner.shared);
        let clone = q.clone();
        drop(q);
        settle().await;
        assert!(shared.upgrade().is_some() && !clone.is_shutting_down());
        drop(clone);
        settle().await;
        assert!(shared.upgrade().is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn drain_hands_out_remaining_keys_then_none() {
        let q = queue();
        q.add(k("a"));
        q.add(k("b"));
        assert_eq!(next(&q).await.as_deref(), Some("a"));
        q.add(k("a")); // dirty while processing
        let drain = tokio::spawn({
            let q = q.clone();
            async move { q.shut_down_with_drain().await }
        });
        settle().await;
        assert!(q.is_shutting_down() && !drain.is_finished());
        q.add(k("c")); // ignored
        assert_eq!(next(&q).await.as_deref(), Some("b"));
        q.done(&k("b"));
        // Nothing queued, but "a" may still be re-queued: getters wait.
        let getter = tokio::spawn({
            let q = q.clone();
            async move { next(&q).await }
        });
        settle().await;
        assert!(!getter.is_finished() && !drain.is_finished());
        q.done(&k("a"));
        assert_eq!(join(getter).await.as_deref(), Some("a"));
        let idle = tokio::spawn({
            let q = q.clone();
            async move { next(&q).await }
        });
        settle().await;
        assert!(!drain.is_finished());
        q.done(&k("a"));
        settle().await;
        assert!(drain.is_finished());
        assert_eq!(join(idle).await, None);
        assert_eq!(next(&q).await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn stats_measure_queue_latency_and_work_duration() {
        let q = queue();
        q.add(k("a"));
        sleep(Duration::from_secs(2)).await;
        assert_eq!(next(&q).await.as_deref(), Some("a"));
        sleep(Duration::from_secs(3)).await;
        q.done(&k("a"));
        q.add_rate_limited(k("b"));
        let stats = q.stats();
        assert_eq!(
            stats,
            QueueStats {
                adds_total: 1,
                retries_total: 1,
                depth: 0,
                processing: 0,
                delayed: 1,
                gets_total: 1,
                queue_latency_total: Duration::from_secs(2),
                dones_total: 1,
                work_duration_total: Duration::from_secs(3),
            }
        );
    }

    #[test]
    fn usable_without_runtime_and_after_lock_poisoning() {
        #[derive(Clone, PartialEq, Eq, Debug)]
        struct Touchy(u32);
        impl Hash for Touchy {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                assert_ne!(self.0, 13, "unlucky key");
                self.0.hash(state);
            }
        }
        // Built outside a runtime: the delay task starts with the first get.
        let q = WorkQueue::<Touchy>::default();
        q.add_after(Touchy(2), Duration::from_millis(5));
        let poisoned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            q.add(Touchy(13));
        }));
        assert!(poisoned.is_err());
        q.add(Touchy(1));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            assert_eq!(next(&q).await, Some(Touchy(1)));
            assert_eq!(next(&q).await, Some(Touchy(2)));
        });
    }
}
