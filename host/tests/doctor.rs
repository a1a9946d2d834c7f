//! `make doctor` (tests/doctor.sh), run as a newcomer runs it: on a PATH where a prerequisite
//! is missing or too old it exits 1 and names each with how to get it; where every
//! prerequisite is present it exits 0.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn doctor() -> PathBuf {
    support::guests::workspace_root().join("tests/doctor.sh")
}

/// Where `program` is on this process's PATH.
fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    })
}

/// A directory for PATH holding the programs the script and its checks use, except those in
/// `leave_out`: each a small script that runs the real one with this process's PATH (a version
/// manager's shim finds its own tools only there).
fn bin_dir(name: &str, leave_out: &[&str]) -> PathBuf {
    let dir = support::scratch_dir(name);
    for program in [
        "bash", "sh", "sed", "awk", "sort", "head", "printf", "dirname", "rustc", "rustup",
        "cargo", "go", "node", "npm", "python3", "cc",
    ] {
        if leave_out.contains(&program) {
            continue;
        }
        if let Some(real) = which(program) {
            let path = std::env::var("PATH").unwrap_or_default();
            write_script(
                &dir,
                program,
                &format!("PATH='{path}' exec '{}' \"$@\"", real.display()),
            );
        }
    }
    dir
}

fn write_script(dir: &Path, program: &str, body: &str) {
    support::write_script(&dir.join(program), body);
}

fn fake(dir: &Path, program: &str, prints: &str) {
    write_script(dir, program, &format!("echo '{prints}'"));
}

fn run(path: &Path) -> (Option<i32>, String) {
    let out = Command::new(which("bash").expect("bash"))
        .arg(doctor())
        .env("PATH", path)
        .env("WEIR_TOOLS_DIR", path.join("no-tools"))
        .output()
        .expect("running tests/doctor.sh");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

#[test]
fn names_a_missing_and_an_old_prerequisite_with_how_to_get_it() {
    let dir = bin_dir("doctor-missing", &["go", "node"]);
    // Debian 12's own Node.js.
    fake(&dir, "node", "v18.19.0");
    let (code, out) = run(&dir);
    assert_eq!(code, Some(1), "{out}");
    let line = |status: &str, what: &str| {
        out.lines()
            .any(|l| l.starts_with(status) && l.contains(what))
    };
    assert!(line("missing", "go >= 1.26"), "{out}");
    assert!(line("old", "node >= 20"), "{out}");
    assert!(out.contains("-> Go from go.dev"), "{out}");
    assert!(out.contains("Debian 12's nodejs is 18"), "{out}");
    assert!(line("ok", "rustc >= "), "{out}");
    // The tools are not installed there: named, with the command that installs them, and not
    // a reason to fail on their own.
    assert!(line("absent", "cosign"), "{out}");
    assert!(line("absent", "kubectl"), "{out}");
    assert!(
        out.contains("a prerequisite is missing or too old"),
        "{out}"
    );
}

#[test]
fn passes_where_every_prerequisite_is_present() {
    let dir = bin_dir("doctor-present", &[]);
    let (code, out) = run(&dir);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("every prerequisite is here"), "{out}");
    assert!(
        !out.lines()
            .any(|l| l.starts_with("missing") || l.starts_with("old")),
        "{out}"
    );
}
