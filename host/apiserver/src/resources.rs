//! The served resource types: metadata for discovery, typed normalisation, defaulting,
//! validation and the server-side printing columns (`Table`).

use serde_json::{Map, Value, json};

use crate::util;

/// Static description of one served resource.
#[derive(Debug)]
pub(crate) struct ResourceDef {
    pub name: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    /// Has a `status` subresource (main-resource writes ignore status, `/status` writes ignore the rest).
    pub status_sub: bool,
    /// PUT of a missing object creates it (`AllowCreateOnUpdate`).
    pub create_on_update: bool,
    /// `metadata.generation` is maintained (bumped when anything outside metadata/status changes).
    pub generation: bool,
    pub categories: &'static [&'static str],
}

impl ResourceDef {
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
    pub(crate) fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }
}

pub(crate) const NAMESPACES: usize = 0;
pub(crate) const SERVICES: usize = 1;
pub(crate) const PODS: usize = 2;
pub(crate) const ENDPOINTS: usize = 3;
pub(crate) const EVENTS: usize = 4;
pub(crate) const LEASES: usize = 5;
pub(crate) const ENDPOINTSLICES: usize = 6;
pub(crate) const CONFIGMAPS: usize = 7;
pub(crate) const NODES: usize = 8;
/// `events.k8s.io/v1` Events (what kube's event `Recorder` writes).
pub(crate) const EVENTS_V1: usize = 9;

pub(crate) static RESOURCES: [ResourceDef; 10] = [
    ResourceDef {
        name: "namespaces",
        singular: "namespace",
        kind: "Namespace",
        group: "",
        version: "v1",
        namespaced: false,
        short_names: &["ns"],
        status_sub: true,
        create_on_update: false,
        generation: false,
        categories: &[],
    },
    ResourceDef {
        name: "services",
        singular: "service",
        kind: "Service",
        group: "",
        version: "v1",
        namespaced: true,
        short_names: &["svc"],
        status_sub: true,
        create_on_update: false,
        generation: false,
        categories: &["all"],
    },
    ResourceDef {
        name: "pods",
        singular: "pod",
        kind: "Pod",
        group: "",
        version: "v1",
        namespaced: true,
        short_names: &["po"],
        status_sub: true,
        create_on_update: false,
        generation: true,
        categories: &["all"],
    },
    ResourceDef {
        name: "endpoints",
        singular: "endpoints",
        kind: "Endpoints",
        group: "",
        version: "v1",
        namespaced: true,
        short_names: &["ep"],
        status_sub: false,
        create_on_update: true,
        generation: false,
        categories: &[],
    },
    ResourceDef {
        name: "events",
        singular: "event",
        kind: "Event",
        group: "",
        version: "v1",
        namespaced: true,
        short_names: &["ev"],
        status_sub: false,
        create_on_update: true,
        generation: false,
        categories: &[],
    },
    ResourceDef {
        name: "leases",
        singular: "lease",
        kind: "Lease",
        group: "coordination.k8s.io",
        version: "v1",
        namespaced: true,
        short_names: &[],
        status_sub: false,
        create_on_update: true,
        generation: false,
        categories: &[],
    },
    ResourceDef {
        name: "endpointslices",
        singular: "endpointslice",
        kind: "EndpointSlice",
        group: "discovery.k8s.io",
        version: "v1",
        namespaced: true,
        short_names: &[],
        status_sub: false,
        create_on_update: false,
        generation: true,
        categories: &[],
    },
    ResourceDef {
        name: "configmaps",
        singular: "configmap",
        kind: "ConfigMap",
        group: "",
        version: "v1",
        namespaced: true,
        short_names: &["cm"],
        status_sub: false,
        create_on_update: false,
        generation: false,
        categories: &[],
    },
    ResourceDef {
        name: "nodes",
        singular: "node",
        kind: "Node",
        group: "",
        version: "v1",
        namespaced: false,
        short_names: &["no"],
        status_sub: true,
        create_on_update: false,
        generation: false,
        categories: &[],
    },
    ResourceDef {
        name: "events",
        singular: "event",
        kind: "Event",
        group: "events.k8s.io",
        version: "v1",
        namespaced: true,
        short_names: &[],
        status_sub: false,
        create_on_update: true,
        generation: false,
        categories: &[],
    },
];

