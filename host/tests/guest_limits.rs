//! A guest's own limits (its `weir-limits` section, written by `weir policy limits` or `weir
//! policy build --deadline --memory-mib`) as a user meets them, through the weir binary: a
//! guest asking for a longer deadline runs where the operator's default fails it, a guest
//! asking for more than the ceilings is refused with the flag to raise, and `weir guest info`
//! shows what a guest asks for.

mod support;

use std::path::Path;
use std::time::Duration;

use support::weir_within;

/// 997 ready and 4 not-ready pods: a call no guest finishes within 1 ms.
const BIG_CASE: &str = "tests/cases/capacity/ready-under-1000-not-ready-get-the-rest.yaml";
const LIMIT: Duration = Duration::from_secs(120);

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn weir(args: &[&str]) -> (Option<i32>, String) {
    weir_within(args, &[], LIMIT)
}

/// The default guest, written to `dir`, and a copy asking for `limits` (`weir policy limits`
/// flags).
fn guests(dir: &Path, limits: &[&str]) -> (String, String) {
    let plain = dir.join("default.wasm").display().to_string();
    let asking = dir.join("asking.wasm").display().to_string();
    let (code, out) = weir(&["guest", "export", &plain]);
    assert_eq!(code, Some(0), "{out}");
    let mut args = vec!["policy", "limits", &plain, "-o", &asking];
    args.extend_from_slice(limits);
    let (code, out) = weir(&args);
    assert_eq!(code, Some(0), "{out}");
    (plain, asking)
}

#[test]
fn a_guest_asking_for_a_longer_deadline_runs_where_the_default_fails_it() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, asking) = guests(dir.path(), &["--deadline", "20s"]);
    let case = root().join(BIG_CASE).display().to_string();
    let (code, out) = weir(&["test", "--guest-deadline", "1ms", "--guest", &plain, &case]);
    // The load check's instantiation may fit in 1 ms (exit 2 when not); the call never does.
    assert!(matches!(code, Some(1 | 2)), "{out}");
    assert!(out.contains("deadline of 1ms"), "{out}");
    let (code, out) = weir(&[
        "test",
        "--guest-deadline",
        "1ms",
        "--guest-max-deadline",
        "30s",
        "--guest",
        &asking,
        &case,
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("1 passed, 0 failed"), "{out}");
}

#[test]
fn a_guest_asking_above_the_ceilings_is_refused_with_the_flag_to_raise() {
    let dir = tempfile::tempdir().unwrap();
    let (_, asking) = guests(dir.path(), &["--deadline", "3s", "--memory-mib", "100"]);
    let case = root().join(BIG_CASE).display().to_string();
    let (code, out) = weir(&["test", "--guest", &asking, &case]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("deadline 3s, over the ceiling of 2s (--guest-max-deadline)"),
        "{out}"
    );
    let (code, out) = weir(&[
        "test",
        "--guest-max-deadline",
        "3s",
        "--guest-max-memory-mib",
        "99",
        "--guest",
        &asking,
        &case,
    ]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("memory 100 MiB, over the ceiling of 99 MiB (--guest-max-memory-mib)"),
        "{out}"
    );
}

#[test]
fn a_guest_asking_for_more_memory_gets_that_cap() {
    // alloc-forever allocates until the cap stops it: the message names the cap it met.
    let dir = tempfile::tempdir().unwrap();
    let greedy = support::test_guest("alloc-forever").display().to_string();
    let asking = dir.path().join("asking.wasm").display().to_string();
    let (code, out) = weir(&[
        "policy",
        "limits",
        &greedy,
        "-o",
        &asking,
        "--memory-mib",
        "96",
    ]);
    assert_eq!(code, Some(0), "{out}");
    let case = root().join(BIG_CASE).display().to_string();
    let (_, out) = weir(&["test", "--guest-deadline", "20s", "--guest", &asking, &case]);
    assert!(
        out.contains(&format!("memory cap of {} bytes", 96 << 20)),
        "{out}"
    );
}

#[test]
fn guest_info_shows_the_limits_a_guest_asks_for() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, asking) = guests(dir.path(), &["--deadline", "1500ms", "--memory-mib", "200"]);
    let (code, out) = weir(&["guest", "info", &asking]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("limits:     deadline 1s 500ms, memory 200 MiB (its own weir-limits section)"),
        "{out}"
    );
    let (code, out) = weir(&["guest", "info", &plain]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("limits:     none of its own"), "{out}");
    // Neither flag removes them again: the bytes are the plain guest's.
    let cleared = dir.path().join("cleared.wasm");
    let (code, out) = weir(&["policy", "limits", &asking, "-o", cleared.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        std::fs::read(&cleared).unwrap(),
        std::fs::read(&plain).unwrap()
    );
}
