//! The default guest is a standard component: `wasm-tools component wit` reads its WIT, and
//! the plain `wasmtime` CLI calls its export (the commands of guest/default/README.md).

mod support;

use std::process::Command;

use support::require_tool;

fn exported_guest() -> tempfile::TempPath {
    let file = tempfile::Builder::new().suffix(".wasm").tempfile().unwrap();
    std::fs::write(file.path(), weir::runtime::DEFAULT_GUEST).unwrap();
    file.into_temp_path()
}

#[test]
fn wasm_tools_prints_the_contract() {
    require_tool("wasm-tools", &["--version"]);
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
    assert!(wit.contains("import weir:endpoints/types@0.2.0;"), "{wit}");
    assert!(
        wit.contains("export validate-config: func(config: string) -> result<_, string>;"),
        "{wit}"
    );
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
    require_tool("wasmtime", &["--version"]);
    let guest = exported_guest();
    let call = r#"reconcile({namespace: "ns", name: "gone", service: none, pods: [], current: none, trigger-time: none, config: "", endpoint-slices: [], max-endpoints-per-slice: 100, zone-capacities: none, manage: {endpoints: true, endpoint-slices: true}})"#;
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
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "ok({endpoints: delete, slices: {create: [], update: [], delete: []}, errors: [], events: []})"
    );
}
