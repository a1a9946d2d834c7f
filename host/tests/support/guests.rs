//! The test guests of `tests/guests/`, built once per test binary.
//!
//! One nested `cargo build --release --target wasm32-wasip2` builds all of them into
//! `test-guests` of the target directory the tests were built in (`CARGO_TARGET_DIR`, or the
//! workspace's `target`), so a kept target directory keeps them too. Tests in the same binary share it through a `OnceLock`;
//! test binaries running at the same time each start the build, and cargo's lock on the
//! target directory makes all but the first wait and then find everything fresh.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Every guest under `tests/guests/`, by directory name (`stall` is the library three of
/// them share, not a guest).
pub const TEST_GUESTS: &[&str] = &[
    "all-not-ready",
    "alloc-forever",
    "big",
    "clock-spin",
    "drain-annotation-hooks",
    "fail-on-label",
    "loop-forever",
    "poll-timer",
    "probe",
    "remember",
    "sleep",
    "trap",
    "trap-on-label",
    "v0-1-default",
    "wrong-name",
    "wrong-world",
];

/// Example policies of `guest/examples/` the tests run, by directory name; built with the
/// test guests.
pub const EXAMPLE_GUESTS: &[&str] = &["drain-annotation"];

/// The bytes of the example policy `guest/examples/<name>`, built on first use.
pub fn example_guest_bytes(name: &str) -> Vec<u8> {
    assert!(
        EXAMPLE_GUESTS.contains(&name),
        "no example guest {name:?}; add its directory name to EXAMPLE_GUESTS"
    );
    let path = built_dir().join(format!("weir_example_{}.wasm", name.replace('-', "_")));
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn built_dir() -> &'static Path {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BUILT.get_or_init(build_all) {
        Ok(dir) => dir,
        Err(message) => panic!("{message}"),
    }
}

/// The workspace root (this file is in `host/tests/support/`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ lives in the workspace root")
        .to_path_buf()
}

/// The built component of the test guest `tests/guests/<name>`, building all of them on
/// first use. Panics with cargo's output if the build fails.
pub fn test_guest(name: &str) -> PathBuf {
    assert!(
        TEST_GUESTS.contains(&name),
        "no test guest {name:?}; add its directory name to TEST_GUESTS"
    );
    let path = built_dir().join(format!("weir_test_{}.wasm", name.replace('-', "_")));
    assert!(
        path.exists(),
        "the guest build did not produce {}",
        path.display()
    );
    path
}

/// The bytes of [`test_guest`]`(name)`.
pub fn test_guest_bytes(name: &str) -> Vec<u8> {
    let path = test_guest(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn build_all() -> Result<PathBuf, String> {
    let root = workspace_root();
    // CARGO_TARGET_TMPDIR is `<target directory>/tmp`.
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .join("test-guests");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(&root)
        .args(["build", "--release", "--target", "wasm32-wasip2"])
        .arg("--target-dir")
        .arg(&target_dir);
    for name in TEST_GUESTS {
        command.args(["-p", &format!("weir-test-{name}")]);
    }
    for name in EXAMPLE_GUESTS {
        command.args(["-p", &format!("weir-example-{name}")]);
    }
    // Flags meant for the host build (coverage, sanitizers, a host target, the outer target
    // directory) must not leak into the guest build.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_LLVM_COV",
        "LLVM_PROFILE_FILE",
    ] {
        command.env_remove(var);
    }
    let output = command
        .output()
        .map_err(|e| format!("cannot run cargo to build the test guests: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "building the test guests failed (needs `rustup target add wasm32-wasip2`):\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(target_dir.join("wasm32-wasip2/release"))
}
