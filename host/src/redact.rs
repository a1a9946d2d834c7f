//! Redaction of case documents (`weir snapshot --redact`): names and IP addresses are
//! replaced, the same original by the same replacement across every document of one
//! snapshot, so each case still selects the same pods, slices still name their Service and
//! pods, and targetRefs still resolve.
//!
//! - Names (object names, namespaces, uids, generateName, node names, hostnames, subdomains,
//!   externalName, and the values of labels, annotations and selectors) become `r0001`,
//!   `r0002`, ... Replacements are given in the sorted order of the originals, so every order
//!   a sync depends on (pods by name or uid) stays the same. Label and annotation keys stay:
//!   they are schema, and policies read them. Values under Kubernetes' own keys (prefixes
//!   ending in `kubernetes.io` or `k8s.io`) stay too, since they drive behaviour (zone,
//!   topology mode, managed-by), except those that hold a name (the Service name of a slice,
//!   a Node's hostname, a namespace's name).
//! - IP addresses stay valid and of the same family: IPv4 become addresses counted up from
//!   198.18.0.1 (the benchmarking range), IPv6 from 2001:db8::1 (the documentation prefix),
//!   again in the sorted order of the originals, so truncation by address order picks the
//!   same endpoints. No replacement equals an original address.
//! - The policy `config` is kept as given.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde_json::Value;

/// Well-known keys whose value is a name, redacted as one.
const NAME_VALUED_KEYS: [&str; 3] = [
    "kubernetes.io/service-name",
    "kubernetes.io/hostname",
    "kubernetes.io/metadata.name",
];

/// Fields, anywhere, whose value is a name.
const NAME_FIELDS: [&str; 4] = ["nodeName", "hostname", "subdomain", "externalName"];

/// What a walk does with a string it meets.
enum Kind {
    /// A name, or a value standing for one.
    Name,
    /// `generateName`: a name and a trailing `-`.
    GenerateName,
    /// Anything else: replaced only when it is an IP address (or `IP/prefix`).
    Other,
}

/// Whether a label or annotation key is Kubernetes' own, its value kept.
fn is_well_known(key: &str) -> bool {
    key.split_once('/').is_some_and(|(prefix, _)| {
        prefix == "kubernetes.io"
            || prefix == "k8s.io"
            || prefix.ends_with(".kubernetes.io")
            || prefix.ends_with(".k8s.io")
    })
}

/// How the string at `path` (object keys from the document's root; array levels left out)
/// is treated.
fn kind(path: &[&str]) -> Kind {
    let n = path.len();
    let last = path.last().copied().unwrap_or_default();
    let parent = if n >= 2 { path[n - 2] } else { "" };
    match (parent, last) {
        ("metadata" | "targetRef", "name" | "namespace" | "uid") => Kind::Name,
        ("ownerReferences", "name" | "uid") => Kind::Name,
        // A slice named in a case's `expect`.
        ("slices", "name") => Kind::Name,
        (_, "generateName") => Kind::GenerateName,
        (_, field) if NAME_FIELDS.contains(&field) => Kind::Name,
        ("labels" | "annotations" | "selector", key) => {
            if !is_well_known(key) || NAME_VALUED_KEYS.contains(&key) {
                Kind::Name
            } else {
                Kind::Other
            }
        }
        _ => Kind::Other,
    }
}

/// The IP address of `text`, alone or before a `/prefix`.
fn ip_of(text: &str) -> Option<(IpAddr, &str)> {
    let (ip, rest) = match text.find('/') {
        Some(i) => text.split_at(i),
        None => (text, ""),
    };
    Some((ip.parse().ok()?, rest))
}

/// Consistent replacements for one snapshot: built from every document first, then applied.
#[derive(Debug, Default)]
pub struct Redactor {
    names: BTreeMap<String, String>,
    ips: BTreeMap<IpAddr, IpAddr>,
}

impl Redactor {
    /// The replacements for everything redactable in `documents`.
    pub fn for_documents(documents: &[Value]) -> Redactor {
        let mut names = BTreeSet::new();
        let mut ips = BTreeSet::new();
        for document in documents {
            if let Some((ns, name)) = document["key"].as_str().and_then(|k| k.split_once('/')) {
                names.insert(ns.to_string());
                names.insert(name.to_string());
            }
            collect(document, &mut Vec::new(), &mut names, &mut ips);
        }
        let width = names.len().to_string().len().max(4);
        let names = names
            .into_iter()
            .enumerate()
            .map(|(i, name)| (name, format!("r{:0width$}", i + 1)))
            .collect();
        Redactor {
            names,
            ips: replacement_ips(ips),
        }
    }