/// Finds a resource by group and plural name.
pub(crate) fn lookup(group: &str, version: &str, name: &str) -> Option<usize> {
    RESOURCES
        .iter()
        .position(|r| r.group == group && r.version == version && r.name == name)
}

macro_rules! with_type {
    ($r:expr, $T:ident => $body:expr) => {
        match $r {
            $crate::resources::NAMESPACES => {
                type $T = k8s_openapi::api::core::v1::Namespace;
                $body
            }
            $crate::resources::SERVICES => {
                type $T = k8s_openapi::api::core::v1::Service;
                $body
            }
            $crate::resources::PODS => {
                type $T = k8s_openapi::api::core::v1::Pod;
                $body
            }
            $crate::resources::ENDPOINTS => {
                type $T = k8s_openapi::api::core::v1::Endpoints;
                $body
            }
            $crate::resources::EVENTS => {
                type $T = k8s_openapi::api::core::v1::Event;
                $body
            }
            $crate::resources::LEASES => {
                type $T = k8s_openapi::api::coordination::v1::Lease;
                $body
            }
            $crate::resources::CONFIGMAPS => {
                type $T = k8s_openapi::api::core::v1::ConfigMap;
                $body
            }
            $crate::resources::NODES => {
                type $T = k8s_openapi::api::core::v1::Node;
                $body
            }
            $crate::resources::EVENTS_V1 => {
                type $T = k8s_openapi::api::events::v1::Event;
                $body
            }
            _ => {
                type $T = k8s_openapi::api::discovery::v1::EndpointSlice;
                $body
            }
        }
    };
}

pub(crate) use with_type;

/// Decodes `v` as the typed object of resource `r` (as kube-apiserver decodes a request body),
/// returning the canonical JSON value (unknown fields dropped) and the unknown field paths.
pub(crate) fn normalize(r: usize, v: &Value) -> Result<(Value, Vec<String>), String> {
    let canonical = with_type!(r, T => {
        let t: T = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
        serde_json::to_value(&t).map_err(|e| e.to_string())?
    });
    let mut unknown = Vec::new();
    unknown_fields(v, &canonical, "", &mut unknown);
    Ok((canonical, unknown))
}

/// Serialises an already normalised value in Kubernetes field order (`apiVersion`, `kind`,
/// `metadata`, ...).
pub(crate) fn encode(r: usize, v: &Value) -> Result<Vec<u8>, String> {
    with_type!(r, T => {
        let t: T = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
        serde_json::to_vec(&t).map_err(|e| e.to_string())
    })
}

fn unknown_fields(input: &Value, canon: &Value, path: &str, out: &mut Vec<String>) {
    match (input, canon) {
        (Value::Object(i), Value::Object(c)) => {
            for (k, v) in i {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match c.get(k) {
                    Some(cv) => unknown_fields(v, cv, &p, out),
                    None if v.is_null() => {}
                    None => {
                        // Empty values of known optional fields are dropped by the typed decode
                        // only when they are null; anything else missing is unknown.
                        out.push(p)
                    }
                }
            }
        }
        (Value::Array(i), Value::Array(c)) if i.len() == c.len() => {
            for (n, (a, b)) in i.iter().zip(c).enumerate() {
                unknown_fields(a, b, &format!("{path}[{n}]"), out);
            }
        }
        _ => {}
    }
}

fn obj_mut<'a>(v: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    let m = v.as_object_mut().expect("object");
    let e = m
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !e.is_object() {
        *e = Value::Object(Map::new());
    }
    e.as_object_mut().expect("object")
}

fn default_str(m: &mut Map<String, Value>, k: &str, d: &str) {
    if m.get(k).and_then(Value::as_str).is_none_or(str::is_empty) {
        m.insert(k.into(), json!(d));
    }
}

fn default_val(m: &mut Map<String, Value>, k: &str, d: Value) {
    if m.get(k).is_none_or(Value::is_null) {
        m.insert(k.into(), d);
    }
}

