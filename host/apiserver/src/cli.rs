//! The `weir apiserver` command line.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use crate::config::Config;
use crate::faults::Faults;
use crate::server::ApiServer;

/// Run an in-memory Kubernetes API server for demos, tests and benchmarks.
#[derive(clap::Args, Debug, Clone)]
pub struct ApiServerArgs {
    /// Address to listen on (plain HTTP). Port 0 picks a free port; the chosen address is printed.
    #[arg(long, env = "WEIR_APISERVER_ADDR", default_value = "127.0.0.1:0")]
    pub addr: SocketAddr,

    /// Write a kubeconfig for this server here (cluster, user and context named `weir`, no auth).
    #[arg(long, env = "WEIR_APISERVER_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,

    /// Load objects from this file at start: multi-document YAML, or a JSON/YAML List or single
    /// object. Status is kept as written; missing namespaces are created.
    #[arg(long, env = "WEIR_APISERVER_SEED")]
    pub seed: Option<PathBuf>,

    /// Watch history kept per resource, in events. A watch that resumes from an older
    /// resourceVersion gets 410 Gone and must relist.
    #[arg(long, env = "WEIR_APISERVER_HISTORY", default_value_t = 10_000)]
    pub history: usize,

    /// Interval between BOOKMARK events on watches that set allowWatchBookmarks, in milliseconds.
    #[arg(
        long,
        env = "WEIR_APISERVER_BOOKMARK_INTERVAL_MS",
        default_value_t = 1000
    )]
    pub bookmark_interval_ms: u64,

    /// Longest time a deleted pod that is bound to a node stays terminating, in milliseconds.
    /// Without it the emulated kubelet removes such a pod when its grace period ends (30 s by
    /// default); a small value makes tests fast while `deletionTimestamp` still shows the full
    /// grace period.
    #[arg(long, env = "WEIR_APISERVER_MAX_POD_GRACE_PERIOD_MS")]
    pub max_pod_grace_period_ms: Option<u64>,

    /// The resourceVersion to start at (the first write gets the next one). Starting a server
    /// ahead of or behind another's last resourceVersion replays an API server restored from
    /// another etcd; clients that resume from before the start get 410 Gone.
    #[arg(
        long,
        env = "WEIR_APISERVER_INITIAL_RESOURCE_VERSION",
        default_value_t = 0
    )]
    pub initial_resource_version: u64,

    /// Fault injection: latency added to every API request, in milliseconds.
    #[arg(long, env = "WEIR_APISERVER_FAULT_LATENCY_MS", default_value_t = 0)]
    pub fault_latency_ms: u64,

    /// Fault injection: share of API requests (0.0–1.0) answered 500 InternalError.
    #[arg(long, env = "WEIR_APISERVER_FAULT_ERROR_RATE", default_value_t = 0.0)]
    pub fault_error_rate: f64,

    /// Fault injection: share of API requests (0.0–1.0) answered 429 TooManyRequests.
    #[arg(
        long,
        env = "WEIR_APISERVER_FAULT_THROTTLE_RATE",
        default_value_t = 0.0
    )]
    pub fault_throttle_rate: f64,

    /// Fault injection: Retry-After seconds sent with injected 429 answers.
    #[arg(long, env = "WEIR_APISERVER_FAULT_RETRY_AFTER", default_value_t = 1)]
    pub fault_retry_after: u64,

    /// Fault injection: answer the first N updates (PUT or PATCH) with 409 Conflict.
    #[arg(long, env = "WEIR_APISERVER_FAULT_CONFLICTS", default_value_t = 0)]
    pub fault_conflicts: u64,

    /// Fault injection: answer the first N watch requests with 410 Gone (Expired).
    #[arg(long, env = "WEIR_APISERVER_FAULT_EXPIRE_WATCHES", default_value_t = 0)]
    pub fault_expire_watches: u64,

    /// How long a client may take to send a request's headers, counted from when the server
    /// waits for them: after the accept, and on a keep-alive connection after the previous
    /// response (so it is also the idle timeout of keep-alive connections). 1s to 10m.
    #[arg(long, env = "WEIR_APISERVER_HEADER_READ_TIMEOUT", default_value = "30s", value_parser = weir_serve::parse_timeout)]
    pub header_read_timeout: Duration,

    /// Most connections served at once; further ones wait in the listen backlog until one
    /// closes. Watches hold a connection each.
    #[arg(long, env = "WEIR_APISERVER_MAX_CONNECTIONS", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: u32,

    /// Static bearer tokens for TokenReview, in kube-apiserver's --token-auth-file format:
    /// one `token,user,uid,"group1,group2"` line each. Without it no token is valid.
    /// weir-apiserver's own API stays unauthenticated (docs/apiserver.md).
    #[arg(long, env = "WEIR_APISERVER_TOKEN_AUTH_FILE", value_name = "FILE")]
    pub token_auth_file: Option<PathBuf>,

    /// ABAC policies for SubjectAccessReview, in kube-apiserver's --authorization-policy-file
    /// format (one JSON Policy a line). Without it every review is allowed, as
    /// --authorization-mode=AlwaysAllow.
    #[arg(
        long,
        env = "WEIR_APISERVER_AUTHORIZATION_POLICY_FILE",
        value_name = "FILE"
    )]
    pub authorization_policy_file: Option<PathBuf>,

    /// Fault injection: seed of the random source that picks the failing requests.
    #[arg(long, env = "WEIR_APISERVER_FAULT_SEED", default_value_t = 0)]
    pub fault_seed: u64,
}