    /// `document` with every name and address replaced.
    pub fn apply(&self, document: &Value) -> Value {
        let mut out = document.clone();
        self.rewrite(&mut out, &mut Vec::new());
        if let Some(key) = document["key"].as_str() {
            let key = match key.split_once('/') {
                Some((ns, name)) => format!("{}/{}", self.name(ns), self.name(name)),
                None => self.name(key),
            };
            if out.get("name").is_some() {
                out["name"] = Value::String(format!("{key}, as stored, redacted"));
            }
            out["key"] = Value::String(key);
        }
        out
    }

    fn name(&self, original: &str) -> String {
        self.names
            .get(original)
            .cloned()
            .unwrap_or_else(|| original.to_string())
    }

    fn replace(&self, text: &str, kind: Kind) -> String {
        match kind {
            Kind::Name if !text.is_empty() => self.name(text),
            Kind::GenerateName => match text.strip_suffix('-') {
                Some(base) => format!("{}-", self.name(base)),
                None => self.name(text),
            },
            _ => match ip_of(text) {
                Some((ip, rest)) => format!("{}{rest}", self.ips.get(&ip).unwrap_or(&ip)),
                None => text.to_string(),
            },
        }
    }

    fn rewrite(&self, value: &mut Value, path: &mut Vec<String>) {
        match value {
            Value::String(text) => {
                let keys: Vec<&str> = path.iter().map(String::as_str).collect();
                *text = self.replace(text, kind(&keys));
            }
            Value::Array(items) => {
                for item in items {
                    self.rewrite(item, path);
                }
            }
            Value::Object(map) => {
                for (key, item) in map.iter_mut() {
                    path.push(key.clone());
                    self.rewrite(item, path);
                    path.pop();
                }
            }
            _ => {}
        }
    }
}

