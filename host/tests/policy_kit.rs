//! The policy authoring kit, end to end, with the commands docs/policy-authoring.md gives:
//! the example policies build for wasm32-wasip2 and pass their cases, `weir new-policy`
//! makes a crate that builds offline and passes its cases unchanged, and `weir bench` prints
//! its statistics.
//!
//! The nested wasm builds share the workspace's target directory: `cargo test` has finished
//! building (and released its lock) before tests run, dependencies compiled once serve every
//! example, and `make policies` leaves them warm.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// The workspace's target directory (`CARGO_TARGET_TMPDIR` is its `tmp/`).
fn shared_target() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .to_path_buf()
}

/// A scratch directory of this test file, emptied first.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("policy-kit")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `cargo`, without what the outer build set for itself (see [`nested`]).
fn cargo(dir: &Path) -> Command {
    nested(
        std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()),
        dir,
    )
}

/// `program` in `dir`, without what the outer build set for itself: flags meant for the host
/// build (coverage, sanitizers) and the target directory must not leak into the wasm builds.
fn nested(program: impl AsRef<std::ffi::OsStr>, dir: &Path) -> Command {
    let mut command = Command::new(program);
    command.current_dir(dir);
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "RUSTC_WORKSPACE_WRAPPER",
    ] {
        command.env_remove(var);
    }
    command
}

fn weir(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weir"))
        .current_dir(dir)
        .args(args)
        .env_remove("WEIR_GUEST")
        .output()
        .expect("running weir")
}

fn run(command: &mut Command) -> Output {
    let out = command.output().expect("spawning a command");
    assert!(
        out.status.success(),
        "{command:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The examples under guest/examples: (directory name, crate name).
fn examples() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(root().join("guest/examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let crate_name = format!("weir-example-{name}");
            (name, crate_name)
        })
        .collect();
    out.sort();
    out
}

fn case_count(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "yaml")
        })
        .count()
}

#[test]
fn examples_build_and_pass_their_cases() {
    let examples = examples();
    assert!(
        examples.len() >= 4,
        "expected the four example policies, found {examples:?}"
    );
    let target = shared_target();
    // One build for all of them, as `make policies` does.
    let mut build = cargo(&root());
    build
        .args(["build", "--release", "--target", "wasm32-wasip2"])
        .arg("--target-dir")
        .arg(&target);
    for (_, crate_name) in &examples {
        build.args(["-p", crate_name]);
    }
    run(&mut build);
    for (name, crate_name) in &examples {
        let wasm = target.join(format!(
            "wasm32-wasip2/release/{}.wasm",
            crate_name.replace('-', "_")
        ));
        let cases = root().join("guest/examples").join(name).join("cases");
        let n = case_count(&cases);
        assert!(n >= 3, "{name}: only {n} cases");
        let out = weir(
            &root(),
            &[
                "test",
                "--guest",
                wasm.to_str().unwrap(),
                cases.to_str().unwrap(),
            ],
        );
        let text = stdout(&out);
        assert!(out.status.success(), "{name}:\n{text}");
        assert!(
            text.contains(&format!("{n} passed, 0 failed")),
            "{name}:\n{text}"
        );
        // The cases must pin the policy, not upstream: the default guest fails some of them.
        let upstream = weir(&root(), &["test", cases.to_str().unwrap()]);
        assert!(
            !upstream.status.success(),
            "{name}: every case also passes with the default guest, so none tests the policy"
        );
        assert!(
            root()
                .join("guest/examples")
                .join(name)
                .join("README.md")
                .is_file()
        );
    }
}

