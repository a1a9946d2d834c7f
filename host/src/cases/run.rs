//! Running a case: the request the controller would send for it, the guest call, and the
//! validation of the decision as a sync validates it.

use k8s_openapi::api::discovery::v1 as discovery;
use serde_json::{Value, json};

use super::checks::normalize_config;
use super::format::{Case, config_text};
use crate::model;
use crate::reconcile::request::{self, Selected, SliceInputs};
use crate::reconcile::trigger_time::TriggerTimeTracker;
use crate::reconcile::validate::{Action, Violation, validate};
use crate::reconcile::validate_slices::{self, SliceContext};
use crate::reconcile::view;
use crate::reconcile::view_slices;
use crate::runtime::{CallError, CallTiming, Guest, World};
use crate::selector::service_selects;

impl Case {
    /// What the request is built from: the Service, the pods its selector picks in its
    /// namespace (as `weir run` selects them), the stored Endpoints and the configuration.
    fn selected(&self) -> Selected {
        let (namespace, name) = self.split_key().unwrap_or(("", ""));
        let service = self.service.as_ref().map(|s| view::service(s, namespace));
        let selector = self
            .service
            .as_ref()
            .and_then(|s| s.spec.as_ref())
            .and_then(|s| s.selector.as_ref());
        let pods: Vec<model::Pod> = if service.is_some() {
            self.pods
                .iter()
                .filter(|p| p.metadata.namespace.as_deref().unwrap_or(namespace) == namespace)
                .filter(|p| service_selects(selector, p.metadata.labels.as_ref()))
                .map(|p| {
                    let mut v = view::pod(p);
                    if v.namespace.is_empty() {
                        v.namespace = namespace.to_string();
                    }
                    v
                })
                .collect()
        } else {
            Vec::new()
        };
        let trigger_time = service
            .as_ref()
            .and_then(|s| TriggerTimeTracker::default().compute(&self.key, s, &pods));
        Selected {
            namespace: namespace.to_string(),
            name: name.to_string(),
            service,
            pods,
            current: self.endpoints.as_ref().map(|e| {
                let mut v = view::endpoints(e);
                if v.namespace.is_empty() {
                    v.namespace = namespace.to_string();
                }
                v
            }),
            trigger_time,
            config: self.config_for_guest().unwrap_or_default(),
        }
    }

    /// The request the controller would send: the Service and its selected pods, the stored
    /// Endpoints and slices, the pods' Node facts, the slice size and the managed outputs.
    pub fn request(&self) -> model::Request {
        let nodes = self.nodes.as_deref().map(view_slices::node_zones);
        request::build(
            self.selected(),
            SliceInputs {
                nodes: nodes.as_ref(),
                slices: self.endpoint_slices.iter().collect(),
                max_endpoints_per_slice: self.max_endpoints_per_slice,
                zone_capacities: self.nodes.as_deref().and_then(view_slices::zone_capacities),
                manage: self.outputs(),
            },
        )
    }

    /// Runs the case on `guest`, validating the decision as the controller does.
    pub async fn run(&self, guest: &Guest) -> Result<Outcome, RunError> {
        self.check_config(guest).await?;
        self.run_timed(guest).await.0
    }

    /// Checks the case's `config` with the guest's `validate-config` (0.2.0), under the same
    /// deadline and memory cap as a call, as a controller does when it loads a guest. A case
    /// without `config`, and a 0.1.0 guest (no such export), pass.
    pub async fn check_config(&self, guest: &Guest) -> Result<(), RunError> {
        let Some(text) = self.config_for_guest() else {
            return Ok(());
        };
        match guest.validate_config(&text).await {
            Ok(()) => Ok(()),
            Err(CallError::Guest(message)) => Err(RunError::Config(message)),
            Err(e) => Err(RunError::Call(e)),
        }
    }

    /// The text `validate-config` checks for this case: its `config` as JSON text, `None`
    /// when it has none.
    pub fn config_for_guest(&self) -> Option<String> {
        let config = self.config.as_ref()?;
        Some(normalize_config(&config_text(config)).unwrap_or_default())
    }