fn collect(
    value: &Value,
    path: &mut Vec<String>,
    names: &mut BTreeSet<String>,
    ips: &mut BTreeSet<IpAddr>,
) {
    match value {
        Value::String(text) => {
            let keys: Vec<&str> = path.iter().map(String::as_str).collect();
            match kind(&keys) {
                Kind::Name if !text.is_empty() => {
                    names.insert(text.clone());
                }
                Kind::GenerateName => {
                    names.insert(text.strip_suffix('-').unwrap_or(text.as_str()).to_string());
                }
                _ => {
                    if let Some((ip, _)) = ip_of(text) {
                        ips.insert(ip);
                    }
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                collect(item, path, names, ips);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                path.push(key.clone());
                collect(item, path, names, ips);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Replacement addresses for `originals`, counted up per family in their sorted order and
/// never equal to an original.
fn replacement_ips(originals: BTreeSet<IpAddr>) -> BTreeMap<IpAddr, IpAddr> {
    let taken: HashSet<IpAddr> = originals.iter().copied().collect();
    let mut next_v4 = u32::from(Ipv4Addr::new(198, 18, 0, 0));
    let mut next_v6 = u128::from(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0));
    let mut out = BTreeMap::new();
    for ip in originals {
        let replacement = loop {
            let candidate = match ip {
                IpAddr::V4(_) => {
                    next_v4 += 1;
                    IpAddr::V4(Ipv4Addr::from(next_v4))
                }
                IpAddr::V6(_) => {
                    next_v6 += 1;
                    IpAddr::V6(Ipv6Addr::from(next_v6))
                }
            };
            if !taken.contains(&candidate) {
                break candidate;
            }
        };
        out.insert(ip, replacement);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn case(ns: &str, pod_ip: &str, uid: &str) -> Value {
        json!({
            "name": format!("{ns}/web, as stored"),
            "key": format!("{ns}/web"),
            "service": {"metadata": {"name": "web", "namespace": ns, "uid": "svc-uid",
                    "annotations": {"service.kubernetes.io/topology-mode": "Auto"}},
                "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.10",
                    "ports": [{"name": "http", "port": 80}]}},
            "pods": [{"metadata": {"name": "web-0", "namespace": ns, "uid": uid,
                    "labels": {"app": "web"}},
                "spec": {"nodeName": "node-a", "containers": [{"name": "c"}]},
                "status": {"podIP": pod_ip, "podIPs": [{"ip": pod_ip}]}}],
            "endpointSlices": [{"metadata": {"name": "web-x", "generateName": "web-",
                    "labels": {"kubernetes.io/service-name": "web",
                        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": [pod_ip], "nodeName": "node-a", "zone": "zone-a",
                    "targetRef": {"kind": "Pod", "name": "web-0", "namespace": ns, "uid": uid}}]}],
            "expect": {"endpointSlices": {"slices": [{"name": "web-x", "addressType": "IPv4"}]}},
        })
    }

    #[test]
    fn names_and_addresses_are_replaced_consistently_across_documents() {
        let docs = [
            case("shop", "10.1.0.5", "uid-1"),
            case("bank", "fd00::5", "uid-2"),
        ];
        let r = Redactor::for_documents(&docs);
        let out: Vec<Value> = docs.iter().map(|d| r.apply(d)).collect();
        let text = serde_json::to_string(&out).unwrap();
        for original in [
            "shop",
            "bank",
            "web",
            "uid-1",
            "uid-2",
            "node-a",
            "10.1.0.5",
            "fd00::5",
            "10.96.0.10",
        ] {
            assert!(
                !text.contains(&format!("\"{original}")),
                "{original} left in {text}"
            );
        }
        let a = &out[0];
        // The selector still selects the pod, the slice still names the Service and the pod.
        assert_eq!(
            a["service"]["spec"]["selector"]["app"],
            a["pods"][0]["metadata"]["labels"]["app"]
        );
        let service = &a["service"]["metadata"]["name"];
        assert_eq!(
            &a["endpointSlices"][0]["metadata"]["labels"]["kubernetes.io/service-name"],
            service
        );
        assert_eq!(
            a["endpointSlices"][0]["metadata"]["generateName"],
            format!("{}-", service.as_str().unwrap())
        );
        assert_eq!(
            a["expect"]["endpointSlices"]["slices"][0]["name"],
            a["endpointSlices"][0]["metadata"]["name"],
            "the expected slice keeps naming the stored one"
        );
        let endpoint = &a["endpointSlices"][0]["endpoints"][0];
        assert_eq!(endpoint["addresses"][0], a["pods"][0]["status"]["podIP"]);
        assert_eq!(
            endpoint["targetRef"]["uid"],
            a["pods"][0]["metadata"]["uid"]
        );
        assert_eq!(endpoint["nodeName"], a["pods"][0]["spec"]["nodeName"]);
        // Kubernetes' own values, port and container names, and zones stay.
        assert_eq!(endpoint["zone"], "zone-a");
        assert_eq!(
            a["endpointSlices"][0]["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
            "endpointslice-controller.k8s.io"
        );
        assert_eq!(
            a["service"]["metadata"]["annotations"]["service.kubernetes.io/topology-mode"],
            "Auto"
        );
        assert_eq!(a["service"]["spec"]["ports"][0]["name"], "http");
        // The same name in both documents gets the same replacement; families stay.
        assert_eq!(
            out[0]["service"]["metadata"]["name"],
            out[1]["service"]["metadata"]["name"]
        );
        let v4: IpAddr = a["pods"][0]["status"]["podIP"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let v6: IpAddr = out[1]["pods"][0]["status"]["podIP"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(v4.is_ipv4() && v6.is_ipv6());
        assert!(out[0]["key"].as_str().unwrap().starts_with('r'));
    }

    #[test]
    fn replacements_keep_the_order_of_the_originals() {
        let originals: BTreeSet<IpAddr> = ["10.0.0.9", "10.0.0.10", "198.18.0.1", "10.0.1.0"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let map = replacement_ips(originals.clone());
        let replaced: Vec<IpAddr> = originals.iter().map(|ip| map[ip]).collect();
        let mut sorted = replaced.clone();
        sorted.sort();
        assert_eq!(replaced, sorted);
        assert!(replaced.iter().all(|ip| !originals.contains(ip)));
    }
}
