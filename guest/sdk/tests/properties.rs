//! Properties of the default policy over generated requests:
//! - the order of pods and of the stored subsets never changes the decision;
//! - feeding a written result back as the stored Endpoints always gives `none`;
//! - hooks that reorder pods or ports never move an endpoint to another slice group;
//! - a pass policy ([`weir_policy::batch`]) decides as the per-pod hooks it answers for;
//! - nothing panics.
//!
//! Rule numbers R1–R10 and scenarios S01–S98 are those of `docs/upstream-endpointslices.md`.

use proptest::prelude::*;
use weir_policy::batch::{Candidate, Choice, Endpoint, PassPolicy, reconcile_passes};
use weir_policy::types::*;
use weir_policy::{Context, DefaultPolicy, Policy, Port, Verdict, reconcile};

fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: value.into(),
    }
}

fn service_strategy() -> impl Strategy<Value = Service> {
    let port = (
        0..3usize,
        prop::bool::ANY,
        0..2usize,
        prop::option::of("h2c|grpc"),
    )
        .prop_map(|(i, named, proto, app)| ServicePort {
            name: ["http", "metrics", "dns"][i].into(),
            protocol: ["TCP", "UDP"][proto].into(),
            port: 80 + i as i32,
            target_port: if named {
                TargetPort::Name(["http", "metrics", "dns"][i].into())
            } else {
                TargetPort::Number(8080 + i as i32)
            },
            app_protocol: app,
        });
    (
        prop::collection::vec(port, 0..3),
        prop::bool::ANY,
        0..3usize,
        prop::bool::ANY,
        prop::collection::vec(("[ab]", "[xy]"), 0..3),
    )
        .prop_map(|(mut ports, publish, cluster, v6, labels)| {
            ports.sort_by(|a, b| a.name.cmp(&b.name));
            ports.dedup_by(|a, b| a.name == b.name);
            Service {
                namespace: "ns".into(),
                name: "svc".into(),
                uid: "svc-uid".into(),
                labels: labels
                    .into_iter()
                    .collect::<std::collections::BTreeMap<String, String>>()
                    .iter()
                    .map(|(k, v)| kv(k, v))
                    .collect(),
                annotations: vec![],
                creation_timestamp: Some("2024-01-01T00:00:00Z".into()),
                selector: Some(vec![]),
                service_type: "ClusterIP".into(),
                cluster_ip: ["10.96.0.1", "None", ""][cluster].into(),
                cluster_ips: vec![],
                ip_families: vec![if v6 { "IPv6" } else { "IPv4" }.into()],
                ports,
                publish_not_ready_addresses: publish,
                traffic_distribution: None,
                deleting: false,
            }
        })
}

fn pod_strategy() -> impl Strategy<Value = Pod> {
    (
        0..6u8,
        0..4usize,
        prop::bool::ANY,
        prop::bool::ANY,
        0..5usize,
        prop::collection::vec((0..3usize, 0..2usize), 0..3),
        prop::bool::ANY,
        prop::bool::ANY,
    )
        .prop_map(
            |(ip, ready, terminating, v6_too, phase, ports, host, sub)| {
                let v4 = format!("10.0.0.{ip}");
                let mut pod_ips = vec![v4.clone()];
                if v6_too {
                    pod_ips.push(format!("fd00::{ip}"));
                }
                Pod {
                    namespace: "ns".into(),
                    name: String::new(), // made unique below
                    uid: String::new(),
                    labels: vec![],
                    annotations: vec![],
                    node_name: format!("node-{}", ip % 2),
                    hostname: if host { "h".into() } else { String::new() },
                    subdomain: if sub { "svc".into() } else { String::new() },
                    pod_ip: Some(v4),
                    pod_ips,
                    phase: ["Running", "Pending", "Failed", "Succeeded", ""][phase].into(),
                    conditions: match ready {
                        0 => vec![],
                        1 => vec![PodCondition {
                            condition_type: "Ready".into(),
                            status: "True".into(),
                            last_transition_time: None,
                        }],
                        2 => vec![PodCondition {
                            condition_type: "Ready".into(),
                            status: "False".into(),
                            last_transition_time: None,
                        }],
                        _ => vec![PodCondition {
                            condition_type: "Ready".into(),
                            status: "Unknown".into(),
                            last_transition_time: None,
                        }],
                    },
                    terminating,
                    node_exists: true,
                    zone: Some(format!("zone-{}", ip % 3)),
                    container_ports: ports
                        .into_iter()
                        .map(|(i, proto)| ContainerPort {
                            name: ["http", "metrics", "dns"][i].into(),
                            port: 9000 + i as i32,
                            protocol: ["TCP", "UDP"][proto].into(),
                        })
                        .collect(),
                }
            },
        )
}

