//! Policies in Python and TypeScript, as processes: the Python SDK's unit tests on the bindings
//! componentize-py generates, and the TypeScript SDK, its declarations and the examples
//! type-checked by the pinned `tsc`.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::require_tool;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// A scratch directory of this test file, emptied first.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("policy-langs")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `command`, failing the test with its output unless it exits 0.
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

fn componentize_py_available() {
    require_tool("componentize-py", &["--version"]);
}

/// The SDK's pinned npm tools (tests/install-tools.sh runs `npm ci` in guest/js).
fn js_tools() -> PathBuf {
    let bin = root().join("guest/js/node_modules/.bin");
    require_tool("node", &["--version"]);
    assert!(
        bin.join("tsc").is_file(),
        "{} has no tsc: `make tools` runs `npm ci` in guest/js",
        bin.display()
    );
    bin
}

#[test]
fn python_sdk_unit_tests_pass() {
    componentize_py_available();
    require_tool("python3", &["--version"]);
    let bindings = scratch("python-bindings");
    run(Command::new("componentize-py")
        .arg("-d")
        .arg(root().join("wit/hooks/v0.1"))
        .args(["-w", "hooks", "bindings"])
        .arg(&bindings));
    let tests = root().join("guest/python/tests");
    let path = std::env::join_paths([bindings, root().join("guest/python")]).unwrap();
    let out = run(Command::new("python3")
        .args(["-m", "unittest", "discover", "-v", "-s"])
        .arg(&tests)
        .arg("-t")
        .arg(&tests)
        .env("PYTHONPATH", path)
        .env("PYTHONDONTWRITEBYTECODE", "1"));
    let text = String::from_utf8_lossy(&out.stderr);
    let ran: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("Ran ")?.split(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert!(ran >= 9, "expected the SDK's tests to run:\n{text}");
    assert!(text.trim_end().ends_with("OK"), "{text}");
}

#[test]
fn js_sdk_and_examples_type_check() {
    let bin = js_tools();
    // guest/js/tsconfig.json covers the SDK, its generated declarations and the examples.
    run(Command::new(bin.join("tsc"))
        .arg("-p")
        .arg(root().join("guest/js")));
    // And a type error is caught: a hook with the wrong signature.
    let dir = scratch("ts-error");
    let sdk = root().join("guest/js");
    std::fs::write(
        dir.join("policy.ts"),
        "import { Policy, exportPolicy } from \"weir-policy\";\n\
         class Bad extends Policy { include(): string { return \"yes\"; } }\n\
         export const policy = exportPolicy(Bad);\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("tsconfig.json"),
        format!(
            r#"{{"compilerOptions": {{"strict": true, "noEmit": true, "module": "esnext",
               "moduleResolution": "bundler", "target": "es2022", "types": [],
               "paths": {{"weir-policy": ["{0}/src/weir-policy.ts"]}}}},
               "include": ["*.ts", "{0}/types/**/*.d.ts"]}}"#,
            sdk.display()
        ),
    )
    .unwrap();
    let out = Command::new(bin.join("tsc"))
        .arg("-p")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "tsc accepted a hook returning a string"
    );
}
