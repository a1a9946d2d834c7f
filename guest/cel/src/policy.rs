//! Upstream's steps with the CEL rules in the `verdict` hook: for each pod upstream keeps, the
//! variables, then `include`, `ready`, `serving` and `terminating` are evaluated.

use std::cell::RefCell;
use std::collections::HashMap;

use cel::ExecutionError;
use cel::common::types::{CelBool, CelMap, CelMapKey, CelNull};
use cel::common::value::CowVal;
use cel::parser::Expression;
use weir_policy::types::{Decision, Pod, Request};
use weir_policy::{Context, Policy, Verdict};

use crate::config::{Config, Rule};
use crate::object::{self, Endpoint, Value};
use crate::scope::PodScope;
use crate::variable::Variable;

/// Why an expression gave no usable result for one pod.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The interpreter stopped: a missing map key, no such function for these types, an
    /// unknown name, ...
    Evaluation(ExecutionError),
    /// A rule's result is not a bool; the type's name.
    NotBool(String),
}

/// What went wrong where: the field (`rule \`ready\``, `variables[0] (draining)`) and why.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldFailure {
    /// The configuration field.
    pub field: String,
    /// The failure.
    pub failure: Failure,
}

impl std::fmt::Display for FieldFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.failure {
            Failure::Evaluation(e) => write!(f, "{}: {e}", self.field),
            Failure::NotBool(t) => write!(f, "{} returns {t}, not bool", self.field),
        }
    }
}

/// A rule's outcome for one pod: whether it stays an endpoint, and its conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// `include`.
    pub include: bool,
    /// `ready`, `serving`, `terminating`.
    pub endpoint: Endpoint,
}

/// A compiled configuration bound to one request: the objects every pod shares (`service`,
/// `params`) are built once, and the variables that cannot depend on the pod evaluated once
/// ([`crate::plan`]).
pub struct Rules<'a> {
    config: &'a Config,
    shared: cel::Context<'a, 'a>,
    /// `variables.NAME` for each variable, the name it is bound as without a `variables` map.
    qualified: Vec<String>,
    /// The variable evaluated once per request that failed, and how: every pod's evaluation
    /// fails there, as it would had the variable been evaluated for the pod.
    request_failure: Option<(usize, FieldFailure)>,
    /// The first failure of the call. The hooks cannot return an error, so it is kept here and
    /// fails the whole reconcile afterwards ([`reconcile`]).
    failure: RefCell<Option<String>>,
    /// Each pod's outcome by upstream's decision: both outputs (and both address families of a
    /// dual-stack Service) ask about the same pod, and its rules run once per decision. The
    /// pod is known by its address in the request, which outlives the call.
    outcomes: RefCell<HashMap<(*const Pod, Endpoint), Outcome>>,
}

impl<'a> Rules<'a> {
    /// Binds `config` to a request about `service` (`None`: `service` is `null`). Of the
    /// objects, those an expression names are bound, with the fields they reach
    /// ([`crate::projection`]); then the variables evaluated once per request.
    pub fn new(config: &'a Config, service: Option<&'a weir_policy::types::Service>) -> Self {
        let mut shared = cel::Context::with_env(config.env.clone());
        shared.add_variable_as_val("params", object::params(&config.params));
        if let Some(shape) = config.projections.get("service") {
            let service = service.map_or_else(
                || Box::new(CelNull) as Value<'a>,
                |service| object::service(service, shape),
            );
            shared.add_variable_as_val("service", service);
        }
        let qualified = config
            .variables
            .iter()
            .map(|v| format!("variables.{}", v.name))
            .collect();
        let mut request_failure = None;
        if !config.plan.variables_map {
            // A variable not evaluated yet, or no variable at all, is a missing key of this
            // map, as it is of the map of the variables evaluated so far.
            shared.add_variable_as_val("variables", variables(&[]));
            for (i, variable) in config.variables.iter().enumerate() {
                if !config.plan.once_per_request(i) {
                    continue;
                }
                match evaluate_variable(i, variable, &shared) {
                    Ok(value) => {
                        shared.add_variable_as_val(format!("variables.{}", variable.name), value)
                    }
                    Err(failure) => {
                        request_failure = Some((i, failure));
                        break;
                    }
                }
            }
        }
        Rules {
            config,
            shared,
            qualified,
            request_failure,
            failure: RefCell::new(None),
            outcomes: RefCell::default(),
        }
    }