fn request_strategy() -> impl Strategy<Value = Request> {
    (
        service_strategy(),
        prop::collection::vec(pod_strategy(), 0..10),
    )
        .prop_map(|(service, mut pods)| {
            for (i, p) in pods.iter_mut().enumerate() {
                p.name = format!("pod-{i}");
                p.uid = format!("uid-{i}");
            }
            Request {
                namespace: "ns".into(),
                name: "svc".into(),
                service: Some(service),
                pods,
                current: None,
                trigger_time: None,
                config: String::new(),
                endpoint_slices: vec![],
                max_endpoints_per_slice: 3,
                zone_capacities: None,
                manage: Outputs {
                    endpoints: true,
                    endpoint_slices: true,
                },
            }
        })
}

fn written(decision: &Decision) -> Option<Endpoints> {
    match &decision.endpoints {
        EndpointsDecision::Create(e) | EndpointsDecision::Update(e) => Some(e.clone()),
        _ => None,
    }
}

/// The stored slices after a decision's slice changes are applied to `stored`, named and
/// versioned as an API server would.
fn apply_slices(stored: &[EndpointSlice], decision: &Decision, round: usize) -> Vec<EndpointSlice> {
    let changes = &decision.slices;
    let mut out: Vec<EndpointSlice> = stored
        .iter()
        .filter(|s| !changes.delete.contains(&s.name))
        .filter(|s| changes.update.iter().all(|u| u.name != s.name))
        .cloned()
        .collect();
    for (i, slice) in changes.create.iter().chain(&changes.update).enumerate() {
        let mut slice = slice.clone();
        if slice.name.is_empty() {
            slice.name = format!("{}r{round}x{i}", slice.generate_name);
        }
        slice.resource_version = format!("{round}{i}");
        out.push(slice);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn pod_order_never_changes_the_decision(request in request_strategy(), seed in any::<u64>()) {
        let first = reconcile(&DefaultPolicy {}, &request).unwrap();
        let mut shuffled = request.clone();
        shuffle(&mut shuffled.pods, seed);
        // Endpoint placement in slices follows pod order (upstream's is arbitrary); the
        // Endpoints object must not change at all.
        prop_assert_eq!(reconcile(&DefaultPolicy {}, &shuffled).unwrap().endpoints, first.endpoints);
    }

    #[test]
    fn feeding_written_slices_back_writes_nothing(request in request_strategy(), other in request_strategy(), seed in any::<u64>()) {
        // Start from another request's slices, converge, then a second sync is a no-op
        // (R4.28), whatever order the stored slices and their endpoints are in.
        let first = reconcile(&DefaultPolicy {}, &other).unwrap();
        let mut with_stored = request.clone();
        with_stored.endpoint_slices = apply_slices(&[], &first, 0);
        let second = reconcile(&DefaultPolicy {}, &with_stored).unwrap();
        prop_assert!(second.errors.is_empty());
        let mut stored = apply_slices(&with_stored.endpoint_slices, &second, 1);
        shuffle(&mut stored, seed);
        for (i, s) in stored.iter_mut().enumerate() {
            shuffle(&mut s.endpoints, seed ^ i as u64);
        }
        let mut again = request.clone();
        again.endpoint_slices = stored.clone();
        let third = reconcile(&DefaultPolicy {}, &again).unwrap();
        prop_assert!(third.slices.create.is_empty() && third.slices.update.is_empty() && third.slices.delete.is_empty(), "{:?}", third.slices);
        // Every endpoint of a slice serves the slice's ports, no slice exceeds the maximum,
        // and each address type has at least one slice.
        for slice in &stored {
            prop_assert!(slice.endpoints.len() <= 3);
        }
    }

    #[test]
    fn feeding_the_result_back_gives_none(request in request_strategy(), seed in any::<u64>()) {
        let decision = reconcile(&DefaultPolicy {}, &request).unwrap();
        let mut stored = written(&decision).expect("a Service with a selector and no Endpoints is created");
        stored.resource_version = "42".into();
        let mut again = request.clone();
        again.current = Some(stored.clone());
        prop_assert_eq!(reconcile(&DefaultPolicy {}, &again).unwrap().endpoints, EndpointsDecision::None);

        // The stored object in any order is still right (spec §18 D1).
        shuffle(&mut stored.subsets, seed);
        for (i, s) in stored.subsets.iter_mut().enumerate() {
            shuffle(&mut s.addresses, seed ^ i as u64);
            shuffle(&mut s.ports, seed.rotate_left(7) ^ i as u64);
        }
        again.current = Some(stored);
        prop_assert_eq!(reconcile(&DefaultPolicy {}, &again).unwrap().endpoints, EndpointsDecision::None);
    }

    #[test]
    fn stored_subset_order_never_changes_the_decision(request in request_strategy(), other in request_strategy(), seed in any::<u64>()) {
        // Store another request's result, then reconcile: the stored order must not matter.
        let mut stored = written(&reconcile(&DefaultPolicy {}, &other).unwrap()).unwrap();
        stored.resource_version = "7".into();
        let mut with_stored = request.clone();
        with_stored.current = Some(stored.clone());
        let first = reconcile(&DefaultPolicy {}, &with_stored).unwrap();
        shuffle(&mut stored.subsets, seed);
        for s in stored.subsets.iter_mut() {
            shuffle(&mut s.not_ready_addresses, seed);
        }
        with_stored.current = Some(stored);
        prop_assert_eq!(reconcile(&DefaultPolicy {}, &with_stored).unwrap(), first);
    }
}

/// The default policy, except that its `verdicts` hook shuffles the pods and its `ports` hook
/// lists each pod's ports backwards and twice: neither may change which endpoints end up in
/// which port group.
struct Reordering {
    seed: u64,
}

impl Policy for Reordering {
    fn verdicts(&self, _ctx: &Context, verdicts: &mut [Verdict]) {
        shuffle(verdicts, self.seed);
    }

    fn ports(&self, _ctx: &Context, _pod: &Pod, ports: &mut Vec<Port>) {
        ports.reverse();
        ports.extend(ports.clone());
    }
}

/// One group of [`groups`]: address type, ports, and (pod name, ready) per endpoint.
type GroupView = (String, Vec<String>, Vec<(String, Option<bool>)>);

/// Per address type and port set (sorted), the endpoints' pod names and readiness, sorted:
/// what the created slices hold, whatever the split into slices.
fn groups(request: &Request, decision: &Decision) -> Vec<GroupView> {
    let mut groups: std::collections::BTreeMap<_, Vec<_>> = Default::default();
    for slice in &decision.slices.create {
        let mut ports: Vec<String> = slice
            .ports
            .iter()
            .flatten()
            .map(|p| format!("{p:?}"))
            .collect();
        ports.sort();
        let endpoints = groups
            .entry((slice.address_type.clone(), ports))
            .or_default();
        for e in &slice.endpoints {
            let name = weir_policy::testing::endpoint_pod_name(e, &request.pods)
                .unwrap_or_default()
                .to_string();
            endpoints.push((name, e.conditions.ready));
        }
    }
    groups
        .into_iter()
        .map(|((family, ports), mut endpoints)| {
            endpoints.sort();
            (family, ports, endpoints)
        })
        .collect()
}

proptest! {
    #[test]
    fn hooks_reordering_pods_or_ports_keep_every_endpoint_in_its_group(request in request_strategy(), seed in any::<u64>()) {
        let default = reconcile(&DefaultPolicy {}, &request).unwrap();
        let reordered = reconcile(&Reordering { seed }, &request).unwrap();
        prop_assert_eq!(groups(&request, &reordered), groups(&request, &default));
    }
}

/// A deterministic Fisher-Yates shuffle driven by `seed` (proptest shrinks the seed).
fn shuffle<T>(items: &mut [T], mut seed: u64) {
    for i in (1..items.len()).rev() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let j = (seed >> 33) as usize % (i + 1);
        items.swap(i, j);
    }
}

