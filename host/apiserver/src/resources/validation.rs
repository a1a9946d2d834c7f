//! Validation: the field rules kube-apiserver enforces with `422 Invalid` that clients tend
//! to hit: names, label keys and values (every kind), pods' containers and IPs, service
//! ports, and the addresses, ports and size of Endpoints and EndpointSlices. Messages follow
//! kube-apiserver's, so clients that show or match them see what a cluster says.

use serde_json::Value;
use weir_selector::{is_dns_subdomain, is_label_name};

use super::defs::{ENDPOINTS, ENDPOINTSLICES, NAMESPACES, PODS, SERVICES};
use crate::util;

/// What a label value's or key name's syntax is, as kube-apiserver's messages state it.
const LABEL_SYNTAX: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// Most endpoints an EndpointSlice may hold.
pub(crate) const MAX_SLICE_ENDPOINTS: usize = 1000;
/// Most ports an EndpointSlice may hold.
pub(crate) const MAX_SLICE_PORTS: usize = 100;

/// Causes for `metadata.labels`: every key a qualified name (`[prefix/]name`, the prefix a DNS
/// subdomain of at most 253 characters, the name at most 63), every value empty or a label
/// name of at most 63 characters.
pub(crate) fn label_causes(v: &Value, causes: &mut Vec<(String, String)>) {
    let Some(labels) = v["metadata"]["labels"].as_object() else {
        return;
    };
    let field = "metadata.labels";
    for (key, value) in labels {
        for problem in key_problems(key) {
            causes.push((field.into(), format!("Invalid value: {key:?}: {problem}")));
        }
        let value = value.as_str().unwrap_or_default();
        if value.len() > 63 {
            causes.push((
                field.into(),
                format!("Invalid value: {value:?}: must be no more than 63 characters"),
            ));
        } else if !value.is_empty() && !is_label_name(value) {
            causes.push((
                field.into(),
                format!(
                    "Invalid value: {value:?}: a valid label must be an empty string or {LABEL_SYNTAX}"
                ),
            ));
        }
    }
}

/// What is wrong with a label key, one message per problem (none: it is a qualified name).
fn key_problems(key: &str) -> Vec<String> {
    let parts: Vec<&str> = key.split('/').collect();
    let (prefix, name) = match parts.as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return vec![format!(
                "a qualified name {LABEL_SYNTAX}, with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    let mut problems = Vec::new();
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            problems.push("prefix part must be non-empty".to_string());
        } else if !is_dns_subdomain(prefix) {
            problems.push("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character".to_string());
        }
    }
    if name.is_empty() {
        problems.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        problems.push("name part must be no more than 63 characters".to_string());
    } else if !is_label_name(name) {
        problems.push(format!("name part {LABEL_SYNTAX}"));
    }
    problems
}

/// Causes for an EndpointSlice that holds more endpoints or ports than allowed.
pub(crate) fn slice_size_causes(v: &Value, causes: &mut Vec<(String, String)>) {
    for (field, max) in [
        ("endpoints", MAX_SLICE_ENDPOINTS),
        ("ports", MAX_SLICE_PORTS),
    ] {
        let n = v[field].as_array().map_or(0, Vec::len);
        if n > max {
            causes.push((
                field.into(),
                format!("Too many: {n}: must have at most {max} items"),
            ));
        }
    }
}

/// Causes for a pod's IPs (`status.podIPs`, `status.hostIPs`, or the single `podIP` and
/// `hostIP` that stand for their first entry): each must parse as an IP address.
pub(crate) fn pod_ip_causes(v: &Value, causes: &mut Vec<(String, String)>) {
    let status = &v["status"];
    for (list, single) in [("podIPs", "podIP"), ("hostIPs", "hostIP")] {
        let ips: Vec<&str> = match status[list].as_array() {
            Some(entries) => entries
                .iter()
                .map(|e| e["ip"].as_str().unwrap_or_default())
                .collect(),
            None => status[single].as_str().into_iter().collect(),
        };
        for (i, ip) in ips.into_iter().enumerate() {
            if ip.parse::<std::net::IpAddr>().is_err() {
                causes.push((
                    format!("status.{list}[{i}].ip"),
                    format!("Invalid value: {ip:?}: must be a valid IP address"),
                ));
            }
        }
    }
}

