//! Builders and inspectors for a policy's native unit tests (`cargo test`, no wasm, no host).
//!
//! The builders give a minimal valid world: Service `ns/svc` (ClusterIP, IPv4, selector
//! `app=web`, port `http` 80 → 8080) and pods of `ns` labelled `app=web` on `node-1`. Every
//! field is public, so a test adjusts what it cares about and leaves the rest.
//!
//! ```
//! use weir_policy::testing::{kv, pod, published, request, service};
//! use weir_policy::{reconcile, DefaultPolicy};
//!
//! let mut draining = pod("b", "10.0.0.2", true);
//! draining.annotations.push(kv("example.com/drain", "true"));
//! let req = request(service(), vec![pod("a", "10.0.0.1", true), draining]);
//! let decision = reconcile(&DefaultPolicy::default(), &req).unwrap();
//! // Upstream ignores the annotation: both pods are ready.
//! assert_eq!(published(&decision).ready, ["a", "b"]);
//! ```

use crate::types::{
    Decision, Endpoint, EndpointsDecision, KeyValue, Outputs, Pod, PodCondition, Request, Service,
    ServicePort, TargetPort,
};

/// A label, annotation or selector entry.
pub fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: value.into(),
    }
}

/// Service `ns/svc`: ClusterIP `10.96.0.1`, IPv4, selector `app=web`, one TCP port `http`
/// 80 → 8080, no labels or annotations, not-ready addresses not published.
pub fn service() -> Service {
    Service {
        namespace: "ns".into(),
        name: "svc".into(),
        uid: "svc-uid".into(),
        labels: vec![],
        annotations: vec![],
        creation_timestamp: None,
        selector: Some(vec![kv("app", "web")]),
        service_type: "ClusterIP".into(),
        cluster_ip: "10.96.0.1".into(),
        cluster_ips: vec!["10.96.0.1".into()],
        ip_families: vec!["IPv4".into()],
        ports: vec![ServicePort {
            name: "http".into(),
            protocol: "TCP".into(),
            port: 80,
            target_port: TargetPort::Number(8080),
            app_protocol: None,
        }],
        publish_not_ready_addresses: false,
        traffic_distribution: None,
        deleting: false,
    }
}

/// A running pod `ns/<name>` (uid `<name>-uid`) labelled `app=web`, on `node-1` (which
/// exists, without a zone), with IP
/// `ip`, whose `Ready` condition is `True` when `ready`.
pub fn pod(name: &str, ip: &str, ready: bool) -> Pod {
    Pod {
        namespace: "ns".into(),
        name: name.into(),
        uid: format!("{name}-uid"),
        labels: vec![kv("app", "web")],
        annotations: vec![],
        node_name: "node-1".into(),
        hostname: String::new(),
        subdomain: String::new(),
        pod_ip: Some(ip.into()),
        pod_ips: vec![ip.into()],
        phase: "Running".into(),
        conditions: vec![PodCondition {
            condition_type: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            last_transition_time: None,
        }],
        terminating: false,
        node_exists: true,
        zone: None,
        container_ports: vec![],
    }
}

/// A request to reconcile `service` with `pods` (taken as already selected), no stored
/// Endpoints or EndpointSlices, no trigger time and no configuration; both outputs managed,
/// at most 100 endpoints per slice.
pub fn request(service: Service, pods: Vec<Pod>) -> Request {
    Request {
        namespace: service.namespace.clone(),
        name: service.name.clone(),
        service: Some(service),
        pods,
        current: None,
        trigger_time: None,
        config: String::new(),
        endpoint_slices: Vec::new(),
        max_endpoints_per_slice: crate::well_known::DEFAULT_MAX_ENDPOINTS_PER_SLICE,
        zone_capacities: None,
        manage: Outputs {
            endpoints: true,
            endpoint_slices: true,
        },
    }
}

/// Which pods a decision publishes, by pod name (`targetRef.name`, or the IP for an address
/// without one), each list sorted and free of duplicates (a pod serving several ports is
/// listed once).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Published {
    /// Pods in `addresses`.
    pub ready: Vec<String>,
    /// Pods in `notReadyAddresses`.
    pub not_ready: Vec<String>,
}

/// The pods the Endpoints of a decision hold when it creates or updates them; empty for
/// `none` and `delete`.
pub fn published(decision: &Decision) -> Published {
    let (EndpointsDecision::Create(endpoints) | EndpointsDecision::Update(endpoints)) =
        &decision.endpoints
    else {
        return Published::default();
    };
    let name = |a: &crate::types::EndpointAddress| {
        a.target_ref
            .as_ref()
            .map_or_else(|| a.ip.clone(), |r| r.name.clone())
    };
    let mut out = Published::default();
    for subset in &endpoints.subsets {
        out.ready.extend(subset.addresses.iter().map(name));
        out.not_ready
            .extend(subset.not_ready_addresses.iter().map(name));
    }
    for list in [&mut out.ready, &mut out.not_ready] {
        list.sort();
        list.dedup();
    }
    out
}

/// The name of the pod a slice endpoint points at (`targetRef.name`),
/// whether the endpoint names one of `pods` (the request's) or spells its location out.
pub fn endpoint_pod_name<'a>(endpoint: &'a Endpoint, pods: &'a [Pod]) -> Option<&'a str> {
    crate::steps::slices::location::locate(endpoint, pods)
        .target_ref
        .map(|r| r.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DefaultPolicy, reconcile};

    #[test]
    fn builders_give_a_create_with_ready_and_not_ready_pods() {
        let req = request(
            service(),
            vec![pod("b", "10.0.0.2", false), pod("a", "10.0.0.1", true)],
        );
        let decision = reconcile(&DefaultPolicy::default(), &req).unwrap();
        assert!(matches!(decision.endpoints, EndpointsDecision::Create(_)));
        assert_eq!(
            published(&decision),
            Published {
                ready: vec!["a".into()],
                not_ready: vec!["b".into()],
            }
        );
    }

    #[test]
    fn nothing_published_for_delete() {
        let mut req = request(service(), vec![pod("a", "10.0.0.1", true)]);
        req.service = None;
        let decision = reconcile(&DefaultPolicy::default(), &req).unwrap();
        assert_eq!(decision.endpoints, EndpointsDecision::Delete);
        assert_eq!(published(&decision), Published::default());
    }
}
