//! The pods of a sync as a policy's hooks see them: columns (`pods` of `wit/hooks/v0.2`),
//! filled only for the fields the policy reads. Every value crosses the component boundary as a
//! copy and, in Python or JavaScript, becomes an object field by field; a column nobody reads is
//! empty and costs nothing, and a pod is never a record of mostly empty fields.

use weir_policy::types::{KeyValue, Pod};

use crate::hooks::{PodFields, Pods, Reads};

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

/// Every field of the contract's Pod and the column of `wit/hooks` that carries it. Without
/// `..`: a field added to the contract fails to compile here until the hooks carry it (or say
/// why not).
const _: fn(&Pod) = |Pod {
                         namespace: _,       // the request's namespace: every pod shares it
                         name: _,            // names
                         uid: _,             // uids
                         labels: _,          // labels
                         annotations: _,     // annotations
                         node_name: _,       // node_names
                         hostname: _,        // hostnames
                         subdomain: _,       // subdomains
                         pod_ip: _,          // pod_ip
                         pod_ips: _,         // pod_ips
                         phase: _,           // phases
                         conditions: _,      // conditions
                         terminating: _,     // terminating
                         node_exists: _,     // node_exists
                         zone: _,            // zones
                         container_ports: _, // container_ports
                     }| {};

/// `pods` as columns: names, the labels and annotations `reads` names, and the columns of the
/// fields it names; the other columns empty.
pub(crate) fn columns(pods: &[Pod], reads: &Reads) -> Pods {
    let fields = reads.fields;
    // One column: `get` of every pod when the policy reads `field`, else nothing.
    fn column<T>(pods: &[Pod], read: bool, get: impl Fn(&Pod) -> T) -> Vec<T> {
        if read {
            pods.iter().map(get).collect()
        } else {
            Vec::new()
        }
    }
    let has = |field| fields.contains(field);
    Pods {
        names: pods.iter().map(|p| p.name.clone()).collect(),
        labels: entry_column(pods, reads.labels.as_deref(), |p| &p.labels),
        annotations: entry_column(pods, reads.annotations.as_deref(), |p| &p.annotations),
        uids: column(pods, has(PodFields::UID), |p| p.uid.clone()),
        node_names: column(pods, has(PodFields::NODE_NAME), |p| p.node_name.clone()),
        hostnames: column(pods, has(PodFields::HOSTNAME), |p| p.hostname.clone()),
        subdomains: column(pods, has(PodFields::SUBDOMAIN), |p| p.subdomain.clone()),
        pod_ip: column(pods, has(PodFields::POD_IPS), |p| p.pod_ip.clone()),
        pod_ips: column(pods, has(PodFields::POD_IPS), |p| p.pod_ips.clone()),
        phases: column(pods, has(PodFields::PHASE), |p| p.phase.clone()),
        conditions: column(pods, has(PodFields::CONDITIONS), |p| p.conditions.clone()),
        terminating: column(pods, has(PodFields::TERMINATING), |p| p.terminating),
        node_exists: column(pods, has(PodFields::NODE_EXISTS), |p| p.node_exists),
        zones: column(pods, has(PodFields::ZONE), |p| p.zone.clone()),
        container_ports: column(pods, has(PodFields::CONTAINER_PORTS), |p| {
            p.container_ports.clone()
        }),
    }
}

/// The labels or annotations (`of` a pod) whose keys are in `keys` (all for `None`), one list
/// per pod; no list at all when `keys` is empty, since no pod would have an entry.
fn entry_column(
    pods: &[Pod],
    keys: Option<&[String]>,
    of: impl Fn(&Pod) -> &[KeyValue],
) -> Vec<Vec<KeyValue>> {
    if keys.is_some_and(<[String]>::is_empty) {
        return Vec::new();
    }
    pods.iter().map(|p| entries(of(p), keys)).collect()
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

    fn full(name: &str) -> Pod {
        let mut p = pod(name, "10.0.0.1", true);
        p.labels.push(kv("tier", "web"));
        p.annotations = vec![kv("weir.dev/drain", "true"), kv("note", "x")];
        p.hostname = "h".into();
        p.subdomain = "s".into();
        p.terminating = true;
        p.zone = Some("zone-a".into());
        p
    }

    #[test]
    fn everything_fills_every_column_in_pod_order() {
        let pods = [full("a"), pod("b", "10.0.0.2", false)];
        let got = columns(&pods, &everything());
        assert_eq!(got.names, ["a", "b"]);
        assert_eq!(got.labels, [pods[0].labels.clone(), pods[1].labels.clone()]);
        assert_eq!(got.annotations[0], pods[0].annotations);
        assert_eq!(got.uids, ["a-uid", "b-uid"]);
        assert_eq!(got.node_names, ["node-1", "node-1"]);
        assert_eq!(got.hostnames, ["h", ""]);
        assert_eq!(got.subdomains, ["s", ""]);
        assert_eq!(got.pod_ip[1].as_deref(), Some("10.0.0.2"));
        assert_eq!(got.pod_ips[1], ["10.0.0.2"]);
        assert_eq!(got.phases, ["Running", "Running"]);
        assert_eq!(got.conditions[1], pods[1].conditions);
        assert_eq!(got.terminating, [true, false]);
        assert_eq!(got.node_exists, [true, true]);
        assert_eq!(got.zones, [Some("zone-a".to_string()), None]);
        assert_eq!(got.container_ports.len(), 2);
    }

    #[test]
    fn only_the_named_keys_and_columns_cross() {
        let reads = Reads {
            labels: Some(vec![]),
            annotations: Some(vec!["weir.dev/drain".into(), "absent".into()]),
            fields: PodFields::NODE_NAME,
            ports: false,
            addresses: false,
        };
        let got = columns(&[full("a"), pod("b", "10.0.0.2", true)], &reads);
        assert_eq!(got.names, ["a", "b"]);
        assert!(got.labels.is_empty(), "no label read, no label column");
        assert_eq!(
            got.annotations,
            [vec![kv("weir.dev/drain", "true")], vec![]]
        );
        assert_eq!(got.node_names, ["node-1", "node-1"]);
        assert!(got.uids.is_empty() && got.hostnames.is_empty() && got.subdomains.is_empty());
        assert!(got.pod_ip.is_empty() && got.pod_ips.is_empty() && got.phases.is_empty());
        assert!(got.conditions.is_empty() && got.terminating.is_empty());
        assert!(got.node_exists.is_empty() && got.zones.is_empty());
        assert!(got.container_ports.is_empty());
    }
}
