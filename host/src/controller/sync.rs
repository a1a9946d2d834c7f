//! The sync of one Service key: build the request from the caches, call the guest, validate
//! its decision, write it (spec §5, §13).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::controller::cache::Cache;
use crate::controller::writer::{EventRecorder, Writer, Written, is_namespace_terminating};
use crate::runtime::bindings as wit;
use crate::runtime::health::CallHealth;
use crate::runtime::{ActiveGuest, CallError, Guest};
use crate::trigger_time::TriggerTimeTracker;
use crate::validate::{Action, Violation, validate};
use crate::view;

/// Why a sync failed; the key goes back to the queue with backoff.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The key is not `namespace/name`.
    #[error("malformed key {0:?}")]
    BadKey(String),
    /// The cached Endpoints are older than our own last write (spec §5.9, §13.5).
    #[error("endpoints informer cache is out of date for {0} (resourceVersion {1})")]
    StaleCache(String, String),
    /// The guest failed.
    #[error(transparent)]
    Guest(#[from] CallError),
    /// The guest's decision broke the contract.
    #[error(transparent)]
    Invalid(#[from] Violation),
    /// The guest call could not run (the blocking pool is shutting down).
    #[error("guest call aborted: {0}")]
    Aborted(String),
    /// The API server refused or failed a write.
    #[error("{action} of endpoints {key} failed: {source}")]
    Write {
        /// `create`, `update` or `delete`.
        action: &'static str,
        /// The key.
        key: String,
        /// The API error.
        source: kube::Error,
    },
}

impl SyncError {
    /// Whether the guest misbehaved (trap, timeout, memory): what rollback counts.
    pub fn is_guest_fault(&self) -> bool {
        matches!(self, SyncError::Guest(e) if e.is_fault())
    }
}

/// What a successful sync did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to write, or the Service is not weir's to manage.
    Unchanged,
    /// Created, updated or deleted (or would have, in a dry run).
    Written(&'static str),
    /// Create refused because the namespace is terminating: dropped, as upstream does.
    NamespaceTerminating,
}

/// Remembers resourceVersions our own updates superseded (upstream's stale tracker).
#[derive(Debug, Default)]
pub struct StaleTracker {
    stale: Mutex<HashMap<String, String>>,
}

impl StaleTracker {
    fn is_stale(&self, key: &str, resource_version: &str) -> bool {
        self.stale
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .is_some_and(|rv| rv == resource_version)
    }

    fn superseded(&self, key: &str, resource_version: String) {
        self.stale
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.to_string(), resource_version);
    }

    fn forget(&self, key: &str) {
        self.stale
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
    }
}

/// Everything a sync needs; shared by all workers.
pub struct Syncer {
    /// The caches.
    pub cache: Arc<Cache>,
    /// The guest to call.
    pub guest: ActiveGuest,
    /// Where decisions go.
    pub writer: Writer,
    /// Failure events.
    pub events: EventRecorder,
    /// Policy configuration handed to the guest (JSON text, possibly empty).
    pub config: String,
    /// Trigger times.
    pub trigger_times: TriggerTimeTracker,
    /// Stale-cache guard.
    pub stale: StaleTracker,
    /// Outcomes of guest calls, per guest digest (hot-swap rollback reads it).
    pub health: Arc<CallHealth>,
    /// A second guest run on every sync for comparison only (`--shadow-guest`).
    pub shadow: Option<Guest>,
    /// The shadow guest's own policy configuration; `None` gives it the active one's.
    pub shadow_config: Option<String>,
    /// What the shadow guest did.
    pub shadow_stats: ShadowStats,
}

/// Counters of shadow evaluation.
#[derive(Debug, Default)]
pub struct ShadowStats {
    /// Syncs where both guests decided.
    pub compared: std::sync::atomic::AtomicU64,
    /// Of those, decisions that differ.
    pub differed: std::sync::atomic::AtomicU64,
    /// Syncs where the shadow guest failed (error, trap, invalid decision).
    pub failed: std::sync::atomic::AtomicU64,
}

/// Whether two actions write the same thing (same action, same content in any order).
pub fn same_action(a: &Action, b: &Action) -> bool {
    a.name() == b.name()
        && match (a.endpoints(), b.endpoints()) {
            (Some(x), Some(y)) => {
                crate::cases::comparable(x, true) == crate::cases::comparable(y, true)
            }
            _ => true,
        }
}

impl Syncer {
    /// The request the guest gets for `namespace/name`, from the caches.
    pub fn request(&self, key: &str, namespace: &str, name: &str) -> wit::Request {
        let service = self.cache.service(namespace, name).map(|s| s.view);
        let pods: Vec<wit::Pod> = match service.as_ref().and_then(|s| s.selector.as_ref()) {
            Some(selector) => self
                .cache
                .select_pods(namespace, selector)
                .iter()
                .map(|p| (**p).clone())
                .collect(),
            None => Vec::new(),
        };
        let trigger_time = service
            .as_ref()
            .and_then(|s| self.trigger_times.compute(key, s, &pods));
        wit::Request {
            namespace: namespace.to_string(),
            name: name.to_string(),
            service: service.map(|s| (*s).clone()),
            pods,
            current: self.cache.endpoints(key).map(|e| view::endpoints(&e)),
            trigger_time,
            config: self.config.clone(),
        }
    }

