//! Builds the default guest (`guest/default`) for `wasm32-wasip2` and hands its path to the
//! crate, so a plain `cargo build` or `cargo install --path host` yields a `weir` that works
//! with no `--guest`.
//!
//! `WEIR_DEFAULT_GUEST_WASM=/path/to.wasm` skips the nested build and embeds that file instead
//! (for packagers that build the guest separately).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=WEIR_DEFAULT_GUEST_WASM");
    if let Ok(path) = env::var("WEIR_DEFAULT_GUEST_WASM") {
        println!("cargo:rerun-if-changed={path}");
        println!("cargo:rustc-env=WEIR_DEFAULT_GUEST_WASM={path}");
        return;
    }
    let manifest_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .expect("host/ lives in the workspace root")
        .to_path_buf();
    for watched in [
        "wit",
        "guest/sdk/src",
        "guest/sdk/Cargo.toml",
        "guest/default/src",
        "guest/default/Cargo.toml",
        // The guest build settings (initial linear memory).
        ".cargo/config.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    // A target directory of its own: the outer cargo holds the lock on the workspace's.
    let target_dir = out_dir.join("guest-target");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(&root)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "-p",
            "weir-default-guest",
        ])
        .arg("--target-dir")
        .arg(&target_dir);
    // Flags meant for the host build (coverage, sanitizers, a host target) must not leak in.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "RUSTC_WORKSPACE_WRAPPER",
    ] {
        command.env_remove(var);
    }
    let status = command
        .status()
        .expect("running cargo to build the default guest");
    if !status.success() {
        panic!(
            "building the default guest failed. It needs the wasm32-wasip2 target: \
             run `rustup target add wasm32-wasip2` (or set WEIR_DEFAULT_GUEST_WASM to a built component)"
        );
    }
    let wasm = target_dir.join("wasm32-wasip2/release/weir_default_guest.wasm");
    assert!(
        Path::new(&wasm).exists(),
        "the guest build did not produce {}",
        wasm.display()
    );
    println!("cargo:rustc-env=WEIR_DEFAULT_GUEST_WASM={}", wasm.display());
}
