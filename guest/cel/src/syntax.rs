//! Walking a CEL syntax tree, for the analyses of [`crate::projection`] and [`crate::plan`].

use cel::common::ast::{EntryExpr, Expr};

/// Calls `f` on each direct subexpression of `expr`.
pub fn for_each_child<'e>(expr: &'e Expr, mut f: impl FnMut(&'e Expr)) {
    match expr {
        Expr::Unspecified | Expr::Literal(_) | Expr::Ident(_) => {}
        Expr::Select(select) => f(&select.operand.expr),
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                f(&target.expr);
            }
            for arg in &call.args {
                f(&arg.expr);
            }
        }
        Expr::Comprehension(comprehension) => {
            for part in [
                &comprehension.iter_range,
                &comprehension.accu_init,
                &comprehension.loop_cond,
                &comprehension.loop_step,
                &comprehension.result,
            ] {
                f(&part.expr);
            }
        }
        Expr::List(list) => {
            for element in &list.elements {
                f(&element.expr);
            }
        }
        Expr::Map(map) => map.entries.iter().for_each(|e| entry(&e.expr, &mut f)),
        Expr::Struct(structure) => structure
            .entries
            .iter()
            .for_each(|e| entry(&e.expr, &mut f)),
    }
}

fn entry<'e>(entry: &'e EntryExpr, f: &mut impl FnMut(&'e Expr)) {
    match entry {
        EntryExpr::StructField(field) => f(&field.value.expr),
        EntryExpr::MapEntry(entry) => {
            f(&entry.key.expr);
            f(&entry.value.expr);
        }
    }
}
