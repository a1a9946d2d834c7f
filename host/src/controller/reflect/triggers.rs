//! Triggers: which Service keys a watch event queues, and after what delay (spec §2, plus
//! weir's D3 and D10). Pure functions; the reflector applies them.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::discovery::v1::EndpointSlice;

use crate::controller::ledger::slices::SliceTracker;
use crate::controller::store::slices::NodeView;
use crate::controller::store::slim_pod::SlimPod;
use crate::controller::store::{Cache, CachedPod, Key, key};
use crate::model;
use crate::model::labels::{LABEL_MANAGED_BY, LABEL_SERVICE_NAME, is_managed, label, service_key};

/// What changed between two versions of a pod, as far as Endpoints care (spec §2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodChange {
    /// Readiness, IPs or termination changed: every Service selecting it must re-sync.
    pub endpoints: bool,
    /// Labels, hostname or subdomain changed: the set of selecting Services may have changed.
    pub membership: bool,
}

/// Compares two versions of a pod. `None` when nothing that matters changed, including an
/// informer resync (same resourceVersion).
pub fn pod_change(old: &CachedPod, new: &CachedPod) -> Option<PodChange> {
    if old.resource_version() == new.resource_version() && !old.resource_version().is_empty() {
        return None;
    }
    // Every field of the cached pod, without `..`: a field added to the pod fails to compile
    // here until it is decided whether its change re-syncs the Services (spec §2.5).
    let SlimPod {
        // The pod's identity: a pod with another name or uid is another pod (a delete and an
        // add), and its namespace is fixed.
        namespace: _,
        name: _,
        uid: _,
        labels,
        annotations,
        // Set once, at binding; the IPs and readiness that follow re-sync (spec §2.5 ignores it).
        node_name: _,
        hostname,
        subdomain,
        // `pod_ips` holds it as its first entry.
        pod_ip: _,
        pod_ips,
        // Read through `ready()` below: only the Ready condition re-syncs, and a phase change
        // alone does not (spec §2.5); a pod that ends loses its readiness or its IPs as well.
        phase: _,
        conditions: _,
        // Fixed in a pod's spec, so never changed by an update (spec §2.5 ignores them too).
        container_ports: _,
        terminating,
        resource_version: _,
    } = &**old;
    // Upstream compares deletion timestamps as pointers, so any update of a terminating pod
    // counts as a change.
    let terminating = *terminating || new.terminating;
    // D14: a policy may read annotations (the drain-annotation example), so a change of them
    // re-syncs too; upstream's controllers read none.
    let endpoints = terminating
        || old.ready() != new.ready()
        || pod_ips != &new.pod_ips
        || annotations != &new.annotations;
    let membership =
        labels != &new.labels || (hostname, subdomain) != (&new.hostname, &new.subdomain);
    (endpoints || membership).then_some(PodChange {
        endpoints,
        membership,
    })
}

fn selecting(services: &[Arc<model::Service>], pod: &CachedPod) -> Vec<Key> {
    services
        .iter()
        .filter(|s| s.selector.as_ref().is_some_and(|sel| pod.selected_by(sel)))
        .map(|s| key(&s.namespace, &s.name))
        .collect()
}

/// Keys to sync after a pod event (spec §2.4–2.6). `old`/`new` are `None` for an add or a
/// delete; `services` are the managed Services of the pod's namespace. Services without a
/// selector select nothing.
pub fn keys_for_pod(
    services: &[Arc<model::Service>],
    old: Option<&CachedPod>,
    new: Option<&CachedPod>,
) -> Vec<Key> {
    match (old, new) {
        (None, None) => Vec::new(),
        (None, Some(pod)) | (Some(pod), None) => selecting(services, pod),
        (Some(old), Some(new)) => {
            let Some(change) = pod_change(old, new) else {
                return Vec::new();
            };
            let now = selecting(services, new);
            if !change.membership {
                return now;
            }
            let before = selecting(services, old);
            let mut keys: Vec<Key> = if change.endpoints {
                // Union: every Service that had or has the pod.
                before.iter().chain(now.iter()).cloned().collect()
            } else {
                // Symmetric difference: only Services that gained or lost the pod.
                before
                    .iter()
                    .filter(|k| !now.contains(k))
                    .chain(now.iter().filter(|k| !before.contains(k)))
                    .cloned()
                    .collect()
            };
            keys.sort();
            keys.dedup();
            keys
        }
    }
}

