//! The sync of one Service key: build the request from the caches, call the guest, validate
//! its decision, write it (spec §5, §13).
//!
//! `spec §` numbers are those of `docs/upstream-behaviour.md`; R1–R10 and S01–S98 those of
//! `docs/upstream-endpointslices.md`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::controller::cache::Cache;
use crate::controller::writer::{
    EventRecorder, WriteError, Writer, Written, is_namespace_terminating,
};

use crate::controller::consistency::Epoch;
use crate::metrics::{Metrics, ResultLabel};
use crate::reconcile::trigger_time::TriggerTimeTracker;
use crate::reconcile::validate::{Action, Violation, validate};
use crate::reconcile::validate_slices::SlicePlan;
use crate::reconcile::view;
use crate::runtime::bindings as wit;
use crate::runtime::bindings_v0_2 as v2;
use crate::runtime::convert::endpoints_decision_to_v0_1;
use crate::runtime::health::CallHealth;
use crate::runtime::{ActiveGuest, CallError};

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
    /// The guest's decision was written but reported problems (for example a pod skipped
    /// because its Node is missing, R2.10); the key is retried.
    #[error("guest reported: {0}")]
    Decision(String),
    /// The guest's decision broke the contract.
    #[error(transparent)]
    Invalid(#[from] Violation),
    /// The cached EndpointSlices are older than weir's own last writes (upstream R6.4).
    #[error("endpointslice informer cache is out of date for {0}")]
    StaleSlices(String),
    /// The caches may mix two API servers' state, or a reset came since they were read: the
    /// sync writes nothing and waits for a consistent view.
    #[error(transparent)]
    Inconsistent(#[from] super::consistency::Inconsistent),
    /// The guest's slice changes broke the contract.
    #[error(transparent)]
    InvalidSlices(#[from] crate::reconcile::validate_slices::SliceViolation),
    /// The API server refused or failed a slice write.
    #[error("{action} of an endpoint slice of {key} failed: {source}")]
    SliceWrite {
        /// `create`, `update` or `delete`.
        action: &'static str,
        /// The Service key.
        key: String,
        /// Refused by the leader-election gate, or the API error.
        source: WriteError,
    },
    /// The API server refused or failed a write.
    #[error("{action} of endpoints {key} failed: {source}")]
    Write {
        /// `create`, `update` or `delete`.
        action: &'static str,
        /// The key.
        key: String,
        /// Refused by the leader-election gate, or the API error.
        source: WriteError,
    },
}

impl SyncError {
    /// Whether the guest misbehaved (trap, timeout, memory): what rollback counts.
    pub fn is_guest_fault(&self) -> bool {
        matches!(self, SyncError::Guest(e) if e.is_fault())
    }

    /// Whether either output's cache predates weir's own write (spec §5.9, R1.26, R1.29): an
    /// expected wait for the watch, not a fault.
    pub fn is_stale(&self) -> bool {
        matches!(self, SyncError::StaleCache(..) | SyncError::StaleSlices(_))
    }

    /// The `result` label of `weir_syncs` for a failed sync: `stale` for [`is_stale`]
    /// failures, `error` otherwise.
    ///
    /// [`is_stale`]: SyncError::is_stale
    pub fn result_label(&self) -> &'static str {
        if self.is_stale() { "stale" } else { "error" }
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

/// The start of a sync (see [`Syncer::prepare`]).
#[derive(Debug)]
pub enum Prepared {
    /// Nothing for the guest to decide; the sync is over.
    Done(Outcome),
    /// Call the guest with `request`; `stored` is the snapshot its `current` shows.
    Call {
        /// The guest's input.
        request: Box<wit::Request>,
        /// The stored Endpoints as cached when the request was built.
        stored: Option<Arc<k8s_openapi::api::core::v1::Endpoints>>,
    },
}

/// Remembers, per key, the resourceVersion weir's own last update superseded (upstream's
/// stale tracker) and the one its last write stored, until the Endpoints watch brings that
/// write back.
#[derive(Debug, Default)]
pub struct StaleTracker {
    stale: Mutex<HashMap<String, String>>,
    /// resourceVersions of weir's own writes whose watch event has not come yet.
    written: Mutex<HashMap<String, String>>,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl StaleTracker {
    fn is_stale(&self, key: &str, resource_version: &str) -> bool {
        locked(&self.stale)
            .get(key)
            .is_some_and(|rv| rv == resource_version)
    }

    fn superseded(&self, key: &str, resource_version: String) {
        locked(&self.stale).insert(key.to_string(), resource_version);
    }

    /// Records the resourceVersion of an Endpoints object weir just wrote.
    pub fn wrote(&self, key: &str, resource_version: Option<String>) {
        if let Some(rv) = resource_version {
            locked(&self.written).insert(key.to_string(), rv);
        }
    }

    /// Whether a watched Endpoints version is weir's own last write of `key` coming back;
    /// once it has come back it is forgotten.
    pub fn is_own_write(&self, key: &str, resource_version: Option<&str>) -> bool {
        let mut written = locked(&self.written);
        let own =
            resource_version.is_some() && written.get(key).map(String::as_str) == resource_version;
        if own {
            written.remove(key);
        }
        own
    }

    /// Forgets every remembered resourceVersion (the API server's history was reset).
    pub fn clear(&self) {
        locked(&self.stale).clear();
        locked(&self.written).clear();
    }

    fn forget(&self, key: &str) {
        locked(&self.stale).remove(key);
        locked(&self.written).remove(key);
    }
}

/// Whether a Service gets Endpoints from its pods: it has a selector and is not ExternalName
/// (spec §5.3–5.4).
fn gets_endpoints(service: &wit::Service) -> bool {
    service.selector.is_some() && service.service_type != "ExternalName"
}

/// Everything a sync needs; shared by all workers.
pub struct Syncer {
    /// The consistency epoch every write checks.
    pub consistency: Arc<super::consistency::ResetGate>,
    /// The caches.
    pub cache: Arc<Cache>,
    /// The guest to call.
    pub guest: ActiveGuest,
    /// Where decisions go.
    pub writer: Writer,
    /// Failure events.
    pub events: EventRecorder,
    /// Trigger times.
    pub trigger_times: TriggerTimeTracker,
    /// Stale-cache guard.
    pub stale: StaleTracker,
    /// Outcomes of guest calls, per guest digest (hot-swap rollback reads it).
    pub health: Arc<CallHealth>,
    /// A second guest run after every sync for comparison only (`--shadow-guest`), off the
    /// sync's path.
    pub shadow: Option<Arc<super::shadow::Shadow>>,
    /// Guest call and shadow metrics.
    pub metrics: Arc<Metrics>,
    /// Which outputs weir writes, and how.
    pub outputs: super::Outputs,
    /// Stale-cache guard of the slice path.
    pub slice_tracker: super::slice_tracker::SliceTracker,
    /// Counters of the slice path.
    pub slice_stats: super::slice_sync::SliceStats,
}

/// Whether two actions write the same thing (same action, same content in any order).
pub fn same_action(a: &Action, b: &Action) -> bool {
    a.name() == b.name()
        && match (a.endpoints(), b.endpoints()) {
            (Some(x), Some(y)) => {
                crate::reconcile::canonical::endpoints(x, true)
                    == crate::reconcile::canonical::endpoints(y, true)
            }
            _ => true,
        }
}

impl Syncer {
    /// The request the guest gets for `namespace/name`: the cached Service and its pods, and
    /// `current`, the stored Endpoints snapshot the write will be checked against.
    pub fn request(
        &self,
        key: &str,
        namespace: &str,
        name: &str,
        service: Option<Arc<wit::Service>>,
        current: Option<&k8s_openapi::api::core::v1::Endpoints>,
    ) -> wit::Request {
        let selector = service
            .as_ref()
            .filter(|s| gets_endpoints(s))
            .and_then(|s| s.selector.as_ref());
        let pods: Vec<wit::Pod> = match selector {
            Some(selector) => self.cache.select_pods(namespace, selector),
            None => Vec::new(),
        };
        // Spec §5.3–5.6: ExternalName and selectorless Services return before the tracker
        // is fed, so it starts afresh if such a Service later gets a selector.
        let trigger_time = service
            .as_ref()
            .filter(|s| gets_endpoints(s))
            .and_then(|s| self.trigger_times.compute(key, s, &pods));
        wit::Request {
            namespace: namespace.to_string(),
            name: name.to_string(),
            service: service.map(|s| (*s).clone()),
            pods,
            current: current.map(view::endpoints),
            trigger_time,
            config: self.guest.config(),
        }
    }

    /// What a sync of `key` starts from: either its result already (nothing for the guest to
    /// do), or the guest's request together with the one stored-Endpoints snapshot that the
    /// request's `current` came from.
    pub fn prepare(&self, key: &str) -> Result<Prepared, SyncError> {
        let (namespace, name) = key
            .split_once('/')
            .ok_or_else(|| SyncError::BadKey(key.to_string()))?;
        if self.cache.is_unmanaged(key) {
            return Ok(Prepared::Done(Outcome::Unchanged));
        }
        let service = self.cache.service(namespace, name).map(|s| s.view);
        if self.outputs.endpoint_slices && service.is_none() {
            // Its slices go by garbage collection through their ownerReference, and a Service
            // created again under this name starts afresh (R1.20). With Endpoints managed too,
            // their DELETE forgets the trigger time as well (spec §5.2).
            self.slice_tracker.forget(key);
            self.trigger_times.forget(key);
        }
        // The one read of the stored Endpoints in this sync: the guest decides on this
        // snapshot and the write carries its resourceVersion.
        let stored = self.cache.endpoints(key);
        match &service {
            // No Service, and none was deleted: an Endpoints event alone never deletes.
            None if !self.cache.is_deletable(key) => {
                tracing::debug!(%key, "no Service; its Endpoints are left alone");
                return Ok(Prepared::Done(Outcome::Unchanged));
            }
            // Spec §5.9: the stale-cache guard comes after the not-found, ExternalName and
            // nil-selector returns, so it never holds those up.
            Some(s) if gets_endpoints(s) => {
                if let Some(ep) = &stored {
                    let rv = ep.metadata.resource_version.clone().unwrap_or_default();
                    if self.stale.is_stale(key, &rv) {
                        return Err(SyncError::StaleCache(key.to_string(), rv));
                    }
                }
            }
            _ => {}
        }
        if self.outputs.endpoint_slices
            && let Some(s) = &service
            && gets_endpoints(s)
        {
            // Same order as for Endpoints (R1.26 after R1.20–R1.22).
            self.check_slices_fresh(key, &self.cache.slices.for_service(key))?;
        }
        let request = self.request(key, namespace, name, service, stored.as_deref());
        Ok(Prepared::Call {
            request: Box::new(request),
            stored,
        })
    }

    /// Syncs one key: one guest call decides both outputs; Endpoints are written first, then
    /// the EndpointSlices. A decision refused in either part writes nothing.
    pub async fn sync(&self, key: &str) -> Result<Outcome, SyncError> {
        // Noted before the caches are read: a reset after this voids the decision.
        let epoch = self.consistency.begin()?;
        let (request, stored) = match self.prepare(key)? {
            Prepared::Done(outcome) => return Ok(outcome),
            Prepared::Call { request, stored } => (*request, stored),
        };
        let (namespace, name) = (request.namespace.clone(), request.name.clone());
        let (namespace, name) = (namespace.as_str(), name.as_str());
        let service_uid = request
            .service
            .as_ref()
            .map(|s| s.uid.clone())
            .unwrap_or_default();
        // The guest and its configuration as one pair: a swap may change both at once.
        let active = self.guest.current_pair();
        let (guest, request) = (
            active.guest,
            wit::Request {
                config: active.config,
                ..request
            },
        );
        let renders_slices = guest.world().has_slices();
        if self.outputs.endpoint_slices && !renders_slices {
            self.note_no_slices(&guest);
        }
        let slices_on = self.outputs.endpoint_slices && renders_slices && request.service.is_some();
        let stored_slices = if slices_on {
            self.cache.slices.for_service(key)
        } else {
            Vec::new()
        };
        let request = self.request_v0_2(request, &stored_slices, slices_on);
        // The decision was made for this view of the Service; its slice writes follow it
        // (no creates for a Service being deleted, R4.22a).
        let deleting = request.service.as_ref().is_some_and(|s| s.deleting);
        let digest = guest.digest().to_string();
        let max_addresses = guest.limits().max_addresses;
        // Awaited on the worker: the call is a future bounded by its deadline whatever the
        // guest does (see `Runtime::sandboxed`), so no blocking thread is needed.
        let started = std::time::Instant::now();
        let decision = guest.call_v0_2(&request).await;
        let took = started.elapsed();
        self.metrics.guest_call_duration.observe(took.as_secs_f64());
        let checked = async {
            // Taken apart, not cloned: each part goes where it is used (the outputs into
            // validation, events and errors to after the writes).
            let v2::Decision {
                endpoints,
                slices,
                errors,
                events,
            } = decision?;
            let action = if self.outputs.endpoints {
                validate(
                    namespace,
                    name,
                    endpoints_decision_to_v0_1(endpoints),
                    stored.as_deref(),
                    max_addresses,
                )?
            } else {
                Action::None
            };
            let plan = if slices_on {
                let stored = (stored_slices.as_slice(), request.pods.as_slice());
                match self.plan_slices(namespace, name, &service_uid, stored, slices) {
                    Ok(plan) => plan,
                    Err(v) => {
                        return Err(self.refuse_slices(namespace, name, &service_uid, v).await);
                    }
                }
            } else {
                SlicePlan::default()
            };
            Ok::<_, SyncError>((action, plan, events, errors))
        }
        .await;
        // Rollback judges the guest by every call that gave no usable decision: traps and
        // timeouts, and also errors it returned and decisions validation refused.
        self.health.record(&digest, checked.is_err());
        let call_result = match &checked {
            Ok(_) => "ok",
            Err(SyncError::Guest(CallError::Guest(_))) => "error",
            Err(SyncError::Guest(CallError::Timeout(_))) => "timeout",
            Err(SyncError::Guest(CallError::OutOfMemory(_))) => "out_of_memory",
            Err(SyncError::Guest(CallError::Trap(_))) => "trap",
            Err(_) => "invalid",
        };
        self.metrics
            .guest_calls
            .get_or_create(&ResultLabel {
                result: call_result,
            })
            .inc();
        let (action, plan, events, errors) = checked?;
        if let Some(shadow) = &self.shadow {
            shadow.offer(super::shadow::Job {
                key: key.to_string(),
                uid: service_uid.clone(),
                request: request.clone(),
                action: action.clone(),
                plan: plan.clone(),
                stored: stored.clone(),
                stored_slices: stored_slices.clone(),
                max_addresses,
            });
        }
        let outcome = self
            .execute(key, (namespace, name, &service_uid), action, epoch)
            .await?;
        // Reported before the slices are written: their writes may fail, and this one stands.
        self.report_endpoints_write(key, outcome);
        let slice_writes = self
            .write_slices(key, (namespace, name, &service_uid), plan, deleting, epoch)
            .await?;
        if slice_writes > 0 {
            tracing::info!(%key, writes = slice_writes, "endpoint slices written");
        }
        if slices_on {
            for event in &events {
                self.events
                    .record(
                        namespace,
                        name,
                        &service_uid,
                        event.warning,
                        &event.reason,
                        &event.message,
                    )
                    .await;
            }
            if !errors.is_empty() {
                let errors = errors.join("; ");
                let message = format!("Error updating Endpoint Slices for Service {key}: {errors}");
                self.events
                    .warn(
                        namespace,
                        name,
                        &service_uid,
                        super::slice_sync::FAILED_TO_UPDATE,
                        &message,
                    )
                    .await;
                return Err(SyncError::Decision(errors));
            }
        }
        Ok(outcome)
    }

    /// Records how the shadow guest's decision compares with the live one of `job`
    /// (Endpoints and slices); writes nothing.
    pub fn compare_shadow(
        &self,
        job: &super::shadow::Job,
        shadow: Result<v2::Decision, CallError>,
    ) {
        let (key, uid, max_addresses) = (job.key.as_str(), job.uid.as_str(), job.max_addresses);
        let (namespace, name) = (job.request.namespace.as_str(), job.request.name.as_str());
        let (active, active_plan) = (&job.action, &job.plan);
        let (stored, stored_slices, pods) = (
            job.stored.as_deref(),
            job.stored_slices.as_slice(),
            job.request.pods.as_slice(),
        );
        let count = |result| {
            self.metrics
                .shadow
                .get_or_create(&ResultLabel { result })
                .inc()
        };
        let shadow = shadow.map_err(|e| e.to_string()).and_then(|d| {
            let action = if self.outputs.endpoints {
                validate(
                    namespace,
                    name,
                    endpoints_decision_to_v0_1(d.endpoints),
                    stored,
                    max_addresses,
                )
                .map_err(|e| e.to_string())?
            } else {
                Action::None
            };
            let plan = if active_plan.is_empty()
                && d.slices.create.is_empty()
                && d.slices.update.is_empty()
                && d.slices.delete.is_empty()
            {
                SlicePlan::default()
            } else {
                self.plan_slices(namespace, name, uid, (stored_slices, pods), d.slices)
                    .map_err(|e| e.to_string())?
            };
            Ok((action, plan))
        });
        match shadow {
            Err(error) => {
                count("failed");
                tracing::debug!(%key, %error, "shadow guest failed");
            }
            Ok((shadow, shadow_plan)) => {
                let slices_differ = super::slice_sync::comparable_plan(active_plan)
                    != super::slice_sync::comparable_plan(&shadow_plan);
                if same_action(active, &shadow) && !slices_differ {
                    count("same");
                } else {
                    count("different");
                    let render = |a: &Action, p: &SlicePlan| {
                        let mut v = serde_json::to_value(crate::reconcile::canonical::decision(a))
                            .unwrap_or_default();
                        v["endpointSlices"] =
                            serde_json::json!(super::slice_sync::comparable_plan(p));
                        v
                    };
                    tracing::debug!(
                        %key,
                        active = active.name(),
                        shadow = shadow.name(),
                        "shadow decision differs:\n{}",
                        crate::reconcile::canonical::diff(&render(active, active_plan), &render(&shadow, &shadow_plan))
                    );
                }
            }
        }
    }

    /// Logs and counts an Endpoints write (`weir_endpoints_writes`), as soon as it is made.
    fn report_endpoints_write(&self, key: &str, outcome: Outcome) {
        if let Outcome::Written(action) = outcome {
            let result = match self.writer {
                Writer::DryRun => "dry_run",
                Writer::Api(..) => "success",
            };
            self.metrics
                .writes
                .get_or_create(&crate::metrics::WriteLabels { action, result })
                .inc();
            tracing::info!(%key, action, "endpoints written");
        }
    }

    /// Writes the Endpoints decision, if the caches it came from are still the current epoch's.
    async fn execute(
        &self,
        key: &str,
        (namespace, name, uid): (&str, &str, &str),
        action: Action,
        epoch: Epoch,
    ) -> Result<Outcome, SyncError> {
        if !matches!(action, Action::None) {
            self.consistency.check(epoch)?;
        }
        let write_error = |action: &'static str, source| SyncError::Write {
            action,
            key: key.to_string(),
            source,
        };
        match action {
            Action::None => Ok(Outcome::Unchanged),
            Action::Delete => {
                let written = self
                    .writer
                    .delete(key, namespace, name)
                    .await
                    .map_err(|e| write_error("delete", e))?;
                self.trigger_times.forget(key);
                self.stale.forget(key);
                self.cache.deleted(key);
                // Already gone (our own delete coming back as an event): not a second write.
                Ok(match written {
                    Written::NotFound => Outcome::Unchanged,
                    _ => Outcome::Written("delete"),
                })
            }
            Action::Create(ep) => match self.writer.store(key, namespace, &ep, true).await {
                Ok(written) => {
                    if let Written::Stored(stored) = written {
                        self.stale.wrote(key, stored.metadata.resource_version);
                    }
                    Ok(Outcome::Written("create"))
                }
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
                        self.stale.wrote(key, stored.metadata.resource_version);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Guest;
    use k8s_openapi::api::core::v1 as core;
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    use serde_json::json;
    use std::sync::OnceLock;

    fn default_guest() -> Guest {
        static GUEST: OnceLock<Guest> = OnceLock::new();
        GUEST
            .get_or_init(|| {
                crate::runtime::Runtime::new(crate::runtime::Limits::default())
                    .unwrap()
                    .default_guest()
                    .unwrap()
            })
            .clone()
    }

    fn syncer() -> Syncer {
        Syncer {
            consistency: Arc::default(),
            cache: Arc::new(Cache::default()),
            guest: ActiveGuest::new(default_guest()),
            writer: Writer::DryRun,
            events: EventRecorder::new(Writer::DryRun, std::time::Duration::from_secs(60)),
            trigger_times: TriggerTimeTracker::default(),
            stale: StaleTracker::default(),
            health: Arc::default(),
            shadow: None,
            metrics: Arc::default(),
            outputs: crate::controller::Outputs::default(),
            slice_tracker: Default::default(),
            slice_stats: Default::default(),
        }
    }

    fn service(spec: serde_json::Value) -> core::Service {
        serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "ns", "uid": "u1",
                         "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": spec,
        }))
        .unwrap()
    }

    fn endpoints(rv: &str, ip: &str) -> core::Endpoints {
        serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "ns", "resourceVersion": rv},
            "subsets": [{"addresses": [{"ip": ip}], "ports": [{"port": 80}]}],
        }))
        .unwrap()
    }

    fn selecting() -> serde_json::Value {
        json!({"selector": {"app": "web"}, "ports": [{"port": 80}]})
    }

    #[tokio::test]
    async fn stale_guard_comes_after_not_found_external_name_and_nil_selector() {
        let s = syncer();
        s.cache.apply_endpoints(endpoints("5", "10.0.0.1"));
        s.stale.superseded("ns/s", "5".into());
        // nil selector: left alone, not held up by the guard.
        s.cache
            .apply_service(&service(json!({"ports": [{"port": 80}]})));
        assert_eq!(s.sync("ns/s").await.unwrap(), Outcome::Unchanged);
        // ExternalName, even with a selector.
        let mut external = selecting();
        external["type"] = json!("ExternalName");
        external["externalName"] = json!("example.com");
        s.cache.apply_service(&service(external));
        assert_eq!(s.sync("ns/s").await.unwrap(), Outcome::Unchanged);
        // A Service that selects pods: the guard holds.
        s.cache.apply_service(&service(selecting()));
        assert!(matches!(
            s.sync("ns/s").await,
            Err(SyncError::StaleCache(k, rv)) if k == "ns/s" && rv == "5"
        ));
        // Service deleted: the delete goes ahead despite the stale cache.
        s.cache.delete_service("ns", "s");
        assert_eq!(s.sync("ns/s").await.unwrap(), Outcome::Written("delete"));
    }

    fn owned_slice(name: &str, generation: i64) -> EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns", "uid": name, "generation": generation,
                         "labels": {"kubernetes.io/service-name": "s",
                                    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "s",
                                              "uid": "u1", "controller": true, "blockOwnerDeletion": true}]},
            "addressType": "IPv4", "ports": [], "endpoints": []
        }))
        .unwrap()
    }

    /// A Service selecting `app: web`, single-stack IPv4 (so one stored placeholder is right).
    fn ipv4_service() -> core::Service {
        let mut spec = selecting();
        spec["ipFamilies"] = json!(["IPv4"]);
        spec["clusterIP"] = json!("10.0.0.10");
        service(spec)
    }

    fn slice_writes(s: &Syncer) -> u64 {
        let st = &s.slice_stats;
        st.creates.get() + st.updates.get() + st.deletes.get()
    }

    #[tokio::test]
    async fn s74_a_slice_cache_behind_our_write_fails_the_sync_as_stale_and_writes_nothing() {
        let s = syncer();
        s.cache.apply_service(&ipv4_service());
        s.cache.slices.apply(owned_slice("a", 10));
        // Tracked 12, cached 10: the cache has not seen weir's last write.
        s.slice_tracker.written("ns/s", &owned_slice("a", 12));
        let error = s.sync("ns/s").await.unwrap_err();
        assert!(
            matches!(&error, SyncError::StaleSlices(k) if k == "ns/s"),
            "{error}"
        );
        assert_eq!(
            error.result_label(),
            "stale",
            "counted as weir_syncs{{result=stale}}"
        );
        assert_eq!(s.slice_stats.stale.get(), 1);
        assert_eq!(slice_writes(&s), 0, "nothing written");
        // Tracked 10 / cached 10 and tracked 1 / cached 10: the sync goes ahead (the stored
        // placeholder is right for a Service without pods, so it writes nothing either).
        for tracked in [10, 1] {
            s.slice_tracker.written("ns/s", &owned_slice("a", tracked));
            s.sync("ns/s").await.unwrap();
        }
        assert_eq!(s.slice_stats.stale.get(), 1);
    }

    #[tokio::test]
    async fn s75_an_expected_delete_still_listed_or_a_written_slice_missing_is_stale() {
        let s = syncer();
        s.cache.apply_service(&ipv4_service());
        // A Service the tracker never saw is never stale.
        s.cache.slices.apply(owned_slice("a", 1));
        s.sync("ns/s").await.unwrap();
        // weir deleted "a" but the cache still lists it.
        s.slice_tracker.deleted("ns/s", "a");
        assert!(matches!(
            s.sync("ns/s").await,
            Err(SyncError::StaleSlices(_))
        ));
        s.cache.slices.delete("ns", "a");
        // weir created "b" and the cache has not got it yet.
        s.slice_tracker.written("ns/s", &owned_slice("b", 1));
        assert!(matches!(
            s.sync("ns/s").await,
            Err(SyncError::StaleSlices(_))
        ));
        assert_eq!(s.slice_stats.stale.get(), 2);
        assert_eq!(slice_writes(&s), 0);
    }

    #[tokio::test]
    async fn s73_a_deleted_service_forgets_its_slice_and_trigger_time_state_and_writes_no_slice() {
        // Both outputs, and EndpointSlices alone (no Endpoints DELETE to hang the forgetting on).
        for endpoints in [true, false] {
            let mut s = syncer();
            s.outputs.endpoints = endpoints;
            s73_case(&s).await;
        }
    }

    async fn s73_case(s: &Syncer) {
        s.cache.apply_service(&ipv4_service());
        s.cache.slices.apply(owned_slice("a", 3));
        s.slice_tracker.written("ns/s", &owned_slice("a", 3));
        let view = s.cache.service("ns", "s").unwrap().view;
        assert!(s.trigger_times.compute("ns/s", &view, &[]).is_some());
        s.cache.delete_service("ns", "s");
        let writes_before = slice_writes(s);
        // The Endpoints object goes (spec §5.2); the slices are left to garbage collection.
        s.sync("ns/s").await.unwrap();
        assert_eq!(
            slice_writes(s),
            writes_before,
            "no slice write for a deleted Service"
        );
        // The tracker forgot the Service: a stale-looking cache no longer fails a sync.
        assert!(!s.slice_tracker.is_stale("ns/s", []));
        assert!(!s.slice_tracker.has(&owned_slice("a", 3)));
        // The trigger-time tracker forgot it too: a new Service of that name starts from its
        // creation time again.
        assert_eq!(
            s.trigger_times.compute("ns/s", &view, &[]),
            Some("2024-01-01T00:00:00Z".to_string())
        );
    }

    /// The slice plan a sync of `ns/s` would write, without writing it.
    async fn slice_plan(s: &Syncer) -> SlicePlan {
        let Prepared::Call { request, .. } = s.prepare("ns/s").unwrap() else {
            panic!("a selecting Service calls the guest");
        };
        let stored = s.cache.slices.for_service("ns/s");
        let request = s.request_v0_2(*request, &stored, true);
        let decision = s.guest.current().call_v0_2(&request).await.unwrap();
        assert!(decision.errors.is_empty(), "{:?}", decision.errors);
        s.plan_slices("ns", "s", "u1", (&stored, &request.pods), decision.slices)
            .unwrap()
    }

    #[tokio::test]
    async fn s97_a_zone_added_to_a_node_appears_at_the_services_next_sync() {
        let s = syncer();
        s.cache.apply_service(&ipv4_service());
        let pod: core::Pod = serde_json::from_value(json!({
            "metadata": {"name": "p1", "namespace": "ns", "uid": "uid-1", "labels": {"app": "web"}},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c"}]},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.1"}],
                       "conditions": [{"type": "Ready", "status": "True"}]}
        }))
        .unwrap();
        s.cache
            .apply_pod(crate::controller::cache::CachedPod::from_pod(&pod));
        let node = |zone: Option<&str>| crate::controller::slices::NodeView {
            zone: zone.map(str::to_string),
            ready: true,
            cpu_millis: 1000,
            control_plane: false,
        };
        s.cache.nodes.apply("node-1", node(None));
        // The first sync creates the slice, without a zone; store it as the API server would.
        let mut plan = slice_plan(&s).await;
        assert_eq!((plan.create.len(), plan.update.len()), (1, 0));
        let mut created = plan.create.remove(0);
        assert_eq!(created.endpoints.as_ref().unwrap()[0].zone, None);
        created.metadata.name = Some("s-abcde".into());
        created.metadata.uid = Some("slice-uid".into());
        created.metadata.generation = Some(1);
        created.metadata.resource_version = Some("1".into());
        s.cache.slices.apply(created);
        assert!(slice_plan(&s).await.is_empty(), "up to date");
        // The Node gains its zone: that alone syncs nothing (controller::tests::s97_*), and the
        // Service's next sync updates the one slice with the zone.
        s.cache.nodes.apply("node-1", node(Some("zone-a")));
        let plan = slice_plan(&s).await;
        assert_eq!(
            (plan.create.len(), plan.update.len(), plan.delete.len()),
            (0, 1, 0)
        );
        assert_eq!(plan.update[0].metadata.name.as_deref(), Some("s-abcde"));
        assert_eq!(
            plan.update[0].endpoints.as_ref().unwrap()[0]
                .zone
                .as_deref(),
            Some("zone-a")
        );
        let updates = s.slice_stats.updates.get();
        s.sync("ns/s").await.unwrap();
        assert_eq!(s.slice_stats.updates.get(), updates + 1);
    }

    /// S91 (R4.27): the first sync stamps the slice with the Service's creation time; a later
    /// write with no newer pod Ready transition carries no trigger-time annotation at all.
    #[tokio::test]
    async fn s91_a_later_write_without_a_newer_ready_transition_drops_the_trigger_time() {
        const TRIGGER: &str = "endpoints.kubernetes.io/last-change-trigger-time";
        let s = syncer();
        s.cache.apply_service(&ipv4_service());
        let pod: core::Pod = serde_json::from_value(json!({
            "metadata": {"name": "p1", "namespace": "ns", "uid": "uid-1", "labels": {"app": "web"}},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c"}]},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.1"}],
                       "conditions": [{"type": "Ready", "status": "True",
                                       "lastTransitionTime": "2023-12-31T00:00:00Z"}]}
        }))
        .unwrap();
        s.cache
            .apply_pod(crate::controller::cache::CachedPod::from_pod(&pod));
        let node = crate::controller::slices::NodeView {
            zone: None,
            ready: true,
            cpu_millis: 1000,
            control_plane: false,
        };
        s.cache.nodes.apply("node-1", node);
        let mut plan = slice_plan(&s).await;
        assert_eq!((plan.create.len(), plan.update.len()), (1, 0));
        let mut created = plan.create.remove(0);
        let annotation = |slice: &EndpointSlice| {
            slice
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(TRIGGER))
                .cloned()
        };
        assert_eq!(
            annotation(&created).as_deref(),
            Some("2024-01-01T00:00:00Z"),
            "first sync: the Service's creation time"
        );
        created.metadata.name = Some("s-abcde".into());
        created.metadata.uid = Some("slice-uid".into());
        created.metadata.generation = Some(1);
        created.metadata.resource_version = Some("1".into());
        s.cache.slices.apply(created);
        // The Service gains a label: its slice is rewritten (R4.26), with no pod change.
        let mut labelled = ipv4_service();
        labelled.metadata.labels = Some([("team".to_string(), "a".to_string())].into());
        s.cache.apply_service(&labelled);
        let plan = slice_plan(&s).await;
        assert_eq!((plan.create.len(), plan.update.len()), (0, 1));
        assert_eq!(annotation(&plan.update[0]), None, "no newer transition");
    }

    #[tokio::test]
    async fn endpoints_without_a_service_are_deleted_only_after_the_service_was() {
        let s = syncer();
        s.cache.apply_endpoints(endpoints("5", "10.0.0.1"));
        // An Endpoints event for a key that never had a Service: no delete.
        assert_eq!(s.sync("ns/s").await.unwrap(), Outcome::Unchanged);
        // Nor for a Service weir never saw that is deleted.
        s.cache.delete_service("ns", "s");
        assert_eq!(s.sync("ns/s").await.unwrap(), Outcome::Unchanged);
        // A Service that existed and is gone: delete, once.
        s.cache.apply_service(&service(selecting()));
        s.cache.delete_service("ns", "s");
        assert_eq!(s.sync("ns/s").await.unwrap(), Outcome::Written("delete"));
        assert_eq!(s.sync("ns/s").await.unwrap(), Outcome::Unchanged);
        // The start-up sweep's permission works the same way.
        s.cache.mark_deletable("ns/s");
        assert_eq!(s.sync("ns/s").await.unwrap(), Outcome::Written("delete"));
    }

    #[tokio::test]
    async fn no_write_from_caches_that_may_mix_two_api_servers() {
        use crate::controller::consistency::{Inconsistent, ResetCause};
        let s = syncer();
        s.cache.apply_service(&service(selecting()));
        s.cache.delete_service("ns", "s");
        // An informer still owes its list of the current epoch: nothing is written.
        s.consistency.register("pods");
        assert!(matches!(
            s.sync("ns/s").await,
            Err(SyncError::Inconsistent(Inconsistent))
        ));
        assert!(s.cache.is_deletable("ns/s"), "the delete is still owed");
        s.consistency.listed("pods", s.consistency.epoch());
        // A decision made before a reset is not written after it.
        let before = s.consistency.begin().unwrap();
        s.consistency.reset("pods", ResetCause::Gone);
        s.consistency.listed("pods", s.consistency.epoch());
        let owed = s
            .execute("ns/s", ("ns", "s", "u1"), Action::Delete, before)
            .await;
        assert!(matches!(owed, Err(SyncError::Inconsistent(_))), "{owed:?}");
        assert!(s.cache.is_deletable("ns/s"));
        // From a view of the current epoch the write goes ahead.
        assert_eq!(s.sync("ns/s").await.unwrap(), Outcome::Written("delete"));
    }

    #[test]
    fn trigger_times_are_not_tracked_for_external_name_or_nil_selector() {
        let s = syncer();
        let view = |spec| Arc::new(crate::reconcile::view::service(&service(spec), "ns"));
        let created = Some("2024-01-01T00:00:00Z".to_string());
        let mut external = selecting();
        external["type"] = json!("ExternalName");
        for spec in [json!({"ports": [{"port": 80}]}), external] {
            let request = s.request("ns/s", "ns", "s", Some(view(spec)), None);
            assert_eq!(request.trigger_time, None);
        }
        // The first sync that selects pods still reports the Service's creation: the tracker
        // had not been fed before.
        let request = s.request("ns/s", "ns", "s", Some(view(selecting())), None);
        assert_eq!(request.trigger_time, created);
    }

    #[test]
    fn the_request_and_the_write_see_one_endpoints_snapshot() {
        let s = Arc::new(syncer());
        s.cache.apply_service(&service(selecting()));
        s.cache.apply_endpoints(endpoints("1", "10.0.0.1"));
        // Selected pods make building a request take a while, as in a real cluster: a second
        // read of the cache after them would see another version.
        for i in 0..300 {
            let pod: core::Pod = serde_json::from_value(json!({
                "metadata": {"name": format!("p{i}"), "namespace": "ns", "labels": {"app": "web"}},
                "status": {"podIPs": [{"ip": format!("10.1.{}.{}", i / 250, i % 250)}]},
            }))
            .unwrap();
            s.cache
                .apply_pod(crate::controller::cache::CachedPod::from_pod(&pod));
        }
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flipper = {
            let (s, stop) = (s.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    n += 1;
                    s.cache
                        .apply_endpoints(endpoints(&n.to_string(), &format!("10.0.{}.1", n % 200)));
                }
            })
        };
        for _ in 0..500 {
            let Prepared::Call { request, stored } = s.prepare("ns/s").unwrap() else {
                panic!("a selecting Service calls the guest");
            };
            let current = request.current.expect("current endpoints");
            let stored = stored.expect("stored endpoints");
            assert_eq!(
                Some(current.resource_version.as_str()),
                stored.metadata.resource_version.as_deref()
            );
            assert_eq!(current, crate::reconcile::view::endpoints(&stored));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        flipper.join().unwrap();
    }
}
