//! Server configuration.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;

use crate::faults::Faults;
use crate::review;

/// Server configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on; port 0 picks a free port.
    pub addr: SocketAddr,
    /// Watch history kept per resource, in events. Watches from older resourceVersions get 410.
    pub history: usize,
    /// Interval of BOOKMARK events on watches that ask for them.
    pub bookmark_interval: Duration,
    /// Fault injection at start.
    pub faults: Faults,
    /// Objects to load at start (status kept, missing namespaces created).
    pub seed: Vec<Value>,
    /// How long after a namespace is marked for deletion its contents are deleted (the
    /// namespace controller's work; in a cluster it takes a moment too).
    pub namespace_deletion_delay: Duration,
    /// Upper bound on how long a terminating pod stays before the emulated kubelet removes it.
    /// `None` (the default): the whole grace period, as when containers ignore SIGTERM. Tests
    /// set a short value; the pod's `deletionTimestamp` still shows the full grace period.
    pub max_pod_grace_period: Option<Duration>,
    /// How long reading a request body may take before the request fails with 504 Timeout
    /// (kube-apiserver's `--request-timeout` default is 60 s), so a client that stalls
    /// mid-body does not hold a connection and its buffer forever.
    pub request_body_timeout: Duration,
    /// The resourceVersion the server starts at: its first write gets the next one. A server
    /// started ahead of (or behind) another one's last resourceVersion stands in for an API
    /// server restored from another etcd. Watches and `Exact` lists from before the start get
    /// 410 Gone: the history begins after the seed.
    pub initial_resource_version: u64,
    /// Whether watches accept `sendInitialEvents` (watch-list). `false` answers it with 422,
    /// as a kube-apiserver whose `WatchList` feature gate is off, to test clients' fallback.
    pub watch_list: bool,
    /// The tokens and policies TokenReview and SubjectAccessReview answer from.
    pub reviews: review::Reviews,
    /// Header-read timeout and connection cap of the listener.
    pub limits: weir_serve::Limits,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            history: 10_000,
            bookmark_interval: Duration::from_secs(1),
            faults: Faults::default(),
            seed: Vec::new(),
            namespace_deletion_delay: Duration::from_millis(500),
            max_pod_grace_period: None,
            request_body_timeout: Duration::from_secs(60),
            initial_resource_version: 0,
            watch_list: true,
            reviews: review::Reviews::default(),
            limits: weir_serve::Limits::default(),
        }
    }
}