/// A per-pod policy whose every hook changes something for some pods, chosen by `seed`.
struct Tinker {
    seed: u64,
}

impl Tinker {
    /// Whether hook number `hook` changes `pod`.
    fn picks(&self, hook: u64, pod: &Pod) -> bool {
        let name: u64 = pod.name.bytes().map(u64::from).sum();
        (self.seed >> ((hook * 7 + name) % 60)) & 1 == 1
    }
}

impl Policy for Tinker {
    fn include(&self, _: &Context, pod: &Pod) -> bool {
        !self.picks(0, pod)
    }

    fn verdict(&self, _: &Context, verdict: &mut Verdict) {
        let pod = verdict.pod;
        if self.picks(1, pod) {
            verdict.ready = !verdict.ready;
        }
        if self.picks(2, pod) {
            verdict.serving = !verdict.serving;
            verdict.terminating = !verdict.terminating;
        }
        if self.picks(3, pod) {
            verdict.address.to_mut().hostname = format!("{}-h", pod.name);
        }
        if self.picks(4, pod) {
            verdict.include = false;
        }
    }

    fn ports(&self, _: &Context, pod: &Pod, ports: &mut Vec<Port>) {
        if self.picks(5, pod) {
            ports.iter_mut().for_each(|p| p.to_mut().port += 1);
        }
        if self.picks(6, pod) {
            ports.pop();
        }
    }
}

