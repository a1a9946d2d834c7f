//! Unit tests of the work queue (paused Tokio clock where timing matters).

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

/// Returns once every other task has run until it waits. On the paused clock time moves only
/// when no task can make progress, so a 1 ms sleep ends exactly then (1 ms later, before any
/// timer a test sets).
async fn settle() {
    tokio::time::sleep(MS).await;
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
