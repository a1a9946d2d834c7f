//! The gate's check of a compiled configuration: every rule evaluated on a synthetic pod must
//! give a bool.

use weir_policy::testing::{kv, pod, service};

use crate::config::Config;
use crate::object::Endpoint;
use crate::policy::{Failure, FieldFailure, Rules};

/// Evaluates the variables and every rule for a synthetic Service and pod (a ready, running
/// pod with a label, on a Node with a zone, upstream's endpoint ready and serving), and refuses
/// a rule whose result is not a bool, or an expression that names something undeclared.
///
/// Other evaluation errors (a missing map key, most often) depend on the pod, and the
/// synthetic one has no annotations: they are not refused here, and fail the reconcile of a
/// pod that triggers them, naming the rule and the pod.
pub fn check(config: &Config) -> Result<(), FieldFailure> {
    let mut synthetic = pod("synthetic", "10.0.0.1", true);
    synthetic.zone = Some("zone-a".into());
    synthetic.labels.push(kv("weir.dev/synthetic", "true"));
    let service = service();
    let rules = Rules::new(config, Some(&service));
    // `include` false would skip the other rules; evaluating each alone (as if the others were
    // absent) checks every rule's type whatever include decides.
    for rule in crate::config::Rule::ALL {
        if config.rule(rule).is_none() {
            continue;
        }
        let upstream = Endpoint {
            ready: true,
            serving: true,
            terminating: false,
        };
        match rules.evaluate_one(&synthetic, upstream, rule) {
            Ok(()) => {}
            Err(
                failure @ FieldFailure {
                    failure:
                        Failure::NotBool(_)
                        | Failure::Evaluation(cel::ExecutionError::UndeclaredReference(_)),
                    ..
                },
            ) => return Err(failure),
            Err(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::compile;

    fn check(config: &str) -> Result<(), String> {
        super::check(&compile(config).unwrap()).map_err(|e| e.to_string())
    }

    #[test]
    fn non_bool_rules_are_refused_by_name() {
        let err = check(r#"{"ready": "true", "serving": "1 + 1"}"#).unwrap_err();
        assert_eq!(err, "rule `serving` returns int, not bool");
        let err = check(r#"{"include": "false", "terminating": "pod.metadata.name"}"#).unwrap_err();
        assert_eq!(err, "rule `terminating` returns string, not bool");
    }

    #[test]
    fn undeclared_names_are_refused_pod_dependent_errors_are_not() {
        let err = check(r#"{"ready": "podd.metadata.name == 'x'"}"#).unwrap_err();
        assert!(
            err.starts_with("rule `ready`") && err.contains("podd"),
            "{err}"
        );
        check(r#"{"ready": "pod.metadata.annotations['weir.dev/drain'] != 'true'"}"#).unwrap();
        check(r#"{"ready": "endpoint.ready", "include": "'x' in params.nodes"}"#).unwrap();
    }
}
