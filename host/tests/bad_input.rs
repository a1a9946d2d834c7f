//! Hostile and broken case files, run through the `weir` binary as a user would.
//!
//! `tests/bad-input/` holds the corpus and `tests/bad-input/expected.txt` what each file must
//! give: the exit code and a message fragment, printed exactly once, by both `weir test FILE`
//! and `weir reconcile FILE`. The large inputs of the issue (20,000 aliases of a 100 KB pod,
//! 100,000 levels of nesting) are generated here instead of stored. Every run is bounded by a
//! generous deadline, so a hang fails the test instead of stalling it; speed is not asserted.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Long enough for a debug build on a loaded machine; short enough to catch a hang.
const DEADLINE: Duration = Duration::from_secs(120);

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/bad-input")
}

/// Runs `weir ARGS` within [`DEADLINE`]; returns (exit code, stdout and stderr together).
fn weir(args: &[&str]) -> (Option<i32>, String) {
    support::weir_within(args, &[], DEADLINE)
}

/// One line of `expected.txt`: file, exit code, message fragment (tab-separated).
struct Expectation {
    file: String,
    code: i32,
    message: String,
}

fn expectations() -> Vec<Expectation> {
    let text = std::fs::read_to_string(corpus().join("expected.txt")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut parts = l.splitn(3, '\t');
            let mut next = || parts.next().unwrap_or_else(|| panic!("bad line: {l:?}"));
            Expectation {
                file: next().to_string(),
                code: next().parse().unwrap(),
                message: next().to_string(),
            }
        })
        .collect()
}

fn assert_refused(args: &[&str], code: i32, message: &str) {
    let (got, output) = weir(args);
    assert_eq!(got, Some(code), "weir {args:?}:\n{output}");
    assert_eq!(
        output.matches(message).count(),
        1,
        "weir {args:?} must print {message:?} exactly once:\n{output}"
    );
}

#[test]
fn every_corpus_file_gives_its_exit_code_and_message() {
    let expected = expectations();
    let mut listed: Vec<&str> = expected.iter().map(|e| e.file.as_str()).collect();
    listed.sort_unstable();
    let mut on_disk: Vec<String> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "expected.txt" && n != "README.md")
        .collect();
    on_disk.sort_unstable();
    assert_eq!(listed, on_disk, "expected.txt must list every corpus file");
    for e in &expected {
        let path = corpus().join(&e.file).display().to_string();
        assert_refused(&["test", &path], e.code, &e.message);
        assert_refused(&["reconcile", &path], e.code, &e.message);
    }
}

/// The pod of the alias bomb: one 100 KB annotation.
fn big_pod_anchor() -> String {
    format!(
        "  - &pod\n    metadata: {{name: p, namespace: ns1, labels: {{app: web}}, annotations: {{big: {}}}}}\n",
        "x".repeat(100_000)
    )
}

#[test]
fn alias_amplification_is_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from(
        "key: ns1/svc\nservice: {metadata: {name: svc, namespace: ns1}, spec: {selector: {app: web}}}\npods:\n",
    );
    text.push_str(&big_pod_anchor());
    for _ in 0..20_000 {
        text.push_str("  - *pod\n");
    }
    let file = dir.path().join("aliases.yaml");
    std::fs::write(&file, &text).unwrap();
    let file = file.display().to_string();
    assert_refused(&["test", &file], 2, "aliases expand the document");
    assert_refused(&["reconcile", &file], 2, "aliases expand the document");
}

#[test]
fn deep_nesting_is_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let depth = 100_000;
    let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let yaml = dir.path().join("deep.yaml");
    std::fs::write(&yaml, format!("key: ns1/svc\nconfig: {nested}\n")).unwrap();
    let json = dir.path().join("deep.json");
    std::fs::write(
        &json,
        format!("{{\"key\": \"ns1/svc\", \"config\": {nested}}}"),
    )
    .unwrap();
    for (file, message) in [
        (yaml, "nested deeper than 128 levels"),
        (json, "recursion limit exceeded"),
    ] {
        let file = file.display().to_string();
        assert_refused(&["test", &file], 2, message);
        assert_refused(&["reconcile", &file], 2, message);
    }
}

#[test]
fn a_directory_symlink_loop_is_read_once() {
    let dir = support::scratch_dir("bad-input-symlink-loop");
    let cases = dir.join("cases");
    std::fs::create_dir_all(cases.join("sub")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/cases/lifecycle/create-two-ready-pods.yaml"),
        cases.join("sub/case.yaml"),
    )
    .unwrap();
    // sub/loop → .. : reading it naively recurses cases/sub/loop/sub/loop/... forever.
    std::os::unix::fs::symlink("..", cases.join("sub/loop")).unwrap();
    let (code, output) = weir(&["test", &cases.display().to_string()]);
    assert_eq!(code, Some(0), "{output}");
    assert!(
        output.trim_end().ends_with("1 passed, 0 failed"),
        "{output}"
    );
}
