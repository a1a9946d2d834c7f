//! Small builders for the unit tests of the steps.

use crate::types::*;

pub fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: value.into(),
    }
}

pub fn service() -> Service {
    Service {
        namespace: "ns".into(),
        name: "svc".into(),
        uid: "svc-uid".into(),
        labels: vec![],
        annotations: vec![],
        creation_timestamp: None,
        selector: Some(vec![kv("app", "web")]),
        service_type: "ClusterIP".into(),
        cluster_ip: "10.96.0.1".into(),
        cluster_ips: vec!["10.96.0.1".into()],
        ip_families: vec!["IPv4".into()],
        ports: vec![service_port("http", 80, TargetPort::Number(8080), "TCP")],
        publish_not_ready_addresses: false,
    }
}

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

pub fn pod(name: &str, ip: &str, ready: bool) -> Pod {
    Pod {
        namespace: "ns".into(),
        name: name.into(),
        uid: format!("{name}-uid"),
        labels: vec![kv("app", "web")],
        annotations: vec![],
        node_name: "node-1".into(),
        hostname: String::new(),
        subdomain: String::new(),
        pod_ip: Some(ip.into()),
        pod_ips: vec![ip.into()],
        phase: "Running".into(),
        conditions: vec![PodCondition {
            condition_type: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            last_transition_time: None,
        }],
        terminating: false,
        container_ports: vec![],
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