fn default_container(c: &mut Value) {
    let Some(m) = c.as_object_mut() else { return };
    if let Some(ports) = m.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports {
            if let Some(p) = p.as_object_mut() {
                default_str(p, "protocol", "TCP");
            }
        }
    }
    default_str(m, "terminationMessagePath", "/dev/termination-log");
    default_str(m, "terminationMessagePolicy", "File");
    let image = m.get("image").and_then(Value::as_str).unwrap_or("");
    let last = image.rsplit('/').next().unwrap_or("");
    let policy = if image.contains('@') || (last.contains(':') && !last.ends_with(":latest")) {
        "IfNotPresent"
    } else {
        "Always"
    };
    default_str(m, "imagePullPolicy", policy);
    default_val(m, "resources", json!({}));
}

/// Applies the defaulting kube-apiserver does on create and update for the fields weir cares
/// about. Allocation of cluster IPs happens in the store.
pub(crate) fn apply_defaults(r: usize, v: &mut Value) {
    match r {
        SERVICES => {
            let spec = obj_mut(v, "spec");
            default_str(spec, "type", "ClusterIP");
            default_str(spec, "sessionAffinity", "None");
            let ty = spec["type"].as_str().unwrap_or("ClusterIP").to_string();
            if ty != "ExternalName" {
                default_str(spec, "internalTrafficPolicy", "Cluster");
            }
            if ty == "NodePort" || ty == "LoadBalancer" {
                default_str(spec, "externalTrafficPolicy", "Cluster");
            }
            if ty == "LoadBalancer" {
                default_val(spec, "allocateLoadBalancerNodePorts", json!(true));
            }
            if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                for p in ports {
                    if let Some(p) = p.as_object_mut() {
                        default_str(p, "protocol", "TCP");
                        let missing = match p.get("targetPort") {
                            None | Some(Value::Null) => true,
                            Some(Value::Number(n)) => n.as_i64() == Some(0),
                            Some(Value::String(s)) => s.is_empty(),
                            _ => false,
                        };
                        if missing && let Some(port) = p.get("port").cloned() {
                            p.insert("targetPort".into(), port);
                        }
                    }
                }
            }
            let st = obj_mut(v, "status");
            default_val(st, "loadBalancer", json!({}));
        }
        PODS => {
            let spec = obj_mut(v, "spec");
            for key in ["containers", "initContainers"] {
                if let Some(cs) = spec.get_mut(key).and_then(Value::as_array_mut) {
                    cs.iter_mut().for_each(default_container);
                }
            }
            default_str(spec, "restartPolicy", "Always");
            default_val(spec, "terminationGracePeriodSeconds", json!(30));
            default_str(spec, "dnsPolicy", "ClusterFirst");
            default_val(spec, "securityContext", json!({}));
            default_str(spec, "schedulerName", "default-scheduler");
            default_val(spec, "enableServiceLinks", json!(true));
            default_str(spec, "preemptionPolicy", "PreemptLowerPriority");
            default_val(spec, "priority", json!(0));
            if let Some(sa) = spec.get("serviceAccountName").cloned() {
                default_val(spec, "serviceAccount", sa);
            }
        }
        ENDPOINTS => {
            if let Some(subsets) = v.get_mut("subsets").and_then(Value::as_array_mut) {
                for s in subsets {
                    if let Some(ports) = s.get_mut("ports").and_then(Value::as_array_mut) {
                        for p in ports {
                            if let Some(p) = p.as_object_mut() {
                                default_str(p, "protocol", "TCP");
                            }
                        }
                    }
                }
            }
        }
        ENDPOINTSLICES => {
            if let Some(ports) = v.get_mut("ports").and_then(Value::as_array_mut) {
                for p in ports {
                    if let Some(p) = p.as_object_mut() {
                        default_str(p, "protocol", "TCP");
                    }
                }
            }
        }
        NAMESPACES => {
            let name = v["metadata"]["name"].as_str().unwrap_or("").to_string();
            let meta = obj_mut(v, "metadata");
            let l = meta.entry("labels").or_insert_with(|| json!({}));
            if !l.is_object() {
                *l = json!({});
            }
            l["kubernetes.io/metadata.name"] = json!(name);
            let spec = obj_mut(v, "spec");
            default_val(spec, "finalizers", json!(["kubernetes"]));
            let st = obj_mut(v, "status");
            default_str(st, "phase", "Active");
        }
        _ => {}
    }
}

