//! `canary-opt-in`: upstream behaviour, except that canary pods (labelled, by default,
//! `weir.dev/canary: "true"`) are published only for Services that opt in with the annotation
//! `weir.dev/accept-canary: "true"`. Other Services do not list canary pods at all.
//!
//! Why: a canary Deployment normally carries the stable pods' `app` label so that the main
//! Service sends it a share of traffic. But then *every* Service selecting that label sends it
//! traffic, including internal ones (admin APIs, batch callers) whose owners never agreed to
//! test a new build. Making canaries opt-in per Service puts that choice with the Service
//! owner, and removing one annotation pulls a misbehaving canary out of a Service within one
//! sync, without touching any Deployment.
//!
//! Configuration (JSON or YAML, camelCase; every field optional):
//!
//! | Field | Default | Meaning |
//! |---|---|---|
//! | `label` | `weir.dev/canary` | the pod label that marks a canary |
//! | `value` | `true` | the label value that marks a canary (exact match) |
//! | `optInAnnotation` | `weir.dev/accept-canary` | the Service annotation that opts in, with value `true` |

use serde::Deserialize;
use weir_policy::types::{Pod, Service};
use weir_policy::{Context, Policy};

/// The policy and its configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CanaryOptIn {
    /// The pod label that marks a canary.
    pub label: String,
    /// The label value that marks a canary.
    pub value: String,
    /// The Service annotation that opts in to canary pods (value `true`).
    pub opt_in_annotation: String,
}

impl Default for CanaryOptIn {
    fn default() -> Self {
        CanaryOptIn {
            label: "weir.dev/canary".into(),
            value: "true".into(),
            opt_in_annotation: "weir.dev/accept-canary".into(),
        }
    }
}

impl CanaryOptIn {
    /// Whether `pod` is a canary.
    pub fn is_canary(&self, pod: &Pod) -> bool {
        pod.label(&self.label) == Some(self.value.as_str())
    }

    /// Whether `service` accepts canary pods.
    pub fn accepts_canaries(&self, service: &Service) -> bool {
        service.annotation(&self.opt_in_annotation) == Some("true")
    }
}

impl Policy for CanaryOptIn {
    fn validate(&self) -> Result<(), String> {
        if self.label.is_empty() {
            return Err("label must not be empty".into());
        }
        if self.opt_in_annotation.is_empty() {
            return Err("optInAnnotation must not be empty".into());
        }
        Ok(())
    }

    fn include(&self, ctx: &Context, pod: &Pod) -> bool {
        self.accepts_canaries(ctx.service) || !self.is_canary(pod)
    }
}

weir_policy::export_policy!(CanaryOptIn);
weir_policy::arena_allocator!();

#[cfg(test)]
mod tests {
    use super::*;
    use weir_policy::testing::{kv, pod, published, request, service};
    use weir_policy::{parse_config, reconcile};

    fn pods() -> Vec<Pod> {
        let mut canary = pod("canary", "10.0.0.2", true);
        canary.labels.push(kv("weir.dev/canary", "true"));
        vec![pod("stable", "10.0.0.1", true), canary]
    }

    #[test]
    fn canaries_hidden_without_opt_in() {
        let out =
            published(&reconcile(&CanaryOptIn::default(), &request(service(), pods())).unwrap());
        assert_eq!(out.ready, ["stable"]);
    }

    #[test]
    fn opted_in_service_gets_canaries() {
        let mut svc = service();
        svc.annotations.push(kv("weir.dev/accept-canary", "true"));
        let out = published(&reconcile(&CanaryOptIn::default(), &request(svc, pods())).unwrap());
        assert_eq!(out.ready, ["canary", "stable"]);
    }

    #[test]
    fn opt_in_needs_the_value_true() {
        let mut svc = service();
        svc.annotations.push(kv("weir.dev/accept-canary", "yes"));
        let out = published(&reconcile(&CanaryOptIn::default(), &request(svc, pods())).unwrap());
        assert_eq!(out.ready, ["stable"]);
    }

    #[test]
    fn label_is_configurable() {
        let policy: CanaryOptIn = parse_config(r#"{"label": "track", "value": "canary"}"#).unwrap();
        let mut pods = pods();
        pods[0].labels.push(kv("track", "canary"));
        // The default label no longer marks a canary; `track: canary` does.
        let out = published(&reconcile(&policy, &request(service(), pods)).unwrap());
        assert_eq!(out.ready, ["canary"]);
    }

    #[test]
    fn empty_keys_are_refused() {
        let policy: CanaryOptIn = parse_config(r#"{"optInAnnotation": ""}"#).unwrap();
        let err = reconcile(&policy, &request(service(), vec![])).unwrap_err();
        assert!(err.contains("optInAnnotation must not be empty"), "{err}");
    }
}
