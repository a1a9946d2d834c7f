use weir_policy::testing::{pod, request, service};

use super::*;

fn change(pod: u32) -> hooks::Change {
    hooks::Change {
        pod,
        include: false,
        ports: None,
        endpoint: None,
    }
}

/// A request of `pods` pods of which those at `candidates` are candidates (the others have
/// finished), and its Endpoints pass.
fn request_with(pods: usize, candidates: &[usize]) -> weir_policy::types::Request {
    let pods = (0..pods)
        .map(|i| {
            let mut p = pod(&format!("p{i}"), &format!("10.0.0.{}", i + 1), true);
            if !candidates.contains(&i) {
                p.phase = "Succeeded".into();
            }
            p
        })
        .collect();
    request(service(), pods)
}

fn endpoints_pass(req: &weir_policy::types::Request) -> Context<'_> {
    Context {
        request: req,
        service: req.service.as_ref().unwrap(),
        family: Family::V4,
        output: Output::Endpoints,
    }
}

#[test]
fn candidates_without_a_change_keep_upstreams_decision() {
    // Candidates are pods 0, 2 and 5 of the request.
    let req = request_with(6, &[0, 2, 5]);
    let found = batch::candidates(&endpoints_pass(&req));
    let got = choices(vec![change(5)], &found, 6).unwrap();
    assert_eq!(got[0], Choice::UNCHANGED);
    assert_eq!(got[1], Choice::UNCHANGED);
    assert!(!got[2].include);
}

#[test]
fn a_change_must_name_a_candidate_once() {
    let req = request_with(3, &[0, 2]);
    let found = batch::candidates(&endpoints_pass(&req));
    let err = choices(vec![change(1)], &found, 3).unwrap_err();
    assert!(err.contains("pod 1, which is not a candidate"), "{err}");
    let err = choices(vec![change(7)], &found, 3).unwrap_err();
    assert!(err.contains("pod 7, which is not a candidate"), "{err}");
    let err = choices(vec![change(2), change(2)], &found, 3).unwrap_err();
    assert!(err.contains("pod 2 twice"), "{err}");
}

#[test]
fn a_pass_crosses_as_a_byte_per_pod_with_only_what_is_read() {
    let mut terminating = pod("t", "10.0.0.2", true);
    terminating.terminating = true;
    let mut gone = pod("gone", "10.0.0.3", true);
    gone.phase = "Succeeded".into();
    let req = request(
        service(),
        vec![
            pod("a", "10.0.0.1", true),
            gone,
            terminating,
            pod("six", "fd00::6", false),
        ],
    );
    let ctx = Context {
        request: &req,
        service: req.service.as_ref().unwrap(),
        family: Family::V4,
        output: Output::EndpointSlices,
    };
    let found = batch::candidates(&ctx);
    let at: Vec<usize> = found.iter().map(|c| c.index).collect();
    assert_eq!(at, [0, 2, 3], "the terminal pod is no candidate");

    let mut read = reads::everything();
    let all = to_hooks(&found, req.pods.len(), &read);
    assert_eq!(
        all.pods,
        [
            CANDIDATE | ENDPOINT_PRESENT | ENDPOINT_READY | ENDPOINT_SERVING,
            0,
            CANDIDATE | ENDPOINT_PRESENT | ENDPOINT_SERVING | ENDPOINT_TERMINATING,
            CANDIDATE,
        ],
        "ready; no candidate; terminating (serving, not ready in a slice); no IPv4 address"
    );
    assert_eq!(all.ports.len(), 4);
    assert_eq!(all.ports[0][0].port, 8080);
    assert!(all.ports[1].is_empty());
    assert_eq!(all.addresses[0].as_ref().unwrap().ip, "10.0.0.1");
    assert!(all.addresses[1].is_none() && all.addresses[3].is_none());

    read.ports = false;
    read.addresses = false;
    let lean = to_hooks(&found, req.pods.len(), &read);
    assert_eq!(lean.pods, all.pods);
    assert!(lean.ports.is_empty() && lean.addresses.is_empty());
}
