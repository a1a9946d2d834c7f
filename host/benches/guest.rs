//! The default policy natively and as a wasm guest, side by side, on the same requests.
//!
//! `cargo bench -p weir --bench guest` measures, at 0, 100 and 1,000 pods, both outputs
//! managed (Endpoints and EndpointSlices, the controller's default):
//!
//! - `native/N`: the native twin, `weir_policy::reconcile(&DefaultPolicy, ..)` linked into
//!   this binary, on a 0.2.0 request built with `weir_policy::testing`;
//! - `wasm/N`: the embedded default guest as the controller runs it: a fresh instance
//!   (instantiate), `reconcile` (call: lowering the request, the policy, lifting the decision),
//!   dropping the instance (release: its pooled memory reset for the next call) and the host's
//!   checks of both outputs with their conversion to the objects to write
//!   (validate), on the same request converted to the host's model.
//!
//! Criterion reports its estimates per benchmark; at the end a Markdown table gives the
//! median of every phase over all timed calls and the wasm/native ratio. Before timing, the
//! two decisions are checked to be equal, so both sides do the same work.
//!
//! The request is the one `tests/bench/gen.py` describes: a Service with two ports (one named
//! target port), pods on 10 nodes, every tenth not ready, no Endpoints or slices yet (creates).
//!
//! For repeatable instruction counts (the machine is shared, wall-clock times are noisy), set
//! `WEIR_BENCH_CALLS=N` and name one benchmark: the binary then makes exactly N calls of it
//! and exits, for example
//! `valgrind --tool=callgrind --toggle-collect='guest::timed_calls*' BENCH_BINARY native/100`
//! with `WEIR_BENCH_CALLS=100`; instructions per call are the collected total over N. For a
//! sampling profile that names the guest's functions too, add `WEIR_BENCH_PERFMAP=1` and run
//! the binary under `perf record`. `WEIR_BENCH_MANAGE=endpoints` makes both sides render the
//! Endpoints only, so the difference of two profiles is what the slices cost.

use std::cell::RefCell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use tokio::runtime::Runtime as Tokio;
use weir::model;
use weir::reconcile::validate::{Action, validate};
use weir::reconcile::validate_slices::{SliceContext, SlicePlan, plan};
use weir::runtime::{CallTiming, Guest, Limits, Runtime};
use weir_policy::testing;
use weir_policy::types as native;
use weir_policy::{DefaultPolicy, reconcile};

/// The allocator the `weir` binary runs with, so the native twin and validation are measured
/// as they run there.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Pod counts measured.
const SIZES: [usize; 3] = [0, 100, 1000];

/// The Service of `tests/bench/gen.py`: `bench/web`, ports `http` (target port name `http`)
/// and `metrics` (9090 → 9090).
fn bench_service() -> native::Service {
    let mut service = testing::service();
    service.namespace = "bench".into();
    service.name = "web".into();
    service.uid = "web-uid".into();
    service.labels = vec![testing::kv("app", "web")];
    service.cluster_ip = "10.96.0.20".into();
    service.cluster_ips = vec!["10.96.0.20".into()];
    service.ports = vec![
        native::ServicePort {
            name: "http".into(),
            protocol: "TCP".into(),
            port: 80,
            target_port: native::TargetPort::Name("http".into()),
            app_protocol: None,
        },
        native::ServicePort {
            name: "metrics".into(),
            protocol: "TCP".into(),
            port: 9090,
            target_port: native::TargetPort::Number(9090),
            app_protocol: None,
        },
    ];
    service
}

/// Pod `web-NNN` of `tests/bench/gen.py`: on `node-(i % 10)`, IP `10.1.(i/250).(i%250+1)`,
/// a named container port `http` 8080, not ready when `i % 10 == 9`.
fn bench_pod(i: usize) -> native::Pod {
    let name = format!("web-{i:03}");
    let ip = format!("10.1.{}.{}", i / 250, i % 250 + 1);
    let mut pod = testing::pod(&name, &ip, i % 10 != 9);
    pod.namespace = "bench".into();
    pod.labels = vec![
        testing::kv("app", "web"),
        testing::kv("pod-template-hash", "5d8f7c"),
    ];
    pod.node_name = format!("node-{}", i % 10);
    pod.container_ports = vec![native::ContainerPort {
        name: "http".into(),
        port: 8080,
        protocol: "TCP".into(),
    }];
    pod
}

