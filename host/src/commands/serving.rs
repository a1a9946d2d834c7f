//! The flags of `weir run`'s HTTP listeners, and starting them: the plain admin endpoint
//! (probes) and, by default, the secure metrics endpoint.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use weir::admin::Admin;
use weir::admin::auth::Authorizer;

/// Listener flags of `weir run` (docs/operations.md, "Admin and metrics endpoints").
#[derive(clap::Args, Debug, Clone)]
pub struct ServingArgs {
    /// Address of the plain admin endpoint: /healthz and /readyz for probes, and /metrics
    /// and /guest too with --metrics-secure=false. Use 0.0.0.0:9090 in a Pod so the kubelet
    /// reaches it.
    #[arg(long, env = "WEIR_ADMIN_ADDR", default_value = "127.0.0.1:9090")]
    pub admin_addr: SocketAddr,

    /// Serve /metrics and /guest over HTTPS on --metrics-addr, only to callers whose bearer
    /// token the API server authenticates (TokenReview) and whose user it allows to `get` the
    /// path (SubjectAccessReview on the non-resource URL, such as a ClusterRole with
    /// nonResourceURLs ["/metrics", "/guest"]), as controller-runtime's secure metrics
    /// serving does. `false` serves them in plain HTTP on --admin-addr, for local use.
    #[arg(
        long,
        env = "WEIR_METRICS_SECURE",
        default_value_t = true,
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub metrics_secure: bool,

    /// Address of the secure metrics endpoint (HTTPS; with --metrics-secure).
    #[arg(long, env = "WEIR_METRICS_ADDR", default_value = "127.0.0.1:8443")]
    pub metrics_addr: SocketAddr,

    /// Serving certificate chain of the secure metrics endpoint (PEM, such as `tls.crt` of a
    /// kubernetes.io/tls Secret). Without it and --metrics-tls-key, a self-signed certificate
    /// is made at start. Read at start: a renewed certificate takes a restart.
    #[arg(
        long,
        env = "WEIR_METRICS_TLS_CERT",
        value_name = "FILE",
        requires = "metrics_tls_key"
    )]
    pub metrics_tls_cert: Option<PathBuf>,

    /// Private key of --metrics-tls-cert (PEM).
    #[arg(
        long,
        env = "WEIR_METRICS_TLS_KEY",
        value_name = "FILE",
        requires = "metrics_tls_cert"
    )]
    pub metrics_tls_key: Option<PathBuf>,

    /// On the admin and metrics listeners, how long a client may take to send a request's
    /// headers, counted from when the server waits for them: after the accept (and the TLS
    /// handshake), and on a keep-alive connection after the previous response, so it is also
    /// the idle timeout of keep-alive connections. 1s to 10m.
    #[arg(long, env = "WEIR_ADMIN_HEADER_READ_TIMEOUT", default_value = "10s", value_parser = weir_serve::parse_timeout)]
    pub admin_header_read_timeout: Duration,

    /// Most connections each of the admin and metrics listeners serves at once; further ones
    /// wait in the listen backlog until one closes.
    #[arg(long, env = "WEIR_ADMIN_MAX_CONNECTIONS", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub admin_max_connections: u32,
}

impl ServingArgs {
    fn limits(&self) -> weir_serve::Limits {
        weir_serve::Limits {
            header_read_timeout: self.admin_header_read_timeout,
            max_connections: self.admin_max_connections as usize,
        }
    }

    /// The metrics endpoint's TLS: the given certificate, or a self-signed one for the host
    /// name, `localhost` and the loopback addresses.
    fn tls(&self) -> anyhow::Result<weir_serve::Tls> {
        if let (Some(cert), Some(key)) = (&self.metrics_tls_cert, &self.metrics_tls_key) {
            return weir_serve::Tls::from_pem_files(cert, key)
                .context("--metrics-tls-cert/--metrics-tls-key");
        }
        let mut names = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        // A host name that is not ASCII cannot be a certificate's DNS name; the others serve.
        if let Some(host) = hostname::get().ok().and_then(|h| h.into_string().ok())
            && !host.is_empty()
            && host.is_ascii()
        {
            names.push(host);
        }
        weir_serve::Tls::self_signed(&names).context("--metrics-secure")
    }

    /// Starts the listeners; they serve until the process ends. `reviews` makes the client the
    /// secure endpoint asks the API server with, when it is served.
    pub async fn serve<F>(&self, admin: Admin, reviews: impl FnOnce() -> F) -> anyhow::Result<()>
    where
        F: Future<Output = anyhow::Result<kube::Client>>,
    {
        let limits = self.limits();
        let (admin_addr, _) = weir_serve::spawn(
            self.admin_addr,
            admin.plain(!self.metrics_secure),
            limits,
            None,
        )
        .await
        .with_context(|| format!("cannot serve --admin-addr {}", self.admin_addr))?;
        if !self.metrics_secure {
            tracing::info!(%admin_addr, "admin endpoint (plain HTTP): /healthz /readyz /metrics /guest");
            return Ok(());
        }
        tracing::info!(%admin_addr, "admin endpoint (plain HTTP): /healthz /readyz");
        let tls = self.tls()?;
        let authorizer = Arc::new(Authorizer::new(reviews().await?));
        let (metrics_addr, _) = weir_serve::spawn(
            self.metrics_addr,
            admin.secure(authorizer),
            limits,
            Some(tls),
        )
        .await
        .with_context(|| format!("cannot serve --metrics-addr {}", self.metrics_addr))?;
        tracing::info!(%metrics_addr, "metrics endpoint (HTTPS, TokenReview and SubjectAccessReview): /metrics /guest");
        Ok(())
    }
}
