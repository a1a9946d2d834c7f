use std::cell::RefCell;

use super::*;
use crate::testing::{kv, pod, published, request, service};
use crate::types::Service;
use crate::{DefaultPolicy, reconcile};

/// A pass policy that answers with `answer` and records the passes it was asked about.
struct Recorder<F> {
    answer: F,
    passes: RefCell<Vec<(Output, Family, Vec<String>)>>,
}

impl<F> Recorder<F>
where
    F: Fn(&Context<'_>, &[Candidate<'_>]) -> Result<Vec<Choice>, String>,
{
    fn new(answer: F) -> Self {
        Recorder {
            answer,
            passes: RefCell::new(Vec::new()),
        }
    }
}

impl<F> PassPolicy for Recorder<F>
where
    F: Fn(&Context<'_>, &[Candidate<'_>]) -> Result<Vec<Choice>, String>,
{
    fn decide(
        &self,
        ctx: &Context<'_>,
        candidates: &[Candidate<'_>],
    ) -> Result<Vec<Choice>, String> {
        let names = candidates.iter().map(|c| c.pod.name.clone()).collect();
        self.passes
            .borrow_mut()
            .push((ctx.output, ctx.family, names));
        (self.answer)(ctx, candidates)
    }
}

fn unchanged(_: &Context<'_>, candidates: &[Candidate<'_>]) -> Result<Vec<Choice>, String> {
    Ok(candidates.iter().map(|_| Choice::UNCHANGED).collect())
}

/// The choice that spells out upstream's ports and endpoint for `candidate` instead of
/// leaving them unchanged.
fn echo(candidate: &Candidate<'_>) -> Choice {
    Choice {
        include: true,
        ports: Some(
            candidate
                .ports
                .iter()
                .cloned()
                .map(Port::into_owned)
                .collect(),
        ),
        endpoint: candidate.verdict.as_ref().map(|v| Endpoint {
            include: v.include,
            ready: v.ready,
            serving: v.serving,
            terminating: v.terminating,
            address: Some(v.address.clone().into_owned()),
        }),
    }
}

fn echoed(_: &Context<'_>, candidates: &[Candidate<'_>]) -> Result<Vec<Choice>, String> {
    Ok(candidates.iter().map(echo).collect())
}

#[test]
fn spelled_out_choices_equal_unchanged_ones() {
    let mut odd = pod("odd", "10.0.0.3", true);
    odd.hostname = "odd".into();
    odd.subdomain = "sub".into();
    let req = request(
        dual_stack(),
        vec![
            dual_pod("a", "10.0.0.1", Some("fd00::a"), true),
            dual_pod("b", "10.0.0.2", None, false),
            odd,
        ],
    );
    let spelled = reconcile_passes(&Recorder::new(echoed), &req).unwrap();
    let left = reconcile_passes(&Recorder::new(unchanged), &req).unwrap();
    assert_eq!(spelled, left);
    assert_eq!(left, reconcile(&DefaultPolicy::default(), &req).unwrap());
}

fn dual_stack() -> Service {
    let mut svc = service();
    svc.ip_families = vec!["IPv4".into(), "IPv6".into()];
    svc.cluster_ips = vec!["10.96.0.1".into(), "fd00::1".into()];
    svc
}

fn dual_pod(name: &str, v4: &str, v6: Option<&str>, ready: bool) -> Pod {
    let mut p = pod(name, v4, ready);
    p.pod_ips.extend(v6.map(String::from));
    p
}

#[test]
fn unchanged_choices_decide_as_upstream_with_one_call_per_pass() {
    let mut terminal = pod("gone", "10.0.0.9", true);
    terminal.phase = "Succeeded".into();
    let req = request(
        dual_stack(),
        vec![
            dual_pod("a", "10.0.0.1", Some("fd00::a"), true),
            dual_pod("b", "10.0.0.2", None, false),
            terminal,
        ],
    );
    let policy = Recorder::new(unchanged);
    let decision = reconcile_passes(&policy, &req).unwrap();
    assert_eq!(
        decision,
        reconcile(&DefaultPolicy::default(), &req).unwrap()
    );
    let ab = vec!["a".to_string(), "b".to_string()];
    assert_eq!(
        *policy.passes.borrow(),
        [
            (Output::Endpoints, Family::V4, ab.clone()),
            (Output::EndpointSlices, Family::V4, ab.clone()),
            (Output::EndpointSlices, Family::V6, ab),
        ],
        "one call per pass, with the pods upstream would publish (not the terminal one)"
    );
}

#[test]
fn candidates_carry_upstreams_ports_and_endpoint() {
    let req = request(dual_stack(), vec![dual_pod("a", "10.0.0.1", None, false)]);
    let svc = req.service.as_ref().unwrap();
    let ctx = Context {
        request: &req,
        service: svc,
        family: Family::V6,
        output: Output::EndpointSlices,
    };
    let found = candidates(&ctx);
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0]
            .ports
            .iter()
            .map(|p| (p.name(), p.port()))
            .collect::<Vec<_>>(),
        [("http", 8080)]
    );
    assert!(found[0].verdict.is_none(), "no IPv6 address, no endpoint");
    let ctx = Context {
        family: Family::V4,
        ..ctx
    };
    let verdict = candidates(&ctx)[0].verdict.clone().unwrap();
    assert_eq!(verdict.address.ip(), "10.0.0.1");
    assert!(!verdict.ready && !verdict.serving && !verdict.terminating);
}

