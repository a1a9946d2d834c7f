//! The Kubernetes API client weir talks through: kube-rs's stack with a client-side rate limit
//! (`--kube-api-qps`, `--kube-api-burst`), as kube-controller-manager's clients have.
//!
//! kube-controller-manager gives each controller a client of its own, and its shared informers
//! another; so weir gives each output (Endpoints, EndpointSlices) a client with its own bucket
//! for its writes and its informer, and a third for what both outputs share: the Service, Pod
//! and Node watches, Events, and a ConfigMap guest source ([`Clients`]).
//! `--kube-api-limit-scope shared` puts all of them behind one bucket instead.
//!
//! Every request counts, watch starts included: a watch takes one token when it is sent and
//! none while it streams, as client-go's limiter does. Re-listing after a lost watch thus
//! cannot storm the API server either. Retries count too: kube-rs's own retry (429, 503, 504)
//! sits inside the stack, where it would bypass the limit, so it is turned off and the same
//! policy is put back outside the limiter.

use std::future::Future;
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use governor::clock::Clock;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use kube::client::ClientBuilder;
use kube::client::retry::RetryPolicy;
use tower::buffer::BufferLayer;
use tower::retry::RetryLayer;
use tower::{Layer, Service};

/// Requests that may wait in front of the limiter (kube-rs's own buffer has the same size).
const QUEUED_REQUESTS: usize = 1024;

/// A rate limit of the API client: a token bucket that refills `qps` tokens a second and
/// holds at most `burst`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ApiRate {
    /// Sustained requests per second.
    pub qps: f64,
    /// Requests that may go at once after a quiet spell.
    pub burst: u32,
}

/// Why an [`ApiRate`] cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RateError {
    /// `qps` is zero, negative, not a number, or too small to represent.
    #[error("--kube-api-qps must be a positive number, got {0}")]
    Qps(f64),
    /// `burst` is zero.
    #[error("--kube-api-burst must be at least 1")]
    Burst,
}

impl ApiRate {
    /// kube-controller-manager's defaults: 20 a second, bursts of 30.
    pub const KCM: ApiRate = ApiRate {
        qps: 20.0,
        burst: 30,
    };

    /// governor's quota for this rate: one token every `1/qps` seconds, `burst` at most.
    fn quota(&self) -> Result<Quota, RateError> {
        if !(self.qps.is_finite() && self.qps > 0.0) {
            return Err(RateError::Qps(self.qps));
        }
        let period =
            Duration::try_from_secs_f64(1.0 / self.qps).map_err(|_| RateError::Qps(self.qps))?;
        let burst = NonZeroU32::new(self.burst).ok_or(RateError::Burst)?;
        Ok(Quota::with_period(period)
            .ok_or(RateError::Qps(self.qps))?
            .allow_burst(burst))
    }

    /// How late a paced request may leave: a wait for a token ends on the next tick of a
    /// [`WAKE_GRID`]-wide grid that every bucket shares, at most half the bucket's burst
    /// tolerance (`burst - 1` tokens) late. Waking late loses no token while the tolerance
    /// covers it (the bucket counts from when the token came due, not from when it was
    /// taken), and a bucket of burst 1, which has none, is never late.
    fn slack(&self) -> Duration {
        let tolerance =
            Duration::try_from_secs_f64(f64::from(self.burst.saturating_sub(1)) / self.qps / 2.0)
                .unwrap_or(Duration::MAX);
        WAKE_GRID.min(tolerance)
    }
}

/// The grid on which paced requests leave (see [`ApiRate::slack`]). The buckets of the two
/// outputs run at the same rate but come due at moments of their own; on a shared grid the
/// two writes of one sync leave in one wake-up of the process instead of two. Where a
/// wake-up is dear (an idle core, a virtual machine), it is much of a paced request's CPU.
const WAKE_GRID: Duration = Duration::from_millis(10);

/// `deadline` rounded up to the next multiple of `slack` since `origin`.
fn on_grid(
    origin: tokio::time::Instant,
    deadline: tokio::time::Instant,
    slack: Duration,
) -> tokio::time::Instant {
    if slack.is_zero() || deadline <= origin {
        return deadline;
    }
    let since = (deadline - origin).as_nanos();
    let step = slack.as_nanos();
    let ticks = since.div_ceil(step);
    let rounded = u64::try_from(ticks * step).unwrap_or(u64::MAX);
    origin + Duration::from_nanos(rounded)
}

