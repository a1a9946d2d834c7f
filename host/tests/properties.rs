//! Property: for any Service and pods the API server accepts (ports in 1-65535; anything in
//! IPs, phases, readiness, families) and any stored Endpoints, the default guest returns a
//! decision (never a trap or error) and that decision passes the host's validation. Runs
//! through wasmtime exactly as the controller does.

use std::sync::OnceLock;

use proptest::prelude::*;
use serde_json::{Value, json};
use weir::cases::Case;
use weir::runtime::{Guest, Limits, Runtime};

fn guest() -> &'static Guest {
    static GUEST: OnceLock<Guest> = OnceLock::new();
    GUEST.get_or_init(|| {
        Runtime::new(Limits::default())
            .unwrap()
            .default_guest()
            .unwrap()
    })
}

/// IP texts a pod may report, including sloppy, mapped, odd and invalid ones.
const IPS: &[&str] = &[
    "10.0.0.1",
    "10.0.0.2",
    "010.000.000.003",
    "fd00::1",
    "FD00:0:0:0:0:0:0:2",
    "::ffff:10.0.0.9",
    "not-an-ip",
    "",
    "1.2.3",
];

fn service() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec((0..3usize, prop::bool::ANY, 0..3usize, 1..=65535i32), 0..4),
        prop::bool::ANY,
        0..4usize,
        0..3usize,
        prop::bool::ANY,
    )
        .prop_map(|(ports, publish, cluster, family, selector)| {
            let ports: Vec<Value> = ports
                .iter()
                .enumerate()
                .map(|(i, (name, named, proto, target))| {
                    let protocol = ["TCP", "UDP", "SCTP"][*proto];
                    let port_name = ["http", "dns", "x"][*name];
                    let target = if *named {
                        json!(port_name)
                    } else {
                        json!(target)
                    };
                    json!({
                        "name": format!("{port_name}-{i}"),
                        "port": 80 + i,
                        "protocol": protocol,
                        "targetPort": target,
                    })
                })
                .collect();
            let families = [json!(["IPv4"]), json!(["IPv6"]), json!([])][family].clone();
            let cluster_ip = ["10.96.0.1", "None", "", "fd00::10"][cluster];
            json!({
                "metadata": {"name": "svc", "namespace": "ns", "labels": {"app": "web"}},
                "spec": {
                    "selector": if selector { json!({"app": "web"}) } else { json!({}) },
                    "clusterIP": cluster_ip,
                    "ipFamilies": families,
                    "ports": ports,
                    "publishNotReadyAddresses": publish,
                }
            })
        })
}

fn pod() -> impl Strategy<Value = Value> {
    (prop::collection::vec(0..IPS.len(), 0..3), 0..4usize, prop::bool::ANY, 0..4usize, 1..=65535i32, prop::bool::ANY).prop_map(
        |(ips, ready, terminating, phase, port, labelled)| {
            let ips: Vec<&str> = ips.iter().map(|i| IPS[*i]).collect();
            let phase = ["Running", "Pending", "Failed", "Succeeded"][phase];
            let ready = ["True", "False", "Unknown", "True"][ready];
            let mut pod = json!({
                "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": if labelled { json!({"app": "web"}) } else { json!({}) }},
                "spec": {"nodeName": "n", "hostname": "h", "subdomain": "svc",
                         "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": port}, {"name": "dns", "containerPort": 53, "protocol": "UDP"}]}]},
                "status": {
                    "phase": phase,
                    "podIPs": ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>(),
                    "conditions": [{"type": "Ready", "status": ready}],
                }
            });
            if let Some(first) = ips.first() {
                pod["status"]["podIP"] = json!(first);
            }
            if terminating {
                pod["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
            }
            pod
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn every_decision_is_valid(service in prop::option::of(service()), pods in prop::collection::vec(pod(), 0..8), stored in prop::option::of(prop::collection::vec(0..IPS.len(), 0..4))) {
        let mut pods = pods;
        for (i, p) in pods.iter_mut().enumerate() {
            p["metadata"]["name"] = json!(format!("p{i}"));
            p["metadata"]["uid"] = json!(format!("u{i}"));
        }
        // Stored Endpoints may hold anything another writer put there, valid or not.
        let endpoints = stored.map(|ips| json!({
            "metadata": {"name": "svc", "namespace": "ns", "resourceVersion": "5"},
            "subsets": [{"addresses": ips.iter().map(|i| json!({"ip": IPS[*i]})).collect::<Vec<_>>(), "ports": [{"port": 1}]}]
        }));
        let case = Case {
            name: None,
            key: "ns/svc".into(),
            service: service.map(|s| serde_json::from_value(s).unwrap()),
            pods: pods.into_iter().map(|p| serde_json::from_value(p).unwrap()).collect(),
            endpoints: endpoints.map(|e| serde_json::from_value(e).unwrap()),
            config: None,
            nodes: None,
            endpoint_slices: Vec::new(),
            max_endpoints_per_slice: 100,
            manage: None,
            expect: None,
        };
        let outcome = wasmtime_wasi::runtime::in_tokio(case.run(guest()));
        prop_assert!(outcome.is_ok(), "{:?}", outcome.err());
    }
}
