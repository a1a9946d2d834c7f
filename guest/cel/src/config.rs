//! The configuration, modelled on a ValidatingAdmissionPolicy: `params`, `variables` and one
//! optional expression per rule, compiled once per call ([`compile`]), and checked further at
//! the gate ([`compile_checked`]).

use std::sync::Arc;

use cel::Env;
use cel::parser::Expression;
use serde::Deserialize;

use crate::library;
use crate::parse;
use crate::plan::Plan;
use crate::projection::Projections;
use crate::variable::Variable;

/// The objects built with only the fields the expressions reach ([`Projections`]); `params`
/// and `endpoint` are small, and built whole.
pub const PROJECTED: [&str; 3] = ["service", "pod", "node"];

/// A rule of the configuration: what it decides about one pod's endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Whether the pod is an endpoint at all (after upstream's own selection).
    Include,
    /// `ready`: in `addresses` rather than `notReadyAddresses`; `conditions.ready` in a slice.
    Ready,
    /// `conditions.serving` in a slice.
    Serving,
    /// `conditions.terminating` in a slice.
    Terminating,
}

impl Rule {
    /// Every rule, in the order they are evaluated.
    pub const ALL: [Rule; 4] = [Rule::Include, Rule::Ready, Rule::Serving, Rule::Terminating];

    /// The rule's field name in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Include => "include",
            Rule::Ready => "ready",
            Rule::Serving => "serving",
            Rule::Terminating => "terminating",
        }
    }
}

/// The configuration as written (JSON, converted from YAML by the host).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Written {
    #[serde(default)]
    params: serde_json::Value,
    #[serde(default)]
    variables: Vec<WrittenVariable>,
    include: Option<String>,
    ready: Option<String>,
    serving: Option<String>,
    terminating: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WrittenVariable {
    name: String,
    expression: String,
}

/// A compiled configuration.
pub struct Config {
    /// The CEL environment the expressions run in: the standard library's
    /// ([`library::environment`]), or an empty one when they need nothing of it
    /// ([`library::needed`]).
    pub env: Arc<Env>,
    /// `params`, as given (`null` when absent).
    pub params: serde_json::Value,
    /// `variables`, in order.
    pub variables: Vec<Variable>,
    /// The rules' syntax trees, indexed like [`Rule::ALL`]; `None` keeps upstream's value.
    pub rules: [Option<Expression>; 4],
    /// The fields of the [`PROJECTED`] objects that the variables and rules reach.
    pub projections: Projections,
    /// Which variables are evaluated once per request, and whether `variables` is a map.
    pub plan: Plan,
}

impl std::fmt::Debug for Config {
    // `Env` has no `Debug`; its contents are fixed ([`library`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("params", &self.params)
            .field("variables", &self.variables)
            .field("rules", &self.rules)
            .field("projections", &self.projections)
            .field("plan", &self.plan)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// The rule's expression, if the configuration gives one.
    pub fn rule(&self, rule: Rule) -> Option<&Expression> {
        self.rules[rule as usize].as_ref()
    }

    /// Whether any rule is given: without one, the policy is upstream's and evaluates nothing.
    pub fn has_rules(&self) -> bool {
        self.rules.iter().any(Option::is_some)
    }
}

/// Parses and compiles a configuration, as each call does ([`parse::parse`]). An empty one has
/// no rules (upstream's behaviour). Errors name the field (`rule \`ready\``,
/// `variables[0] (draining)`) and, for an expression that does not compile, the line and
/// column in it.
pub fn compile(config: &str) -> Result<Config, String> {
    compile_with(config, Parsing::Fast)
}

/// [`compile`], for the gate: each expression is parsed by cel's reference parser, and one that
/// its fast parser reads differently is refused ([`parse::parse_checked`]).
pub fn compile_checked(config: &str) -> Result<Config, String> {
    compile_with(config, Parsing::Checked)
}

/// How expressions are parsed ([`crate::parse`]).
#[derive(Debug, Clone, Copy)]
enum Parsing {
    /// The fast parser, falling back to the reference one.
    Fast,
    /// The reference parser, checked against the fast one.
    Checked,
}