    /// The scope one pod's rules run in: `pod`, `node` and `endpoint` (upstream's decision),
    /// from `objects`, and the variables, each evaluated in order with the earlier ones visible.
    fn scope<'s>(
        &'s self,
        objects: &'s PodScope<'s>,
    ) -> Result<cel::Context<'s, 's>, FieldFailure> {
        let mut scope = self.shared.new_inner_scope();
        scope.set_variable_resolver(objects);
        if !self.config.plan.variables_map {
            for (i, variable) in self.config.variables.iter().enumerate() {
                if let Some((at, failure)) = &self.request_failure
                    && *at == i
                {
                    return Err(failure.clone());
                }
                if self.config.plan.once_per_request(i) {
                    continue;
                }
                let value = evaluate_variable(i, variable, &scope)?;
                scope.add_variable_as_val(self.qualified[i].clone(), value);
            }
            return Ok(scope);
        }
        let mut values: Vec<(&str, Value<'s>)> = Vec::with_capacity(self.config.variables.len());
        for (i, variable) in self.config.variables.iter().enumerate() {
            // Rebinding replaces the previous map: the scope holds one `variables`.
            scope.add_variable_as_val("variables", variables(&values));
            let value = evaluate_variable(i, variable, &scope)?;
            values.push((&variable.name, value));
        }
        scope.add_variable_as_val("variables", variables(&values));
        Ok(scope)
    }

    /// Evaluates the variables, then the rules, for `pod` whose upstream decision is
    /// `upstream`. `include` false skips the other rules. Each rule sees upstream's decision
    /// as `endpoint`, not the other rules' results.
    pub fn evaluate(&self, pod: &Pod, upstream: Endpoint) -> Result<Outcome, FieldFailure> {
        let objects = self.objects(pod, upstream);
        let scope = self.scope(&objects)?;
        let rule = |rule: Rule, upstream: bool| match self.config.rule(rule) {
            Some(expression) => boolean(rule, expression, &scope),
            None => Ok(upstream),
        };
        let include = rule(Rule::Include, true)?;
        if !include {
            return Ok(Outcome {
                include,
                endpoint: upstream,
            });
        }
        Ok(Outcome {
            include,
            endpoint: Endpoint {
                ready: rule(Rule::Ready, upstream.ready)?,
                serving: rule(Rule::Serving, upstream.serving)?,
                terminating: rule(Rule::Terminating, upstream.terminating)?,
            },
        })
    }

    /// Evaluates the variables and `rule` alone for `pod`; `Ok` when it gives a bool (or the
    /// configuration has no such rule).
    pub fn evaluate_one(
        &self,
        pod: &Pod,
        upstream: Endpoint,
        rule: Rule,
    ) -> Result<(), FieldFailure> {
        let objects = self.objects(pod, upstream);
        let scope = self.scope(&objects)?;
        match self.config.rule(rule) {
            Some(expression) => boolean(rule, expression, &scope).map(drop),
            None => Ok(()),
        }
    }

    fn objects<'s>(&'s self, pod: &'s Pod, endpoint: Endpoint) -> PodScope<'s> {
        PodScope {
            projections: &self.config.projections,
            pod,
            endpoint,
        }
    }
}

/// Evaluates variable `i` in `scope`.
fn evaluate_variable<'v>(
    i: usize,
    variable: &Variable,
    scope: &cel::Context<'_, 'v>,
) -> Result<Value<'v>, FieldFailure> {
    cel::Value::resolve_val(&variable.expression, scope)
        .map(CowVal::into_owned)
        .map_err(|e| FieldFailure {
            field: format!("variables[{i}] ({})", variable.name),
            failure: Failure::Evaluation(e),
        })
}

/// `variables`: the values evaluated so far, by name.
fn variables<'v>(values: &[(&str, Value<'v>)]) -> Value<'v> {
    let map: HashMap<CelMapKey<'v>, Value<'v>> = values
        .iter()
        .map(|(name, value)| (CelMapKey::from((*name).to_owned()), value.clone_as_boxed()))
        .collect();
    Box::new(CelMap::from(map))
}

