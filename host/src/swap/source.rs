//! Where guests come from, and watching them for changes.
//!
//! A file is watched with `notify` on its directory (kubelet updates a mounted ConfigMap by
//! swapping a `..data` symlink, which never writes the file itself), plus a periodic content
//! hash check as a fallback for filesystems without change events. A ConfigMap is watched
//! through the API, which swaps within seconds rather than after kubelet's sync period.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use futures::StreamExt;
use k8s_openapi::api::core::v1 as core;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use notify::Watcher;
use tokio_util::sync::CancellationToken;

use super::Swapper;
use crate::runtime::{Builtin, digest};

/// A place a guest is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuestSource {
    /// A guest built into weir: `builtin:default` (also what no `--guest` means) or
    /// `builtin:cel`.
    Builtin(Builtin),
    /// A component file.
    File(PathBuf),
    /// `binaryData[key]` (or `data[key]`) of a ConfigMap.
    ConfigMap {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// Key.
        key: String,
    },
}

impl GuestSource {
    /// Parses `--guest`: `builtin:NAME`, `configmap:NAMESPACE/NAME/KEY`, or a file path.
    pub fn parse(value: &str) -> Result<GuestSource, String> {
        if let Some(name) = value.strip_prefix(Builtin::PREFIX) {
            return Builtin::from_name(name)
                .map(GuestSource::Builtin)
                .map_err(|e| format!("--guest {value:?}: {e}"));
        }
        match value.strip_prefix("configmap:") {
            None => Ok(GuestSource::File(PathBuf::from(value))),
            Some(rest) => {
                let (namespace, name, key) = parse_configmap_key(rest).ok_or_else(|| {
                    format!("--guest {value:?}: expected configmap:NAMESPACE/NAME/KEY")
                })?;
                Ok(GuestSource::ConfigMap {
                    namespace,
                    name,
                    key,
                })
            }
        }
    }

    /// A short description for logs and the swap history.
    pub fn describe(&self) -> String {
        match self {
            GuestSource::Builtin(builtin) => builtin.to_string(),
            GuestSource::File(p) => p.display().to_string(),
            GuestSource::ConfigMap {
                namespace,
                name,
                key,
            } => format!("configmap:{namespace}/{name}/{key}"),
        }
    }

    /// Reads the component bytes now.
    pub async fn read(&self, client: Option<&Client>) -> anyhow::Result<Vec<u8>> {
        match self {
            GuestSource::Builtin(builtin) => Ok(builtin.bytes().to_vec()),
            GuestSource::File(path) => tokio::fs::read(path)
                .await
                .with_context(|| format!("cannot read guest {}", path.display())),
            GuestSource::ConfigMap {
                namespace,
                name,
                key,
            } => {
                let client = client.context("a ConfigMap guest needs a cluster connection")?;
                let api: Api<core::ConfigMap> = Api::namespaced(client.clone(), namespace);
                let cm = api
                    .get(name)
                    .await
                    .with_context(|| format!("cannot get ConfigMap {namespace}/{name}"))?;
                configmap_bytes(&cm, key)
                    .with_context(|| format!("ConfigMap {namespace}/{name} has no key {key:?}"))
            }
        }
    }
}

/// Splits `NAMESPACE/NAME/KEY` (the part after `configmap:`), each part non-empty.
pub fn parse_configmap_key(text: &str) -> Option<(String, String, String)> {
    match text.split('/').collect::<Vec<_>>().as_slice() {
        [ns, name, key] if !ns.is_empty() && !name.is_empty() && !key.is_empty() => {
            Some((ns.to_string(), name.to_string(), key.to_string()))
        }
        _ => None,
    }
}

/// The component stored under `key`: `binaryData` first, then `data` (WAT text works there).
pub fn configmap_bytes(cm: &core::ConfigMap, key: &str) -> Option<Vec<u8>> {
    cm.binary_data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|b| b.0.clone())
        .or_else(|| {
            cm.data
                .as_ref()
                .and_then(|d| d.get(key))
                .map(|s| s.clone().into_bytes())
        })
}

