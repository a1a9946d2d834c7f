//! `weir guest export|info|compile`, through the binary.

mod support;

use std::process::{Command, Output};

use support::{scratch_dir, test_guest};
use weir::runtime::{DEFAULT_GUEST, digest};

fn weir(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(args)
        .env("WEIR_LOG", "warn")
        .output()
        .expect("running weir")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn export_writes_the_default_guest_and_info_describes_it() {
    let dir = scratch_dir("guest-cli-export");
    let path = dir.join("default.wasm");
    let out = weir(&["guest", "export", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&path).unwrap(), DEFAULT_GUEST);

    let out = weir(&["guest", "export", "-"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(out.stdout, DEFAULT_GUEST, "export to stdout differs");

    let out = weir(&["guest", "info", path.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    for needle in [
        format!("sha256:     {}", digest(DEFAULT_GUEST)),
        format!("size:       {} bytes", DEFAULT_GUEST.len()),
        "targets:    weir:endpoints@0.2.0 world endpoint-policy".to_string(),
        "compatible: yes".to_string(),
        "  reconcile (function)".to_string(),
        "  validate-config (function)".to_string(),
    ] {
        assert!(stdout.contains(&needle), "missing {needle:?} in:\n{stdout}");
    }
    // The exports section lists reconcile; imports come before it.
    let exports = stdout.split("exports:").nth(1).expect(&stdout);
    assert!(exports.contains("reconcile"), "{stdout}");
}

#[test]
fn info_on_garbage_fails_with_one_clear_line() {
    let dir = scratch_dir("guest-cli-garbage");
    let path = dir.join("garbage.wasm");
    std::fs::write(&path, b"this is not a component").unwrap();
    let out = weir(&["guest", "info", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("weir: ")
            && stderr.contains("garbage.wasm")
            && stderr.contains("not a valid WebAssembly component"),
        "{stderr}"
    );

    let out = weir(&["guest", "info", dir.join("missing.wasm").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("cannot read"), "{stderr}");
}

#[test]
fn info_on_a_0_1_guest_prints_its_world() {
    let path = test_guest("v0-1-default");
    let out = weir(&["guest", "info", path.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("targets:    weir:endpoints@0.1.0 world endpoint-policy"),
        "{stdout}"
    );
    assert!(!stdout.contains("validate-config"), "{stdout}");
}

#[test]
fn info_on_another_contract_version_names_both_versions_and_fails() {
    let path = test_guest("wrong-world");
    let out = weir(&["guest", "info", path.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("targets:    weir:endpoints@0.9.0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("compatible: no") && stdout.contains("weir:endpoints@0.1.0"),
        "{stdout}"
    );
}

#[test]
fn compile_writes_one_entry_and_refuses_what_is_not_a_component() {
    let dir = scratch_dir("guest-cli-compile");
    let into = dir.join("compiled");
    let out = weir(&["guest", "compile", "--into", into.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let entry = text(&out.stdout);
    let entry = std::path::Path::new(entry.trim_end());
    let listed: Vec<_> = std::fs::read_dir(&into)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        listed,
        vec![entry.to_path_buf()],
        "the entry printed is the one written"
    );
    assert!(std::fs::metadata(entry).unwrap().len() > 0);

    // Compiling again writes the same entry, not a second one.
    let out = weir(&[
        "guest",
        "compile",
        "builtin:default",
        "--into",
        into.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_dir(&into).unwrap().count(), 1);

    let garbage = dir.join("garbage.wasm");
    std::fs::write(&garbage, b"this is not a component").unwrap();
    for (args, needle) in [
        (
            vec![
                "guest",
                "compile",
                garbage.to_str().unwrap(),
                "--into",
                into.to_str().unwrap(),
            ],
            "is not a WebAssembly component",
        ),
        (
            vec![
                "guest",
                "compile",
                "builtin:nope",
                "--into",
                into.to_str().unwrap(),
            ],
            "nope",
        ),
        (vec!["guest", "compile"], "--into"),
        (
            vec!["guest", "compile", "--into", garbage.to_str().unwrap()],
            "garbage.wasm",
        ),
    ] {
        let out = weir(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?}: {needle:?} not in {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert_eq!(std::fs::read_dir(&into).unwrap().count(), 1);
}