impl ApiServerArgs {
    /// The server configuration these flags describe (without the seed file).
    pub fn config(&self) -> Config {
        Config {
            addr: self.addr,
            history: self.history,
            bookmark_interval: Duration::from_millis(self.bookmark_interval_ms.max(1)),
            faults: Faults {
                latency: Duration::from_millis(self.fault_latency_ms),
                error_rate: self.fault_error_rate,
                throttle_rate: self.fault_throttle_rate,
                retry_after_seconds: self.fault_retry_after,
                conflict_next_updates: self.fault_conflicts,
                expire_next_watches: self.fault_expire_watches,
                seed: self.fault_seed,
                ..Faults::default()
            },
            seed: Vec::new(),
            max_pod_grace_period: self.max_pod_grace_period_ms.map(Duration::from_millis),
            initial_resource_version: self.initial_resource_version,
            limits: weir_serve::Limits {
                header_read_timeout: self.header_read_timeout,
                max_connections: self.max_connections as usize,
            },
            ..Config::default()
        }
    }
}

/// Runs the server until SIGINT or SIGTERM, printing its address and kubeconfig path.
pub async fn run(args: ApiServerArgs) -> anyhow::Result<()> {
    let mut config = args.config();
    if let Some(path) = &args.seed {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        config.seed = crate::seed::parse_seed(&text)
            .with_context(|| format!("parsing {}", path.display()))?;
    }
    let read = |path: &PathBuf| {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    };
    if let Some(path) = &args.token_auth_file {
        config.reviews.tokens = crate::review::parse_token_file(&read(path)?)
            .with_context(|| format!("--token-auth-file {}", path.display()))?;
    }
    if let Some(path) = &args.authorization_policy_file {
        config.reviews.policies = Some(
            crate::review::parse_policy_file(&read(path)?)
                .with_context(|| format!("--authorization-policy-file {}", path.display()))?,
        );
    }
    let server = ApiServer::start(config).await?;
    println!("weir-apiserver listening on {}", server.url());
    if let Some(path) = &args.kubeconfig {
        server
            .write_kubeconfig(path)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("kubeconfig written to {}", path.display());
    }
    wait_for_signal().await?;
    tracing::info!("shutting down");
    server.shutdown().await;
    Ok(())
}

#[cfg(unix)]
async fn wait_for_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        _ = term.recv() => {}
    }
    Ok(())
}

#[cfg(not(unix))]
async fn wait_for_signal() -> anyhow::Result<()> {
    tokio::signal::ctrl_c().await?;
    Ok(())
}