fn native_request(pods: usize) -> native::Request {
    testing::request(bench_service(), (0..pods).map(bench_pod).collect())
}

// The SDK's and the host's bindings are generated from the same WIT file but are distinct
// Rust types; these copy one into the other, field by field.

fn kvs(list: &[native::KeyValue]) -> Vec<model::KeyValue> {
    list.iter()
        .map(|kv| model::KeyValue {
            key: kv.key.clone(),
            value: kv.value.clone(),
        })
        .collect()
}

fn to_wit_service(s: &native::Service) -> model::Service {
    model::Service {
        namespace: s.namespace.clone(),
        name: s.name.clone(),
        uid: s.uid.clone(),
        labels: kvs(&s.labels),
        annotations: kvs(&s.annotations),
        creation_timestamp: s.creation_timestamp.clone(),
        selector: s.selector.as_deref().map(kvs),
        service_type: s.service_type.clone(),
        cluster_ip: s.cluster_ip.clone(),
        cluster_ips: s.cluster_ips.clone(),
        ip_families: s.ip_families.clone(),
        ports: s
            .ports
            .iter()
            .map(|p| model::ServicePort {
                name: p.name.clone(),
                protocol: p.protocol.clone(),
                port: p.port,
                target_port: match &p.target_port {
                    native::TargetPort::Number(n) => model::TargetPort::Number(*n),
                    native::TargetPort::Name(n) => model::TargetPort::Name(n.clone()),
                },
                app_protocol: p.app_protocol.clone(),
            })
            .collect(),
        publish_not_ready_addresses: s.publish_not_ready_addresses,
        traffic_distribution: s.traffic_distribution.clone(),
        deleting: s.deleting,
    }
}

fn to_wit_pod(p: &native::Pod) -> model::Pod {
    model::Pod {
        namespace: p.namespace.clone(),
        name: p.name.clone(),
        uid: p.uid.clone(),
        labels: kvs(&p.labels),
        annotations: kvs(&p.annotations),
        node_name: p.node_name.clone(),
        hostname: p.hostname.clone(),
        subdomain: p.subdomain.clone(),
        pod_ip: p.pod_ip.clone(),
        pod_ips: p.pod_ips.clone(),
        phase: p.phase.clone(),
        conditions: p
            .conditions
            .iter()
            .map(|c| model::PodCondition {
                condition_type: c.condition_type.clone(),
                status: c.status.clone(),
                last_transition_time: c.last_transition_time.clone(),
            })
            .collect(),
        terminating: p.terminating,
        node_exists: p.node_exists,
        zone: p.zone.clone(),
        container_ports: p
            .container_ports
            .iter()
            .map(|c| model::ContainerPort {
                name: c.name.clone(),
                port: c.port,
                protocol: c.protocol.clone(),
            })
            .collect(),
    }
}

