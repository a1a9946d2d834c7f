//! The first stage of a sync: read the caches once and build the guest's request, or end the
//! sync here when there is nothing for the guest to decide (spec §5.1–5.9, R1.20–R1.26).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use prometheus_client::metrics::counter::Counter;

use crate::controller::ledger::Ledger;
use crate::controller::outputs::Outputs;
use crate::controller::store::Cache;
use crate::controller::sync::error::{SyncError, SyncOutcome};
use crate::model::{self, Service};
use crate::reconcile::request::{Selected, SliceInputs};
use crate::reconcile::trigger_time::TriggerTimeTracker;
use crate::reconcile::view;
use crate::reconcile::view_slices::NodeZones;

/// The start of a sync (see [`Reader::prepare`]).
#[derive(Debug)]
pub enum Prepared {
    /// Nothing for the guest to decide; the sync is over.
    Done(SyncOutcome),
    /// Call the guest with `request`; `stored` is the snapshot its `current` shows.
    Call {
        /// The guest's input.
        request: Box<Selected>,
        /// The stored Endpoints as cached when the request was built.
        stored: Option<Arc<Endpoints>>,
    },
}

/// Whether a Service gets Endpoints from its pods: it has a selector and is not ExternalName
/// (spec §5.3–5.4).
fn gets_endpoints(service: &Service) -> bool {
    service.selector.is_some() && service.service_type != "ExternalName"
}

/// What the first stage reads: the caches and the trackers that guard them.
pub struct Reader<'a> {
    /// The caches.
    pub cache: &'a Cache,
    /// Which outputs weir writes.
    pub outputs: Outputs,
    /// Trigger times, fed with each request's pods.
    pub trigger_times: &'a TriggerTimeTracker,
    /// weir's own writes, which the caches must show before a sync decides.
    pub ledger: &'a Ledger,
    /// Where a sync refused as stale for its slices is counted.
    pub stale_slice_syncs: &'a Counter,
}

impl Reader<'_> {
    /// What a sync of `key` starts from: either its result already (nothing for the guest to
    /// do), or the guest's request (with `config`) together with the one stored-Endpoints
    /// snapshot that the request's `current` came from.
    pub fn prepare(&self, key: &str, config: String) -> Result<Prepared, SyncError> {
        let (namespace, name) = key
            .split_once('/')
            .ok_or_else(|| SyncError::BadKey(key.to_string()))?;
        if self.cache.is_unmanaged(key) {
            return Ok(Prepared::Done(SyncOutcome::Unchanged));
        }
        let service = self.cache.service(namespace, name).map(|s| s.view);
        if self.outputs.endpoint_slices && service.is_none() {
            // Its slices go by garbage collection through their ownerReference, and a Service
            // created again under this name starts afresh (R1.20). With Endpoints managed too,
            // their DELETE forgets the trigger time as well (spec §5.2).
            self.ledger.slices.forget(key);
            self.trigger_times.forget(key);
        }
        // The one read of the stored Endpoints in this sync: the guest decides on this
        // snapshot and the write carries its resourceVersion.
        let stored = self.cache.endpoints(key);
        match &service {
            // No Service, and none was deleted: an Endpoints event alone never deletes.
            None if !self.ledger.deletes.is_owed(key) => {
                tracing::debug!(%key, "no Service; its Endpoints are left alone");
                return Ok(Prepared::Done(SyncOutcome::Unchanged));
            }
            // Spec §5.9: the stale-cache guard comes after the not-found, ExternalName and
            // nil-selector returns, so it never holds those up.
            Some(s) if gets_endpoints(s) => {
                if let Some(ep) = &stored {
                    let rv = ep.metadata.resource_version.clone().unwrap_or_default();
                    if self.ledger.endpoints.is_stale(key, &rv) {
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
            let stored = self.cache.slices.for_service(key);
            if !self.ledger.slices_fresh(key, &stored) {
                self.stale_slice_syncs.inc();
                return Err(SyncError::StaleSlices(key.to_string()));
            }
        }
        let request = self.selected(key, (namespace, name), service, stored.as_deref(), config);
        Ok(Prepared::Call {
            request: Box::new(request),
            stored,
        })
    }

    /// What the request for `namespace/name` is built from: the cached Service and its pods,
    /// and `current`, the stored Endpoints snapshot the write will be checked against.
    pub(super) fn selected(
        &self,
        key: &str,
        (namespace, name): (&str, &str),
        service: Option<Arc<Service>>,
        current: Option<&Endpoints>,
        config: String,
    ) -> Selected {
        let selector = service
            .as_ref()
            .filter(|s| gets_endpoints(s))
            .and_then(|s| s.selector.as_ref());
        let pods: Vec<model::Pod> = match selector {
            Some(selector) => self.cache.select_pods(namespace, selector),
            None => Vec::new(),
        };
        // Spec §5.3–5.6: ExternalName and selectorless Services return before the tracker
        // is fed, so it starts afresh if such a Service later gets a selector.
        let trigger_time = service
            .as_ref()
            .filter(|s| gets_endpoints(s))
            .and_then(|s| self.trigger_times.compute(key, s, &pods));
        Selected {
            namespace: namespace.to_string(),
            name: name.to_string(),
            service: service.map(|s| (*s).clone()),
            pods,
            current: current.map(view::endpoints),
            trigger_time,
            config,
        }
    }

    /// The request of a sync: the Endpoints part plus what slices need (stored
    /// slices, Node facts of each pod, zone capacities, limits and outputs). With the slice
    /// path off it carries no slices and asks for Endpoints only.
    pub fn request(
        &self,
        request: Selected,
        stored: &[Arc<EndpointSlice>],
        slices_on: bool,
    ) -> model::Request {
        let nodes: NodeZones = if slices_on {
            request
                .pods
                .iter()
                .filter(|p| !p.node_name.is_empty())
                .filter_map(|p| {
                    Some((
                        p.node_name.clone(),
                        self.cache.nodes.get(&p.node_name)?.zone,
                    ))
                })
                .collect()
        } else {
            NodeZones::new()
        };
        let zone_capacities = slices_on
            .then(|| self.cache.nodes.zone_capacities())
            .flatten()
            .map(|zones| {
                zones
                    .into_iter()
                    .map(|(zone, cpu_millis)| model::ZoneCapacity { zone, cpu_millis })
                    .collect()
            });
        crate::reconcile::request::build(
            request,
            SliceInputs {
                nodes: Some(&nodes),
                slices: stored.iter().map(Arc::as_ref).collect(),
                max_endpoints_per_slice: u32::try_from(self.outputs.max_endpoints_per_slice)
                    .unwrap_or(u32::MAX),
                zone_capacities,
                manage: model::Outputs {
                    endpoints: self.outputs.endpoints,
                    endpoint_slices: slices_on,
                },
            },
        )
    }
}
