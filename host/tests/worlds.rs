//! Both contract versions: a `weir:endpoints@0.1.0` guest and a `@0.2.0` guest load, run
//! through either call API, and replace each other in the active slot. The only tests of the
//! 0.1.0 call API: every other test calls guests as the controller does, through 0.2.0.

mod support;

use std::process::Command;

use support::{request, scratch_dir, test_guest, test_guest_bytes};
use weir::model::EndpointsDecision;
use weir::runtime::{ActiveGuest, CallError, Limits, Runtime, World};

/// The ready and not-ready IPs a create or update writes, sorted.
fn ips(decision: &EndpointsDecision) -> (Vec<String>, Vec<String>) {
    let (EndpointsDecision::Create(e) | EndpointsDecision::Update(e)) = decision else {
        panic!("expected a write, got {decision:?}");
    };
    let mut ready: Vec<String> = e
        .subsets
        .iter()
        .flat_map(|s| s.addresses.iter().map(|a| a.ip.clone()))
        .collect();
    let mut not_ready: Vec<String> = e
        .subsets
        .iter()
        .flat_map(|s| s.not_ready_addresses.iter().map(|a| a.ip.clone()))
        .collect();
    ready.sort();
    not_ready.sort();
    (ready, not_ready)
}

fn runtime() -> Runtime {
    Runtime::new(Limits::default()).expect("engine")
}

#[test]
fn both_worlds_load_and_agree_on_the_endpoints() {
    let runtime = runtime();
    let v1 = runtime
        .load(&test_guest_bytes("v0-1-default"))
        .expect("0.1.0 guest");
    let v2 = runtime.default_guest().expect("default guest");
    assert_eq!(v1.world(), World::V0_1);
    assert_eq!(v2.world(), World::V0_2);

    let req = request("ns", "svc", 3, &[]);
    // The 0.1.0 guest decides the Endpoints of the same request, and no slices.
    let d1 = v1.call_blocking(&req).expect("0.1.0 call");
    let d2 = v2.call_blocking(&req).expect("0.2.0 call");
    assert_eq!(ips(&d1.endpoints), ips(&d2.endpoints));
    assert_eq!(ips(&d1.endpoints).0.len() + ips(&d1.endpoints).1.len(), 3);
    assert!(d1.slices.create.is_empty());
    assert_eq!(d2.slices.create.len(), 1, "{:?}", d2.slices);
}

#[test]
fn validate_config_runs_only_in_0_2_guests() {
    let runtime = runtime();
    let v2 = runtime.default_guest().expect("default guest");
    v2.validate_config_blocking("")
        .expect("empty config is the default");
    match v2.validate_config_blocking(r#"{"unknown": 1}"#) {
        Err(CallError::Guest(message)) => assert!(message.contains("unknown"), "{message}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let v1 = runtime
        .load(&test_guest_bytes("v0-1-default"))
        .expect("0.1.0 guest");
    assert_eq!(v1.validate_config_blocking(r#"{"unknown": 1}"#), Ok(()));
}

#[test]
fn swapping_between_worlds_keeps_serving() {
    let runtime = runtime();
    let v1 = runtime
        .load(&test_guest_bytes("v0-1-default"))
        .expect("0.1.0 guest");
    let v2 = runtime.default_guest().expect("default guest");
    let active = ActiveGuest::new(v2.clone());
    let req = request("ns", "svc", 2, &[]);
    let before = active.current().call_blocking(&req).expect("0.2.0");
    let old = active.swap(v1);
    assert_eq!(old.world(), World::V0_2);
    assert_eq!(active.current().world(), World::V0_1);
    let after = active.current().call_blocking(&req).expect("0.1.0");
    assert_eq!(ips(&after.endpoints), ips(&before.endpoints));
    active.swap(v2);
    assert_eq!(active.current().world(), World::V0_2);
}

#[test]
fn a_0_1_guest_on_a_slice_case_says_it_cannot_compute_slices() {
    let dir = scratch_dir("worlds-slice-case");
    let case = dir.join("case.yaml");
    std::fs::write(
        &case,
        r#"
key: ns/foo
service:
  metadata: {name: foo, namespace: ns, uid: ns-foo}
  spec: {selector: {app: foo}, clusterIP: 10.0.0.10, ipFamilies: [IPv4], ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]}
expect:
  endpointSlices:
    creates: 1
"#,
    )
    .unwrap();
    let guest = test_guest("v0-1-default");
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["test", "--guest"])
        .arg(&guest)
        .arg(&case)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("weir:endpoints@0.1.0 (Endpoints only)"),
        "{stdout}"
    );
    // The default guest passes the same case.
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .arg("test")
        .arg(&case)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The swap gate (also run at `weir run` start) asks a 0.2.0 candidate's `validate-config`
/// about the configuration it would run with: a refused one stops the candidate, with the
/// `config` refusal reason that the swap metric, log and history record, and the policy's
/// own message. A 0.1.0 candidate has no such export and is judged by its calls alone.
#[test]
fn the_swap_gate_refuses_a_candidate_whose_validate_config_refuses_the_config() {
    use weir::swap::{SwapConfig, validate_candidate};
    let runtime = runtime();
    let default = weir::runtime::DEFAULT_GUEST.to_vec();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let refusal = rt
        .block_on(validate_candidate(
            &runtime,
            &SwapConfig::default(),
            default.clone(),
            r#"{"unknownKnob": 1}"#,
        ))
        .expect_err("the default policy refuses an unknown field");
    assert_eq!(refusal.reason(), "config", "{refusal}");
    let message = refusal.to_string();
    assert!(
        message.contains("validate-config") && message.contains("unknownKnob"),
        "{message}"
    );
    rt.block_on(validate_candidate(
        &runtime,
        &SwapConfig::default(),
        default,
        "{}",
    ))
    .expect("an accepted configuration passes the gate");
    // A 0.1.0 candidate: no validate-config; only its reconcile calls can refuse.
    let v1 = test_guest_bytes("v0-1-default");
    let checked = rt.block_on(validate_candidate(
        &runtime,
        &SwapConfig::default(),
        v1.clone(),
        "{}",
    ));
    assert!(checked.is_ok(), "{:?}", checked.err());
    // This one reads no configuration, so no call refuses it and the candidate passes: no
    // `validate-config` stood in the way.
    let checked = rt.block_on(validate_candidate(
        &runtime,
        &SwapConfig::default(),
        v1,
        r#"{"unknownKnob": 1}"#,
    ));
    assert!(checked.is_ok(), "{:?}", checked.err());
}