fn boolean(
    rule: Rule,
    expression: &Expression,
    scope: &cel::Context<'_, '_>,
) -> Result<bool, FieldFailure> {
    let field = || format!("rule `{}`", rule.name());
    let value = cel::Value::resolve_val(expression, scope).map_err(|e| FieldFailure {
        field: field(),
        failure: Failure::Evaluation(e),
    })?;
    match value.downcast_ref::<CelBool>() {
        Some(b) => Ok(*b.inner()),
        None => Err(FieldFailure {
            field: field(),
            failure: Failure::NotBool(value.get_type().name().to_owned()),
        }),
    }
}

impl Policy for Rules<'_> {
    fn verdict(&self, _ctx: &Context, verdict: &mut Verdict) {
        if !self.config.has_rules() || self.failure.borrow().is_some() {
            return;
        }
        let pod = verdict.pod;
        let upstream = Endpoint {
            ready: verdict.ready,
            serving: verdict.serving,
            terminating: verdict.terminating,
        };
        let key = (std::ptr::from_ref(pod), upstream);
        let known = self.outcomes.borrow().get(&key).copied();
        let evaluated = match known {
            Some(outcome) => Ok(outcome),
            None => self.evaluate(pod, upstream).inspect(|outcome| {
                self.outcomes.borrow_mut().insert(key, *outcome);
            }),
        };
        match evaluated {
            Ok(outcome) if !outcome.include => verdict.include = false,
            Ok(Outcome { endpoint, .. }) => {
                verdict.ready = endpoint.ready;
                verdict.serving = endpoint.serving;
                verdict.terminating = endpoint.terminating;
            }
            Err(failure) => {
                *self.failure.borrow_mut() =
                    Some(format!("{failure} (pod {}/{})", pod.namespace, pod.name));
            }
        }
    }
}