/// The origin of [`on_grid`], shared by every bucket of the process.
fn grid_origin() -> tokio::time::Instant {
    static ORIGIN: std::sync::OnceLock<tokio::time::Instant> = std::sync::OnceLock::new();
    *ORIGIN.get_or_init(tokio::time::Instant::now)
}

/// A kube client for `config` whose requests (watch starts and retries included) keep to
/// `rate`.
pub fn rate_limited(mut config: kube::Config, rate: ApiRate) -> anyhow::Result<kube::Client> {
    let layer = RateLimitLayer::new(rate)?;
    // The retry policy goes back on outside the limiter, below.
    config.default_retry = false;
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&layer)
        // Retry needs a service it can clone; the limiter holds its wait, so a buffer
        // (one task feeding the limiter in order) stands between them.
        .with_layer(&BufferLayer::new(QUEUED_REQUESTS))
        .with_layer(&RetryLayer::new(RetryPolicy::server_retry()))
        .build())
}

/// Which requests share a bucket (`--kube-api-limit-scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LimitScope {
    /// A bucket per output, and one for the shared watches and Events (kube-controller-
    /// manager's client per controller).
    #[default]
    PerOutput,
    /// One bucket for every request of the controller.
    Shared,
}

/// The API clients of one controller: one per output, one for what the outputs share.
#[derive(Clone)]
pub struct Clients {
    /// The Service, Pod and Node watches, Events, and a ConfigMap guest source.
    pub shared: kube::Client,
    /// Endpoints: their informer and writes.
    pub endpoints: kube::Client,
    /// EndpointSlices: their informer and writes.
    pub endpoint_slices: kube::Client,
}

impl Clients {
    /// One client for everything, so one bucket if it has one.
    pub fn single(client: kube::Client) -> Self {
        Clients {
            shared: client.clone(),
            endpoints: client.clone(),
            endpoint_slices: client,
        }
    }

    /// Clients for `config`, each keeping to `rate` on its own, or all of them together in
    /// one bucket ([`LimitScope::Shared`]).
    pub fn rate_limited(
        config: kube::Config,
        rate: ApiRate,
        scope: LimitScope,
    ) -> anyhow::Result<Self> {
        let shared = rate_limited(config.clone(), rate)?;
        Ok(match scope {
            LimitScope::Shared => Clients::single(shared),
            LimitScope::PerOutput => Clients {
                shared,
                endpoints: rate_limited(config.clone(), rate)?,
                endpoint_slices: rate_limited(config, rate)?,
            },
        })
    }
}

/// A tower layer that admits requests at an [`ApiRate`].
///
/// A token bucket with a burst, as client-go's limiter, is what governor implements (GCRA is
/// the same bucket, kept as one timestamp). tower's own `RateLimit` is not a bucket: it
/// admits `n` requests per fixed window, so up to `2n` can pass around a window's edge and no
/// separate burst can be set.
#[derive(Debug, Clone)]
pub struct RateLimitLayer {
    bucket: Arc<Bucket>,
}

/// One bucket of an [`ApiRate`], shared by the services of a layer.
#[derive(Debug)]
struct Bucket {
    limiter: DefaultDirectRateLimiter,
    /// How late a paced request may leave ([`ApiRate::slack`]).
    slack: Duration,
}

impl RateLimitLayer {
    /// A layer whose services share one bucket of `rate`.
    pub fn new(rate: ApiRate) -> Result<Self, RateError> {
        Ok(Self {
            bucket: Arc::new(Bucket {
                limiter: RateLimiter::direct(rate.quota()?),
                slack: rate.slack(),
            }),
        })
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> RateLimit<S> {
        RateLimit {
            inner,
            bucket: self.bucket.clone(),
            wait: None,
            admitted: false,
        }
    }
}

type Wait = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A service that is ready only once its bucket gives a token (see [`RateLimitLayer`]).
pub struct RateLimit<S> {
    inner: S,
    bucket: Arc<Bucket>,
    /// The wait for the next token, while one is pending.
    wait: Option<Wait>,
    /// A token was taken for the next `call`.
    admitted: bool,
}

impl<S> std::fmt::Debug for RateLimit<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimit")
            .field("admitted", &self.admitted)
            .field("slack", &self.bucket.slack)
            .finish_non_exhaustive()
    }
}

