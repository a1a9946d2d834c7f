//! The structure measures of the source: no source file over 500 lines of code before its
//! tests, and no circle among the modules of any crate. They read the workspace's files, so
//! `cargo test` enforces them with no outside tool.

mod circles;
mod lines;
mod modules;
mod workspace;

use std::path::Path;

use modules::Crate;

/// A test file: `tests.rs`, or a file under a `tests` directory of src/; the tests
/// themselves are left out of both measures.
fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs")
        || path.components().any(|c| c.as_os_str() == "tests")
}

#[test]
fn no_source_file_has_over_500_lines_of_code_before_its_tests() {
    let root = workspace::root();
    let mut over = Vec::new();
    for member in workspace::members(&root) {
        let src = root.join(&member).join("src");
        for file in workspace::rust_files(&src) {
            let relative = file.strip_prefix(&root).expect("under the root");
            if is_test_file(file.strip_prefix(&src).expect("under src")) {
                continue;
            }
            let text = std::fs::read_to_string(&file).expect("a source file");
            let count = lines::code_lines_before_tests(&text);
            if count > lines::LIMIT {
                over.push(format!("{}: {count} lines of code", relative.display()));
            }
        }
    }
    assert!(
        over.is_empty(),
        "source files over {} lines of code before their tests (split each into modules \
         named for what they hold):\n{}",
        lines::LIMIT,
        over.join("\n")
    );
}

#[test]
fn no_crate_has_a_circle_among_its_modules() {
    let root = workspace::root();
    let read = |path: &Path| std::fs::read_to_string(root.join(path)).ok();
    let mut found = Vec::new();
    for member in workspace::members(&root) {
        for crate_root in workspace::crate_roots(&root.join(&member)) {
            let crate_root = crate_root.strip_prefix(&root).expect("under the root");
            found.extend(crate_circles(crate_root, &read));
        }
    }
    let shown: Vec<String> = found.iter().map(|(_, shown)| shown.clone()).collect();
    assert!(
        shown.is_empty(),
        "modules that depend on each other (make each dependency one-way: move what both \
         need into one of them or into a module of its own):\n{}",
        shown.join("\n")
    );
}

/// The circles of the crate rooted at `crate_root`: each as (`crate_root: a::b → a::c →
/// a::b`, that chain with the path that makes each step).
fn crate_circles(
    crate_root: &Path,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Vec<(String, String)> {
    let krate = Crate::load(crate_root, read).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        krate.missing.is_empty(),
        "module files not found: {:?}",
        krate.missing
    );
    let mut found = Vec::new();
    for (parent, edges) in krate.sibling_edges() {
        for chain in circles::circles(&edges.keys().cloned().collect()) {
            let name = |child: &String| {
                let mut path: Vec<&str> = parent.iter().map(String::as_str).collect();
                path.push(child);
                path.join("::")
            };
            let named: Vec<String> = chain.iter().map(name).collect();
            let line = format!("{}: {}", crate_root.display(), named.join(" → "));
            let steps: Vec<String> = chain
                .windows(2)
                .map(|step| {
                    let why = &edges[&(step[0].clone(), step[1].clone())];
                    format!("    {} → {}: {why}", name(&step[0]), name(&step[1]))
                })
                .collect();
            found.push((line.clone(), format!("{line}\n{}", steps.join("\n"))));
        }
    }
    found
}
