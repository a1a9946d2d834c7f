//! The golden cases agree with the independent Python models of the spec
//! (`tests/cases/gen/crosscheck.py`: Endpoints and EndpointSlices): a slip in a hand-written
//! expectation or in a model shows up here as a failure, so `cargo test` (and `make test`)
//! keeps both honest.

mod support;

use std::path::Path;
use std::process::Command;

#[test]
fn every_golden_case_agrees_with_the_independent_model() {
    support::require_tool("python3", &["-c", "import yaml"]);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("python3")
        .arg(repo.join("tests/cases/gen/crosscheck.py"))
        .current_dir(&repo)
        .output()
        .expect("running crosscheck.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "crosscheck.py failed:\n{stdout}\n{stderr}"
    );
    // The count in the summary line must cover every case file on disk, EndpointSlice cases
    // included, so a case the models skip cannot pass unnoticed.
    let cases = walk_yaml(&repo.join("tests/cases"));
    assert!(
        stdout.contains(&format!("{cases}/{cases} cases agree")),
        "expected all {cases} cases to agree:\n{stdout}"
    );
}

fn walk_yaml(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            if p.is_dir() {
                walk_yaml(&p)
            } else {
                usize::from(p.extension().is_some_and(|e| e == "yaml"))
            }
        })
        .sum()
}
