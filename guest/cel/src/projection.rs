//! Which fields of the objects (`pod`, `node`, `service`) the configuration's expressions can
//! reach, found in their syntax trees, so that each pod's objects are built with those fields
//! alone: the drain rule reads `pod.metadata.annotations`, and building the rest of the pod
//! (labels, conditions, IPs, ...) for each of a hundred pods would be most of its cost.
//!
//! The projection is sound because every value an expression reaches starts at the variable's
//! identifier: a chain of field selections on it (`pod.metadata.annotations`) reaches that
//! field, and whatever the chain's end is then used for (indexed, iterated, compared, stored in
//! a variable, passed to a function) can only reach into it, so it is kept whole. A bare
//! identifier (`pod` passed as a whole) keeps the object whole. A comprehension variable that
//! shadows a name (`list.all(pod, ...)`) only makes the projection larger than it must be.
//! Hand-written: no crate computes the field paths of a CEL syntax tree.

use std::collections::BTreeMap;

use cel::common::ast::Expr;
use cel::parser::Expression;

use crate::syntax::for_each_child;

/// The fields of an object that must be present: all of it, or some fields, each with its own
/// projection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Projection {
    /// The whole value.
    Whole,
    /// These fields only.
    Fields(BTreeMap<String, Projection>),
}

/// The whole value, for a field to be built in full.
pub static WHOLE: Projection = Projection::Whole;

impl Projection {
    /// The projection of field `name`; `None` when no expression reaches it.
    pub fn field(&self, name: &str) -> Option<&Projection> {
        match self {
            Projection::Whole => Some(&WHOLE),
            Projection::Fields(fields) => fields.get(name),
        }
    }

    /// Adds `path` (field names from this object down), whose end is kept whole.
    fn add(&mut self, path: &[&str]) {
        let Projection::Fields(fields) = self else {
            return;
        };
        match path.split_first() {
            None => *self = Projection::Whole,
            Some((first, rest)) => fields
                .entry((*first).to_owned())
                .or_insert_with(|| Projection::Fields(BTreeMap::new()))
                .add(rest),
        }
    }
}

/// The projections of some top-level variables (`pod`, `node`, ...): a variable no expression
/// names has none, and need not be bound at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Projections(BTreeMap<&'static str, Projection>);

impl Projections {
    /// The fields of the variables `names` that `expressions` reach.
    pub fn of<'e>(
        names: &[&'static str],
        expressions: impl IntoIterator<Item = &'e Expression>,
    ) -> Projections {
        let mut found = Projections::default();
        for expression in expressions {
            found.visit(names, &expression.expr);
        }
        found
    }

    /// The projection of variable `name`; `None` when no expression names it.
    pub fn get(&self, name: &str) -> Option<&Projection> {
        self.0.get(name)
    }

    fn reach(&mut self, names: &[&'static str], path: &[&str]) {
        let Some((root, fields)) = path.split_first() else {
            return;
        };
        if let Some(name) = names.iter().find(|n| *n == root) {
            self.0
                .entry(name)
                .or_insert_with(|| Projection::Fields(BTreeMap::new()))
                .add(fields);
        }
    }

    fn visit(&mut self, names: &[&'static str], expr: &Expr) {
        // A chain of selections on an identifier, the outermost selection first: its whole
        // path is reached, and its operands need no visit of their own.
        if let Some(path) = selection_path(expr) {
            self.reach(names, &path);
            return;
        }
        for_each_child(expr, |child| self.visit(names, child));
    }
}

/// The path `expr` selects, root identifier first: `pod.metadata.name` is
/// `[pod, metadata, name]`, and so is the presence test `has(pod.metadata.name)`, which needs
/// to know whether `name` is there. `None` for anything else.
fn selection_path(expr: &Expr) -> Option<Vec<&str>> {
    let mut path = Vec::new();
    let mut expr = expr;
    if let Expr::Select(select) = expr
        && select.test
    {
        path.push(select.field.as_str());
        expr = &select.operand.expr;
    }
    loop {
        match expr {
            Expr::Ident(name) => {
                path.push(name.as_str());
                path.reverse();
                return Some(path);
            }
            Expr::Select(select) if !select.test => {
                path.push(select.field.as_str());
                expr = &select.operand.expr;
            }
            _ => return None,
        }
    }
}

/// The projections of `pod` and `node` that `sources` reach, for tests.
#[cfg(test)]
pub(crate) fn of_sources(sources: &[&str]) -> Projections {
    let env = crate::library::environment();
    let programs: Vec<_> = sources.iter().map(|s| env.compile(s).unwrap()).collect();
    Projections::of(&["pod", "node"], programs.iter().map(|p| p.expression()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn projections(sources: &[&str]) -> Projections {
        of_sources(sources)
    }

    fn fields(entries: &[(&str, Projection)]) -> Projection {
        Projection::Fields(
            entries
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn selections_reach_their_path_and_keep_its_end_whole() {
        let found = projections(&[
            "'weir.dev/drain' in pod.metadata.annotations && pod.metadata.annotations['weir.dev/drain'] == 'true'",
            "pod.status.phase == 'Running'",
        ]);
        assert_eq!(
            found.get("pod"),
            Some(&fields(&[
                ("metadata", fields(&[("annotations", Projection::Whole)])),
                ("status", fields(&[("phase", Projection::Whole)])),
            ]))
        );
        assert_eq!(found.get("node"), None);
    }

    #[test]
    fn presence_tests_reach_the_tested_field() {
        let found = projections(&["has(node.metadata.labels) && has(pod.status.podIP)"]);
        assert_eq!(
            found.get("node"),
            Some(&fields(&[(
                "metadata",
                fields(&[("labels", Projection::Whole)])
            )]))
        );
        assert_eq!(
            found.get("pod"),
            Some(&fields(&[(
                "status",
                fields(&[("podIP", Projection::Whole)])
            )]))
        );
    }

    #[test]
    fn a_bare_or_shorter_use_keeps_more() {
        // `pod.metadata` used whole, and `pod.metadata.name`: metadata stays whole.
        let found = projections(&["pod.metadata", "pod.metadata.name == 'a'"]);
        assert_eq!(
            found.get("pod"),
            Some(&fields(&[("metadata", Projection::Whole)]))
        );
        let found = projections(&["node != null && node.metadata.name == 'n'"]);
        assert_eq!(found.get("node"), Some(&Projection::Whole));
        // Inside a comprehension, a call's target and its arguments.
        let found = projections(&[
            "pod.status.conditions.exists(c, c.type == 'Ready') && size(pod.spec.nodeName) > 0",
        ]);
        assert_eq!(
            found.get("pod"),
            Some(&fields(&[
                ("spec", fields(&[("nodeName", Projection::Whole)])),
                ("status", fields(&[("conditions", Projection::Whole)])),
            ]))
        );
    }

    #[test]
    fn selections_on_other_values_reach_nothing_of_the_objects() {
        // `[pod]` uses pod whole.
        let found =
            projections(&["{'metadata': 1}.metadata == 1 && [pod][0].spec.nodeName == 'n'"]);
        assert_eq!(found.get("pod"), Some(&Projection::Whole));
        let found = projections(&["{'pod': 1}.pod == 1"]);
        assert_eq!(found.get("pod"), None);
    }
}
