use weir_policy::testing::{pod, request, service};

use super::*;

fn change(candidate: u32) -> hooks::Change {
    hooks::Change {
        candidate,
        include: false,
        ports: None,
        endpoint: None,
    }
}

#[test]
fn candidates_without_a_change_keep_upstreams_decision() {
    let got = choices(vec![change(2)], 3).unwrap();
    assert_eq!(got[0], Choice::UNCHANGED);
    assert_eq!(got[1], Choice::UNCHANGED);
    assert!(!got[2].include);
}

#[test]
fn a_change_must_name_one_candidate_once() {
    let err = choices(vec![change(3)], 3).unwrap_err();
    assert!(err.contains("candidate 3, but the pass has 3"), "{err}");
    let err = choices(vec![change(1), change(1)], 3).unwrap_err();
    assert!(err.contains("candidate 1 twice"), "{err}");
}

#[test]
fn candidates_cross_as_parallel_lists_with_only_what_is_read() {
    let mut terminating = pod("t", "10.0.0.2", true);
    terminating.terminating = true;
    let req = request(
        service(),
        vec![
            pod("a", "10.0.0.1", true),
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
    let index = (0u32..).zip(&req.pods).map(|(i, p)| (key(p), i)).collect();

    let mut read = reads::everything();
    let all = to_hooks(&found, &read, &index).unwrap();
    assert_eq!(all.pods, [0, 1, 2]);
    assert_eq!(
        all.endpoints,
        [
            ENDPOINT_PRESENT | ENDPOINT_READY | ENDPOINT_SERVING,
            ENDPOINT_PRESENT | ENDPOINT_SERVING | ENDPOINT_TERMINATING,
            0,
        ],
        "ready; terminating (serving, not ready in a slice); no IPv4 address, no endpoint"
    );
    assert_eq!(all.ports.len(), 3);
    assert_eq!(all.ports[0][0].port, 8080);
    assert_eq!(all.addresses[0].as_ref().unwrap().ip, "10.0.0.1");
    assert!(all.addresses[2].is_none());

    read.ports = false;
    read.addresses = false;
    let lean = to_hooks(&found, &read, &index).unwrap();
    assert_eq!((lean.pods, lean.endpoints), (all.pods, all.endpoints));
    assert!(lean.ports.is_empty() && lean.addresses.is_empty());
}