/// Watches `path` and offers every new content to `swapper` until `shutdown`.
pub fn watch_file(
    path: PathBuf,
    swapper: Arc<Swapper>,
    poll: Duration,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let watcher = notify::recommended_watcher(move |_event: notify::Result<notify::Event>| {
            let _ = tx.send(());
        })
        .and_then(|mut w| {
            w.watch(&dir, notify::RecursiveMode::NonRecursive)
                .map(|()| w)
        });
        let _watcher = match watcher {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot watch the guest's directory; polling only");
                None
            }
        };
        let source = path.display().to_string();
        // The digest last offered, swapped or refused: a refused file is not retried until
        // its content changes.
        let mut last = swapper.handle.guest.current().digest().to_string();
        let mut tick = tokio::time::interval(poll);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
                Some(()) = rx.recv() => {
                    // Coalesce the burst of events one replacement makes.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    while rx.try_recv().is_ok() {}
                }
            }
            let Ok(bytes) = tokio::fs::read(&path).await else {
                continue;
            };
            let d = digest(&bytes);
            if d == last {
                continue;
            }
            last = d;
            if let Err(refusal) = swapper.offer(bytes, &source).await {
                tracing::debug!(%source, reason = refusal.reason(), "candidate from file refused");
            }
        }
    })
}

/// The policy configuration stored under `key` (`data`, JSON or YAML), as the JSON text
/// guests receive.
pub fn configmap_config(cm: &core::ConfigMap, key: &str) -> Result<String, String> {
    let text = configmap_bytes(cm, key).ok_or_else(|| format!("no key {key:?}"))?;
    let text = String::from_utf8(text).map_err(|_| format!("key {key:?} is not UTF-8 text"))?;
    crate::cases::normalize_config(&text).map_err(|e| format!("key {key:?}: {e}"))
}

/// Reads the policy configuration of `namespace/name`, key `key`, now.
pub async fn read_configmap_config(
    client: &Client,
    namespace: &str,
    name: &str,
    key: &str,
) -> anyhow::Result<String> {
    let api: Api<core::ConfigMap> = Api::namespaced(client.clone(), namespace);
    let cm = api
        .get(name)
        .await
        .with_context(|| format!("cannot get ConfigMap {namespace}/{name}"))?;
    configmap_config(&cm, key)
        .map_err(|e| anyhow::anyhow!("ConfigMap {namespace}/{name}: policy configuration: {e}"))
}

/// What a watched ConfigMap holds for weir.
#[derive(Debug, Clone)]
pub enum ConfigMapHolds {
    /// The guest under `guest_key`; with `config_key`, its configuration too, and the two are
    /// offered, checked and swapped as one pair.
    Guest {
        /// Key of the component.
        guest_key: String,
        /// Key of the policy configuration, if the ConfigMap carries it.
        config_key: Option<String>,
    },
    /// Only the configuration of a guest that does not change (a built-in one, such as
    /// `builtin:cel`, which is too large for a ConfigMap): a new configuration is offered
    /// with these guest bytes, so the swap gate checks it as any other candidate.
    Config {
        /// The guest's component bytes.
        guest: Vec<u8>,
        /// Key of the policy configuration.
        config_key: String,
    },
}