    /// Like [`Case::run`], with the time of each phase (instantiate, call, validate).
    pub async fn run_timed(
        &self,
        guest: &Guest,
    ) -> (Result<Outcome, RunError>, CallTiming, std::time::Duration) {
        let request = self.request();
        let (result, timing) = guest.call_timed(&request).await;
        let started = std::time::Instant::now();
        let result = result
            .map_err(RunError::Call)
            .and_then(|decision| self.outcome(guest.world(), &request, decision));
        (result, timing, started.elapsed())
    }

    /// Validates a guest's decision for `request` (this case's) as the controller does, and
    /// applies its slice changes to the stored slices.
    pub fn outcome(
        &self,
        world: World,
        request: &model::Request,
        decision: model::Decision,
    ) -> Result<Outcome, RunError> {
        let model::Decision {
            endpoints,
            slices,
            errors,
            events,
        } = decision;
        let action = validate(
            &request.namespace,
            &request.name,
            endpoints,
            self.endpoints.as_ref(),
            crate::runtime::Limits::default().max_addresses,
        )?;
        let stored: Vec<&discovery::EndpointSlice> = self.endpoint_slices.iter().collect();
        let service_uid = self
            .service
            .as_ref()
            .and_then(|s| s.metadata.uid.as_deref());
        // The controller's own check (and objects), with what the case says about the
        // Service and its slices.
        let plan = validate_slices::plan(
            &SliceContext {
                namespace: &request.namespace,
                name: &request.name,
                service_uid,
                stored: &stored,
                max_endpoints_per_slice: usize::try_from(self.max_endpoints_per_slice)
                    .unwrap_or(usize::MAX),
                pods: &request.pods,
            },
            slices,
        )?;
        Ok(Outcome {
            action,
            world,
            slices: SliceWrites {
                create: plan.create,
                update: plan.update,
                delete: plan.delete.into_iter().map(|d| d.name).collect(),
            },
            errors,
            events: events
                .into_iter()
                .map(|e| {
                    json!({
                        "type": if e.warning { "Warning" } else { "Normal" },
                        "reason": e.reason,
                        "message": e.message,
                    })
                })
                .collect(),
        })
    }

    /// Every slice of the Service once `writes` are applied to the stored ones; created
    /// slices get the name `<generateName>created-<n>`.
    pub fn slices_after(&self, writes: &SliceWrites) -> Vec<discovery::EndpointSlice> {
        let name = |s: &discovery::EndpointSlice| s.metadata.name.clone().unwrap_or_default();
        let mut out: Vec<discovery::EndpointSlice> = self
            .endpoint_slices
            .iter()
            .filter(|s| !writes.delete.contains(&name(s)))
            .filter(|s| writes.update.iter().all(|u| name(u) != name(s)))
            .cloned()
            .collect();
        out.extend(writes.update.iter().cloned());
        for (i, created) in writes.create.iter().enumerate() {
            let mut created = created.clone();
            let prefix = created.metadata.generate_name.clone().unwrap_or_default();
            created.metadata.name = Some(format!("{prefix}created-{i}"));
            out.push(created);
        }
        out
    }
}

/// The EndpointSlice writes of a decision, as discovery.k8s.io/v1 objects.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SliceWrites {
    /// Slices to create (named by the API server from `generateName`).
    pub create: Vec<discovery::EndpointSlice>,
    /// Stored slices to replace, by name, with the stored resourceVersion.
    pub update: Vec<discovery::EndpointSlice>,
    /// Names of stored slices to delete.
    pub delete: Vec<String>,
}

/// What a case's reconcile decided, validated.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// What happens to the Endpoints.
    pub action: Action,
    /// The contract version of the guest that decided.
    pub world: World,
    /// What happens to the EndpointSlices.
    pub slices: SliceWrites,
    /// Sync errors reported after the writes.
    pub errors: Vec<String>,
    /// Events for the Service, as `{type, reason, message}`.
    pub events: Vec<Value>,
}

/// A case whose guest call gave no valid decision.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The call failed (guest error, trap, timeout, memory).
    #[error(transparent)]
    Call(#[from] CallError),
    /// The decision broke the contract.
    #[error(transparent)]
    Invalid(#[from] Violation),
    /// The slice changes broke the contract.
    #[error(transparent)]
    InvalidSlices(#[from] validate_slices::SliceViolation),
    /// The policy's `validate-config` refused the case's `config`.
    #[error("config: the policy refuses it: {0}")]
    Config(String),
}