/// Validation kube-apiserver does that clients tend to hit. Returns (field, message) causes.
pub(crate) fn validate(r: usize, v: &Value) -> Vec<(String, String)> {
    let mut causes = Vec::new();
    name_causes(r, v, &mut causes);
    label_causes(v, &mut causes);
    match r {
        PODS => pod_causes(v, &mut causes),
        SERVICES => service_causes(v, &mut causes),
        ENDPOINTS => endpoints_causes(v, &mut causes),
        ENDPOINTSLICES => slice_causes(v, &mut causes),
        _ => {}
    }
    causes
}

/// `metadata.name`: required, and a DNS label or subdomain by kind.
fn name_causes(r: usize, v: &Value, causes: &mut Vec<(String, String)>) {
    let name = v["metadata"]["name"].as_str().unwrap_or("");
    let name_ok = match r {
        NAMESPACES => util::is_dns_label(name),
        SERVICES => util::is_dns1035_label(name),
        _ => util::is_dns_subdomain(name),
    };
    if name.is_empty() {
        causes.push((
            "metadata.name".into(),
            "Required value: name or generateName is required".into(),
        ));
    } else if !name_ok {
        causes.push((
            "metadata.name".into(),
            format!(
                "Invalid value: \"{name}\": a lowercase RFC 1123 {} must consist of lower case alphanumeric characters, '-' or '.'",
                if r == NAMESPACES || r == SERVICES { "label" } else { "subdomain" }
            ),
        ));
    }
}

fn pod_causes(v: &Value, causes: &mut Vec<(String, String)>) {
    pod_ip_causes(v, causes);
    let cs = v["spec"]["containers"].as_array();
    if cs.is_none_or(Vec::is_empty) {
        causes.push(("spec.containers".into(), "Required value".into()));
    }
    for (i, c) in cs.into_iter().flatten().enumerate() {
        if c["name"].as_str().is_none_or(str::is_empty) {
            causes.push((
                format!("spec.containers[{i}].name"),
                "Required value".into(),
            ));
        }
        if c["image"].as_str().is_none_or(str::is_empty) {
            causes.push((
                format!("spec.containers[{i}].image"),
                "Required value".into(),
            ));
        }
    }
}

fn service_causes(v: &Value, causes: &mut Vec<(String, String)>) {
    let spec = &v["spec"];
    let ty = spec["type"].as_str().unwrap_or("ClusterIP");
    let headless = spec["clusterIP"].as_str() == Some("None");
    let ports = spec["ports"].as_array().map(Vec::len).unwrap_or(0);
    if ty != "ExternalName" && !headless && ports == 0 {
        causes.push(("spec.ports".into(), "Required value".into()));
    }
    if ports > 1 {
        for (i, p) in spec["ports"].as_array().into_iter().flatten().enumerate() {
            if p["name"].as_str().is_none_or(str::is_empty) {
                causes.push((format!("spec.ports[{i}].name"), "Required value".into()));
            }
        }
    }
    for (i, p) in spec["ports"].as_array().into_iter().flatten().enumerate() {
        let port = p["port"].as_i64().unwrap_or(0);
        if !(1..=65535).contains(&port) {
            causes.push((
                format!("spec.ports[{i}].port"),
                format!("Invalid value: {port}: must be between 1 and 65535, inclusive"),
            ));
        }
    }
}