/// Reconciles `request` with `config`'s rules. A rule that fails for any pod fails the whole
/// call, naming the rule and the pod: the host writes nothing and retries the key, as for any
/// guest error, so a half-evaluated policy never publishes.
pub fn reconcile(config: &Config, request: &Request) -> Result<Decision, String> {
    let rules = Rules::new(config, request.service.as_ref());
    let decision = weir_policy::reconcile(&rules, request)?;
    match rules.failure.into_inner() {
        Some(failure) => Err(failure),
        None => Ok(decision),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::compile;
    use weir_policy::testing::{kv, pod, published, request, service};

    fn run(config: &str, pods: Vec<Pod>) -> Result<Decision, String> {
        let config = compile(config).unwrap();
        reconcile(&config, &request(service(), pods))
    }

    const DRAIN: &str = r#"{
        "params": {"annotation": "weir.dev/drain"},
        "variables": [{"name": "draining", "expression":
            "params.annotation in pod.metadata.annotations && pod.metadata.annotations[params.annotation] == 'true'"}],
        "ready": "endpoint.ready && !variables.draining"
    }"#;

    #[test]
    fn drain_rule_moves_annotated_pod_to_not_ready() {
        let mut draining = pod("b", "10.0.0.2", true);
        draining.annotations.push(kv("weir.dev/drain", "true"));
        let decision = run(DRAIN, vec![pod("a", "10.0.0.1", true), draining]).unwrap();
        let out = published(&decision);
        assert_eq!(out.ready, ["a"]);
        assert_eq!(out.not_ready, ["b"]);
        // The slice says the same: b is not ready, but still serving.
        let created = &decision.slices.create;
        assert_eq!(created.len(), 1);
        let conditions: Vec<_> = created[0]
            .endpoints
            .iter()
            .map(|e| (e.conditions.ready, e.conditions.serving))
            .collect();
        assert!(
            conditions.contains(&(Some(false), Some(true))),
            "{conditions:?}"
        );
        assert!(
            conditions.contains(&(Some(true), Some(true))),
            "{conditions:?}"
        );
    }

    #[test]
    fn no_rules_is_upstream() {
        let pods = vec![pod("a", "10.0.0.1", true), pod("b", "10.0.0.2", false)];
        let cel = run("", pods.clone()).unwrap();
        let upstream =
            weir_policy::reconcile(&weir_policy::DefaultPolicy {}, &request(service(), pods))
                .unwrap();
        assert_eq!(cel, upstream);
    }

    #[test]
    fn include_leaves_pods_out_and_node_is_visible() {
        let mut elsewhere = pod("b", "10.0.0.2", true);
        elsewhere.node_name = "node-2".into();
        elsewhere.zone = Some("zone-b".into());
        let mut unknown = pod("c", "10.0.0.3", true);
        unknown.node_exists = false;
        let config = r#"{"include": "node != null && node.metadata.name == 'node-1'"}"#;
        let out =
            published(&run(config, vec![pod("a", "10.0.0.1", true), elsewhere, unknown]).unwrap());
        assert_eq!(out.ready, ["a"]);
        assert!(out.not_ready.is_empty());
        let config = r#"{"include": "has(node.metadata.labels) && node.metadata.labels['topology.kubernetes.io/zone'] == 'zone-b'"}"#;
        let mut zoned = pod("b", "10.0.0.2", true);
        zoned.zone = Some("zone-b".into());
        let out = published(&run(config, vec![zoned]).unwrap());
        assert_eq!(out.ready, ["b"]);
    }

    #[test]
    fn service_fields_use_kubernetes_names() {
        let mut svc = service();
        svc.annotations.push(kv("weir.dev/accept-canary", "true"));
        let config = r#"{"include": "service.spec.ports[0].targetPort == 8080 && service.spec.type == 'ClusterIP' && service.metadata.annotations['weir.dev/accept-canary'] == 'true' && !has(service.spec.trafficDistribution)"}"#;
        let compiled = compile(config).unwrap();
        let decision =
            reconcile(&compiled, &request(svc, vec![pod("a", "10.0.0.1", true)])).unwrap();
        assert_eq!(published(&decision).ready, ["a"]);
    }

    #[test]
    fn evaluation_error_fails_the_call_naming_rule_and_pod() {
        let config = r#"{"ready": "pod.metadata.annotations['missing'] == 'x'"}"#;
        let err = run(config, vec![pod("a", "10.0.0.1", true)]).unwrap_err();
        assert!(
            err.contains("rule `ready`") && err.contains("pod ns/a"),
            "{err}"
        );
        let config = r#"{"ready": "'nope'"}"#;
        let err = run(config, vec![pod("a", "10.0.0.1", true)]).unwrap_err();
        assert!(
            err.contains("rule `ready` returns string, not bool"),
            "{err}"
        );
    }

    /// Objects built with the fields the expressions reach decide as whole ones do (a
    /// variable that names `pod`, `node` and `service` bare keeps them whole).
    #[test]
    fn projected_objects_decide_as_whole_ones() {
        let mut annotated = pod("a", "10.0.0.1", true);
        annotated.annotations.push(kv("weir.dev/drain", "true"));
        annotated.zone = Some("zone-a".into());
        let mut no_ip = pod("b", "10.0.0.2", false);
        no_ip.pod_ip = None;
        let mut no_node = pod("c", "10.0.0.3", true);
        no_node.node_exists = false;
        let pods = vec![annotated, no_ip, no_node, pod("d", "10.0.0.4", true)];
        for rule in [
            "'weir.dev/drain' in pod.metadata.annotations",
            "has(pod.status.podIP) && pod.status.podIPs[0].ip == pod.status.podIP",
            "has(pod.metadata.labels) && !has(pod.metadata.missing) && pod.metadata.name != 'b'",
            "node == null || (has(node.metadata.labels) && 'topology.kubernetes.io/zone' in node.metadata.labels)",
            "pod.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
            "pod.metadata == {} || size(pod.spec) == 3 && service.spec.ports.all(p, p.port > 0)",
            "pod.metadata.annotations['weir.dev/drain'] == 'true'",
            "has(service.spec.trafficDistribution) || service.metadata.name == pod.metadata.name",
        ] {
            let projected = format!(r#"{{"ready": "{rule}", "serving": "{rule}"}}"#);
            let whole = format!(
                r#"{{"variables": [{{"name": "whole", "expression": "[pod, node, service]"}}],
                    "ready": "{rule}", "serving": "{rule}"}}"#
            );
            assert_eq!(
                run(&projected, pods.clone()),
                run(&whole, pods.clone()),
                "{rule}"
            );
        }
    }

    /// Variables evaluated once per request, or bound by name, decide and fail as variables
    /// evaluated for each pod in a `variables` map do; an empty environment as the standard
    /// library's does.
    #[test]
    fn per_request_variables_and_the_empty_environment_decide_alike() {
        let mut annotated = pod("a", "10.0.0.1", true);
        annotated.annotations.push(kv("weir.dev/drain", "true"));
        let pods = vec![
            annotated,
            pod("b", "10.0.0.2", false),
            pod("c", "10.0.0.3", true),
        ];
        let cases: [(&str, &str); 6] = [
            (
                r#"{"name": "draining", "expression": "params.annotation in pod.metadata.annotations && pod.metadata.annotations[params.annotation] == 'true'"},
                   {"name": "applies", "expression": "!service.spec.publishNotReadyAddresses"},
                   {"name": "both", "expression": "variables.applies && variables.draining"}"#,
                "endpoint.ready && !variables.both",
            ),
            (
                r#"{"name": "n", "expression": "params.limit + 1"},
                   {"name": "m", "expression": "variables.n * 2"}"#,
                "variables.m == 6 && endpoint.ready",
            ),
            // A variable that fails for the request fails every pod, naming the variable.
            (
                r#"{"name": "ok", "expression": "pod.metadata.name != ''"},
                   {"name": "missing", "expression": "params.nope"}"#,
                "variables.ok",
            ),
            // One that names a later variable sees no value for it (its expression gets the
            // `variables` map, like the second variant).
            (
                r#"{"name": "early", "expression": "variables.late"},
                   {"name": "late", "expression": "true"}"#,
                "variables.early",
            ),
            // A rule that names no variable there is fails as a missing map key.
            (r#"{"name": "a", "expression": "true"}"#, "variables.b"),
            (
                r#"{"name": "n", "expression": "[1, 2].map(x, x * params.limit)"}"#,
                "variables.n.exists(x, x == 4) && pod.metadata.name in ['a', 'c']",
            ),
        ];
        for (variables, ready) in cases {
            let config = |extra_variable: &str| {
                format!(
                    r#"{{"params": {{"annotation": "weir.dev/drain", "limit": 2}},
                        "variables": [{variables}{extra_variable}], "ready": "{ready}"}}"#
                )
            };
            let plain = config("");
            let expected = run(&plain, pods.clone());
            // Bare `variables`: each pod's variables in a map.
            let map = config(r#", {"name": "map", "expression": "variables == variables"}"#);
            assert!(compile(&map).unwrap().plan.variables_map, "{map}");
            assert_eq!(run(&map, pods.clone()), expected, "{map}");
            // A function call: the standard library's environment.
            let library = config(r#", {"name": "library", "expression": "size('') == 0"}"#);
            assert_eq!(run(&library, pods.clone()), expected, "{library}");
        }
        let err = run(
            &format!(
                r#"{{"variables": [{}], "ready": "{}"}}"#,
                cases[2].0, cases[2].1
            ),
            pods,
        )
        .unwrap_err();
        assert!(
            err.starts_with("variables[1] (missing): ") && err.ends_with("(pod ns/a)"),
            "{err}"
        );
    }

    #[test]
    fn variables_see_earlier_variables() {
        let config = r#"{
            "params": {"limit": 2},
            "variables": [
                {"name": "n", "expression": "size(pod.metadata.name)"},
                {"name": "short", "expression": "variables.n < params.limit"}
            ],
            "serving": "variables.short"
        }"#;
        let decision = run(
            config,
            vec![pod("a", "10.0.0.1", true), pod("bb", "10.0.0.2", true)],
        )
        .unwrap();
        let mut serving: Vec<_> = decision.slices.create[0]
            .endpoints
            .iter()
            .map(|e| e.conditions.serving)
            .collect();
        serving.sort();
        assert_eq!(serving, [Some(false), Some(true)]);
    }
}