/// The Services a pod event concerns, each with its delay: the batch period, so that bursts
/// coalesce (spec §2.6, §3.5; R1.14, R1.18).
pub fn pod_enqueues(
    services: &[Arc<model::Service>],
    batch: Duration,
    old: Option<&CachedPod>,
    new: Option<&CachedPod>,
) -> Vec<(String, Duration)> {
    keys_for_pod(services, old, new)
        .into_iter()
        .map(|k| (k, batch))
        .collect()
}

/// Delay of slice-driven syncs: at least a second, so a burst of slice events (and the watch
/// catching up with weir's own writes) coalesces into one sync (upstream R1.15e).
pub fn slice_delay(batch: Duration) -> Duration {
    batch.max(Duration::from_secs(1))
}

/// The Services a slice event concerns, each after [`slice_delay`] (R1.15).
pub fn slice_enqueues(
    tracker: &SliceTracker,
    batch: Duration,
    old: Option<&EndpointSlice>,
    new: Option<&EndpointSlice>,
) -> Vec<(String, Duration)> {
    keys_for_slice(tracker, old, new)
        .into_iter()
        .map(|k| (k, slice_delay(batch)))
        .collect()
}

/// Service keys a slice event enqueues (R1.15); `old`/`new` are `None` for an add or a
/// delete. A delete of a slice weir tracks is recorded in `tracker`.
pub fn keys_for_slice(
    tracker: &SliceTracker,
    old: Option<&EndpointSlice>,
    new: Option<&EndpointSlice>,
) -> Vec<String> {
    match (old, new) {
        (None, None) => Vec::new(),
        (None, Some(slice)) => {
            if is_managed(slice) && tracker.should_sync(slice) {
                service_key(slice).into_iter().collect()
            } else {
                Vec::new()
            }
        }
        (Some(old), Some(new)) => {
            // A slice that left weir's hands (another Service or another manager) is no
            // longer expected by the old Service's sync. Upstream keeps expecting it and so
            // fails every later sync of that Service as stale (R1.32); weir forgets it.
            if service_key(old) != service_key(new) || (is_managed(old) && !is_managed(new)) {
                tracker.handle_deletion(old);
            }
            if label(old, LABEL_SERVICE_NAME) != label(new, LABEL_SERVICE_NAME) {
                // Moved to another Service: both must look again.
                return service_key(new)
                    .into_iter()
                    .chain(service_key(old))
                    .collect();
            }
            let ownership_changed = label(old, LABEL_MANAGED_BY) != label(new, LABEL_MANAGED_BY)
                && (is_managed(old) || is_managed(new));
            if ownership_changed || (is_managed(new) && tracker.should_sync(new)) {
                service_key(new).into_iter().collect()
            } else {
                Vec::new()
            }
        }
        (Some(slice), None) => {
            if is_managed(slice) && tracker.has(slice) && !tracker.handle_deletion(slice) {
                service_key(slice).into_iter().collect()
            } else {
                Vec::new()
            }
        }
    }
}

