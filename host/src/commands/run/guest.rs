//! The guests `weir run` starts with: the policy configuration a ConfigMap holds, the shadow
//! guest, and the watch that offers the swap gate a changed guest or configuration.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use weir::controller::Config;
use weir::runtime::{Guest, Runtime};
use weir::swap::Swapper;
use weir::swap::source::{ConfigMapHolds, GuestSource, watch_configmap, watch_file};

use super::flags::{Args, PolicyConfigSource};

/// A ConfigMap key that holds the policy configuration of a built-in guest.
pub struct ConfigKey {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Key.
    pub key: String,
}

/// Reads the policy configuration into `config.policy_config` where the flags put it in a
/// ConfigMap: the guest's own (`--policy-config-key`) or a built-in guest's
/// (`--policy-config configmap:...`). Returns the latter's key, which is watched.
pub async fn read_configmap_config(
    args: &Args,
    source: &GuestSource,
    client: &kube::Client,
    config: &mut Config,
) -> anyhow::Result<Option<ConfigKey>> {
    if let Some(key) = &args.policy_config_key {
        let GuestSource::ConfigMap {
            namespace, name, ..
        } = source
        else {
            anyhow::bail!("--policy-config-key needs --guest configmap:NAMESPACE/NAME/KEY");
        };
        config.policy_config =
            weir::swap::source::read_configmap_config(client, namespace, name, key).await?;
    }
    match &args.policy_config {
        Some(PolicyConfigSource::ConfigMap {
            namespace,
            name,
            key,
        }) => {
            if !matches!(source, GuestSource::Builtin(_)) {
                anyhow::bail!(
                    "--policy-config configmap:{namespace}/{name}/{key} needs a built-in guest \
                     (--guest builtin:NAME); a guest in a ConfigMap carries its configuration \
                     with --policy-config-key"
                );
            }
            config.policy_config =
                weir::swap::source::read_configmap_config(client, namespace, name, key).await?;
            Ok(Some(ConfigKey {
                namespace: namespace.clone(),
                name: name.clone(),
                key: key.clone(),
            }))
        }
        Some(PolicyConfigSource::File(_)) | None => Ok(None),
    }
}

/// Loads the `--shadow-guest` at `path` (a file or a built-in guest; it is not watched) and
/// checks its configuration once, as the swap gate checks the active guest's.
pub async fn load_shadow(path: &Path, runtime: &Runtime, config: &Config) -> anyhow::Result<Guest> {
    let bytes = match GuestSource::parse(&path.to_string_lossy()).map_err(anyhow::Error::msg)? {
        GuestSource::Builtin(builtin) => builtin.bytes().to_vec(),
        GuestSource::File(file) => std::fs::read(&file)
            .with_context(|| format!("cannot read --shadow-guest {}", file.display()))?,
        GuestSource::ConfigMap { .. } => {
            anyhow::bail!("--shadow-guest takes a file or builtin:NAME, not a ConfigMap")
        }
    };
    let shadow = runtime
        .load_async(bytes)
        .await
        .with_context(|| format!("--shadow-guest {}", path.display()))?;
    let shadow_config = config
        .shadow_config
        .as_deref()
        .unwrap_or(&config.policy_config);
    shadow
        .validate_config(shadow_config)
        .await
        .with_context(|| {
            format!(
                "--shadow-guest {}: the policy refuses its configuration",
                path.display()
            )
        })?;
    Ok(shadow)
}

/// Starts the watch that offers `swapper` what changes: the guest file, the guest's
/// ConfigMap, or the ConfigMap key holding a built-in guest's configuration. `None` for a
/// built-in guest whose configuration does not live in a ConfigMap: nothing can change.
pub fn watch_guest(
    source: GuestSource,
    config_key: Option<ConfigKey>,
    client: kube::Client,
    args: &Args,
    swapper: &Arc<Swapper>,
    shutdown: &CancellationToken,
) -> Option<tokio::task::JoinHandle<()>> {
    match source {
        GuestSource::Builtin(builtin) => config_key.map(|at| {
            watch_configmap(
                client,
                at.namespace,
                at.name,
                ConfigMapHolds::Config {
                    guest: builtin.bytes().to_vec(),
                    config_key: at.key,
                },
                swapper.clone(),
                shutdown.clone(),
            )
        }),
        GuestSource::File(path) => Some(watch_file(
            path,
            swapper.clone(),
            args.guest_poll,
            shutdown.clone(),
        )),
        GuestSource::ConfigMap {
            namespace,
            name,
            key,
        } => Some(watch_configmap(
            client,
            namespace,
            name,
            ConfigMapHolds::Guest {
                guest_key: key,
                config_key: args.policy_config_key.clone(),
            },
            swapper.clone(),
            shutdown.clone(),
        )),
    }
}
