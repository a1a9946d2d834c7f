//! Fault injection: the settings, and the decision for each request.

use std::time::Duration;

use crate::util::{ApiError, Rng};

/// Fault injection settings. All off by default.
#[derive(Debug, Clone, PartialEq)]
pub struct Faults {
    /// Extra latency added to every API request (not to discovery or health endpoints).
    pub latency: Duration,
    /// Share (0.0–1.0) of API requests answered `500 InternalError`.
    pub error_rate: f64,
    /// Share (0.0–1.0) of API requests answered `429 TooManyRequests` with `Retry-After`.
    pub throttle_rate: f64,
    /// `Retry-After` seconds sent with injected 429s.
    pub retry_after_seconds: u64,
    /// The next N updates (PUT or PATCH) are answered `409 Conflict`.
    pub conflict_next_updates: u64,
    /// The next N watch requests are answered with a `410 Gone` (Expired) ERROR event.
    pub expire_next_watches: u64,
    /// Seed of the random source deciding which requests fail (deterministic per seed).
    pub seed: u64,
    /// Clients cut off from some resources, as by a network partition.
    pub partitions: Vec<Partition>,
}

/// Every request for `resource` from a client whose User-Agent contains `user_agent` is
/// answered `503 ServiceUnavailable`, as if the network between them were cut (used to make
/// one replica's Lease renewals fail while its other requests go through).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// A part of the client's User-Agent.
    pub user_agent: String,
    /// The resource's plural name, e.g. `"leases"`.
    pub resource: String,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            latency: Duration::ZERO,
            error_rate: 0.0,
            throttle_rate: 0.0,
            retry_after_seconds: 1,
            conflict_next_updates: 0,
            expire_next_watches: 0,
            seed: 0,
            partitions: Vec::new(),
        }
    }
}

/// The settings of a running server with the random source that applies them.
#[derive(Debug)]
pub(crate) struct FaultState {
    pub faults: Faults,
    pub rng: Rng,
}

/// The traits of a request that faults tell apart.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestKind<'a> {
    /// A PUT or PATCH.
    pub update: bool,
    /// A GET with `watch=true`.
    pub watch: bool,
    /// The resource's plural name.
    pub resource: &'a str,
    /// The client's User-Agent, `""` without one.
    pub user_agent: &'a str,
}

impl FaultState {
    /// A fresh state for `faults`, its random source seeded from them.
    pub(crate) fn new(faults: Faults) -> Self {
        FaultState {
            rng: Rng::new(faults.seed),
            faults,
        }
    }

    /// Decides the faults of one request: the latency to add, and the injected answer if
    /// it fails. Counted faults (`conflict_next_updates`, `expire_next_watches`) are used up.
    pub(crate) fn roll(&mut self, req: RequestKind<'_>) -> (Duration, Option<ApiError>) {
        let latency = self.faults.latency;
        let f = &mut self.faults;
        if f.partitions
            .iter()
            .any(|p| p.resource == req.resource && req.user_agent.contains(&p.user_agent))
        {
            let e = ApiError::new(
                503,
                "ServiceUnavailable",
                "injected fault: this client is partitioned from this resource",
            );
            // A partitioned request fails at once, as a cut connection does.
            return (Duration::ZERO, Some(e));
        }
        let roll = if f.error_rate > 0.0 || f.throttle_rate > 0.0 {
            self.rng.next_f64()
        } else {
            1.0
        };
        let err = if roll < f.error_rate {
            Some(ApiError::internal("injected fault: internal error"))
        } else if roll < f.error_rate + f.throttle_rate {
            let mut e = ApiError::new(
                429,
                "TooManyRequests",
                "injected fault: too many requests, please try again later",
            );
            e.retry_after = Some(f.retry_after_seconds);
            Some(e)
        } else if req.update && f.conflict_next_updates > 0 {
            f.conflict_next_updates -= 1;
            Some(ApiError::new(409, "Conflict", "injected"))
        } else if req.watch && f.expire_next_watches > 0 {
            f.expire_next_watches -= 1;
            Some(ApiError::expired(
                "too old resource version (injected fault)",
            ))
        } else {
            None
        };
        (latency, err)
    }
}
