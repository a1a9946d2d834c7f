//! Defaulting: the fields kube-apiserver fills in on create and update, for the fields
//! weir's clients read back.

use serde_json::{Map, Value, json};

use super::defs::{ENDPOINTS, ENDPOINTSLICES, NAMESPACES, PODS, SERVICES};

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
        SERVICES => service(v),
        PODS => pod(v),
        ENDPOINTS => {
            if let Some(subsets) = v.get_mut("subsets").and_then(Value::as_array_mut) {
                for s in subsets {
                    default_protocols(s.get_mut("ports"));
                }
            }
        }
        ENDPOINTSLICES => default_protocols(v.get_mut("ports")),
        NAMESPACES => namespace(v),
        _ => {}
    }
}

/// `protocol: TCP` on each port of a port list.
fn default_protocols(ports: Option<&mut Value>) {
    if let Some(ports) = ports.and_then(Value::as_array_mut) {
        for p in ports {
            if let Some(p) = p.as_object_mut() {
                default_str(p, "protocol", "TCP");
            }
        }
    }
}

fn service(v: &mut Value) {
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

fn pod(v: &mut Value) {
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

fn namespace(v: &mut Value) {
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