/// Watches a ConfigMap and offers every new content to `swapper` until `shutdown`. Refusals
/// are also recorded as Warning Events on the ConfigMap.
pub fn watch_configmap(
    client: Client,
    namespace: String,
    name: String,
    holds: ConfigMapHolds,
    swapper: Arc<Swapper>,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let api: Api<core::ConfigMap> = Api::namespaced(client.clone(), &namespace);
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let mut stream = watcher(api, config)
            .default_backoff()
            .applied_objects()
            .boxed();
        let key = match &holds {
            ConfigMapHolds::Guest { guest_key, .. } => guest_key,
            ConfigMapHolds::Config { config_key, .. } => config_key,
        };
        let source = format!("configmap:{namespace}/{name}/{key}");
        let mut events = RefusalEvents::new(client.clone());
        loop {
            let next = tokio::select! {
                _ = shutdown.cancelled() => return,
                next = stream.next() => next,
            };
            match next {
                None => return,
                Some(Err(e)) => {
                    tracing::debug!(%source, error = %e, "ConfigMap watch failed; retrying")
                }
                Some(Ok(cm)) => {
                    let (bytes, config_key) = match &holds {
                        ConfigMapHolds::Guest {
                            guest_key,
                            config_key,
                        } => {
                            let Some(bytes) = configmap_bytes(&cm, guest_key) else {
                                let refusal = super::Refusal::Missing(format!(
                                    "ConfigMap {namespace}/{name} has no key {guest_key:?}"
                                ));
                                swapper.refused(&source, "none".into(), &refusal);
                                events.record(&cm, &refusal).await;
                                continue;
                            };
                            (bytes, config_key.as_deref())
                        }
                        ConfigMapHolds::Config { guest, config_key } => {
                            (guest.clone(), Some(config_key.as_str()))
                        }
                    };
                    let config = match config_key.map(|k| configmap_config(&cm, k)) {
                        None => None,
                        Some(Ok(config)) => Some(config),
                        Some(Err(e)) => {
                            let refusal = super::Refusal::ConfigText(e);
                            swapper.refused(&source, digest(&bytes), &refusal);
                            events.record(&cm, &refusal).await;
                            continue;
                        }
                    };
                    if let Err(refusal) = swapper.offer_pair(bytes, config, &source).await {
                        events.record(&cm, &refusal).await;
                    }
                }
            }
        }
    })
}

/// `GuestRefused` Warning Events on the ConfigMap, one series per refusal: a refusal that
/// repeats the last one's note counts up that Event's series, any other starts a new Event
/// whose note is its own.
///
/// kube-rs's `Recorder` folds Events by reason and action and keeps the first note, so a
/// refusal for another reason would read as the first one. It has no way to forget a series,
/// so a new note gets a new recorder (whose cache of series starts empty).
struct RefusalEvents {
    client: Client,
    recorder: kube::runtime::events::Recorder,
    last_note: Option<String>,
}

impl RefusalEvents {
    fn new(client: Client) -> Self {
        RefusalEvents {
            recorder: Self::recorder(&client),
            client,
            last_note: None,
        }
    }

    fn recorder(client: &Client) -> kube::runtime::events::Recorder {
        crate::controller::writer::event_recorder(client.clone(), "weir")
    }

    async fn record(&mut self, cm: &core::ConfigMap, refusal: &super::Refusal) {
        let note = format!("{refusal}; keeping the active guest");
        if self.last_note.as_ref() != Some(&note) {
            self.recorder = Self::recorder(&self.client);
            self.last_note = Some(note.clone());
        }
        let regarding = core::ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
            name: cm.metadata.name.clone(),
            namespace: cm.metadata.namespace.clone(),
            uid: cm.metadata.uid.clone(),
            ..Default::default()
        };
        crate::controller::writer::publish(
            &self.recorder,
            &regarding,
            kube::runtime::events::EventType::Warning,
            "GuestRefused",
            "SwapGuest",
            &note,
        )
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sources() {
        assert_eq!(
            GuestSource::parse("a/b.wasm").unwrap(),
            GuestSource::File("a/b.wasm".into())
        );
        assert_eq!(
            GuestSource::parse("configmap:ns/cm/guest.wasm").unwrap(),
            GuestSource::ConfigMap {
                namespace: "ns".into(),
                name: "cm".into(),
                key: "guest.wasm".into()
            }
        );
        assert_eq!(
            GuestSource::parse("builtin:cel").unwrap(),
            GuestSource::Builtin(Builtin::Cel)
        );
        assert_eq!(
            GuestSource::parse("builtin:default").unwrap(),
            GuestSource::Builtin(Builtin::Default)
        );
        let err = GuestSource::parse("builtin:lua").unwrap_err();
        assert!(err.contains("builtin:default, builtin:cel"), "{err}");
        assert!(GuestSource::parse("configmap:ns/cm").is_err());
        assert!(GuestSource::parse("configmap://x").is_err());
    }
}