/// Validation kube-apiserver does that clients tend to hit. Returns (field, message) causes.
pub(crate) fn validate(r: usize, v: &Value) -> Vec<(String, String)> {
    let mut causes = Vec::new();
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
    crate::validation::label_causes(v, &mut causes);
    match r {
        PODS => {
            crate::validation::pod_ip_causes(v, &mut causes);
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
        SERVICES => {
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
        ENDPOINTS => {
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
                    endpoint_port_causes(&format!("subsets[{i}].ports[{j}]"), p, true, &mut causes);
                }
            }
        }
        ENDPOINTSLICES => {
            crate::validation::slice_size_causes(v, &mut causes);
            let family = match v["addressType"].as_str() {
                Some("IPv4") => Some(false),
                Some("IPv6") => Some(true),
                _ => None, // FQDN or unknown: addresses are not IPs
            };
            if let Some(v6) = family {
                for (i, e) in v["endpoints"].as_array().into_iter().flatten().enumerate() {
                    for (j, a) in e["addresses"].as_array().into_iter().flatten().enumerate() {
                        if let Some(problem) = endpoint_ip_problem(a, Some(v6)) {
                            causes.push((format!("endpoints[{i}].addresses[{j}]"), problem));
                        }
                    }
                }
            }
            for (i, p) in v["ports"].as_array().into_iter().flatten().enumerate() {
                endpoint_port_causes(&format!("ports[{i}]"), p, false, &mut causes);
            }
        }
        _ => {}
    }
    causes
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

/// Columns of the server-side printing (`kubectl get`), as `(name, type, format, priority)`.
pub(crate) fn columns(r: usize) -> Vec<(&'static str, &'static str, &'static str, u8)> {
    match r {
        NAMESPACES => vec![
            ("Name", "string", "name", 0),
            ("Status", "string", "", 0),
            ("Age", "string", "", 0),
        ],
        SERVICES => vec![
            ("Name", "string", "name", 0),
            ("Type", "string", "", 0),
            ("Cluster-IP", "string", "", 0),
            ("External-IP", "string", "", 0),
            ("Port(s)", "string", "", 0),
            ("Age", "string", "", 0),
            ("Selector", "string", "", 1),
        ],
        PODS => vec![
            ("Name", "string", "name", 0),
            ("Ready", "string", "", 0),
            ("Status", "string", "", 0),
            ("Restarts", "string", "", 0),
            ("Age", "string", "", 0),
            ("IP", "string", "", 1),
            ("Node", "string", "", 1),
        ],
        ENDPOINTS => vec![
            ("Name", "string", "name", 0),
            ("Endpoints", "string", "", 0),
            ("Age", "string", "", 0),
        ],
        EVENTS | EVENTS_V1 => vec![
            ("Last Seen", "string", "", 0),
            ("Type", "string", "", 0),
            ("Reason", "string", "", 0),
            ("Object", "string", "", 0),
            ("Message", "string", "", 0),
        ],
        LEASES => vec![
            ("Name", "string", "name", 0),
            ("Holder", "string", "", 0),
            ("Age", "string", "", 0),
        ],
        CONFIGMAPS => vec![
            ("Name", "string", "name", 0),
            ("Data", "integer", "", 0),
            ("Age", "string", "", 0),
        ],
        NODES => vec![
            ("Name", "string", "name", 0),
            ("Status", "string", "", 0),
            ("Roles", "string", "", 0),
            ("Age", "string", "", 0),
            ("Version", "string", "", 0),
            ("Internal-IP", "string", "", 1),
            ("Zone", "string", "", 1),
        ],
        _ => vec![
            ("Name", "string", "name", 0),
            ("AddressType", "string", "", 0),
            ("Ports", "string", "", 0),
            ("Endpoints", "string", "", 0),
            ("Age", "string", "", 0),
        ],
    }
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn join_limited(items: Vec<String>, limit: usize) -> String {
    if items.is_empty() {
        return "<none>".into();
    }
    let n = items.len();
    let mut out = items.into_iter().take(limit).collect::<Vec<_>>().join(",");
    if n > limit {
        out.push_str(&format!(" + {} more...", n - limit));
    }
    out
}

/// The cells of one table row.
pub(crate) fn cells(r: usize, v: &Value) -> Vec<Value> {
    let meta = &v["metadata"];
    let name = json!(s(&meta["name"]));
    let age = json!(util::human_age(meta["creationTimestamp"].as_str()));
    match r {
        NAMESPACES => vec![name, json!(s(&v["status"]["phase"])), age],
        SERVICES => {
            let spec = &v["spec"];
            let ty = s(&spec["type"]);
            let cip = if ty == "ExternalName" {
                "<none>".to_string()
            } else {
                s(&spec["clusterIP"]).to_string()
            };
            let mut ext: Vec<String> = spec["externalIPs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|x| s(x).to_string())
                .collect();
            for ing in v["status"]["loadBalancer"]["ingress"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let ip = s(&ing["ip"]);
                ext.push(
                    if ip.is_empty() {
                        s(&ing["hostname"])
                    } else {
                        ip
                    }
                    .to_string(),
                );
            }
            let ext = if ty == "ExternalName" {
                s(&spec["externalName"]).to_string()
            } else if ext.is_empty() {
                if ty == "LoadBalancer" {
                    "<pending>"
                } else {
                    "<none>"
                }
                .to_string()
            } else {
                ext.join(",")
            };
            let ports: Vec<String> = spec["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    let np = p["nodePort"].as_i64().filter(|n| *n > 0);
                    match np {
                        Some(np) => format!("{}:{}/{}", p["port"], np, s(&p["protocol"])),
                        None => format!("{}/{}", p["port"], s(&p["protocol"])),
                    }
                })
                .collect();
            let ports = if ports.is_empty() {
                "<none>".into()
            } else {
                ports.join(",")
            };
            let sel: Vec<String> = spec["selector"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("{k}={}", s(v)))
                .collect();
            let sel = if sel.is_empty() {
                "<none>".into()
            } else {
                sel.join(",")
            };
            vec![
                name,
                json!(ty),
                json!(cip),
                json!(ext),
                json!(ports),
                age,
                json!(sel),
            ]
        }
        PODS => {
            let statuses = v["status"]["containerStatuses"].as_array();
            let total = v["spec"]["containers"]
                .as_array()
                .map(Vec::len)
                .unwrap_or(0);
            let ready = statuses
                .into_iter()
                .flatten()
                .filter(|c| c["ready"].as_bool() == Some(true))
                .count();
            let restarts: i64 = statuses
                .into_iter()
                .flatten()
                .map(|c| c["restartCount"].as_i64().unwrap_or(0))
                .sum();
            let mut status = s(&v["status"]["reason"]).to_string();
            if status.is_empty() {
                status = s(&v["status"]["phase"]).to_string();
            }
            for c in statuses.into_iter().flatten() {
                let w = s(&c["state"]["waiting"]["reason"]);
                if !w.is_empty() {
                    status = w.to_string();
                }
            }
            if !meta["deletionTimestamp"].is_null() {
                status = "Terminating".into();
            }
            let ip = s(&v["status"]["podIP"]);
            let node = s(&v["spec"]["nodeName"]);
            vec![
                name,
                json!(format!("{ready}/{total}")),
                json!(status),
                json!(restarts.to_string()),
                age,
                json!(if ip.is_empty() { "<none>" } else { ip }),
                json!(if node.is_empty() { "<none>" } else { node }),
            ]
        }
        ENDPOINTS => {
            let mut eps = Vec::new();
            for ss in v["subsets"].as_array().into_iter().flatten() {
                for a in ss["addresses"].as_array().into_iter().flatten() {
                    let ports: Vec<_> = ss["ports"].as_array().into_iter().flatten().collect();
                    if ports.is_empty() {
                        eps.push(s(&a["ip"]).to_string());
                    }
                    for p in ports {
                        eps.push(format!("{}:{}", s(&a["ip"]), p["port"]));
                    }
                }
            }
            vec![name, json!(join_limited(eps, 3)), age]
        }
        // core/v1 and events.k8s.io/v1 name the same columns differently.
        EVENTS | EVENTS_V1 => {
            let (last_seen, object, message) = if r == EVENTS {
                (v["lastTimestamp"].as_str(), "involvedObject", "message")
            } else {
                (
                    v["series"]["lastObservedTime"].as_str(),
                    "regarding",
                    "note",
                )
            };
            let last = last_seen
                .or(v["eventTime"].as_str())
                .or(meta["creationTimestamp"].as_str());
            let object = &v[object];
            vec![
                json!(util::human_age(last)),
                json!(s(&v["type"])),
                json!(s(&v["reason"])),
                json!(format!(
                    "{}/{}",
                    s(&object["kind"]).to_lowercase(),
                    s(&object["name"])
                )),
                json!(s(&v[message])),
            ]
        }
        LEASES => {
            let h = s(&v["spec"]["holderIdentity"]);
            vec![name, json!(if h.is_empty() { "<none>" } else { h }), age]
        }
        CONFIGMAPS => {
            let keys = ["data", "binaryData"]
                .iter()
                .map(|f| v[*f].as_object().map_or(0, |m| m.len()))
                .sum::<usize>();
            vec![name, json!(keys), age]
        }
        NODES => node_cells(v, name, age),
        _ => {
            let ports: Vec<String> = v["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| p["port"].to_string())
                .collect();
            let eps: Vec<String> = v["endpoints"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|e| e["addresses"].as_array().cloned().unwrap_or_default())
                .map(|a| s(&a).to_string())
                .collect();
            vec![
                name,
                json!(s(&v["addressType"])),
                json!(join_limited(ports, 3)),
                json!(join_limited(eps, 3)),
                age,
            ]
        }
    }
}

/// `kubectl get nodes` cells: the Ready condition (plus `SchedulingDisabled`), roles from
/// `node-role.kubernetes.io/*` labels, kubelet version, internal IP and zone.
fn node_cells(v: &Value, name: Value, age: Value) -> Vec<Value> {
    let ready = v["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .map(|c| match s(&c["status"]) {
            "True" => "Ready",
            "False" => "NotReady",
            _ => "Unknown",
        })
        .unwrap_or("Unknown");
    let mut status = ready.to_string();
    if v["spec"]["unschedulable"].as_bool() == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    let labels = v["metadata"]["labels"].as_object();
    let roles: Vec<&str> = labels
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/"))
        .filter(|r| !r.is_empty())
        .collect();
    let ip = v["status"]["addresses"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["type"] == "InternalIP")
        .map(|a| s(&a["address"]))
        .unwrap_or("<none>");
    let zone = labels
        .and_then(|l| l.get("topology.kubernetes.io/zone"))
        .map(s)
        .unwrap_or("<none>");
    let version = s(&v["status"]["nodeInfo"]["kubeletVersion"]);
    vec![
        name,
        json!(status),
        json!(if roles.is_empty() {
            "<none>".to_string()
        } else {
            roles.join(",")
        }),
        age,
        json!(if version.is_empty() {
            "<none>"
        } else {
            version
        }),
        json!(ip),
        json!(zone),
    ]
}

/// Strategic-merge-patch metadata: the merge key of a list at `path` (list items written `[]`),
/// or `Some("")` for a primitive list merged as a set. `None`: the list is replaced (atomic).
pub(crate) fn merge_key(r: usize, path: &str) -> Option<&'static str> {
    match path {
        "metadata.ownerReferences" => return Some("uid"),
        "metadata.finalizers" => return Some(""),
        _ => {}
    }
    match r {
        PODS => {
            let p = path
                .replace("spec.initContainers", "spec.containers")
                .replace("spec.ephemeralContainers", "spec.containers");
            match p.as_str() {
                "spec.containers" => Some("name"),
                "spec.containers[].ports" => Some("containerPort"),
                "spec.containers[].env" => Some("name"),
                "spec.containers[].volumeMounts" => Some("mountPath"),
                "spec.containers[].volumeDevices" => Some("devicePath"),
                "spec.volumes" => Some("name"),
                "spec.imagePullSecrets" => Some("name"),
                "spec.hostAliases" => Some("ip"),
                "spec.topologySpreadConstraints" => Some("topologyKey"),
                "spec.schedulingGates" => Some("name"),
                "spec.resourceClaims" => Some("name"),
                "status.conditions" => Some("type"),
                "status.podIPs" => Some("ip"),
                "status.hostIPs" => Some("ip"),
                _ => None,
            }
        }
        SERVICES => match path {
            "spec.ports" => Some("port"),
            "status.conditions" => Some("type"),
            _ => None,
        },
        NAMESPACES => match path {
            "status.conditions" => Some("type"),
            _ => None,
        },
        NODES => match path {
            "status.conditions" | "status.addresses" => Some("type"),
            _ => None,
        },
        _ => None,
    }
}
