//! Retry delays: a per-key exponential backoff and a token bucket shared by all keys.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use super::QueueKey;

/// Failed retries after which the controller drops a key (upstream
/// endpoints controller's `maxRetries`).
pub const DEFAULT_MAX_RETRIES: u32 = 15;

/// Delay used when a due time cannot be represented (absurd configs only);
/// long enough to mean "effectively never" without overflowing `Instant`.
pub(super) const FAR_FUTURE: Duration = Duration::from_secs(60 * 60 * 24 * 365 * 30);

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

/// Max of a per-key exponential backoff and a shared token bucket (client-go
/// `MaxOfRateLimiter` of `ItemExponentialFailureRateLimiter` and
/// `BucketRateLimiter`). Both are consulted on every call, as upstream, so a
/// backed-off key still spends a token.
pub(super) struct RateLimiter<K> {
    pub(super) config: RateLimiterConfig,
    failures: HashMap<K, u32>,
    /// Tokens available at `last`; negative when reservations are queued
    /// (golang.org/x/time/rate accounting).
    tokens: f64,
    last: Option<Instant>,
}

impl<K: QueueKey> RateLimiter<K> {
    pub(super) fn new(config: RateLimiterConfig) -> Self {
        Self {
            config,
            failures: HashMap::new(),
            tokens: f64::from(config.burst),
            last: None,
        }
    }

    pub(super) fn when(&mut self, key: &K, now: Instant) -> Duration {
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

    pub(super) fn forget(&mut self, key: &K) {
        self.failures.remove(key);
    }

    pub(super) fn num_requeues(&self, key: &K) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }
}

fn duration_from_nanos(nanos: u128) -> Option<Duration> {
    let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
    let sub = u32::try_from(nanos % 1_000_000_000).ok()?;
    Some(Duration::new(secs, sub))
}
