//! Where guests come from, and watching them for changes.
//!
//! A file is watched with `notify` on its directory (kubelet updates a mounted ConfigMap by
//! swapping a `..data` symlink, which never writes the file itself), plus a periodic content
//! hash check as a fallback for filesystems without change events. A ConfigMap is watched
//! through the API, which swaps within seconds rather than after kubelet's sync period. An
//! `oci://` reference is pulled once and not watched: a tag that moves changes nothing (a
//! ConfigMap holding a reference is how a registry guest is swapped, see [`super::oci`]).

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
use super::oci::{PullOutcome, Puller, reference_in};
use crate::oci::{GuestRef, Pulled, Registry};
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
    /// A component published in an OCI registry: `oci://REGISTRY/REPO:TAG` or
    /// `@sha256:DIGEST`.
    Oci(GuestRef),
}

/// A guest read from its source.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The component.
    pub bytes: Vec<u8>,
    /// What the registry gave, when it came from one (directly or through a reference in a
    /// ConfigMap); its bytes are `bytes`.
    pub pulled: Option<Pulled>,
}

impl GuestSource {
    /// Parses `--guest`: `builtin:NAME`, `configmap:NAMESPACE/NAME/KEY`, `oci://...`, or a
    /// file path.
    pub fn parse(value: &str) -> Result<GuestSource, String> {
        if value.starts_with(crate::oci::reference::SCHEME) {
            return GuestRef::parse(value)
                .map(GuestSource::Oci)
                .map_err(|e| format!("--guest {e}"));
        }
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
            GuestSource::Oci(reference) => reference.to_string(),
        }
    }

    /// Reads the component now: a ConfigMap's key may hold an `oci://` reference, which is
    /// pulled through `registry` like an `oci://` source. With a public key on `registry`,
    /// only built-in guests and signed registry guests are accepted.
    pub async fn fetch(
        &self,
        client: Option<&Client>,
        registry: Option<&Registry>,
    ) -> anyhow::Result<Fetched> {
        let requires_signature = registry.is_some_and(|r| r.options().public_key.is_some());
        let (bytes, what) = match self {
            GuestSource::Builtin(builtin) => {
                return Ok(Fetched {
                    bytes: builtin.bytes().to_vec(),
                    pulled: None,
                });
            }
            GuestSource::Oci(reference) => return pull(registry, reference).await,
            GuestSource::File(path) => (
                tokio::fs::read(path)
                    .await
                    .with_context(|| format!("cannot read guest {}", path.display()))?,
                "a guest file",
            ),
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
                let bytes = configmap_bytes(&cm, key)
                    .with_context(|| format!("ConfigMap {namespace}/{name} has no key {key:?}"))?;
                if let Some(reference) = reference_in(&bytes) {
                    let reference = reference
                        .map_err(anyhow::Error::msg)
                        .with_context(|| format!("guest {}", self.describe()))?;
                    return pull(registry, &reference).await;
                }
                (bytes, "a component in a ConfigMap")
            }
        };
        if requires_signature {
            anyhow::bail!("{}", unsigned_refusal(what, &self.describe()));
        }
        Ok(Fetched {
            bytes,
            pulled: None,
        })
    }
}

/// Why a guest read as bytes (from `what`) is refused when guests must be signed.
pub fn unsigned_refusal(what: &str, source: &str) -> String {
    format!(
        "{source}: --guest-public-key accepts only signed registry guests (oci://...) and \
         built-in ones; {what} carries no signature (publish it with `weir guest push` and \
         sign it with `weir guest sign`)"
    )
}

