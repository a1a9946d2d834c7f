//! Circles among sibling modules: sets of children of one module that depend on each other.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Every circle in a graph of sibling dependencies, as chains `a → b → a`: for each strongly
/// connected set of two or more siblings, the shortest chain through each of its members
/// that no chain before it passes through, so every member is shown.
pub fn circles(edges: &BTreeSet<(String, String)>) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, to) in edges {
        next.entry(from).or_default().insert(to);
    }
    let reach = |start: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![start];
        while let Some(node) = todo.pop() {
            for &to in next.get(node).into_iter().flatten() {
                if seen.insert(to) {
                    todo.push(to);
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&str, BTreeSet<&str>> =
        next.keys().map(|&node| (node, reach(node))).collect();
    let mut done = BTreeSet::new();
    let mut found = Vec::new();
    for (&node, reached) in &reaches {
        if done.contains(node) || !reached.contains(node) {
            continue;
        }
        // The siblings on a circle with `node`: those it reaches that reach it back.
        let members: BTreeSet<&str> = reached
            .iter()
            .copied()
            .filter(|other| reaches.get(other).is_some_and(|r| r.contains(node)))
            .collect();
        done.extend(members.iter().copied());
        if members.len() > 1 {
            let mut shown = BTreeSet::new();
            for member in members {
                if !shown.contains(member) {
                    let chain = shortest_loop(member, &next);
                    shown.extend(chain.iter().cloned());
                    found.push(chain);
                }
            }
        }
    }
    found
}

/// The shortest chain from `start` back to itself, both ends written.
fn shortest_loop(start: &str, next: &BTreeMap<&str, BTreeSet<&str>>) -> Vec<String> {
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut todo = VecDeque::from([start]);
    while let Some(node) = todo.pop_front() {
        for &to in next.get(node).into_iter().flatten() {
            if to == start {
                let mut chain = vec![start.to_string()];
                let mut at = node;
                while at != start {
                    chain.push(at.to_string());
                    at = came_from[at];
                }
                chain.push(start.to_string());
                chain.reverse();
                return chain;
            }
            if !came_from.contains_key(to) {
                came_from.insert(to, node);
                todo.push_back(to);
            }
        }
    }
    unreachable!("{start} is on a circle")
}

#[cfg(test)]
fn graph(edges: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    edges
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn a_circle_is_found_and_shown_as_a_chain() {
    let found = circles(&graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]));
    assert_eq!(found, vec![vec!["a", "b", "c", "a"]]);
}

#[test]
fn every_sibling_on_a_circle_is_shown() {
    let found = circles(&graph(&[("a", "b"), ("b", "a"), ("b", "c"), ("c", "b")]));
    assert_eq!(found, vec![vec!["a", "b", "a"], vec!["c", "b", "c"]]);
}

#[test]
fn a_one_way_chain_is_not_a_circle() {
    assert!(circles(&graph(&[("a", "b"), ("b", "c"), ("a", "c")])).is_empty());
}

#[test]
fn each_circle_is_shown_once() {
    let found = circles(&graph(&[("a", "b"), ("b", "a"), ("c", "d"), ("d", "c")]));
    assert_eq!(found, vec![vec!["a", "b", "a"], vec!["c", "d", "c"]]);
}

#[test]
fn a_circle_between_modules_read_from_source_is_found() {
    let krate = super::modules::inline(&[
        ("src/lib.rs", "mod config; mod plan; mod eval;"),
        ("src/config.rs", "use crate::plan::Plan;"),
        ("src/plan.rs", "pub fn build(c: &crate::config::Config) {}"),
        ("src/eval.rs", "use crate::{config, plan};"),
    ]);
    let edges = krate.sibling_edges();
    let root = edges[&Vec::new()].keys().cloned().collect();
    assert_eq!(circles(&root), vec![vec!["config", "plan", "config"]]);
}
