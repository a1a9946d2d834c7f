//! `panic-threshold`: upstream behaviour until too few of a Service's pods are ready; then
//! every published pod is listed as ready, as Envoy's
//! [panic threshold](https://www.envoyproxy.io/docs/envoy/latest/intro/arch_overview/upstream/load_balancing/panic_threshold)
//! does for a cluster's hosts.
//!
//! Why: when readiness fails across most of a fleet at once (a shared dependency is slow, a
//! bad readiness probe was rolled out), upstream leaves the few ready pods to take all the
//! traffic and fall over one by one. Past the threshold it is better to spread the load over
//! every pod and let some requests fail than to concentrate it.
//!
//! Configuration (JSON or YAML, camelCase; every field optional):
//!
//! | Field | Default | Meaning |
//! |---|---|---|
//! | `threshold` | `0.5` | panic when the ready share of the Service's pods is below this (0 to 1; 0 disables) |
//!
//! "The Service's pods" are those that would be published at all (after upstream's selection
//! and address steps), counted once each however many ports they serve. The policy works in
//! the `verdicts` hook, which sees every pod of a pass, so the Endpoints and the
//! EndpointSlices (per address type) both panic; in a slice a panicking pod is `ready: true`,
//! its `serving` condition still the pod's own readiness.

use serde::Deserialize;
use weir_policy::{Context, Policy, Verdict};

/// The policy and its configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PanicThreshold {
    /// Panic when fewer than this share of the pods are ready.
    pub threshold: f64,
}

impl Default for PanicThreshold {
    fn default() -> Self {
        // Envoy's default.
        PanicThreshold { threshold: 0.5 }
    }
}

/// Ready and total pod counts among the verdicts (one per pod).
pub fn ready_share(verdicts: &[Verdict]) -> (usize, usize) {
    let ready = verdicts.iter().filter(|v| v.ready).count();
    (ready, verdicts.len())
}

impl Policy for PanicThreshold {
    fn validate(&self) -> Result<(), String> {
        // `contains` is false for NaN too.
        if !(0.0..=1.0).contains(&self.threshold) {
            return Err(format!(
                "threshold must be between 0 and 1, got {}",
                self.threshold
            ));
        }
        Ok(())
    }

    fn verdicts(&self, ctx: &Context, verdicts: &mut [Verdict]) {
        let (ready, total) = ready_share(verdicts);
        // Multiplying rather than dividing: a Service without pods never panics.
        if total > 0 && (ready as f64) < self.threshold * total as f64 {
            weir_policy::warn!(
                "{}/{}: only {ready} of {total} pods ready, below the panic threshold {}; publishing all as ready",
                ctx.service.namespace,
                ctx.service.name,
                self.threshold
            );
            verdicts.iter_mut().for_each(|v| v.ready = true);
        }
    }
}

weir_policy::export_policy!(PanicThreshold);
weir_policy::arena_allocator!();

#[cfg(test)]
mod tests {
    use super::*;
    use weir_policy::testing::{pod, published, request, service};
    use weir_policy::types::{ContainerPort, ServicePort, TargetPort};
    use weir_policy::{parse_config, reconcile};

    fn pods(ready: usize, not_ready: usize) -> Vec<weir_policy::types::Pod> {
        (0..ready + not_ready)
            .map(|i| pod(&format!("p{i}"), &format!("10.0.0.{}", i + 1), i < ready))
            .collect()
    }

    #[test]
    fn below_threshold_publishes_all_as_ready() {
        let req = request(service(), pods(1, 3));
        let out = published(&reconcile(&PanicThreshold::default(), &req).unwrap());
        assert_eq!(out.ready.len(), 4);
        assert!(out.not_ready.is_empty());
    }

    #[test]
    fn at_threshold_is_upstream() {
        let req = request(service(), pods(2, 2));
        let out = published(&reconcile(&PanicThreshold::default(), &req).unwrap());
        assert_eq!(out.ready, ["p0", "p1"]);
        assert_eq!(out.not_ready, ["p2", "p3"]);
    }

    #[test]
    fn pods_count_once_however_many_ports_they_serve() {
        // A named port only p0 declares: p0 has two entries, p1 one. Per entry 2 of 3 are
        // ready (above 0.6); per pod 1 of 2 (below it), which is what must count.
        let mut svc = service();
        svc.ports.push(ServicePort {
            name: "metrics".into(),
            protocol: "TCP".into(),
            port: 9090,
            target_port: TargetPort::Name("metrics".into()),
            app_protocol: None,
        });
        let mut pods = pods(1, 1);
        pods[0].container_ports.push(ContainerPort {
            name: "metrics".into(),
            port: 9090,
            protocol: "TCP".into(),
        });
        let req = request(svc, pods);
        let out = published(&reconcile(&PanicThreshold { threshold: 0.6 }, &req).unwrap());
        assert_eq!(out.ready, ["p0", "p1"]);
        assert!(out.not_ready.is_empty());
    }

    #[test]
    fn zero_disables_and_no_pods_never_panics() {
        let req = request(service(), pods(0, 3));
        let out = published(&reconcile(&PanicThreshold { threshold: 0.0 }, &req).unwrap());
        assert_eq!(out.not_ready.len(), 3);
        let empty = request(service(), vec![]);
        assert!(reconcile(&PanicThreshold { threshold: 1.0 }, &empty).is_ok());
    }

    #[test]
    fn threshold_out_of_range_is_refused() {
        for text in [r#"{"threshold": 1.5}"#, r#"{"threshold": -0.1}"#] {
            let policy: PanicThreshold = parse_config(text).unwrap();
            let err = reconcile(&policy, &request(service(), vec![])).unwrap_err();
            assert!(err.contains("threshold must be between 0 and 1"), "{err}");
        }
        assert!(parse_config::<PanicThreshold>(r#"{"threshold": "half"}"#).is_err());
    }
}