fn endpoints_causes(v: &Value, causes: &mut Vec<(String, String)>) {
    for (i, subset) in v["subsets"].as_array().into_iter().flatten().enumerate() {
        for list in ["addresses", "notReadyAddresses"] {
            for (j, a) in subset[list].as_array().into_iter().flatten().enumerate() {
                let field = format!("subsets[{i}].{list}[{j}].ip");
                if let Some(problem) = endpoint_ip_problem(&a["ip"], None) {
                    causes.push((field, problem));
                }
            }
        }
        let ports = subset["ports"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        for (j, p) in ports.iter().enumerate() {
            endpoint_port_causes(&format!("subsets[{i}].ports[{j}]"), p, true, causes);
        }
    }
}

fn slice_causes(v: &Value, causes: &mut Vec<(String, String)>) {
    slice_size_causes(v, causes);
    let family = match v["addressType"].as_str() {
        Some("IPv4") => Some(false),
        Some("IPv6") => Some(true),
        Some("FQDN") => None, // addresses are not IPs
        None | Some("") => {
            causes.push(("addressType".into(), "Required value".into()));
            None
        }
        Some(other) => {
            causes.push((
                "addressType".into(),
                format!(
                    "Unsupported value: \"{other}\": supported values: \"FQDN\", \"IPv4\", \"IPv6\""
                ),
            ));
            None
        }
    };
    for (i, e) in v["endpoints"].as_array().into_iter().flatten().enumerate() {
        let addresses = e["addresses"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        if addresses.is_empty() {
            causes.push((
                format!("endpoints[{i}].addresses"),
                "Required value: must contain at least 1 address".into(),
            ));
        }
        for (j, a) in addresses.iter().enumerate() {
            if let Some(v6) = family
                && let Some(problem) = endpoint_ip_problem(a, Some(v6))
            {
                causes.push((format!("endpoints[{i}].addresses[{j}]"), problem));
            }
        }
    }
    for (i, p) in v["ports"].as_array().into_iter().flatten().enumerate() {
        endpoint_port_causes(&format!("ports[{i}]"), p, false, causes);
    }
}

/// Why `ip` may not be an endpoint address, as kube-apiserver checks Endpoints and
/// EndpointSlices: it must parse (in the slice's family when `v6` is given) and must not be
/// unspecified, loopback, link-local or link-local multicast (IPv4-mapped forms included).
fn endpoint_ip_problem(ip: &Value, v6: Option<bool>) -> Option<String> {
    use std::net::IpAddr;
    let text = ip.as_str().unwrap_or("");
    let Ok(parsed) = text.parse::<IpAddr>() else {
        return Some(format!(
            "Invalid value: \"{text}\": must be a valid IP address"
        ));
    };
    let canonical = match parsed {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(parsed, IpAddr::V4),
        IpAddr::V4(_) => parsed,
    };
    if let Some(v6) = v6
        && matches!(parsed, IpAddr::V6(_)) != v6
    {
        let family = if v6 { "IPv6" } else { "IPv4" };
        return Some(format!(
            "Invalid value: \"{text}\": must be an {family} address"
        ));
    }
    let special = match canonical {
        IpAddr::V4(a) => {
            a.is_unspecified()
                || a.is_loopback()
                || a.is_link_local()
                || (a.octets()[0] == 224 && a.octets()[1] == 0 && a.octets()[2] == 0)
        }
        IpAddr::V6(a) => {
            a.is_unspecified()
                || a.is_loopback()
                || a.is_unicast_link_local()
                || (a.segments()[0] & 0xff0f) == 0xff02
        }
    };
    special.then(|| {
        format!(
            "Invalid value: \"{text}\": may not be unspecified, loopback, link-local or link-local multicast"
        )
    })
}

/// Causes for one Endpoints (`required_port`) or EndpointSlice port at `field`.
fn endpoint_port_causes(
    field: &str,
    p: &Value,
    required_port: bool,
    causes: &mut Vec<(String, String)>,
) {
    match &p["port"] {
        Value::Null if !required_port => {}
        port => {
            let n = port.as_i64().unwrap_or(0);
            if !(1..=65535).contains(&n) {
                causes.push((
                    format!("{field}.port"),
                    format!("Invalid value: {n}: must be between 1 and 65535, inclusive"),
                ));
            }
        }
    }
    if let Some(proto) = p["protocol"].as_str()
        && !matches!(proto, "TCP" | "UDP" | "SCTP")
    {
        causes.push((
            format!("{field}.protocol"),
            format!("Unsupported value: \"{proto}\": supported values: \"SCTP\", \"TCP\", \"UDP\""),
        ));
    }
    if let Some(name) = p["name"].as_str()
        && !name.is_empty()
        && !util::is_dns_label(name)
    {
        causes.push((
            format!("{field}.name"),
            format!("Invalid value: \"{name}\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(l: Value) -> Vec<(String, String)> {
        let mut causes = Vec::new();
        label_causes(&json!({"metadata": {"labels": l}}), &mut causes);
        causes
    }

    #[test]
    fn label_keys_are_qualified_names() {
        for good in [
            "app",
            "app.kubernetes.io/name",
            "A_b-c.d",
            &"a".repeat(63),
            &format!("{}/x", "a".repeat(253)),
        ] {
            assert_eq!(labels(json!({good: "v"})), [], "{good}");
        }
        let bad = [
            ("bad key!", "name part must consist of"),
            (
                &"a".repeat(64),
                "name part must be no more than 63 characters",
            ),
            (
                "Example.com/x",
                "prefix part a lowercase RFC 1123 subdomain",
            ),
            ("/x", "prefix part must be non-empty"),
            ("a/", "name part must be non-empty"),
            ("a/b/c", "a qualified name must consist of"),
            ("-a", "name part must consist of"),
        ];
        for (key, message) in bad {
            let causes = labels(json!({key: "v"}));
            assert_eq!(causes.len(), 1, "{key}: {causes:?}");
            assert_eq!(causes[0].0, "metadata.labels");
            assert!(causes[0].1.contains(message), "{key}: {causes:?}");
        }
    }

    #[test]
    fn label_values_are_empty_or_label_names_of_63_characters() {
        for good in ["", "v", "My_value-1.2", &"v".repeat(63)] {
            assert_eq!(labels(json!({"k": good})), [], "{good:?}");
        }
        let long = labels(json!({"k": "v".repeat(64)}));
        assert!(long[0].1.ends_with("must be no more than 63 characters"));
        for bad in ["a b", "-a", "a-", "ü"] {
            let causes = labels(json!({"k": bad}));
            assert!(causes[0].1.contains("a valid label must be"), "{bad:?}");
        }
    }

    #[test]
    fn slices_hold_at_most_1000_endpoints_and_100_ports() {
        let slice = |endpoints: usize, ports: usize| {
            let mut causes = Vec::new();
            slice_size_causes(
                &json!({"endpoints": vec![json!({"addresses": ["10.0.0.1"]}); endpoints],
                        "ports": vec![json!({"port": 80}); ports]}),
                &mut causes,
            );
            causes
        };
        assert_eq!(slice(1000, 100), []);
        assert_eq!(
            slice(1001, 101),
            [
                (
                    "endpoints".to_string(),
                    "Too many: 1001: must have at most 1000 items".to_string()
                ),
                (
                    "ports".to_string(),
                    "Too many: 101: must have at most 100 items".to_string()
                )
            ]
        );
    }

    #[test]
    fn pod_ips_must_parse() {
        let causes = |status: Value| {
            let mut c = Vec::new();
            pod_ip_causes(&json!({ "status": status }), &mut c);
            c
        };
        assert_eq!(
            causes(json!({"podIP": "10.0.0.1", "hostIPs": [{"ip": "fd00::1"}]})),
            []
        );
        assert_eq!(
            causes(json!({"podIP": "10.0.0.12345"})),
            [(
                "status.podIPs[0].ip".to_string(),
                "Invalid value: \"10.0.0.12345\": must be a valid IP address".to_string()
            )]
        );
        let two =
            causes(json!({"podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::zz"}], "hostIP": "x"}));
        assert_eq!(two.len(), 2);
        assert_eq!(two[0].0, "status.podIPs[1].ip");
        assert_eq!(two[1].0, "status.hostIPs[0].ip");
    }
}