fn compile_with(config: &str, parsing: Parsing) -> Result<Config, String> {
    let written: Written = weir_policy::parse_config(config).map_err(|e| e.to_string())?;
    // The standard library's environment, built when parsing or evaluating needs it.
    let mut library: Option<Env> = None;
    let mut variables: Vec<Variable> = Vec::with_capacity(written.variables.len());
    for (i, variable) in written.variables.into_iter().enumerate() {
        let field = format!("variables[{i}] ({})", variable.name);
        if !is_identifier(&variable.name) {
            return Err(format!(
                "{field}: the name must be a CEL identifier (a letter or `_`, then letters, digits or `_`)"
            ));
        }
        if variables.iter().any(|v| v.name == variable.name) {
            return Err(format!(
                "{field}: the name is already taken by an earlier variable"
            ));
        }
        let expression = compile_one(&mut library, parsing, &field, &variable.expression)?;
        variables.push(Variable {
            name: variable.name,
            expression,
        });
    }
    let sources = [
        written.include,
        written.ready,
        written.serving,
        written.terminating,
    ];
    let mut rules: [Option<Expression>; 4] = Default::default();
    for ((rule, source), slot) in Rule::ALL.into_iter().zip(sources).zip(&mut rules) {
        if let Some(source) = source {
            *slot = Some(compile_one(
                &mut library,
                parsing,
                &format!("rule `{}`", rule.name()),
                &source,
            )?);
        }
    }
    let expressions = variables
        .iter()
        .map(|v| &v.expression)
        .chain(rules.iter().flatten());
    let projections = Projections::of(&PROJECTED, expressions);
    let plan = Plan::of(&variables, rules.iter().flatten());
    let expressions = variables
        .iter()
        .map(|v| &v.expression)
        .chain(rules.iter().flatten());
    let env = if library::needed(expressions) {
        library.unwrap_or_else(library::environment)
    } else {
        Env::default()
    };
    Ok(Config {
        env: Arc::new(env),
        params: written.params,
        variables,
        rules,
        projections,
        plan,
    })
}

fn compile_one(
    library: &mut Option<Env>,
    parsing: Parsing,
    field: &str,
    source: &str,
) -> Result<Expression, String> {
    if source.trim().is_empty() {
        return Err(format!("{field}: the expression is empty"));
    }
    // cel prints each error as `ERROR: <input>:LINE:COLUMN: message`, then the line and a
    // caret under the column.
    let refused = |errors| format!("{field} does not compile: {errors}");
    match parsing {
        Parsing::Fast => parse::parse(library, source).map_err(refused),
        Parsing::Checked => parse::parse_checked(library, source).map_err(|errors| match errors {
            Some(errors) => refused(errors),
            None => format!(
                "{field}: cel's fast parser reads this expression differently from its \
                 reference parser; write it another way (parentheses around a part may do)"
            ),
        }),
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_config_has_no_rules() {
        let config = compile("").unwrap();
        assert!(!config.has_rules());
        assert!(config.variables.is_empty());
        assert!(config.params.is_null());
    }

    #[test]
    fn syntax_error_names_rule_and_position() {
        let err = compile(r#"{"ready": "endpoint.ready &&"}"#).unwrap_err();
        assert!(err.starts_with("rule `ready` does not compile"), "{err}");
        assert!(err.contains("<input>:1:"), "{err}");
        let err = compile(r#"{"variables": [{"name": "a", "expression": "1 +"}]}"#).unwrap_err();
        assert!(
            err.starts_with("variables[0] (a) does not compile"),
            "{err}"
        );
    }

    #[test]
    fn bad_variable_names_and_unknown_fields_are_refused() {
        let err = compile(r#"{"variables": [{"name": "a-b", "expression": "1"}]}"#).unwrap_err();
        assert!(err.contains("CEL identifier"), "{err}");
        let err = compile(
            r#"{"variables": [{"name": "a", "expression": "1"}, {"name": "a", "expression": "2"}]}"#,
        )
        .unwrap_err();
        assert!(
            err.contains("variables[1] (a)") && err.contains("already taken"),
            "{err}"
        );
        let err = compile(r#"{"redy": "true"}"#).unwrap_err();
        assert!(err.contains("unknown field `redy`"), "{err}");
        let err = compile(r#"{"include": " "}"#).unwrap_err();
        assert!(
            err.contains("rule `include`: the expression is empty"),
            "{err}"
        );
    }
}
