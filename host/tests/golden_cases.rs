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
