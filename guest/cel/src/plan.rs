//! How a configuration's variables are evaluated, found in their syntax trees: once per
//! request for a variable that cannot depend on the pod, and without a `variables` map when
//! every expression only selects variables by name.
//!
//! A variable whose expression names none of `pod`, `node` and `endpoint`, nor a variable that
//! does, has the same value for every pod of a request (`service` and `params` are the
//! request's; CEL's functions have no side effects and read no clock): it is evaluated once,
//! before the first pod. Each variable is then visible as the qualified name `variables.NAME`,
//! which the interpreter resolves in one look-up, instead of as a field of a `variables` map
//! rebuilt after each variable. An expression that uses `variables` any other way (bare, in
//! `has()`, or selecting a variable not evaluated before it) gets the map, as written.

use cel::common::ast::Expr;
use cel::parser::Expression;

use crate::syntax::for_each_child;
use crate::variable::Variable;

/// The names whose values differ from pod to pod.
const PER_POD: [&str; 3] = ["pod", "node", "endpoint"];

/// How the variables of a configuration are evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Whether an expression needs `variables` as a map.
    pub variables_map: bool,
    /// For each variable, whether it may differ from pod to pod. Without the map, the others
    /// are evaluated once per request.
    pub per_pod: Vec<bool>,
}

impl Plan {
    /// The plan for `variables`, then `rules`.
    pub fn of<'e>(variables: &[Variable], rules: impl IntoIterator<Item = &'e Expression>) -> Plan {
        let mut variables_map = false;
        let mut per_pod: Vec<bool> = Vec::with_capacity(variables.len());
        for (i, variable) in variables.iter().enumerate() {
            let uses = Uses::of(&variable.expression);
            let earlier = |name: &str| variables[..i].iter().position(|v| v.name == name);
            variables_map |=
                uses.bare_variables || uses.variables.iter().any(|n| earlier(n).is_none());
            let depends = uses.per_pod
                || uses
                    .variables
                    .iter()
                    .any(|n| earlier(n).is_some_and(|j| per_pod[j]));
            per_pod.push(depends);
        }
        for rule in rules {
            variables_map |= Uses::of(rule).bare_variables;
        }
        Plan {
            variables_map,
            per_pod,
        }
    }

    /// Whether variable `i` is evaluated once per request rather than once per pod.
    pub fn once_per_request(&self, i: usize) -> bool {
        !self.variables_map && !self.per_pod[i]
    }
}

/// What one expression names.
#[derive(Debug, Default)]
struct Uses<'e> {
    /// One of [`PER_POD`].
    per_pod: bool,
    /// The variables selected by name (`variables.NAME`).
    variables: Vec<&'e str>,
    /// `variables` used other than to select a field.
    bare_variables: bool,
}

impl<'e> Uses<'e> {
    fn of(expression: &'e Expression) -> Uses<'e> {
        let mut uses = Uses::default();
        uses.visit(&expression.expr);
        uses
    }

    fn visit(&mut self, expr: &'e Expr) {
        match expr {
            Expr::Select(select) if !select.test => {
                if let Expr::Ident(root) = &select.operand.expr
                    && root == "variables"
                {
                    self.variables.push(&select.field);
                    return;
                }
                self.visit(&select.operand.expr);
            }
            Expr::Ident(name) if name == "variables" => self.bare_variables = true,
            Expr::Ident(name) => self.per_pod |= PER_POD.contains(&name.as_str()),
            _ => for_each_child(expr, |child| self.visit(child)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(variables: &[(&str, &str)], rules: &[&str]) -> Plan {
        let env = crate::library::environment();
        let variables: Vec<Variable> = variables
            .iter()
            .map(|(name, source)| Variable {
                name: (*name).to_owned(),
                expression: env.compile(source).unwrap().expression().clone(),
            })
            .collect();
        let rules: Vec<Expression> = rules
            .iter()
            .map(|source| env.compile(source).unwrap().expression().clone())
            .collect();
        Plan::of(&variables, &rules)
    }

    #[test]
    fn variables_without_the_pod_are_evaluated_once() {
        let found = plan(
            &[
                ("draining", "params.annotation in pod.metadata.annotations"),
                (
                    "applies",
                    "!service.spec.publishNotReadyAddresses || params.override",
                ),
                ("both", "variables.applies && variables.draining"),
                ("onlyApplies", "[1].all(x, variables.applies)"),
                ("ready", "endpoint.ready"),
                ("named", "has(node.metadata.labels)"),
            ],
            &["variables.both && variables.onlyApplies"],
        );
        assert!(!found.variables_map);
        assert_eq!(found.per_pod, [true, false, true, false, true, true]);
        assert!(found.once_per_request(1) && found.once_per_request(3));
        assert!(!found.once_per_request(0));
    }

    #[test]
    fn variables_used_other_than_by_name_need_the_map() {
        for (variables, rule) in [
            (&[("a", "1")][..], "size(variables) == 1"),
            (&[("a", "1")][..], "has(variables.a)"),
            (&[("a", "variables.b"), ("b", "1")][..], "true"),
            (&[("a", "variables.a")][..], "true"),
        ] {
            let found = plan(variables, &[rule]);
            assert!(found.variables_map, "{variables:?} {rule}");
            assert!(!found.once_per_request(0), "{variables:?} {rule}");
        }
        // A rule may name a variable that does not exist: it fails as a missing map key would.
        assert!(!plan(&[("a", "1")], &["variables.b"]).variables_map);
    }
}
