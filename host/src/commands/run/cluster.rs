//! The Kubernetes client of weir's commands: its configuration, its User-Agent and its rate.

use std::path::Path;

use anyhow::Context;
use kube::config::{KubeConfigOptions, Kubeconfig};
use weir::client::ApiRate;

/// weir's User-Agent: its version, and which replica sends (API server audit logs and
/// managedFields then tell replicas apart).
pub fn user_agent(replica: &str) -> String {
    format!("weir/{} ({replica})", env!("CARGO_PKG_VERSION"))
}

/// A client for `kubeconfig`, or the one kube-rs infers, sending `user_agent` and keeping to
/// `rate`.
pub async fn client(
    kubeconfig: Option<&Path>,
    user_agent: &str,
    rate: ApiRate,
) -> anyhow::Result<kube::Client> {
    weir::client::rate_limited(client_config(kubeconfig, user_agent).await?, rate)
}

/// The client configuration of `kubeconfig`, or the one kube-rs infers, sending `user_agent`.
pub async fn client_config(
    kubeconfig: Option<&Path>,
    user_agent: &str,
) -> anyhow::Result<kube::Config> {
    let mut config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?
        }
        None => kube::Config::infer()
            .await
            .context("no kubeconfig given and none could be inferred")?,
    };
    let agent = axum::http::HeaderValue::from_str(user_agent)
        .with_context(|| format!("invalid User-Agent {user_agent:?}"))?;
    config.headers.push((axum::http::header::USER_AGENT, agent));
    Ok(config)
}
