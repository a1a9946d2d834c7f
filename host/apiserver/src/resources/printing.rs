//! Server-side printing: the columns and cells of each resource's `Table` rows, as
//! `kubectl get` shows them.

use serde_json::{Value, json};

use super::defs::{
    CONFIGMAPS, ENDPOINTS, EVENTS, EVENTS_V1, LEASES, NAMESPACES, NODES, PODS, SERVICES,
};
use crate::util;

/// A column of the server-side printing, as `(name, type, format, priority)`.
type Column = (&'static str, &'static str, &'static str, u8);

/// The object's name, first in most tables.
const NAME: Column = ("Name", "string", "name", 0);

/// A string column `kubectl get` shows.
const fn col(name: &'static str) -> Column {
    (name, "string", "", 0)
}

/// A string column only `kubectl get -o wide` shows.
const fn wide(name: &'static str) -> Column {
    (name, "string", "", 1)
}

/// Columns of the server-side printing (`kubectl get`).
pub(crate) fn columns(r: usize) -> Vec<Column> {
    match r {
        NAMESPACES => vec![NAME, col("Status"), col("Age")],
        SERVICES => vec![
            NAME,
            col("Type"),
            col("Cluster-IP"),
            col("External-IP"),
            col("Port(s)"),
            col("Age"),
            wide("Selector"),
        ],
        PODS => vec![
            NAME,
            col("Ready"),
            col("Status"),
            col("Restarts"),
            col("Age"),
            wide("IP"),
            wide("Node"),
        ],
        ENDPOINTS => vec![NAME, col("Endpoints"), col("Age")],
        EVENTS | EVENTS_V1 => vec![
            col("Last Seen"),
            col("Type"),
            col("Reason"),
            col("Object"),
            col("Message"),
        ],
        LEASES => vec![NAME, col("Holder"), col("Age")],
        CONFIGMAPS => vec![NAME, ("Data", "integer", "", 0), col("Age")],
        NODES => vec![
            NAME,
            col("Status"),
            col("Roles"),
            col("Age"),
            col("Version"),
            wide("Internal-IP"),
            wide("Zone"),
        ],
        _ => vec![
            NAME,
            col("AddressType"),
            col("Ports"),
            col("Endpoints"),
            col("Age"),
        ],
    }
}

/// A string field, `""` when absent.
fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// The first `limit` items joined with commas, and how many more there are.
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

/// `items` joined with commas, `<none>` when empty.
fn join_or_none(items: Vec<String>) -> String {
    if items.is_empty() {
        "<none>".into()
    } else {
        items.join(",")
    }
}

/// The cells of one table row.
pub(crate) fn cells(r: usize, v: &Value) -> Vec<Value> {
    let meta = &v["metadata"];
    let name = json!(s(&meta["name"]));
    let age = json!(util::human_age(meta["creationTimestamp"].as_str()));
    match r {
        NAMESPACES => vec![name, json!(s(&v["status"]["phase"])), age],
        SERVICES => service_cells(v, name, age),
        PODS => pod_cells(v, name, age),
        ENDPOINTS => endpoints_cells(v, name, age),
        EVENTS | EVENTS_V1 => event_cells(r, v),
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
        _ => slice_cells(v, name, age),
    }
}

/// `kubectl get services` cells: type, cluster IP, external IPs, ports and selector.
fn service_cells(v: &Value, name: Value, age: Value) -> Vec<Value> {
    let spec = &v["spec"];
    let ty = s(&spec["type"]);
    let cip = if ty == "ExternalName" {
        "<none>".to_string()
    } else {
        s(&spec["clusterIP"]).to_string()
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
    let sel: Vec<String> = spec["selector"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", s(v)))
        .collect();
    vec![
        name,
        json!(ty),
        json!(cip),
        json!(external_ips(v, ty)),
        json!(join_or_none(ports)),
        age,
        json!(join_or_none(sel)),
    ]
}

/// The External-IP cell: the external name, or the external and load balancer addresses.
fn external_ips(v: &Value, ty: &str) -> String {
    let spec = &v["spec"];
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
    if ty == "ExternalName" {
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
    }
}

/// `kubectl get pods` cells: ready containers, status, restarts, IP and node.
fn pod_cells(v: &Value, name: Value, age: Value) -> Vec<Value> {
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
    if !v["metadata"]["deletionTimestamp"].is_null() {
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

/// `kubectl get endpoints` cells: the first addresses with their ports.
fn endpoints_cells(v: &Value, name: Value, age: Value) -> Vec<Value> {
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

/// `kubectl get events` cells; core/v1 and events.k8s.io/v1 name the same columns
/// differently.
fn event_cells(r: usize, v: &Value) -> Vec<Value> {
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
        .or(v["metadata"]["creationTimestamp"].as_str());
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

/// `kubectl get endpointslices` cells: address type, first ports and first addresses.
fn slice_cells(v: &Value, name: Value, age: Value) -> Vec<Value> {
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
