//! Small builders for the unit tests of the steps.

// The shared builders live in the public `testing` module; these add what only the steps'
// own tests need.
pub use crate::testing::{kv, pod, service};
use crate::types::*;

pub fn service_port(name: &str, port: i32, target: TargetPort, protocol: &str) -> ServicePort {
    ServicePort {
        name: name.into(),
        protocol: protocol.into(),
        port,
        target_port: target,
        app_protocol: None,
    }
}

pub fn container_port(name: &str, port: i32, protocol: &str) -> ContainerPort {
    ContainerPort {
        name: name.into(),
        port,
        protocol: protocol.into(),
    }
}

pub fn address(ip: &str, uid: &str) -> EndpointAddress {
    EndpointAddress {
        ip: ip.into(),
        hostname: String::new(),
        node_name: Some("node-1".into()),
        target_ref: Some(ObjectReference {
            kind: "Pod".into(),
            namespace: "ns".into(),
            name: uid.into(),
            uid: uid.into(),
            api_version: String::new(),
            field_path: String::new(),
        }),
    }
}

pub fn port(name: &str, number: i32) -> EndpointPort {
    EndpointPort {
        name: name.into(),
        port: number,
        protocol: "TCP".into(),
        app_protocol: None,
    }
}
