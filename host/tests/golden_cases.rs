//! Every golden case in `tests/cases` passes under the embedded default guest, run exactly as
//! `weir test` runs them (wasmtime, validation, set comparison).

use std::path::PathBuf;

use weir::cases::{check_file, discover};
use weir::runtime::{Limits, Runtime};

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/cases")
}

#[tokio::test]
async fn every_golden_case_passes() {
    // Cases check decisions, not speed: a deadline far above any case's cost keeps the
    // 1000-pod cases from failing on a loaded machine (a debug build takes ~60-200 ms there).
    let limits = Limits {
        deadline: std::time::Duration::from_secs(10),
        ..Limits::default()
    };
    let guest = Runtime::new(limits)
        .unwrap()
        .load_async(weir::runtime::DEFAULT_GUEST.to_vec())
        .await
        .unwrap();
    let files = discover(&[cases_dir()]).unwrap();
    assert!(
        files.len() >= 60,
        "the spec needs at least 60 cases, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for file in &files {
        let verdict = check_file(&guest, file).await;
        if !verdict.problems.is_empty() {
            failures.push(format!(
                "{}:\n{}",
                verdict.path.display(),
                verdict.problems.join("\n")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// `weir test` on a directory of cases: one `ok` line per case file and the closing line
/// `N passed, 0 failed`, N being every case file there (so never 0).
#[test]
fn weir_test_reports_the_closing_line() {
    let dir = cases_dir().join("lifecycle");
    let files = discover(std::slice::from_ref(&dir)).unwrap();
    assert!(!files.is_empty(), "no case files in {}", dir.display());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .arg("test")
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let last = stdout.lines().last().unwrap_or_default();
    let passed: usize = last
        .strip_suffix(" passed, 0 failed")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("closing line was {last:?}"));
    assert!(passed > 0, "closing line was {last:?}");
    assert_eq!(passed, files.len(), "{stdout}");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok ")).count(),
        passed,
        "{stdout}"
    );
}

/// `weir test` on paths that hold no case file fails (exit 2) and says why, rather than
/// report `0 passed, 0 failed` as a success.
#[test]
fn weir_test_refuses_paths_without_cases() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "not a case\n").unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .arg("test")
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("no case files (*.yaml, *.yml, *.json) under the given paths"),
        "{stderr}"
    );
    assert!(!stdout.contains("passed"), "{stdout}");
}