#[test]
fn new_policy_builds_offline_and_passes_its_cases() {
    let dir = scratch("new-policy");
    // The guide's commands, in order.
    let out = run(Command::new(env!("CARGO_BIN_EXE_weir"))
        .current_dir(&dir)
        .args(["new-policy", "demo-x"]));
    assert!(
        stdout(&out).contains("created policy crate"),
        "{}",
        stdout(&out)
    );
    let krate = dir.join("demo-x");
    for file in [
        "Cargo.toml",
        "Cargo.lock",
        "src/lib.rs",
        "README.md",
        "Makefile",
        "cases",
    ] {
        assert!(krate.join(file).exists(), "{file} missing");
    }
    // Built like the default guest: 4 MiB of initial linear memory, so its calls do not
    // change page protections in the pooled slot.
    let config = std::fs::read_to_string(krate.join(".cargo/config.toml")).unwrap();
    assert!(
        config.contains("[target.wasm32-wasip2]") && config.contains("--initial-memory=4194304"),
        "{config}"
    );
    // Not part of the guide: point the crate's target/ at the shared directory, so the
    // dependencies the examples compiled are reused. The commands below are unchanged.
    #[cfg(unix)]
    std::os::unix::fs::symlink(shared_target(), krate.join("target")).unwrap();
    // Offline: the copied Cargo.lock must be enough to resolve from the local cargo cache.
    let out = run(cargo(&krate).arg("test").env("CARGO_NET_OFFLINE", "true"));
    assert!(
        stdout(&out).contains("test result: ok. 2 passed"),
        "{}",
        stdout(&out)
    );
    // `make -C demo-x`: cargo's wasm32-wasip2 build, copied to demo-x/demo-x.wasm.
    run(nested("make", &dir)
        .args(["-C", "demo-x"])
        .env("CARGO_NET_OFFLINE", "true"));
    let out = weir(
        &dir,
        &["test", "--guest", "demo-x/demo-x.wasm", "demo-x/cases"],
    );
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("2 passed, 0 failed"), "{text}");

    // Running it again refuses the now non-empty directory, and bad names are refused.
    let again = weir(&dir, &["new-policy", "demo-x"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists and is not empty"));
    let bad = weir(&dir, &["new-policy", "Demo X"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid policy name"));
    assert!(!dir.join("Demo X").exists());
}

#[test]
fn bench_prints_per_phase_statistics() {
    let case = root().join("tests/bench/100-pods.yaml");
    let out = weir(
        &root(),
        &[
            "bench",
            // A debug build on a busy 2-core machine can pass the 100 ms default; the deadline
            // itself is tested in deadline.rs.
            "--guest-deadline",
            "10s",
            "--iterations",
            "30",
            "--warmup",
            "3",
            case.to_str().unwrap(),
        ],
    );
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("30 timed calls per case after 3 warm-up"),
        "{text}"
    );
    assert!(text.contains("(100 pods selected): create"), "{text}");
    assert!(!text.contains("differs from the case's expect"), "{text}");
    let header = text.lines().find(|l| l.trim_start().starts_with("phase"));
    assert_eq!(
        header.map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["phase", "min", "median", "p99", "max"]),
        "{text}"
    );
    for phase in ["instantiate", "call", "release", "validate", "total"] {
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{phase} ")))
            .unwrap_or_else(|| panic!("no {phase} row:\n{text}"));
        // Four durations, each a number and a unit, in non-decreasing order.
        let fields: Vec<&str> = row.split_whitespace().skip(1).collect();
        assert_eq!(fields.len(), 8, "{row}");
        let micros: Vec<f64> = fields
            .chunks(2)
            .map(|c| {
                let value: f64 = c[0].parse().unwrap();
                match c[1] {
                    "µs" => value,
                    "ms" => value * 1000.0,
                    unit => panic!("unit {unit} in {row}"),
                }
            })
            .collect();
        assert!(micros.windows(2).all(|w| w[0] <= w[1]), "{row}");
    }

    // A case the guest cannot run is reported, and the exit code says so.
    let dir = scratch("bench");
    let bad = dir.join("bad-config.yaml");
    let text = std::fs::read_to_string(&case).unwrap() + "config: {noSuchField: 1}\n";
    std::fs::write(&bad, text).unwrap();
    let out = weir(&root(), &["bench", "-n", "5", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("FAIL"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("unknown field `noSuchField`"),
        "{}",
        stdout(&out)
    );
}
