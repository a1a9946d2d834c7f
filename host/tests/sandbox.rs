//! Containment: misbehaving guests fail only their own call, with the right error, within the
//! limits, and the host (and the same guest) keeps serving. Every call is the one the
//! controller makes: a 0.2.0 request managing both outputs.

mod support;

use std::time::{Duration, Instant};

use support::{request, test_guest_bytes};
use weir::model::EndpointsDecision;
use weir::reconcile::validate::validate;
use weir::runtime::{CallError, Guest, Limits, LoadError, Runtime};

fn runtime(deadline: Duration, memory: usize) -> Runtime {
    Runtime::new(Limits {
        deadline,
        memory,
        ..Limits::default()
    })
    .expect("engine")
}

fn load(runtime: &Runtime, name: &str) -> Guest {
    runtime
        .load(&test_guest_bytes(name))
        .unwrap_or_else(|e| panic!("loading test guest {name}: {e}"))
}

/// Scheduling slack on top of the bound: the epoch thread and the test share two busy cores.
const SLACK: Duration = Duration::from_millis(100);

#[test]
fn looping_guest_times_out_within_twice_the_deadline_every_time() {
    let deadline = Duration::from_millis(200);
    let runtime = runtime(deadline, 64 << 20);
    let guest = load(&runtime, "loop-forever");
    // Twice on the same guest: the second call must get a full, fresh deadline, not inherit
    // the first call's expired one (or run forever).
    for attempt in 0..2 {
        let started = Instant::now();
        let result = guest.call_blocking(&request("ns", "web", 3, &[]));
        let elapsed = started.elapsed();
        assert_eq!(
            result,
            Err(CallError::Timeout(deadline)),
            "attempt {attempt}"
        );
        assert!(
            elapsed < 2 * deadline + SLACK,
            "attempt {attempt}: interrupted after {elapsed:?}, bound {:?}",
            2 * deadline + SLACK
        );
        // Not cut short either (by an epoch left over from the previous call, say). The
        // deadline is counted in 5 ms epoch ticks, so only a coarse lower bound holds.
        assert!(
            elapsed >= deadline / 2,
            "attempt {attempt}: timed out after {elapsed:?}, long before the {deadline:?} deadline"
        );
    }
}

#[test]
fn allocating_guest_is_stopped_at_the_memory_cap() {
    let cap = 16 << 20;
    // A generous deadline, so that the memory cap is what stops the guest.
    let runtime = runtime(Duration::from_secs(5), cap);
    let guest = load(&runtime, "alloc-forever");
    for attempt in 0..2 {
        assert_eq!(
            guest.call_blocking(&request("ns", "web", 1, &[])),
            Err(CallError::OutOfMemory(cap)),
            "attempt {attempt}"
        );
    }
}

/// Every call gets a fresh instance: a static the guest increments and the heap it leaks into
/// are new each time, on one thread and on several at once.
#[test]
fn no_state_survives_from_one_call_to_the_next() {
    let runtime = runtime(Duration::from_secs(5), 64 << 20);
    let guest = load(&runtime, "remember");
    let report = |guest: &Guest| match guest.call_blocking(&request("ns", "web", 2, &[])) {
        Err(CallError::Guest(message)) => message,
        other => panic!("the remember guest always fails on purpose: {other:?}"),
    };
    let first = report(&guest);
    assert!(first.contains("calls=1 heap=0x"), "{first}");
    for call in 0..3 {
        assert_eq!(report(&guest), first, "sequential call {call}");
    }
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| (0..3).map(|_| report(&guest)).collect::<Vec<_>>()))
            .collect();
        for thread in threads {
            for message in thread.join().expect("thread") {
                assert_eq!(message, first, "concurrent call");
            }
        }
    });
}

#[test]
fn panicking_guest_traps_with_its_panic_message() {
    let runtime = runtime(Duration::from_secs(5), 64 << 20);
    let guest = load(&runtime, "trap");
    match guest.call_blocking(&request("ns", "web", 1, &[])) {
        Err(CallError::Trap(message)) => assert!(
            message.contains("weir-test-trap: deliberate panic reconciling ns/web"),
            "the trap does not carry the panic message: {message}"
        ),
        other => panic!("expected a trap, got {other:?}"),
    }
}

/// Faults in some calls (trap, timeout, memory) while other calls, on the same guests and on
/// others of the same runtime, run on several threads at once: every good call succeeds.
#[test]
fn faults_fail_only_their_own_call_while_others_keep_being_served() {
    let deadline = Duration::from_millis(500);
    let cap = 16 << 20;
    let runtime = runtime(deadline, cap);
    let default = runtime.default_guest().expect("default guest");
    let on_label = load(&runtime, "trap-on-label");
    let looping = load(&runtime, "loop-forever");
    let allocating = load(&runtime, "alloc-forever");

    let good = request("ns", "web", 5, &[]);
    let marked = request("ns", "web", 5, &[("weir.test/trap", "true")]);
    let expected = default.call_blocking(&good).expect("default guest serves");
    assert!(
        matches!(expected.endpoints, EndpointsDecision::Create(_)),
        "{expected:?}"
    );
    assert_eq!(expected.slices.create.len(), 1, "{expected:?}");

    std::thread::scope(|scope| {
        for thread in 0..4 {
            let (default, on_label, looping, allocating) =
                (&default, &on_label, &looping, &allocating);
            let (good, marked, expected) = (&good, &marked, &expected);
            scope.spawn(move || {
                // One slow fault per thread, alternating kinds, between good calls.
                let slow_fault = if thread % 2 == 0 { looping } else { allocating };
                for round in 0..3 {
                    match on_label.call_blocking(marked) {
                        Err(CallError::Trap(m)) => {
                            assert!(m.contains("weir.test/trap=true"), "{m}")
                        }
                        other => panic!("thread {thread} round {round}: marked: {other:?}"),
                    }
                    assert_eq!(
                        on_label.call_blocking(good).as_ref(),
                        Ok(expected),
                        "thread {thread} round {round}: the same guest after its trap"
                    );
                    if round == 1 {
                        let fault = slow_fault.call_blocking(good).unwrap_err();
                        assert!(
                            matches!(fault, CallError::Timeout(_) | CallError::OutOfMemory(_)),
                            "thread {thread}: {fault:?}"
                        );
                    }
                    assert_eq!(
                        default.call_blocking(good).as_ref(),
                        Ok(expected),
                        "thread {thread} round {round}: the default guest"
                    );
                }
            });
        }
    });
}