    /// Syncs one key.
    pub async fn sync(&self, key: &str) -> Result<Outcome, SyncError> {
        let (namespace, name) = key
            .split_once('/')
            .ok_or_else(|| SyncError::BadKey(key.to_string()))?;
        if self.cache.is_unmanaged(key) {
            return Ok(Outcome::Unchanged);
        }
        let stored = self.cache.endpoints(key);
        if let Some(ep) = &stored {
            let rv = ep.metadata.resource_version.clone().unwrap_or_default();
            if self.stale.is_stale(key, &rv) {
                return Err(SyncError::StaleCache(key.to_string(), rv));
            }
        }
        let request = self.request(key, namespace, name);
        let service_uid = request
            .service
            .as_ref()
            .map(|s| s.uid.clone())
            .unwrap_or_default();
        let guest = self.guest.current();
        let digest = guest.digest().to_string();
        let max_addresses = guest.limits().max_addresses;
        let shadow = self.shadow.clone();
        let shadow_config = self.shadow_config.clone();
        let (decision, shadow_decision) = tokio::task::spawn_blocking(move || {
            let decision = guest.call(&request);
            let shadow = shadow.map(|g| match shadow_config {
                // The shadow may be a different policy, with a configuration of its own.
                Some(config) => g.call(&wit::Request { config, ..request }),
                None => g.call(&request),
            });
            (decision, shadow)
        })
        .await
        .map_err(|e| SyncError::Aborted(e.to_string()))?;
        self.health
            .record(&digest, matches!(&decision, Err(e) if e.is_fault()));
        let action = validate(
            namespace,
            name,
            &decision?,
            stored.as_deref(),
            max_addresses,
        )?;
        if let Some(shadow) = shadow_decision {
            self.compare_shadow(
                key,
                namespace,
                name,
                &action,
                shadow,
                stored.as_deref(),
                max_addresses,
            );
        }
        self.execute(key, namespace, name, &service_uid, action)
            .await
    }

    /// Records how the shadow guest's decision compares with the active one; writes nothing.
    #[allow(clippy::too_many_arguments)]
    fn compare_shadow(
        &self,
        key: &str,
        namespace: &str,
        name: &str,
        active: &Action,
        shadow: Result<wit::Decision, CallError>,
        stored: Option<&k8s_openapi::api::core::v1::Endpoints>,
        max_addresses: usize,
    ) {
        use std::sync::atomic::Ordering::Relaxed;
        let shadow = shadow.map_err(|e| e.to_string()).and_then(|d| {
            validate(namespace, name, &d, stored, max_addresses).map_err(|e| e.to_string())
        });
        match shadow {
            Err(error) => {
                self.shadow_stats.failed.fetch_add(1, Relaxed);
                tracing::debug!(%key, %error, "shadow guest failed");
            }
            Ok(shadow) => {
                self.shadow_stats.compared.fetch_add(1, Relaxed);
                if !same_action(active, &shadow) {
                    self.shadow_stats.differed.fetch_add(1, Relaxed);
                    let render = |a: &Action| {
                        serde_json::to_value(crate::cases::decision_json(a)).unwrap_or_default()
                    };
                    tracing::debug!(
                        %key,
                        active = active.name(),
                        shadow = shadow.name(),
                        "shadow decision differs:\n{}",
                        crate::cases::diff(&render(active), &render(&shadow))
                    );
                }
            }
        }
    }

    async fn execute(
        &self,
        key: &str,
        namespace: &str,
        name: &str,
        uid: &str,
        action: Action,
    ) -> Result<Outcome, SyncError> {
        let write_error = |action: &'static str, source| SyncError::Write {
            action,
            key: key.to_string(),
            source,
        };
        match action {
            Action::None => Ok(Outcome::Unchanged),
            Action::Delete => {
                self.writer
                    .delete(key, namespace, name)
                    .await
                    .map_err(|e| write_error("delete", e))?;
                self.trigger_times.forget(key);
                self.stale.forget(key);
                Ok(Outcome::Written("delete"))
            }
            Action::Create(ep) => match self.writer.store(key, namespace, &ep, true).await {
                Ok(_) => Ok(Outcome::Written("create")),
                Err(e) if is_namespace_terminating(&e) => {
                    tracing::debug!(%key, "namespace is terminating; not creating endpoints");
                    Ok(Outcome::NamespaceTerminating)
                }
                Err(e) => {
                    let message = format!("Failed to create endpoint for service {key}: {e}");
                    self.events
                        .warn(namespace, name, uid, "FailedToCreateEndpoint", &message)
                        .await;
                    Err(write_error("create", e))
                }
            },
            Action::Update(ep) => {
                let sent = ep.metadata.resource_version.clone().unwrap_or_default();
                match self.writer.store(key, namespace, &ep, false).await {
                    Ok(Written::Stored(stored)) => {
                        if stored
                            .metadata
                            .resource_version
                            .as_deref()
                            .is_some_and(|rv| rv != sent)
                        {
                            self.stale.superseded(key, sent);
                        }
                        Ok(Outcome::Written("update"))
                    }
                    Ok(_) => Ok(Outcome::Written("update")),
                    Err(e) => {
                        let message = format!("Failed to update endpoint {key}: {e}");
                        self.events
                            .warn(namespace, name, uid, "FailedToUpdateEndpoint", &message)
                            .await;
                        Err(write_error("update", e))
                    }
                }
            }
        }
    }
}
