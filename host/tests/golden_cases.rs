//! Every golden case in `tests/cases` passes under the embedded default guest, run exactly as
//! `weir test` runs them (wasmtime, validation, set comparison).

use std::path::PathBuf;

use weir::cases::{check_file, discover};
use weir::runtime::{Limits, Runtime};

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/cases")
}

#[test]
fn every_golden_case_passes() {
    let guest = Runtime::new(Limits::default())
        .unwrap()
        .default_guest()
        .unwrap();
    let files = discover(&[cases_dir()]).unwrap();
    assert!(
        files.len() >= 60,
        "the spec needs at least 60 cases, found {}",
        files.len()
    );
    let failures: Vec<String> = files
        .iter()
        .map(|f| check_file(&guest, f))
        .filter(|v| !v.problems.is_empty())
        .map(|v| format!("{}:\n{}", v.path.display(), v.problems.join("\n")))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn weir_test_reports_the_closing_line() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["test"])
        .arg(cases_dir().join("lifecycle"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.ends_with("passed, 0 failed"),
        "closing line was {last:?}"
    );
}
