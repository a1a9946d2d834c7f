//! A configuration's variables once compiled: what the configuration builds ([`crate::config`])
//! and the evaluation plan reads ([`crate::plan`]).

use cel::parser::Expression;

/// A named expression, evaluated per pod before the rules and visible as `variables.NAME`.
#[derive(Debug)]
pub struct Variable {
    /// Its name.
    pub name: String,
    /// Its expression's syntax tree.
    pub expression: Expression,
}
