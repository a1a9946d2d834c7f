//! `drain-annotation`: upstream behaviour, except that pods annotated as draining (by default
//! `weir.dev/drain: "true"`) are published under `notReadyAddresses`, so clients stop sending
//! them new traffic while the pod itself stays up and keeps serving what it already has.
//!
//! Configuration (JSON or YAML, camelCase; every field optional):
//!
//! | Field | Default | Meaning |
//! |---|---|---|
//! | `annotation` | `weir.dev/drain` | the pod annotation that marks a draining pod |
//! | `value` | `true` | the annotation value that means "draining" (exact match) |
//! | `overridePublishNotReady` | `false` | also drain pods of Services with `publishNotReadyAddresses: true` |
//!
//! Services with `publishNotReadyAddresses: true` ask for every pod as ready, usually for peer
//! discovery (StatefulSets), not load balancing; by default a drain does not hide a peer there.

use serde::Deserialize;
use weir_policy::types::Pod;
use weir_policy::{Context, Policy, Verdict};

/// The policy and its configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct DrainAnnotation {
    /// The pod annotation that marks a draining pod.
    pub annotation: String,
    /// The annotation value that means "draining"; any other value (or none) does not.
    pub value: String,
    /// Drain pods even when the Service publishes not-ready addresses.
    pub override_publish_not_ready: bool,
}

impl Default for DrainAnnotation {
    fn default() -> Self {
        DrainAnnotation {
            annotation: "weir.dev/drain".into(),
            value: "true".into(),
            override_publish_not_ready: false,
        }
    }
}

impl DrainAnnotation {
    /// Whether `pod` is marked as draining.
    pub fn is_draining(&self, pod: &Pod) -> bool {
        pod.annotation(&self.annotation) == Some(self.value.as_str())
    }
}

impl Policy for DrainAnnotation {
    fn validate(&self) -> Result<(), String> {
        if self.annotation.is_empty() {
            return Err("annotation must not be empty".into());
        }
        Ok(())
    }

    fn verdict(&self, ctx: &Context, verdict: &mut Verdict) {
        let applies = !ctx.service.publish_not_ready_addresses || self.override_publish_not_ready;
        let pod = verdict.pod;
        if applies && verdict.ready && self.is_draining(pod) {
            let (namespace, name) = (&pod.namespace, &pod.name);
            weir_policy::debug!("pod {namespace}/{name} is draining: listed as not ready");
            verdict.ready = false;
        }
    }
}

weir_policy::export_policy!(DrainAnnotation);
weir_policy::arena_allocator!();

#[cfg(test)]
mod tests {
    use super::*;
    use weir_policy::testing::{kv, pod, published, request, service};
    use weir_policy::{parse_config, reconcile};

    fn draining(name: &str, ip: &str, key: &str, value: &str) -> Pod {
        let mut p = pod(name, ip, true);
        p.annotations.push(kv(key, value));
        p
    }

    #[test]
    fn draining_pod_moves_to_not_ready() {
        let req = request(
            service(),
            vec![
                pod("a", "10.0.0.1", true),
                draining("b", "10.0.0.2", "weir.dev/drain", "true"),
            ],
        );
        let out = published(&reconcile(&DrainAnnotation::default(), &req).unwrap());
        assert_eq!(out.ready, ["a"]);
        assert_eq!(out.not_ready, ["b"]);
    }

    #[test]
    fn other_values_do_not_drain() {
        let req = request(
            service(),
            vec![draining("a", "10.0.0.1", "weir.dev/drain", "false")],
        );
        let out = published(&reconcile(&DrainAnnotation::default(), &req).unwrap());
        assert_eq!(out.ready, ["a"]);
    }

    #[test]
    fn key_is_configurable() {
        let policy: DrainAnnotation =
            parse_config(r#"{"annotation": "example.com/out-of-rotation"}"#).unwrap();
        let req = request(
            service(),
            vec![
                draining("a", "10.0.0.1", "weir.dev/drain", "true"),
                draining("b", "10.0.0.2", "example.com/out-of-rotation", "true"),
            ],
        );
        let out = published(&reconcile(&policy, &req).unwrap());
        assert_eq!(out.ready, ["a"]);
        assert_eq!(out.not_ready, ["b"]);
    }

    #[test]
    fn publish_not_ready_services_keep_drained_peers_unless_overridden() {
        let mut svc = service();
        svc.publish_not_ready_addresses = true;
        let req = request(
            svc,
            vec![draining("a", "10.0.0.1", "weir.dev/drain", "true")],
        );
        let kept = published(&reconcile(&DrainAnnotation::default(), &req).unwrap());
        assert_eq!(kept.ready, ["a"]);
        let policy = DrainAnnotation {
            override_publish_not_ready: true,
            ..DrainAnnotation::default()
        };
        let drained = published(&reconcile(&policy, &req).unwrap());
        assert_eq!(drained.not_ready, ["a"]);
    }

    #[test]
    fn bad_configuration_is_a_clear_error() {
        let err = parse_config::<DrainAnnotation>(r#"{"annotations": "x"}"#).unwrap_err();
        assert!(
            err.to_string().contains("unknown field `annotations`"),
            "{err}"
        );
        let policy: DrainAnnotation = parse_config(r#"{"annotation": ""}"#).unwrap();
        let err = reconcile(&policy, &request(service(), vec![])).unwrap_err();
        assert!(err.contains("annotation must not be empty"), "{err}");
    }
}