#[test]
fn foundation_done_when_a_decision_for_another_service_is_refused_by_validation() {
    let runtime = runtime(Duration::from_secs(5), 64 << 20);
    let guest = load(&runtime, "wrong-name");
    let request = request("ns", "web", 3, &[]);
    let decision = guest
        .call_blocking(&request)
        .expect("the guest itself succeeds");
    match &decision.endpoints {
        EndpointsDecision::Create(e) => assert_eq!(e.name, "web-other"),
        other => panic!("expected a create, got {other:?}"),
    }
    // Checked as the controller checks the Endpoints part of a 0.2.0 decision.
    let endpoints = decision.endpoints;
    let violation = validate("ns", "web", endpoints, None, 10_000).unwrap_err();
    assert!(
        violation
            .to_string()
            .contains("Endpoints ns/web-other written for Service ns/web"),
        "{violation}"
    );
}

#[test]
fn component_of_another_contract_version_is_refused_naming_the_supported_one() {
    let runtime = runtime(Duration::from_secs(5), 64 << 20);
    let error = runtime.load(&test_guest_bytes("wrong-world")).unwrap_err();
    assert!(
        matches!(&error, LoadError::UnsupportedVersion { found } if found == "weir:endpoints@0.9.0"),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("weir:endpoints@0.9.0") && message.contains("weir:endpoints@0.1.0"),
        "{message}"
    );
}

#[test]
fn truncated_components_core_modules_and_garbage_fail_to_compile() {
    let runtime = runtime(Duration::from_secs(5), 64 << 20);
    let default = weir::runtime::DEFAULT_GUEST;
    // The smallest valid core module: magic and version 1, no sections.
    let core_module: &[u8] = b"\0asm\x01\0\0\0";
    let inputs: [(&str, &[u8]); 4] = [
        ("truncated component", &default[..default.len() / 2]),
        ("core module", core_module),
        ("garbage", b"definitely not wasm"),
        ("empty", b""),
    ];
    for (what, bytes) in inputs {
        match runtime.load(bytes) {
            Err(LoadError::Compile(message)) => {
                assert!(!message.is_empty(), "{what}: empty message")
            }
            other => panic!("{what}: expected a compile error, got {other:?}"),
        }
    }
    // The component header alone is a valid, empty component: it compiles, and is refused
    // for what it lacks.
    match runtime.load(&default[..8]) {
        Err(LoadError::WrongWorld(message)) => assert!(message.contains("reconcile"), "{message}"),
        other => panic!("empty component: expected WrongWorld, got {other:?}"),
    }
}

#[test]
fn guests_see_no_environment_filesystem_or_clock() {
    // Something the guest would see if the host's environment leaked through.
    assert!(std::env::var("CARGO_PKG_NAME").is_ok());
    let runtime = runtime(Duration::from_secs(5), 64 << 20);
    let guest = load(&runtime, "probe");
    let report = match guest.call_blocking(&request("ns", "web", 1, &[])) {
        Err(CallError::Guest(report)) => report,
        other => panic!("the probe reports through a guest error, got {other:?}"),
    };
    let seen: serde_json::Value = serde_json::from_str(&report).expect(&report);
    assert_eq!(seen["env"], serde_json::json!([]), "{report}");
    assert_eq!(seen["args"], serde_json::json!([]), "{report}");
    assert!(
        seen["fs"].as_str().is_some_and(|s| s.starts_with("error")),
        "{report}"
    );
    assert_eq!(
        seen["wall_clock_secs"], 0,
        "wall clock not at the Unix epoch: {report}"
    );
    assert_eq!(
        seen["monotonic_elapsed_ns"], 0,
        "monotonic clock moves: {report}"
    );
}

/// The swap gate judges a candidate as the controller would: both outputs go through the
/// controller's own checks, so a candidate whose slices are for another Service is refused
/// even when its Endpoints are right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_swap_gate_refuses_a_candidate_whose_slices_are_for_another_service() {
    use weir::swap::{SwapConfig, validate_candidate};
    let runtime = runtime(Duration::from_secs(5), 64 << 20);
    let config = SwapConfig::default();
    let bytes = test_guest_bytes("wrong-name");
    let refusal = validate_candidate(&runtime, &config, bytes.clone(), "slices")
        .await
        .expect_err("slices for another Service");
    assert_eq!(refusal.reason(), "config", "{refusal}");
    assert!(
        refusal
            .to_string()
            .contains("labels[kubernetes.io/service-name]: \"probe-other\""),
        "{refusal}"
    );
    let refusal = validate_candidate(&runtime, &config, bytes, "")
        .await
        .expect_err("Endpoints for another Service");
    assert!(refusal.to_string().contains("probe-other"), "{refusal}");
    validate_candidate(&runtime, &config, weir::runtime::DEFAULT_GUEST.to_vec(), "")
        .await
        .expect("the default guest passes the same gate");
}