#[test]
fn choices_mean_what_the_policy_hooks_mean() {
    let mut drained = pod("drained", "10.0.0.2", true);
    drained.annotations.push(kv("drain", "true"));
    let req = request(
        service(),
        vec![
            pod("a", "10.0.0.1", true),
            drained,
            pod("hidden", "10.0.0.3", true),
        ],
    );
    let policy = Recorder::new(|_: &Context<'_>, candidates: &[Candidate<'_>]| {
        Ok(candidates
            .iter()
            .map(|c| {
                let mut choice = echo(c);
                choice.include = c.pod.name != "hidden";
                if c.pod.annotation("drain") == Some("true")
                    && let Some(endpoint) = &mut choice.endpoint
                {
                    endpoint.ready = false;
                }
                if c.pod.name == "a" {
                    choice.ports.as_mut().unwrap()[0].port = 9090;
                    let endpoint = choice.endpoint.as_mut().unwrap();
                    endpoint.address.as_mut().unwrap().hostname = "alpha".into();
                }
                choice
            })
            .collect())
    });
    let decision = reconcile_passes(&policy, &req).unwrap();
    let out = published(&decision);
    assert_eq!(out.ready, ["a"]);
    assert_eq!(out.not_ready, ["drained"]);
    let EndpointsDecision::Create(endpoints) = &decision.endpoints else {
        panic!("expected a create: {:?}", decision.endpoints);
    };
    let a = endpoints
        .subsets
        .iter()
        .find(|s| s.addresses.iter().any(|x| x.ip == "10.0.0.1"))
        .unwrap();
    assert_eq!(a.ports[0].port, 9090);
    assert_eq!(a.addresses[0].hostname, "alpha");
    // The slices agree: two port groups, the hidden pod in neither.
    let slices = &decision.slices.create;
    assert_eq!(slices.len(), 2, "{slices:?}");
    let endpoints: usize = slices.iter().map(|s| s.endpoints.len()).sum();
    assert_eq!(endpoints, 2);
}

use crate::types::EndpointsDecision;

#[test]
fn an_endpoint_left_out_keeps_its_port_group() {
    let req = request(service(), vec![pod("a", "10.0.0.1", true)]);
    let policy = Recorder::new(|_: &Context<'_>, candidates: &[Candidate<'_>]| {
        Ok(candidates
            .iter()
            .map(|c| {
                let mut choice = echo(c);
                choice.endpoint.as_mut().unwrap().include = false;
                choice
            })
            .collect())
    });
    let decision = reconcile_passes(&policy, &req).unwrap();
    assert_eq!(published(&decision), Default::default());
    assert_eq!(decision.slices.create.len(), 1);
    assert!(decision.slices.create[0].endpoints.is_empty());
}

#[test]
fn a_misfit_answer_fails_the_call_with_what_is_wrong() {
    let req = request(
        service(),
        vec![pod("a", "10.0.0.1", true), pod("b", "10.0.0.2", true)],
    );
    let short = Recorder::new(|_: &Context<'_>, _: &[Candidate<'_>]| Ok(vec![]));
    let err = reconcile_passes(&short, &req).unwrap_err();
    assert!(
        err.contains("Endpoints pass with 0 choices for 2 candidates"),
        "{err}"
    );
    assert_eq!(
        short.passes.borrow().len(),
        1,
        "nothing asked after a failure"
    );

    let mut v6 = service();
    v6.ip_families = vec!["IPv6".into()];
    v6.cluster_ip = "fd00::1".into();
    v6.cluster_ips = vec!["fd00::1".into()];
    let req6 = request(v6, vec![pod("a", "10.0.0.1", true)]);
    let invented = Recorder::new(|_: &Context<'_>, candidates: &[Candidate<'_>]| {
        let upstream = request(service(), vec![pod("a", "10.0.0.1", true)]);
        let svc = upstream.service.as_ref().unwrap();
        let ctx = Context {
            request: &upstream,
            service: svc,
            family: Family::V4,
            output: Output::Endpoints,
        };
        let endpoint = echo(&super::candidates(&ctx)[0]).endpoint;
        Ok(candidates
            .iter()
            .map(|c| Choice {
                endpoint: endpoint.clone(),
                ..echo(c)
            })
            .collect())
    });
    let err = reconcile_passes(&invented, &req6).unwrap_err();
    assert!(
        err.contains("choice 0 (Pod ns/a)")
            && err.contains("has an endpoint, but the pod has no IP"),
        "{err}"
    );
}

#[test]
fn the_policys_own_failures_fail_the_call() {
    let req = request(service(), vec![pod("a", "10.0.0.1", true)]);
    let failing =
        Recorder::new(|_: &Context<'_>, _: &[Candidate<'_>]| Err("no can do".to_string()));
    assert_eq!(reconcile_passes(&failing, &req).unwrap_err(), "no can do");

    struct Picky;
    impl PassPolicy for Picky {
        fn validate(&self) -> Result<(), String> {
            Err("threshold must be positive".into())
        }
        fn decide(&self, _: &Context<'_>, _: &[Candidate<'_>]) -> Result<Vec<Choice>, String> {
            unreachable!("not asked after validation fails")
        }
    }
    let err = reconcile_passes(&Picky, &req).unwrap_err();
    assert_eq!(
        err,
        "invalid policy configuration: threshold must be positive"
    );
}

#[test]
fn a_pass_without_candidates_asks_nothing() {
    let req = request(service(), vec![]);
    let policy = Recorder::new(unchanged);
    let decision = reconcile_passes(&policy, &req).unwrap();
    assert_eq!(
        decision,
        reconcile(&DefaultPolicy::default(), &req).unwrap()
    );
    assert!(policy.passes.borrow().is_empty());
}
