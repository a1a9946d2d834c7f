//! Whether expressions need CEL's standard library when they run, found in their syntax
//! trees.
//!
//! Building the library's environment ([`environment`]: every overload of
//! every standard function, and the types) costs more per call than the drain rule's own
//! evaluation for a few dozen pods, and each call builds it again (an instance serves one
//! call). Yet the interpreter evaluates the operators (`&&`, `==`, `in`, `[]`, `+`, `<`, ...),
//! field selection, literals and the comprehension macros (`all`, `exists`, `map`, ...) by
//! itself, and looks in the environment only for a function call, a type name, or a struct.
//! An expression made of nothing else, naming only the guest's variables and its macros'
//! own, evaluates the same in an empty environment, which costs nothing to build.

use cel::Env;
use cel::common::ast::{Expr, operators};
use cel::parser::Expression;

use crate::syntax::for_each_child;

/// The names the guest binds ([`crate::policy`]).
const BOUND: [&str; 6] = ["service", "pod", "node", "endpoint", "params", "variables"];

/// The operators the interpreter evaluates itself, by their number of operands.
const OPERATORS: [(usize, &[&str]); 3] = [
    (
        1,
        &[
            operators::LOGICAL_NOT,
            operators::NEGATE,
            operators::NOT_STRICTLY_FALSE,
        ],
    ),
    (
        2,
        &[
            operators::LOGICAL_OR,
            operators::LOGICAL_AND,
            operators::EQUALS,
            operators::NOT_EQUALS,
            operators::INDEX,
            operators::OPT_INDEX,
            operators::OPT_SELECT,
            operators::ADD,
            operators::SUBSTRACT,
            operators::DIVIDE,
            operators::MULTIPLY,
            operators::MODULO,
            operators::LESS,
            operators::LESS_EQUALS,
            operators::GREATER,
            operators::GREATER_EQUALS,
            operators::IN,
        ],
    ),
    (3, &[operators::CONDITIONAL]),
];

/// The environment expressions run in: CEL's standard library (with `matches()`), and the
/// strings extension (`replace`, `split`, `lowerAscii`, ...) that Kubernetes CEL also has.
pub fn environment() -> Env {
    let mut env = Env::stdlib();
    // Registering a built-in extension on a fresh environment cannot collide.
    let _ = env.add_extension(cel::extensions::strings);
    env
}

/// Whether any of `expressions` calls a function, names a type or builds a struct: anything
/// the interpreter looks up in the environment.
pub fn needed<'e>(expressions: impl IntoIterator<Item = &'e Expression>) -> bool {
    expressions
        .into_iter()
        .any(|expression| needs(&expression.expr, &mut Vec::new()))
}

/// Whether `expr` needs the library, with the comprehension variables of `scope` bound.
fn needs<'e>(expr: &'e Expr, scope: &mut Vec<&'e str>) -> bool {
    match expr {
        Expr::Ident(name) => !BOUND.contains(&name.as_str()) && !scope.contains(&name.as_str()),
        Expr::Call(call) => {
            let inline = call.target.is_none()
                && OPERATORS.iter().any(|(operands, names)| {
                    *operands == call.args.len() && names.contains(&call.func_name.as_str())
                });
            !inline || call.args.iter().any(|arg| needs(&arg.expr, scope))
        }
        Expr::Struct(_) => true,
        Expr::Comprehension(comprehension) => {
            if needs(&comprehension.iter_range.expr, scope)
                || needs(&comprehension.accu_init.expr, scope)
            {
                return true;
            }
            let outer = scope.len();
            scope.push(&comprehension.iter_var);
            scope.extend(comprehension.iter_var2.as_deref());
            scope.push(&comprehension.accu_var);
            let needed = [
                &comprehension.loop_cond,
                &comprehension.loop_step,
                &comprehension.result,
            ]
            .iter()
            .any(|part| needs(&part.expr, scope));
            scope.truncate(outer);
            needed
        }
        _ => {
            let mut needed = false;
            for_each_child(expr, |child| needed = needed || needs(child, scope));
            needed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(source: &str) -> bool {
        let env = environment();
        needed([env.compile(source).unwrap().expression()])
    }

    #[test]
    fn operators_selections_and_macros_need_no_library() {
        for source in [
            "params.annotation in pod.metadata.annotations && pod.metadata.annotations[params.annotation] == params.value",
            "endpoint.ready && !(variables.applies || variables.draining)",
            "node != null ? node.metadata.name in ['a', 'b'] : -1 + 2 * 3 / 4 % 5 - 6 < 7",
            "has(pod.status.podIP) && pod.status.conditions.exists(c, c.type == 'Ready')",
            "pod.status.podIPs.map(ip, ip.ip).filter(ip, ip != '').all(ip, ip >= '1') && {'a': 1}.?a == {'a': 1}[?'a']",
        ] {
            assert!(!needs(source), "{source}");
        }
    }

    #[test]
    fn functions_types_structs_and_other_names_need_it() {
        for source in [
            "size(pod.metadata.name) > 0",
            "pod.metadata.name.startsWith('web')",
            "pod.metadata.name.matches('^web')",
            "type(params) == map",
            "int",
            "optional.none() == optional.none()",
            "cel.Foo{a: 1}",
            "undeclared.field",
            // A macro's variable is bound inside the macro only.
            "[1].all(x, x > 0) && x == 1",
        ] {
            assert!(needs(source), "{source}");
        }
    }
}
