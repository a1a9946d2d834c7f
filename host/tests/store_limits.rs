//! The memory cap bounds the whole store, not one linear memory: a component whose memories
//! are each under the cap but together over it is refused, and one that grows a table past the
//! cap during a call fails with `OutOfMemory`.
//!
//! Rust guests have one memory and cannot grow a table, so these components are written here
//! in WAT and made components of the `weir:endpoints@0.2.0` world with the wasm-tools CLI
//! (which `make tools` installs; without it the tests fail), and called as the controller calls
//! a guest.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::guests::workspace_root;
use support::{request, require_tool, scratch_dir};
use weir::runtime::{CallError, Limits, LoadError, Runtime, World};

/// The cap of these tests: 16 MiB for the whole store.
const CAP: usize = 16 << 20;
/// 10 MiB in 64 KiB pages: one such memory fits the cap, two do not.
const TEN_MIB_PAGES: usize = 160;

fn run(dir: &Path, args: &[&str]) {
    let output = Command::new("wasm-tools")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("running wasm-tools");
    assert!(
        output.status.success(),
        "wasm-tools {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A component whose core module exports a 1-page memory plus `extra` memories of 10 MiB,
/// has one small funcref table, and whose `reconcile` grows that table by `grow` elements and
/// then traps (`unreachable`). Its `validate-config` accepts anything: the result is returned
/// through memory, and address 0 holds the zero of `ok`.
fn component(name: &str, extra: usize, grow: u32) -> Vec<u8> {
    let dir = scratch_dir(&format!("store-limits-{name}"));
    let memories = format!("(memory {TEN_MIB_PAGES})\n").repeat(extra);
    let wat = format!(
        r#"(module
  (memory (export "memory") 1)
  {memories}
  (table 1 funcref)
  (func (export "reconcile") (param i32) (result i32)
    ref.null func
    i32.const {grow}
    table.grow 0
    drop
    unreachable)
  (func (export "validate-config") (param i32 i32) (result i32)
    i32.const 0)
  ;; A bump allocator, so the host can lower the request before `reconcile` runs.
  (global $next (mut i32) (i32.const 1024))
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $at i32)
    global.get $next
    local.set $at
    global.get $next
    local.get 3
    i32.add
    i32.const 7
    i32.add
    i32.const -8
    i32.and
    global.set $next
    local.get $at))"#
    );
    std::fs::write(dir.join("module.wat"), wat).unwrap();
    let wit = workspace_root().join("wit/v0.2");
    run(&dir, &["parse", "module.wat", "-o", "module.wasm"]);
    run(
        &dir,
        &[
            "component",
            "embed",
            wit.to_str().unwrap(),
            "--world",
            "endpoint-policy",
            "module.wasm",
            "-o",
            "embedded.wasm",
        ],
    );
    run(
        &dir,
        &["component", "new", "embedded.wasm", "-o", "component.wasm"],
    );
    std::fs::read(dir.join("component.wasm")).unwrap()
}

fn runtime() -> Runtime {
    Runtime::new(Limits {
        deadline: Duration::from_secs(5),
        memory: CAP,
        ..Limits::default()
    })
    .unwrap()
}

#[test]
fn memories_each_under_the_cap_but_together_over_it_are_refused() {
    require_tool("wasm-tools", &["--version"]);
    let runtime = runtime();
    // One extra 10 MiB memory: within the cap, so it loads (and its reconcile traps).
    let one = runtime
        .load(&component("one-memory", 1, 0))
        .expect("one 10 MiB memory fits the 16 MiB cap");
    assert_eq!(one.world(), World::V0_2);
    assert!(
        matches!(
            one.call_blocking(&request("ns", "web", 1, &[])),
            Err(CallError::Trap(_))
        ),
        "the module's reconcile ends in `unreachable`"
    );
    // Two of them: each fits alone, together they exceed the cap of the store.
    match runtime.load(&component("two-memories", 2, 0)) {
        Err(LoadError::Instantiate(message)) => assert!(
            message.contains("memory") && message.contains(&CAP.to_string()),
            "the refusal names the cap: {message}"
        ),
        Err(other) => panic!("expected an instantiation refused by the store limit, got {other}"),
        Ok(_) => panic!("two 10 MiB memories loaded under a 16 MiB cap"),
    }
}

#[test]
fn growing_a_table_past_the_cap_is_out_of_memory() {
    require_tool("wasm-tools", &["--version"]);
    let runtime = runtime();
    // 1,100,000 funcref elements are accounted at 16 bytes each: about 17.6 MB, over the cap.
    let guest = runtime
        .load(&component("big-table", 0, 1_100_000))
        .expect("loads: the table starts with one element");
    assert_eq!(
        guest.call_blocking(&request("ns", "web", 1, &[])),
        Err(CallError::OutOfMemory(CAP))
    );
}