/// [`Tinker`] as a pass policy: its hooks applied to each candidate.
struct TinkerPasses(Tinker);

impl PassPolicy for TinkerPasses {
    fn decide(
        &self,
        ctx: &Context<'_>,
        candidates: &[Candidate<'_>],
    ) -> Result<Vec<Choice>, String> {
        let policy = &self.0;
        Ok(candidates
            .iter()
            .map(|candidate| {
                let mut ports = candidate.ports.clone();
                policy.ports(ctx, candidate.pod, &mut ports);
                let endpoint = candidate.verdict.clone().map(|mut verdict| {
                    policy.verdict(ctx, &mut verdict);
                    Endpoint {
                        include: verdict.include,
                        ready: verdict.ready,
                        serving: verdict.serving,
                        terminating: verdict.terminating,
                        address: Some(verdict.address.into_owned()),
                    }
                });
                Choice {
                    include: policy.include(ctx, candidate.pod),
                    ports: Some(ports.into_iter().map(Port::into_owned).collect()),
                    endpoint,
                }
            })
            .collect())
    }
}

proptest! {
    #[test]
    fn a_pass_policy_decides_as_the_per_pod_hooks_it_answers_for(request in request_strategy(), seed in any::<u64>()) {
        let per_pod = reconcile(&Tinker { seed }, &request).unwrap();
        let per_pass = reconcile_passes(&TinkerPasses(Tinker { seed }), &request).unwrap();
        prop_assert_eq!(per_pass, per_pod);
    }
}
