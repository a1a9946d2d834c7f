//! `weir policy build`, end to end as processes: a hooks component written with plain
//! wit-bindgen (`tests/guests/drain-annotation-hooks`, the drain-annotation rule) is composed
//! with the engine built into weir, and the guest passes the Rust drain-annotation example's
//! cases and every golden case; inputs that cannot be a policy's hooks are refused with the
//! reason and exit 2.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::guests::workspace_root;
use support::{require_tool, scratch_dir, test_guest, weir_within};

/// Generous: a debug build runs every golden case through two components.
const LIMIT: Duration = Duration::from_secs(300);

fn weir(args: &[&str]) -> (Option<i32>, String) {
    weir_within(args, &[], LIMIT)
}

fn path(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

#[test]
fn composed_hooks_pass_the_rust_examples_cases_and_the_golden_cases() {
    let dir = scratch_dir("policy-build-drain");
    let composed = dir.join("drain.wasm");
    let hooks = test_guest("drain-annotation-hooks");
    let (code, out) = weir(&["policy", "build", path(&hooks), "-o", path(&composed)]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("composed with weir's engine"), "{out}");

    // An ordinary guest of the current contract.
    let (code, out) = weir(&["guest", "info", path(&composed)]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("weir:endpoints@0.2.0"), "{out}");

    let cases = workspace_root().join("guest/examples/drain-annotation/cases");
    let n = std::fs::read_dir(&cases).unwrap().count();
    assert!(n >= 6, "only {n} cases");
    let (code, out) = weir(&["test", "--guest", path(&composed), path(&cases)]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains(&format!("{n} passed, 0 failed")), "{out}");
    // The cases pin the policy: upstream alone fails some, so the hooks did the draining.
    let (code, out) = weir(&["test", path(&cases)]);
    assert_ne!(code, Some(0), "{out}");

    // No golden case annotates a pod as draining, so the engine must be upstream in all.
    let golden = workspace_root().join("tests/cases");
    let (code, out) = weir(&[
        "test",
        "--guest-deadline",
        "10s",
        "--guest",
        path(&composed),
        path(&golden),
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains(" passed, 0 failed"), "{out}");

    // The configuration reaches the hooks' validate-config through the engine.
    let case = cases.join("default-annotation-moves-pod-to-not-ready.yaml");
    let config = dir.join("config.json");
    std::fs::write(&config, r#"{"annotation": ""}"#).unwrap();
    let (code, out) = weir(&[
        "reconcile",
        "--guest",
        path(&composed),
        "--policy-config",
        path(&config),
        path(&case),
    ]);
    assert_ne!(code, Some(0), "{out}");
    assert!(out.contains("annotation must not be empty"), "{out}");
}

/// Asserts `weir policy build` refused `hooks` with exit 2, a message containing `reason`,
/// and no output or scratch file.
fn assert_refused(dir: &Path, hooks: &Path, reason: &str) {
    let output = dir.join("out.wasm");
    let (code, out) = weir(&["policy", "build", path(hooks), "-o", path(&output)]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains(reason), "expected {reason:?} in:\n{out}");
    assert!(
        !output.exists(),
        "a refused build wrote {}",
        output.display()
    );
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name.to_string_lossy().contains(".weir-build-"))
        .collect();
    assert!(left.is_empty(), "scratch files left behind: {left:?}");
}

#[test]
fn inputs_that_are_not_hooks_are_refused_with_the_reason() {
    require_tool("wasm-tools", &["--version"]);
    let dir = scratch_dir("policy-build-hostile");
    let write = |name: &str, bytes: &[u8]| {
        let file = dir.join(name);
        std::fs::write(&file, bytes).unwrap();
        file
    };

    assert_refused(&dir, &dir.join("missing.wasm"), "cannot read");
    let text = write("text.wasm", b"print('hi')\n");
    assert_refused(&dir, &text, "not a valid WebAssembly component");
    let core = write("core.wasm", b"\0asm\x01\0\0\0");
    assert_refused(&dir, &core, "core WebAssembly module, not a component");
    // A whole guest is a component of the wrong world: it exports the functions the engine
    // exports, not the hooks.
    let default = dir.join("default.wasm");
    let (code, out) = weir(&["guest", "export", path(&default)]);
    assert_eq!(code, Some(0), "{out}");
    assert_refused(
        &dir,
        &default,
        "does not export weir:hooks/policy@0.2.0 (world `hooks` of wit/hooks/v0.2/hooks.wit); \
         it exports reconcile, validate-config",
    );
    // Hooks of another version of the contract, and hooks of this version whose types do
    // not match it.
    let wit = dir.join("wit");
    std::fs::create_dir_all(&wit).unwrap();
    for (version, wanted) in [
        (
            "0.1.0",
            "exports weir:hooks/policy@0.1.0, another version of the hooks contract",
        ),
        (
            "0.2.0",
            "does not match the contract this weir composes with",
        ),
    ] {
        std::fs::write(
            wit.join("hooks.wit"),
            format!(
                "package weir:hooks@{version};\n\
                 interface policy {{ decide: func(pods: u32) -> u32; }}\n\
                 world hooks {{ export policy; }}\n"
            ),
        )
        .unwrap();
        let module = dir.join("other-core.wasm");
        let other = dir.join(format!("other-{version}.wasm"));
        let embed = Command::new("wasm-tools")
            .args(["component", "embed", "--dummy", "-w", "hooks"])
            .args([path(&wit), "-o", path(&module)])
            .output()
            .unwrap();
        assert!(embed.status.success(), "{embed:?}");
        let new = Command::new("wasm-tools")
            .args(["component", "new", path(&module), "-o", path(&other)])
            .output()
            .unwrap();
        assert!(new.status.success(), "{new:?}");
        assert_refused(&dir, &other, wanted);
    }
    // An output that cannot be written.
    let hooks = test_guest("drain-annotation-hooks");
    let nowhere = dir.join("no/such/dir/out.wasm");
    let (code, out) = weir(&["policy", "build", path(&hooks), "-o", path(&nowhere)]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("cannot write"), "{out}");
}

/// The composition is weir's own: it runs with nothing on PATH, and the guest it writes is
/// the same whichever way the process finds its tools.
#[test]
fn composes_with_no_other_program_on_path() {
    let dir = scratch_dir("policy-build-no-path");
    let hooks = test_guest("drain-annotation-hooks");
    let bare = dir.join("bare.wasm");
    let (code, out) = weir_within(
        &["policy", "build", path(&hooks), "-o", path(&bare)],
        &[("PATH", path(&dir))],
        LIMIT,
    );
    assert_eq!(code, Some(0), "{out}");
    let usual = dir.join("usual.wasm");
    let (code, out) = weir(&["policy", "build", path(&hooks), "-o", path(&usual)]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        std::fs::read(&bare).unwrap(),
        std::fs::read(&usual).unwrap()
    );
}