impl<S, R> Service<R> for RateLimit<S>
where
    S: Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        if !self.admitted {
            let bucket = &self.bucket;
            let wait = self.wait.get_or_insert_with(|| {
                let bucket = bucket.clone();
                Box::pin(async move { until_ready(&bucket.limiter, bucket.slack).await })
            });
            ready!(wait.as_mut().poll(cx));
            self.wait = None;
            self.admitted = true;
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> S::Future {
        // tower's contract: `call` follows a ready `poll_ready`, which took the token.
        debug_assert!(self.admitted, "call without poll_ready");
        self.admitted = false;
        self.inner.call(request)
    }
}

/// Waits until `limiter` gives a token, waking on the grid of `slack`. governor's own
/// `until_ready` waits on futures-timer, whose thread then wakes the runtime's from outside:
/// a thread hand-off per paced request. tokio's timer fires inside the runtime instead.
async fn until_ready(limiter: &DefaultDirectRateLimiter, slack: Duration) {
    while let Err(not_until) = limiter.check() {
        let due = tokio::time::Instant::now() + not_until.wait_time_from(limiter.clock().now());
        tokio::time::sleep_until(on_grid(grid_origin(), due, slack)).await;
    }
}

/// Whether a watch error means the server does not know weir's resourceVersion: `410 Gone`
/// (expired, compacted) or `504` "Too large resource version" (the server's history is
/// behind it, as after an etcd restore). Both need a fresh list.
pub fn needs_relist(error: &kube::runtime::watcher::Error) -> bool {
    let status = match error {
        kube::runtime::watcher::Error::WatchError(status) => status.as_ref(),
        kube::runtime::watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | kube::runtime::watcher::Error::InitialListFailed(kube::Error::Api(status))
        | kube::runtime::watcher::Error::WatchFailed(kube::Error::Api(status)) => status.as_ref(),
        _ => return false,
    };
    let too_large = status.code == 504
        && (status.message.contains("Too large resource version")
            || status.details.as_ref().is_some_and(|d| {
                d.causes
                    .iter()
                    .any(|c| c.reason == "ResourceVersionTooLarge")
            }));
    status.code == 410 || too_large
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use tower::ServiceExt;

    fn counting() -> impl Service<(), Response = (), Error = Infallible> {
        tower::service_fn(|()| async { Ok::<_, Infallible>(()) })
    }

    /// A service behind a fresh bucket, and its layer.
    fn limited(qps: f64, burst: u32) -> (RateLimitLayer, impl Service<(), Error = Infallible>) {
        let layer = RateLimitLayer::new(ApiRate { qps, burst }).unwrap();
        let svc = layer.layer(counting());
        (layer, svc)
    }

    #[tokio::test]
    async fn a_burst_passes_at_once_and_the_next_request_waits_for_a_token() {
        // One token every 100 s: after the burst of 3, the fourth cannot be admitted
        // within the test's 200 ms, however slow the machine.
        let (layer, mut svc) = limited(0.01, 3);
        for _ in 0..3 {
            svc.ready().await.unwrap().call(()).await.unwrap();
        }
        let waited = tokio::time::timeout(Duration::from_millis(200), svc.ready()).await;
        assert!(waited.is_err(), "the fourth request waits for a token");
        // Services of one layer share the bucket.
        let mut other = layer.layer(counting());
        let waited = tokio::time::timeout(Duration::from_millis(50), other.ready()).await;
        assert!(waited.is_err(), "a second service shares the empty bucket");
    }

    #[tokio::test]
    async fn tokens_refill_at_the_rate() {
        // 1,000 a second, burst 1: ten requests need at least 9 ms of refills.
        let (_, mut svc) = limited(1000.0, 1);
        let start = std::time::Instant::now();
        for _ in 0..10 {
            svc.ready().await.unwrap().call(()).await.unwrap();
        }
        assert!(start.elapsed() >= Duration::from_millis(9));
    }

    #[test]
    fn paced_requests_may_leave_a_grid_tick_late_within_half_the_burst_tolerance() {
        let slack = |qps, burst| ApiRate { qps, burst }.slack();
        // kube-controller-manager's limits and the raised ones: the grid.
        assert_eq!(slack(20.0, 30), WAKE_GRID);
        assert_eq!(slack(200.0, 300), WAKE_GRID);
        // 4 tokens of tolerance at 1,000 a second: 2 ms.
        assert_eq!(slack(1000.0, 5), Duration::from_millis(2));
        // No tolerance, no slack: every token is taken when it comes due.
        assert_eq!(slack(1000.0, 1), Duration::ZERO);
        assert_eq!(slack(0.5, 1), Duration::ZERO);
    }

    #[test]
    fn deadlines_round_up_to_the_shared_grid() {
        // A second ahead of now, so that a deadline before it always exists.
        let origin = tokio::time::Instant::now() + Duration::from_secs(1);
        let ms = Duration::from_millis;
        let grid = |after: u64, slack: u64| on_grid(origin, origin + ms(after), ms(slack)) - origin;
        assert_eq!(grid(23, 10), ms(30));
        assert_eq!(grid(1, 10), ms(10));
        // On a tick already: not moved.
        assert_eq!(grid(30, 10), ms(30));
        assert_eq!(grid(0, 10), ms(0));
        // No slack: the deadline itself.
        assert_eq!(grid(23, 0), ms(23));
        // Before the origin (a wait computed from an earlier clock): not moved.
        let before = origin - ms(5);
        assert_eq!(on_grid(origin, before, ms(10)), before);
    }

    #[test]
    fn taking_each_token_late_by_the_slack_loses_none() {
        // governor's own bucket on a fake clock: drain the burst, then take 100 tokens each
        // `slack` after it came due. The lateness does not add up: the 100 take the rate's
        // 5 s and one slack, not 100 of them.
        let rate = ApiRate::KCM;
        let slack = rate.slack();
        assert!(!slack.is_zero());
        let clock = governor::clock::FakeRelativeClock::default();
        let limiter = RateLimiter::direct_with_clock(rate.quota().unwrap(), clock.clone());
        for _ in 0..rate.burst {
            limiter.check().unwrap();
        }
        let start = clock.now();
        for _ in 0..100 {
            let not_until = limiter.check().unwrap_err();
            clock.advance(not_until.wait_time_from(clock.now()) + slack);
            limiter.check().expect("a late token is still there");
        }
        let took = Duration::from(governor::clock::Reference::duration_since(
            &clock.now(),
            start,
        ));
        let period = Duration::from_millis(50);
        assert!(took <= period * 100 + slack, "{took:?}");
    }

    #[test]
    fn unusable_rates_are_refused() {
        for qps in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-300] {
            let err = RateLimitLayer::new(ApiRate { qps, burst: 1 }).unwrap_err();
            assert!(err.to_string().contains("--kube-api-qps"), "{qps}: {err}");
        }
        let err = RateLimitLayer::new(ApiRate { qps: 1.0, burst: 0 }).unwrap_err();
        assert!(err.to_string().contains("--kube-api-burst"));
    }

    fn status(code: u16, message: &str) -> Box<kube::core::Status> {
        Box::new(kube::core::Status {
            code,
            message: message.into(),
            ..kube::core::Status::default()
        })
    }

    #[test]
    fn gone_and_too_large_resource_versions_need_a_relist() {
        let start = |s| kube::runtime::watcher::Error::WatchStartFailed(kube::Error::Api(s));
        assert!(needs_relist(&start(status(
            410,
            "too old resource version: 5 (9)"
        ))));
        assert!(needs_relist(&kube::runtime::watcher::Error::WatchError(
            status(410, "gone")
        )));
        assert!(needs_relist(&start(status(
            504,
            "Timeout: Too large resource version: 900, current: 12"
        ))));
        assert!(!needs_relist(&start(status(
            504,
            "Timeout: request did not complete"
        ))));
        assert!(!needs_relist(&start(status(500, "boom"))));
        assert!(!needs_relist(&start(status(403, "forbidden"))));
        assert!(!needs_relist(
            &kube::runtime::watcher::Error::NoResourceVersion
        ));
    }
}