fn to_wit_endpoints(e: &native::Endpoints) -> model::Endpoints {
    let addresses = |list: &[native::EndpointAddress]| -> Vec<model::EndpointAddress> {
        list.iter()
            .map(|a| model::EndpointAddress {
                ip: a.ip.clone(),
                hostname: a.hostname.clone(),
                node_name: a.node_name.clone(),
                target_ref: a.target_ref.as_ref().map(|r| model::ObjectReference {
                    kind: r.kind.clone(),
                    namespace: r.namespace.clone(),
                    name: r.name.clone(),
                    uid: r.uid.clone(),
                    api_version: r.api_version.clone(),
                    field_path: r.field_path.clone(),
                }),
            })
            .collect()
    };
    model::Endpoints {
        namespace: e.namespace.clone(),
        name: e.name.clone(),
        labels: kvs(&e.labels),
        annotations: kvs(&e.annotations),
        resource_version: e.resource_version.clone(),
        subsets: e
            .subsets
            .iter()
            .map(|s| model::EndpointSubset {
                addresses: addresses(&s.addresses),
                not_ready_addresses: addresses(&s.not_ready_addresses),
                ports: s
                    .ports
                    .iter()
                    .map(|p| model::EndpointPort {
                        name: p.name.clone(),
                        port: p.port,
                        protocol: p.protocol.clone(),
                        app_protocol: p.app_protocol.clone(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// The native request as the host's request, field by field.
fn to_wit_request(r: &native::Request) -> model::Request {
    assert!(
        r.endpoint_slices.is_empty() && r.zone_capacities.is_none(),
        "the bench's requests carry no stored slices and no zone capacities"
    );
    model::Request {
        namespace: r.namespace.clone(),
        name: r.name.clone(),
        service: r.service.as_ref().map(to_wit_service),
        pods: r.pods.iter().map(to_wit_pod).collect(),
        current: r.current.as_ref().map(to_wit_endpoints),
        trigger_time: r.trigger_time.clone(),
        config: r.config.clone(),
        endpoint_slices: Vec::new(),
        max_endpoints_per_slice: r.max_endpoints_per_slice,
        zone_capacities: None,
        manage: model::Outputs {
            endpoints: r.manage.endpoints,
            endpoint_slices: r.manage.endpoint_slices,
        },
    }
}

/// One request in both forms.
struct Case {
    pods: usize,
    native: native::Request,
    wasm: model::Request,
}

impl Case {
    fn new(pods: usize) -> Case {
        let mut native = native_request(pods);
        // `WEIR_BENCH_MANAGE=endpoints` leaves the slices out, so two profiles show what they
        // add (the question of `weir bench`'s "EndpointSlices add" line, one level deeper).
        if std::env::var("WEIR_BENCH_MANAGE").as_deref() == Ok("endpoints") {
            native.manage.endpoint_slices = false;
        }
        let wasm = to_wit_request(&native);
        Case { pods, native, wasm }
    }
}

/// Per-call phase samples of the wasm guest.
#[derive(Default)]
struct Phases {
    instantiate: Vec<Duration>,
    call: Vec<Duration>,
    release: Vec<Duration>,
    validate: Vec<Duration>,
    total: Vec<Duration>,
}

fn native_call(case: &Case) -> native::Decision {
    reconcile(&DefaultPolicy::default(), black_box(&case.native)).expect("native reconcile")
}

/// One wasm call as the controller makes it: fresh instance, reconcile, validation of both
/// outputs (the contract checks and the conversion to the objects to write).
fn wasm_call(rt: &Tokio, guest: &Guest, case: &Case) -> (CallTiming, Duration) {
    let (result, timing) = rt.block_on(guest.call_timed(black_box(&case.wasm)));
    let decision = result.expect("guest call");
    let started = Instant::now();
    black_box(check(guest, case, decision));
    let validated = started.elapsed();
    (timing, validated)
}

/// The host's checks of a decision, as the controller's sync makes them for a Service with
/// no stored Endpoints or slices.
fn check(guest: &Guest, case: &Case, decision: model::Decision) -> (Action, SlicePlan) {
    let request = &case.wasm;
    let action = validate(
        &request.namespace,
        &request.name,
        decision.endpoints,
        None,
        guest.limits().max_addresses,
    )
    .expect("valid Endpoints decision");
    let ctx = SliceContext {
        namespace: &request.namespace,
        name: &request.name,
        service_uid: request.service.as_ref().map(|s| s.uid.as_str()),
        stored: &[],
        max_endpoints_per_slice: request.max_endpoints_per_slice as usize,
        pods: &request.pods,
    };
    let plan = plan(&ctx, decision.slices).expect("valid slice decision");
    (action, plan)
}

/// Makes `calls` calls of one benchmark; the callgrind mode counts instructions in here.
#[inline(never)]
fn timed_calls(rt: &Tokio, guest: &Guest, case: &Case, wasm: bool, calls: usize) {
    for _ in 0..calls {
        if wasm {
            black_box(wasm_call(rt, guest, case));
        } else {
            black_box(native_call(case));
        }
    }
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

fn show(d: Duration) -> String {
    let micros = d.as_secs_f64() * 1e6;
    if micros < 1.0 {
        format!("{:.0} ns", micros * 1000.0)
    } else if micros < 10.0 {
        format!("{micros:.2} µs")
    } else if micros < 10_000.0 {
        format!("{micros:.1} µs")
    } else {
        format!("{:.2} ms", micros / 1000.0)
    }
}

fn main() {
    // The default memory cap, but a deadline that a busy machine cannot trip: this measures
    // cost, and a 100 ms deadline missed under load would only abort the run.
    let limits = Limits {
        deadline: Duration::from_secs(10),
        ..Limits::default()
    };
    // `WEIR_BENCH_PERFMAP=1` names the guest's compiled functions for `perf report` (wasmtime
    // writes /tmp/perf-PID.map); the engine is otherwise `Runtime::new`'s, pooling allocator
    // included, so the bench measures what the controller runs.
    let mut config = weir::runtime::pooled(limits);
    if std::env::var_os("WEIR_BENCH_PERFMAP").is_some() {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    let runtime = Runtime::with_config(limits, config).expect("engine");
    // `WEIR_BENCH_GUEST=path.wasm` measures another build of the default policy (say, with
    // another allocator) against the same native twin.
    let guest = match std::env::var_os("WEIR_BENCH_GUEST") {
        Some(path) => runtime
            .load(&std::fs::read(&path).expect("reading WEIR_BENCH_GUEST"))
            .expect("loading WEIR_BENCH_GUEST"),
        None => runtime.default_guest().expect("default guest"),
    };
    // Guest calls are async (the deadline is a tokio timeout); one thread drives them.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let cases: Vec<Case> = SIZES.iter().map(|&n| Case::new(n)).collect();

    // Faster must not mean different: both sides decide the same, on every size.
    for case in &cases {
        // The two sides' types are generated separately from the same WIT (wit-bindgen in the
        // SDK, wasmtime's bindgen in the host); their Debug forms print the same fields the
        // same way, so equal text is an equal decision.
        let want = format!("{:?}", native_call(case));
        let got = rt.block_on(guest.call(&case.wasm)).expect("guest call");
        assert_eq!(
            want,
            format!("{got:?}"),
            "native and wasm decisions differ at {} pods",
            case.pods
        );
        check(&guest, case, got);
    }

    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if let Ok(calls) = std::env::var("WEIR_BENCH_CALLS") {
        let calls: usize = calls.parse().expect("WEIR_BENCH_CALLS is a number");
        for case in &cases {
            for wasm in [false, true] {
                let id = format!("{}/{}", if wasm { "wasm" } else { "native" }, case.pods);
                if filters.contains(&id) {
                    timed_calls(&rt, &guest, case, wasm, calls);
                }
            }
        }
        return;
    }

    let mut criterion = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();
    let mut rows = Vec::new();
    for case in &cases {
        let native_samples = RefCell::new(Vec::new());
        criterion.bench_function(&format!("native/{}", case.pods), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut samples = native_samples.borrow_mut();
                for _ in 0..iters {
                    let started = Instant::now();
                    black_box(native_call(case));
                    let elapsed = started.elapsed();
                    samples.push(elapsed);
                    total += elapsed;
                }
                total
            })
        });
        let phases = RefCell::new(Phases::default());
        criterion.bench_function(&format!("wasm/{}", case.pods), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut phases = phases.borrow_mut();
                for _ in 0..iters {
                    let (timing, validate) = wasm_call(&rt, &guest, case);
                    let sum = timing.total() + validate;
                    phases.instantiate.push(timing.instantiate);
                    phases.call.push(timing.call);
                    phases.release.push(timing.release);
                    phases.validate.push(validate);
                    phases.total.push(sum);
                    total += sum;
                }
                total
            })
        });
        rows.push((case.pods, native_samples.into_inner(), phases.into_inner()));
    }
    criterion.final_summary();

    println!(
        "\n## Default policy per call: native twin and wasm guest (medians of every timed call)\n"
    );
    println!(
        "| pods | native | wasm instantiate | wasm call | wasm release | wasm validate | validate per address | wasm total | wasm/native |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (pods, mut native, mut phases) in rows {
        if native.is_empty() || phases.total.is_empty() {
            continue; // filtered out
        }
        let native = median(&mut native);
        let total = median(&mut phases.total);
        let validated = median(&mut phases.validate);
        // Each pod's address is checked once per output.
        let per_address = match pods {
            0 => "-".to_string(),
            n => show(validated / (2 * n as u32)),
        };
        println!(
            "| {pods} | {} | {} | {} | {} | {} | {per_address} | {} | {:.1}× |",
            show(native),
            show(median(&mut phases.instantiate)),
            show(median(&mut phases.call)),
            show(median(&mut phases.release)),
            show(validated),
            show(total),
            total.as_secs_f64() / native.as_secs_f64()
        );
    }
}