/// Pulls `reference` once (a tag is resolved here, and logged).
async fn pull(registry: Option<&Registry>, reference: &GuestRef) -> anyhow::Result<Fetched> {
    let registry =
        registry.with_context(|| format!("guest {reference}: no registry client was set up"))?;
    let pulled = registry
        .pull(reference)
        .await
        .with_context(|| format!("guest {reference}"))?;
    tracing::info!(reference = %reference, digest = %pulled.digest, verified = pulled.verified, "guest reference resolved");
    Ok(Fetched {
        bytes: pulled.bytes.clone(),
        pulled: Some(pulled),
    })
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
        let mut watch = ConfigMapWatch {
            what: format!("ConfigMap {namespace}/{name}"),
            source,
            holds,
            events: RefusalEvents::new(client.clone()),
            puller: Puller::new(swapper.registry(), swapper.latest_pulled()),
            swapper,
        };
        // A ConfigMap whose reference could not be pulled for now, and when to try again.
        let mut retry: Option<(tokio::time::Instant, core::ConfigMap)> = None;
        loop {
            let retry_at = retry.as_ref().map(|(at, _)| *at);
            let cm = tokio::select! {
                _ = shutdown.cancelled() => return,
                () = async {
                    match retry_at {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                } => match retry.take() {
                    Some((_, cm)) => cm,
                    None => continue,
                },
                next = stream.next() => match next {
                    None => return,
                    Some(Err(e)) => {
                        tracing::debug!(source = %watch.source, error = %e, "ConfigMap watch failed; retrying");
                        continue;
                    }
                    Some(Ok(cm)) => {
                        retry = None;
                        cm
                    }
                },
            };
            if let Some(wait) = watch.offer(&cm).await {
                retry = Some((tokio::time::Instant::now() + wait, cm));
            }
        }
    })
}

/// One ConfigMap watch's state between events.
struct ConfigMapWatch {
    what: String,
    source: String,
    holds: ConfigMapHolds,
    events: RefusalEvents,
    puller: Puller,
    swapper: Arc<Swapper>,
}

impl ConfigMapWatch {
    /// Offers what `cm` holds to the swap gate. Returns when to try again, for a reference
    /// the registry could not serve for now.
    async fn offer(&mut self, cm: &core::ConfigMap) -> Option<Duration> {
        let (bytes, config_key, source) = match &self.holds {
            ConfigMapHolds::Guest {
                guest_key,
                config_key,
            } => {
                let Some(bytes) = configmap_bytes(cm, guest_key) else {
                    let refusal =
                        super::Refusal::Missing(format!("{} has no key {guest_key:?}", self.what));
                    self.refuse(cm, "none".into(), &refusal).await;
                    return None;
                };
                let (bytes, source) = match reference_in(&bytes) {
                    None if self.puller.requires_signature() => {
                        let refusal = super::Refusal::Signature(unsigned_refusal(
                            "a component in a ConfigMap",
                            &self.source,
                        ));
                        self.refuse(cm, digest(&bytes), &refusal).await;
                        return None;
                    }
                    None => (bytes, self.source.clone()),
                    Some(Err(e)) => {
                        let refusal = super::Refusal::Pull(format!("{}: {e}", self.what));
                        self.refuse(cm, "none".into(), &refusal).await;
                        return None;
                    }
                    Some(Ok(reference)) => match self.puller.pull(&reference).await {
                        PullOutcome::Ready(pulled) => {
                            self.swapper.note_pulled(&pulled);
                            let source = format!("{} ({})", self.source, pulled.pinned());
                            (pulled.bytes, source)
                        }
                        PullOutcome::Refused(refusal) => {
                            self.refuse(cm, reference.to_string(), &refusal).await;
                            return None;
                        }
                        PullOutcome::Retry(refusal, wait) => {
                            tracing::warn!(source = %self.source, %reference, retry_in = ?wait, reason = %refusal, "registry unavailable; the active guest keeps serving");
                            self.refuse(cm, reference.to_string(), &refusal).await;
                            return Some(wait);
                        }
                    },
                };
                (bytes, config_key.clone(), source)
            }
            ConfigMapHolds::Config { guest, config_key } => {
                (guest.clone(), Some(config_key.clone()), self.source.clone())
            }
        };
        let config = match config_key.map(|k| configmap_config(cm, &k)) {
            None => None,
            Some(Ok(config)) => Some(config),
            Some(Err(e)) => {
                let refusal = super::Refusal::ConfigText(e);
                self.refuse(cm, digest(&bytes), &refusal).await;
                return None;
            }
        };
        if let Err(refusal) = self.swapper.offer_pair(bytes, config, &source).await {
            self.events.record(cm, &refusal).await;
        }
        None
    }

    /// Records a refusal the watch itself made: in the swap history and as an Event.
    async fn refuse(&mut self, cm: &core::ConfigMap, candidate: String, refusal: &super::Refusal) {
        self.swapper.refused(&self.source, candidate, refusal);
        self.events.record(cm, refusal).await;
    }
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
