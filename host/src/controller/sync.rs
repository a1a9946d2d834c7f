//! The sync of one Service key: build the request from the caches, call the guest, validate
//! its decision, write it (spec §5, §13).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::controller::cache::Cache;
use crate::controller::writer::{EventRecorder, Writer, Written, is_namespace_terminating};
use crate::runtime::bindings as wit;
use crate::runtime::{ActiveGuest, CallError};
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
        let max_addresses = guest.limits().max_addresses;
        let decision = tokio::task::spawn_blocking(move || guest.call(&request))
            .await
            .map_err(|e| SyncError::Aborted(e.to_string()))??;
        let action = validate(namespace, name, &decision, stored.as_deref(), max_addresses)?;
        self.execute(key, namespace, name, &service_uid, action)
            .await
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
            Action::Create(ep) => match self.writer.create(key, namespace, &ep).await {
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
                match self.writer.update(key, namespace, &ep).await {
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
