//! The typed form of each resource: decoding a body as kube-apiserver does (unknown fields
//! reported), encoding in Kubernetes field order, and the strategic-merge-patch keys.

use serde_json::Value;

use super::defs::{NAMESPACES, NODES, PODS, SERVICES};

/// Runs `$body` with `$T` the k8s-openapi type of resource `$r`.
macro_rules! with_type {
    ($r:expr, $T:ident => $body:expr) => {
        $crate::resources::with_type!(@match $r, $T => $body;
            NAMESPACES => k8s_openapi::api::core::v1::Namespace,
            SERVICES => k8s_openapi::api::core::v1::Service,
            PODS => k8s_openapi::api::core::v1::Pod,
            ENDPOINTS => k8s_openapi::api::core::v1::Endpoints,
            EVENTS => k8s_openapi::api::core::v1::Event,
            LEASES => k8s_openapi::api::coordination::v1::Lease,
            CONFIGMAPS => k8s_openapi::api::core::v1::ConfigMap,
            NODES => k8s_openapi::api::core::v1::Node,
            EVENTS_V1 => k8s_openapi::api::events::v1::Event;
            _ => k8s_openapi::api::discovery::v1::EndpointSlice)
    };
    // One arm per resource, each binding `$T` to its type; the last resource is the default.
    (@match $r:expr, $T:ident => $body:expr; $($k:ident => $ty:ty),+; _ => $default:ty) => {
        match $r {
            $($crate::resources::$k => {
                type $T = $ty;
                $body
            })+
            _ => {
                type $T = $default;
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
