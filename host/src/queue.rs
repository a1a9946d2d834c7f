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
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(config)),
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
        let wake = self.owner.shared.lock().add_after(key, delay, Instant::now());
        self.owner.shared.wake(wake);
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
    fn new(config: RateLimiterConfig) -> Self {
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
        }
    }

    /// Returns whether `key` was pushed onto the ready queue.
    fn add(&mut self, key: K, now: Instant) -> bool {
        if self.shutting_down || self.dirty.contains_key(&key) {
            return false;
        }
        self.stats.adds_total = self.stats.adds_total.saturating_add(1);
        if self.processing.contains_key(&key) {
            // `done` will queue it; queuing now would hand it to a second
            // worker.
            self.dirty.insert(key, now);
            return false;
        }
        self.dirty.insert(key.clone(), now);
        self.queue.push_back(key);
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
        self.stats.work_duration_total = self
            .stats
            .work_duration_total
            .saturating_add(now.saturating_duration_since(started));
        // Re-queue even while shutting down: a drain must still run it.
        let requeued = self.dirty.contains_key(key);
        if requeued {
            self.queue.push_back(key.clone());
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