/// The Services a Node change re-syncs at once. Only topology-aware hints depend on Nodes
/// beyond each endpoint's zone, which upstream refreshes at the Service's next sync (R1.16,
/// S97). Upstream re-syncs only the Services whose hints became overloaded; weir keeps no
/// hint state in the host, so it re-syncs every Service asking for `auto` hints and the guest
/// writes only where the hints no longer hold (deviation D10).
pub fn node_enqueues(cache: &Cache, old: Option<&NodeView>, new: Option<&NodeView>) -> Vec<String> {
    if NodeView::topology_changed(old, new) {
        cache.topology_hint_service_keys()
    } else {
        Vec::new()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::api::core::v1 as core;
    use serde_json::json;
    use std::sync::Arc;

    /// A pod `ns/p` with one IP.
    pub(crate) fn pod(
        rv: &str,
        labels: serde_json::Value,
        ready: bool,
        hostname: &str,
    ) -> CachedPod {
        let p: core::Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "labels": labels, "resourceVersion": rv},
            "spec": {"hostname": hostname, "containers": []},
            "status": {"podIPs": [{"ip": "10.0.0.1"}], "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}
        }))
        .unwrap();
        CachedPod::from_pod(&p)
    }

    /// A Service `ns/NAME` with this selector (`None`: no selector).
    pub(crate) fn service(name: &str, selector: Option<serde_json::Value>) -> Arc<model::Service> {
        let mut spec = json!({});
        if let Some(s) = selector {
            spec["selector"] = s;
        }
        let s: core::Service = serde_json::from_value(
            json!({"metadata": {"name": name, "namespace": "ns"}, "spec": spec}),
        )
        .unwrap();
        Arc::new(crate::reconcile::view::service(&s, "ns"))
    }

    fn services() -> Vec<Arc<model::Service>> {
        vec![
            service("web", Some(json!({"app": "web"}))),
            service("db", Some(json!({"app": "db"}))),
            service("all", Some(json!({}))),
            service("manual", None),
        ]
    }

    #[test]
    fn add_and_delete_enqueue_selecting_services() {
        let p = pod("1", json!({"app": "web"}), true, "");
        let mut keys = keys_for_pod(&services(), None, Some(&p));
        keys.sort();
        assert_eq!(keys, ["ns/all", "ns/web"]);
        assert_eq!(keys_for_pod(&services(), Some(&p), None).len(), 2);
    }

    #[test]
    fn resync_and_irrelevant_updates_enqueue_nothing() {
        let p = pod("1", json!({"app": "web"}), true, "");
        assert!(keys_for_pod(&services(), Some(&p), Some(&p)).is_empty());
        let p2 = pod("2", json!({"app": "web"}), true, "");
        assert!(
            keys_for_pod(&services(), Some(&p), Some(&p2)).is_empty(),
            "nothing relevant changed"
        );
    }

    #[test]
    fn readiness_change_enqueues_current_services() {
        let a = pod("1", json!({"app": "web"}), true, "");
        let b = pod("2", json!({"app": "web"}), false, "");
        let mut keys = keys_for_pod(&services(), Some(&a), Some(&b));
        keys.sort();
        assert_eq!(keys, ["ns/all", "ns/web"]);
    }

    #[test]
    fn label_change_enqueues_the_symmetric_difference_or_the_union() {
        let a = pod("1", json!({"app": "web"}), true, "");
        let b = pod("2", json!({"app": "db"}), true, "");
        assert_eq!(
            keys_for_pod(&services(), Some(&a), Some(&b)),
            ["ns/db", "ns/web"]
        );
        let c = pod("3", json!({"app": "db"}), false, "");
        assert_eq!(
            keys_for_pod(&services(), Some(&a), Some(&c)),
            ["ns/all", "ns/db", "ns/web"]
        );
        // Hostname alone changes no membership: nothing (spec §2.6 consequence).
        let d = pod("4", json!({"app": "web"}), true, "h");
        assert!(keys_for_pod(&services(), Some(&a), Some(&d)).is_empty());
    }

    #[test]
    fn d14_an_annotation_change_enqueues_the_selecting_services() {
        let plain = pod("1", json!({"app": "web"}), true, "");
        let p: core::Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "web"},
                         "annotations": {"weir.dev/drain": "true"}, "resourceVersion": "2"},
            "spec": {"containers": []},
            "status": {"podIPs": [{"ip": "10.0.0.1"}], "conditions": [{"type": "Ready", "status": "True"}]}
        }))
        .unwrap();
        let annotated = CachedPod::from_pod(&p);
        let mut keys = keys_for_pod(&services(), Some(&plain), Some(&annotated));
        keys.sort();
        assert_eq!(keys, ["ns/all", "ns/web"]);
        keys = keys_for_pod(&services(), Some(&annotated), Some(&plain));
        keys.sort();
        assert_eq!(keys, ["ns/all", "ns/web"], "and so does removing one");
    }

    fn ab_services() -> Vec<Arc<model::Service>> {
        vec![
            service("a", Some(json!({"app": "a"}))),
            service("b", Some(json!({"app": "b"}))),
        ]
    }

    #[test]
    fn s92_a_resync_with_the_same_resource_version_enqueues_nothing() {
        let p = pod("7", json!({"app": "a"}), true, "");
        let flipped = pod("7", json!({"app": "b"}), false, "h");
        assert_eq!(flipped.resource_version(), p.resource_version());
        assert!(keys_for_pod(&ab_services(), Some(&p), Some(&p)).is_empty());
        // Even with different content: the same resourceVersion is a resync (R1.13c).
        assert!(keys_for_pod(&ab_services(), Some(&p), Some(&flipped)).is_empty());
    }

    #[test]
    fn s93_a_pod_moving_from_app_a_to_app_b_enqueues_both_services() {
        let old = pod("1", json!({"app": "a"}), true, "");
        let new = pod("2", json!({"app": "b"}), true, "");
        assert_eq!(
            keys_for_pod(&ab_services(), Some(&old), Some(&new)),
            ["ns/a", "ns/b"]
        );
    }

    #[test]
    fn s94_an_unrelated_label_enqueues_nothing_unless_readiness_flips_too() {
        let old = pod("1", json!({"app": "a"}), true, "");
        let labelled = pod("2", json!({"app": "a", "x": "y"}), true, "");
        assert!(
            keys_for_pod(&ab_services(), Some(&old), Some(&labelled)).is_empty(),
            "empty symmetric difference"
        );
        let labelled_unready = pod("3", json!({"app": "a", "x": "y"}), false, "");
        assert_eq!(
            keys_for_pod(&ab_services(), Some(&old), Some(&labelled_unready)),
            ["ns/a"],
            "union"
        );
    }

    #[test]
    fn s95_a_readiness_flip_enqueues_selecting_services_empty_selector_yes_nil_no() {
        let services = vec![
            service("a", Some(json!({"app": "a"}))),
            service("b", Some(json!({"app": "b"}))),
            service("everything", Some(json!({}))),
            service("nil", None),
        ];
        let ready = pod("1", json!({"app": "a"}), true, "");
        let unready = pod("2", json!({"app": "a"}), false, "");
        let mut keys = keys_for_pod(&services, Some(&ready), Some(&unready));
        keys.sort();
        assert_eq!(keys, ["ns/a", "ns/everything"]);
        let mut keys = keys_for_pod(&services, Some(&unready), Some(&ready));
        keys.sort();
        assert_eq!(keys, ["ns/a", "ns/everything"]);
    }

    #[test]
    fn s96_a_phase_change_of_a_pod_already_not_ready_enqueues_nothing() {
        let phase = |rv: &str, phase: &str| {
            let p: core::Pod = serde_json::from_value(json!({
                "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "a"}, "resourceVersion": rv},
                "spec": {"containers": []},
                "status": {"phase": phase, "podIPs": [{"ip": "10.0.0.1"}],
                           "conditions": [{"type": "Ready", "status": "False"}]}
            }))
            .unwrap();
            CachedPod::from_pod(&p)
        };
        let (running, failed) = (phase("1", "Running"), phase("2", "Failed"));
        assert_ne!(running.view().phase, failed.view().phase);
        assert_eq!(pod_change(&running, &failed), None);
        assert!(keys_for_pod(&ab_services(), Some(&running), Some(&failed)).is_empty());
    }

    #[test]
    fn slice_events_follow_upstream() {
        use crate::controller::store::slices::tests::slice;
        use crate::model::labels::MANAGED_BY;
        // S76.
        let t = SliceTracker::default();
        let ours = slice("a", "foo", MANAGED_BY, 1);
        assert_eq!(keys_for_slice(&t, None, Some(&ours)), ["ns/foo"]);
        assert!(
            keys_for_slice(&t, None, Some(&slice("x", "foo", "other", 1))).is_empty(),
            "foreign slices are not ours to sync for"
        );
        t.written("ns/foo", &ours);
        assert!(
            keys_for_slice(&t, None, Some(&ours)).is_empty(),
            "our own write"
        );
        let edited = slice("a", "foo", MANAGED_BY, 2);
        assert_eq!(keys_for_slice(&t, Some(&ours), Some(&edited)), ["ns/foo"]);
        let taken = slice("a", "foo", "other", 1);
        assert_eq!(keys_for_slice(&t, Some(&ours), Some(&taken)), ["ns/foo"]);
        assert!(
            !t.is_stale("ns/foo", []),
            "a slice handed to another manager is no longer expected (unlike upstream's R1.32)"
        );
        t.written("ns/foo", &ours);
        let moved = slice("a", "bar", MANAGED_BY, 1);
        assert_eq!(
            keys_for_slice(&t, Some(&ours), Some(&moved)),
            ["ns/bar", "ns/foo"]
        );
        t.written("ns/foo", &ours);
        assert_eq!(
            keys_for_slice(&t, Some(&ours), None),
            ["ns/foo"],
            "unexpected delete"
        );
        assert!(
            keys_for_slice(&t, Some(&slice("u", "foo", MANAGED_BY, 1)), None).is_empty(),
            "untracked delete"
        );
        let b = slice("b", "foo", MANAGED_BY, 1);
        t.written("ns/foo", &b);
        t.deleted("ns/foo", "b");
        assert!(
            keys_for_slice(&t, Some(&b), None).is_empty(),
            "our own delete"
        );
    }
}
