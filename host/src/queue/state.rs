//! The queue's state machine: ready keys in FIFO order, the dirty and processing sets that keep
//! a key from reaching two workers at once, and the heap of delayed adds.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

use super::rate_limit::{FAR_FUTURE, RateLimiter, RateLimiterConfig};
use super::{QueueKey, QueueStats, Wake};
use crate::metrics::QueueMetrics;

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

pub(super) struct State<K> {
    /// Ready keys in FIFO order; each is also in `dirty`.
    pub(super) queue: VecDeque<K>,
    /// Keys that need processing (queued, or added while processing), with
    /// the time they were queued.
    pub(super) dirty: HashMap<K, Instant>,
    /// Keys held by workers, with the time they were handed out.
    pub(super) processing: HashMap<K, Instant>,
    /// Each delayed key's live heap entry: `(due, seq)`.
    pub(super) waiting: HashMap<K, (Instant, u64)>,
    /// Delayed adds, including stale entries superseded by an earlier due.
    heap: BinaryHeap<Delayed<K>>,
    pub(super) next_seq: u64,
    pub(super) limiter: RateLimiter<K>,
    pub(super) shutting_down: bool,
    pub(super) draining: bool,
    /// Counters only; gauges are filled in by `WorkQueue::stats`.
    pub(super) stats: QueueStats,
    /// The exported metrics (updated along with `stats`).
    pub(super) metrics: QueueMetrics,
}

impl<K> State<K> {
    pub(super) fn clear_delayed(&mut self) {
        self.waiting.clear();
        self.heap.clear();
    }

    /// Whether `shut_down_with_drain` may return.
    pub(super) fn drain_complete(&self) -> bool {
        self.shutting_down
            && self.processing.is_empty()
            && (self.queue.is_empty() || !self.draining)
    }
}

impl<K: QueueKey> State<K> {
    pub(super) fn new(config: RateLimiterConfig, metrics: QueueMetrics) -> Self {
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

    pub(super) fn set_depth(&self) {
        self.metrics
            .depth
            .set(i64::try_from(self.queue.len()).unwrap_or(i64::MAX));
    }

    /// Returns whether `key` was pushed onto the ready queue.
    pub(super) fn add(&mut self, key: K, now: Instant) -> bool {
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

    pub(super) fn add_after(&mut self, key: K, delay: Duration, now: Instant) -> Wake {
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

    pub(super) fn add_rate_limited(&mut self, key: K, now: Instant) -> (Duration, Wake) {
        self.stats.retries_total = self.stats.retries_total.saturating_add(1);
        self.metrics.retries.inc();
        let delay = self.limiter.when(&key, now);
        (delay, self.add_after(key, delay, now))
    }

    /// Moves due keys to the ready queue; returns how many were pushed.
    pub(super) fn promote_due(&mut self, now: Instant) -> usize {
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
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.heap.peek().map(|top| top.due)
    }

    /// `Some(outcome)` if `get` can return now, `None` if it must wait.
    pub(super) fn try_get(&mut self, now: Instant) -> Option<Option<K>> {
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
    pub(super) fn done(&mut self, key: &K, now: Instant) -> (bool, bool) {
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
