//! The `endpoints.kubernetes.io/last-change-trigger-time` annotation (spec §12.4; upstream
//! `TriggerTimeTracker`). It needs memory across syncs, which a stateless guest lacks, so the
//! host computes it and passes the result in the request.
//!
//! Times are compared as the API serializes them (`YYYY-MM-DDTHH:MM:SSZ`), which sorts
//! chronologically as text.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::model::{Pod, Service};

#[derive(Debug, Default)]
struct ServiceState {
    pod_times: HashMap<String, String>,
    service_time: String,
}

/// Remembers, per Service key, the trigger times already reported.
#[derive(Debug, Default)]
pub struct TriggerTimeTracker {
    states: Mutex<HashMap<String, ServiceState>>,
}

fn ready_time(pod: &Pod) -> Option<&str> {
    pod.conditions
        .iter()
        .find(|c| c.condition_type == "Ready")
        .and_then(|c| c.last_transition_time.as_deref())
}

impl TriggerTimeTracker {
    /// The trigger time for a sync of `key`: on the first sync since start (or since
    /// [`forget`](Self::forget)) the Service's creation time; afterwards the earliest pod Ready
    /// transition or Service creation newer than the ones seen before, if any.
    pub fn compute(&self, key: &str, service: &Service, pods: &[Pod]) -> Option<String> {
        let mut states = self.states.lock().unwrap_or_else(|e| e.into_inner());
        let previous = states.remove(key);
        let known = previous.is_some();
        let previous = previous.unwrap_or_default();
        let mut next = ServiceState::default();
        let mut earliest: Option<String> = None;
        let mut consider = |t: &str| {
            if earliest.as_deref().is_none_or(|e| t < e) {
                earliest = Some(t.to_string());
            }
        };
        for pod in pods {
            if let Some(t) = ready_time(pod) {
                if previous
                    .pod_times
                    .get(&pod.name)
                    .is_none_or(|seen| t > seen.as_str())
                {
                    consider(t);
                }
                next.pod_times.insert(pod.name.clone(), t.to_string());
            }
        }
        let service_time = service.creation_timestamp.clone().unwrap_or_default();
        if service_time > previous.service_time {
            consider(&service_time);
        }
        next.service_time = service_time.clone();
        states.insert(key.to_string(), next);
        if !known {
            return (!service_time.is_empty()).then_some(service_time);
        }
        earliest.filter(|t| !t.is_empty())
    }

    /// Forgets a deleted Service.
    pub fn forget(&self, key: &str) {
        self.states
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PodCondition;

    fn service(created: &str) -> Service {
        Service {
            namespace: "ns".into(),
            name: "s".into(),
            uid: String::new(),
            labels: vec![],
            annotations: vec![],
            creation_timestamp: Some(created.into()),
            selector: Some(vec![]),
            service_type: "ClusterIP".into(),
            cluster_ip: String::new(),
            cluster_ips: vec![],
            ip_families: vec![],
            ports: vec![],
            publish_not_ready_addresses: false,
            traffic_distribution: None,
            deleting: false,
        }
    }

    fn pod(name: &str, ready_at: &str) -> Pod {
        Pod {
            namespace: "ns".into(),
            name: name.into(),
            uid: String::new(),
            labels: vec![],
            annotations: vec![],
            node_name: String::new(),
            hostname: String::new(),
            subdomain: String::new(),
            pod_ip: None,
            pod_ips: vec![],
            phase: String::new(),
            conditions: vec![PodCondition {
                condition_type: "Ready".into(),
                status: "True".into(),
                last_transition_time: Some(ready_at.into()),
            }],
            terminating: false,
            node_exists: false,
            zone: None,
            container_ports: vec![],
        }
    }

    #[test]
    fn first_sync_reports_service_creation_then_only_newer_changes() {
        let tracker = TriggerTimeTracker::default();
        let svc = service("2024-01-01T00:00:00Z");
        let pods = vec![pod("a", "2024-01-02T00:00:00Z")];
        assert_eq!(
            tracker.compute("ns/s", &svc, &pods).as_deref(),
            Some("2024-01-01T00:00:00Z")
        );
        assert_eq!(
            tracker.compute("ns/s", &svc, &pods),
            None,
            "nothing changed"
        );
        let pods = vec![
            pod("a", "2024-01-03T00:00:00Z"),
            pod("b", "2024-01-02T12:00:00Z"),
        ];
        assert_eq!(
            tracker.compute("ns/s", &svc, &pods).as_deref(),
            Some("2024-01-02T12:00:00Z")
        );
        tracker.forget("ns/s");
        assert_eq!(
            tracker.compute("ns/s", &svc, &pods).as_deref(),
            Some("2024-01-01T00:00:00Z")
        );
    }
}
