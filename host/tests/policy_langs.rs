//! Policies in Python and TypeScript, end to end, as processes: the SDKs' own checks, the
//! drain-annotation and node-allowlist examples built in both languages and composed with
//! upstream's engine (`weir policy build`) passing the Rust examples' case files, and
//! `weir new-policy --lang python|js` scaffolds that `make -C NAME` builds and whose cases pass.
//!
//! The components are large (CPython or SpiderMonkey inside) and a debug `weir` compiles them
//! slowly on a busy machine, so `weir test` runs with a 10 s deadline, as `make test` runs the
//! golden cases; the deadline itself is tested in host/tests/deadline.rs.

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

fn weir() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
    command.env_remove("WEIR_GUEST").env_remove("WEIR_SDK");
    command
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

/// `weir test` of `guest` on `cases`: every case passes, and there are `expected` of them.
fn assert_cases_pass(guest: &Path, cases: &Path, expected: usize) {
    let out = weir()
        .args(["test", "--guest-deadline", "10s", "--guest"])
        .arg(guest)
        .arg(cases)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}:\n{text}\n{}",
        guest.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("{expected} passed, 0 failed")),
        "{}:\n{text}",
        guest.display()
    );
}

fn yaml_files(dir: &Path) -> usize {
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
fn python_sdk_unit_tests_pass() {
    componentize_py_available();
    require_tool("python3", &["--version"]);
    let bindings = scratch("python-bindings");
    run(Command::new("componentize-py")
        .arg("-d")
        .arg(root().join("wit/hooks/v0.2"))
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
fn js_sdk_unit_tests_pass() {
    js_tools();
    let out = run(Command::new("node").arg(root().join("guest/js/scripts/test.mjs")));
    let text = String::from_utf8_lossy(&out.stdout);
    // node's TAP summary: `# pass N` and `# fail N`.
    let count = |key: &str| -> Option<usize> {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
    };
    assert!(
        count("# pass ").is_some_and(|n| n >= 8),
        "expected the SDK's tests to run:\n{text}"
    );
    assert_eq!(count("# fail "), Some(0), "{text}");
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

/// Copies the files under `from` (no symbolic links) to `to`, emptied first; returns `to`.
fn copy_dir(from: &Path, to: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
    to.to_path_buf()
}

/// Builds `guest/examples/NAME/LANG` into a hooks component and composes it with the engine.
fn build_example(name: &str, lang: &str, out: &Path, python_sdk: &Path) -> PathBuf {
    // componentize-py's own interpreter writes `__pycache__` beside the sources it imports,
    // whatever PYTHONDONTWRITEBYTECODE says: the sources are built from a copy, so the
    // checkout (whose guest directories cargo watches to rebuild the built-in guests) stays
    // as it was.
    let source = copy_dir(
        &root().join("guest/examples").join(name).join(lang),
        &out.join(format!("{name}-{lang}-source")),
    );
    let hooks = out.join(format!("{name}-{lang}.hooks.wasm"));
    match lang {
        "python" => run(Command::new("componentize-py")
            .arg("-d")
            .arg(root().join("wit/hooks/v0.2"))
            .args(["-w", "hooks", "componentize", "-p"])
            .arg(&source)
            .arg("-p")
            .arg(python_sdk)
            .args(["weir_policy.component", "-o"])
            .arg(&hooks)
            .env("PYTHONDONTWRITEBYTECODE", "1")),
        _ => run(Command::new("node")
            .arg(root().join("guest/js/build.mjs"))
            .arg(source.join("policy.ts"))
            .arg("-o")
            .arg(&hooks)),
    };
    let composed = out.join(format!("{name}-{lang}.wasm"));
    run(weir()
        .args(["policy", "build"])
        .arg(&hooks)
        .arg("-o")
        .arg(&composed));
    composed
}

#[test]
fn examples_in_python_and_typescript_pass_the_rust_examples_cases() {
    componentize_py_available();
    js_tools();
    let out = scratch("examples");
    // Copied for the reason build_example copies the sources, once for every example.
    let python_sdk = copy_dir(&root().join("guest/python"), &out.join("python-sdk"));
    for name in ["drain-annotation", "node-allowlist", "panic-threshold"] {
        let cases = root().join("guest/examples").join(name).join("cases");
        let n = yaml_files(&cases);
        assert!(n >= 4, "{name}: only {n} cases");
        for lang in ["python", "js"] {
            let guest = build_example(name, lang, &out, &python_sdk);
            assert_cases_pass(&guest, &cases, n);
        }
    }
}

#[test]
fn new_policy_in_python_and_typescript_builds_with_make_and_passes_its_cases() {
    componentize_py_available();
    js_tools();
    require_tool("make", &["--version"]);
    let dir = scratch("new-policy");
    for (lang, name, source) in [
        ("python", "demo-py", "policy.py"),
        ("js", "demo-js", "policy.ts"),
    ] {
        // The guide's commands, in order.
        let out = run(weir()
            .current_dir(&dir)
            .args(["new-policy", name, "--lang", lang]));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("make -C {name}")), "{text}");
        let policy = dir.join(name);
        for file in [source, "Makefile", "README.md", ".gitignore", "cases"] {
            assert!(policy.join(file).exists(), "{lang}: {file} missing");
        }
        run(Command::new("make")
            .arg("-C")
            .arg(name)
            .current_dir(&dir)
            .env("PYTHONDONTWRITEBYTECODE", "1"));
        let wasm = policy.join(format!("{name}.wasm"));
        assert!(wasm.is_file(), "{lang}: make built no {}", wasm.display());
        assert_cases_pass(&wasm, &policy.join("cases"), 2);

        // Running it again refuses the now non-empty directory.
        let again = weir()
            .current_dir(&dir)
            .args(["new-policy", name, "--lang", lang])
            .output()
            .unwrap();
        assert_eq!(again.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&again.stderr).contains("already exists and is not empty"));
    }
    // An SDK of the wrong language is refused before anything is written.
    let wrong = weir()
        .current_dir(&dir)
        .args(["new-policy", "demo-wrong", "--lang", "python", "--sdk"])
        .arg(root().join("guest/js"))
        .output()
        .unwrap();
    assert_eq!(wrong.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("no Python SDK at"),
        "{}",
        String::from_utf8_lossy(&wrong.stderr)
    );
    assert!(!dir.join("demo-wrong").exists());
}
