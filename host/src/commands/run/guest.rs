//! The guests `weir run` starts with: the registry client and its credentials, the policy
//! configuration a ConfigMap holds, the shadow guest, and the watch that offers the swap gate
//! a changed guest or configuration.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use k8s_openapi::api::core::v1 as core;
use tokio_util::sync::CancellationToken;
use weir::controller::Config;
use weir::oci::{Credentials, Registry};
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

/// The registry client of `weir run`: the flags' transport and public key, the docker config
/// file's credentials, and over them the `--registry-secret`s'. `None` when no guest comes from
/// a registry and no signature key is set: a client needs the system's root certificates, which
/// an image built from scratch does not have, and a docker config file that a guest file never
/// reads must not stop weir.
pub async fn registry(
    args: &Args,
    source: &GuestSource,
    client: &kube::Client,
) -> anyhow::Result<Option<Arc<Registry>>> {
    let shadow_from_registry = args.shadow_guest.as_deref().is_some_and(|path| {
        matches!(
            GuestSource::parse(&path.to_string_lossy()),
            Ok(GuestSource::Oci(_))
        )
    });
    let needed = matches!(source, GuestSource::Oci(_))
        || shadow_from_registry
        || args.guest.registry.public_key.is_some()
        || !args.registry_secret.is_empty();
    if !needed {
        return Ok(None);
    }
    let mut options = args.guest.registry.options()?;
    for (namespace, name) in &args.registry_secret {
        let api: kube::Api<core::Secret> = kube::Api::namespaced(client.clone(), namespace);
        let secret = api
            .get(name)
            .await
            .with_context(|| format!("--registry-secret: cannot get Secret {namespace}/{name}"))?;
        let data = secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        options.credentials.merge(Credentials::from_secret_data(
            &data,
            &format!("Secret {namespace}/{name}"),
        )?);
    }
    Ok(Some(Arc::new(Registry::new(options)?)))
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

/// Loads the `--shadow-guest` at `path` (a file, an `oci://` reference or a built-in guest;
/// it is not watched) and checks its configuration once, as the swap gate checks the active
/// guest's.
pub async fn load_shadow(
    path: &Path,
    runtime: &Runtime,
    registry: Option<&Registry>,
    config: &Config,
) -> anyhow::Result<Guest> {
    let source = GuestSource::parse(&path.to_string_lossy()).map_err(anyhow::Error::msg)?;
    if let GuestSource::ConfigMap { .. } = source {
        anyhow::bail!("--shadow-guest takes a file, oci://... or builtin:NAME, not a ConfigMap")
    }
    let bytes = source
        .fetch(None, registry)
        .await
        .context("--shadow-guest")?
        .bytes;
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
/// built-in guest whose configuration does not live in a ConfigMap, and for an `oci://`
/// guest, pinned to the digest it resolved to at start: nothing can change.
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
        GuestSource::Oci(_) => None,
    }
}
