//! A pod as a policy's hooks see it: only the fields its `reads` names (`wit/hooks/v0.2`).
//! Every field crosses the component boundary as a copy and, in Python or JavaScript, becomes
//! an object field by field, so a field nobody reads is not sent.

use weir_policy::types::{KeyValue, Pod};

use crate::hooks::{PodFields, Reads};

/// What a policy that says nothing about its reads gets: every field of every pod, and each
/// candidate's ports and address.
#[cfg(test)]
pub(crate) fn everything() -> Reads {
    Reads {
        labels: None,
        annotations: None,
        fields: PodFields::all(),
        ports: true,
        addresses: true,
    }
}

/// `pod` with its `namespace` and `name`, and of its other fields those `reads` names; the
/// rest empty.
pub(crate) fn trimmed(pod: &Pod, reads: &Reads) -> Pod {
    let fields = reads.fields;
    let has = |field: PodFields| fields.contains(field);
    Pod {
        namespace: pod.namespace.clone(),
        name: pod.name.clone(),
        uid: if has(PodFields::UID) {
            pod.uid.clone()
        } else {
            String::new()
        },
        labels: entries(&pod.labels, reads.labels.as_deref()),
        annotations: entries(&pod.annotations, reads.annotations.as_deref()),
        node_name: if has(PodFields::NODE_NAME) {
            pod.node_name.clone()
        } else {
            String::new()
        },
        hostname: if has(PodFields::HOSTNAME) {
            pod.hostname.clone()
        } else {
            String::new()
        },
        subdomain: if has(PodFields::SUBDOMAIN) {
            pod.subdomain.clone()
        } else {
            String::new()
        },
        pod_ip: if has(PodFields::POD_IPS) {
            pod.pod_ip.clone()
        } else {
            None
        },
        pod_ips: if has(PodFields::POD_IPS) {
            pod.pod_ips.clone()
        } else {
            Vec::new()
        },
        phase: if has(PodFields::PHASE) {
            pod.phase.clone()
        } else {
            String::new()
        },
        conditions: if has(PodFields::CONDITIONS) {
            pod.conditions.clone()
        } else {
            Vec::new()
        },
        terminating: has(PodFields::TERMINATING) && pod.terminating,
        node_exists: has(PodFields::NODE_EXISTS) && pod.node_exists,
        zone: if has(PodFields::ZONE) {
            pod.zone.clone()
        } else {
            None
        },
        container_ports: if has(PodFields::CONTAINER_PORTS) {
            pod.container_ports.clone()
        } else {
            Vec::new()
        },
    }
}

/// The entries of `all` whose key is in `keys`, in their order; all of them for `None`.
fn entries(all: &[KeyValue], keys: Option<&[String]>) -> Vec<KeyValue> {
    match keys {
        None => all.to_vec(),
        Some(keys) => all
            .iter()
            .filter(|kv| keys.contains(&kv.key))
            .cloned()
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_policy::testing::{kv, pod};

    fn full() -> Pod {
        let mut p = pod("a", "10.0.0.1", true);
        p.labels.push(kv("tier", "web"));
        p.annotations = vec![kv("weir.dev/drain", "true"), kv("note", "x")];
        p.hostname = "h".into();
        p.subdomain = "s".into();
        p.terminating = true;
        p.zone = Some("zone-a".into());
        p
    }

    #[test]
    fn everything_keeps_the_pod_as_it_is() {
        assert_eq!(trimmed(&full(), &everything()), full());
    }

    #[test]
    fn only_the_named_keys_and_fields_cross() {
        let reads = Reads {
            labels: Some(vec![]),
            annotations: Some(vec!["weir.dev/drain".into(), "absent".into()]),
            fields: PodFields::NODE_NAME | PodFields::ZONE,
            ports: false,
            addresses: false,
        };
        let got = trimmed(&full(), &reads);
        assert_eq!((got.namespace.as_str(), got.name.as_str()), ("ns", "a"));
        assert_eq!(got.annotations, [kv("weir.dev/drain", "true")]);
        assert!(got.labels.is_empty());
        assert_eq!(got.node_name, "node-1");
        assert_eq!(got.zone.as_deref(), Some("zone-a"));
        assert_eq!(got.uid, "");
        assert_eq!((got.pod_ip, got.pod_ips.len()), (None, 0));
        assert_eq!((got.phase.as_str(), got.conditions.len()), ("", 0));
        assert_eq!((got.hostname.as_str(), got.subdomain.as_str()), ("", ""));
        assert!(!got.terminating && !got.node_exists);
    }

    #[test]
    fn each_flag_brings_its_field() {
        let p = full();
        let only = |fields| Reads {
            fields,
            ..everything()
        };
        assert_eq!(trimmed(&p, &only(PodFields::UID)).uid, p.uid);
        assert_eq!(trimmed(&p, &only(PodFields::HOSTNAME)).hostname, "h");
        assert_eq!(trimmed(&p, &only(PodFields::SUBDOMAIN)).subdomain, "s");
        assert_eq!(trimmed(&p, &only(PodFields::POD_IPS)).pod_ips, p.pod_ips);
        assert_eq!(trimmed(&p, &only(PodFields::PHASE)).phase, "Running");
        assert_eq!(
            trimmed(&p, &only(PodFields::CONDITIONS)).conditions,
            p.conditions
        );
        assert!(trimmed(&p, &only(PodFields::TERMINATING)).terminating);
        assert!(trimmed(&p, &only(PodFields::NODE_EXISTS)).node_exists);
        assert_eq!(
            trimmed(&p, &only(PodFields::empty())).labels,
            p.labels,
            "labels: None is every label"
        );
    }
}
