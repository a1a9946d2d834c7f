//! Builds the built-in guests for `wasm32-wasip2` and hands their paths to the crate, so a
//! plain `cargo build` or `cargo install --path host` yields a `weir` that works with no
//! `--guest`, and knows `--guest builtin:cel`:
//!
//! - the default guest (`guest/default`, upstream's behaviour), `WEIR_DEFAULT_GUEST_WASM`;
//! - the CEL guest (`guest/cel`, endpoint rules in CEL), `WEIR_CEL_GUEST_WASM`;
//! - the drain-annotation example (`guest/examples/drain-annotation`), which `weir demo`
//!   swaps in live, `WEIR_DRAIN_ANNOTATION_GUEST_WASM`;
//! - the hooks engine (`guest/engine`), which `weir policy build` composes with a policy's
//!   hooks, `WEIR_HOOKS_ENGINE_WASM`.
//!
//! All are built by one nested cargo invocation. Setting a variable to a built `.wasm` skips
//! that guest's build and embeds the file instead (for packagers that build the guests
//! separately); with every one set, nothing is built.

use std::env;
use std::path::PathBuf;
use std::process::Command;

/// A built-in guest: its package, and the variable that names its component.
struct Builtin {
    package: &'static str,
    dir: &'static str,
    variable: &'static str,
}

const BUILTINS: [Builtin; 4] = [
    Builtin {
        package: "weir-default-guest",
        dir: "guest/default",
        variable: "WEIR_DEFAULT_GUEST_WASM",
    },
    Builtin {
        package: "weir-cel-guest",
        dir: "guest/cel",
        variable: "WEIR_CEL_GUEST_WASM",
    },
    Builtin {
        package: "weir-example-drain-annotation",
        dir: "guest/examples/drain-annotation",
        variable: "WEIR_DRAIN_ANNOTATION_GUEST_WASM",
    },
    Builtin {
        package: "weir-hooks-engine",
        dir: "guest/engine",
        variable: "WEIR_HOOKS_ENGINE_WASM",
    },
];

fn main() {
    let mut to_build = Vec::new();
    for builtin in &BUILTINS {
        println!("cargo:rerun-if-env-changed={}", builtin.variable);
        match env::var(builtin.variable) {
            Ok(path) => {
                println!("cargo:rerun-if-changed={path}");
                println!("cargo:rustc-env={}={path}", builtin.variable);
            }
            Err(_) => to_build.push(builtin),
        }
    }
    if to_build.is_empty() {
        return;
    }
    let manifest_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .expect("host/ lives in the workspace root")
        .to_path_buf();
    let mut watched = vec![
        "wit",
        "guest/sdk/src",
        "guest/sdk/Cargo.toml",
        // The guests' dependency versions.
        "Cargo.lock",
        // The guest build settings (initial linear memory).
        ".cargo/config.toml",
    ];
    for builtin in &to_build {
        watched.push(builtin.dir);
    }
    for path in watched {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    // A target directory of its own: the outer cargo holds the lock on the workspace's.
    let target_dir = out_dir.join("guest-target");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(&root)
        .args(["build", "--release", "--target", "wasm32-wasip2"])
        .arg("--target-dir")
        .arg(&target_dir);
    for builtin in &to_build {
        command.args(["-p", builtin.package]);
    }
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
        .expect("running cargo to build the built-in guests");
    if !status.success() {
        panic!(
            "building the built-in guests failed. They need the wasm32-wasip2 target: \
             run `rustup target add wasm32-wasip2` (or set WEIR_DEFAULT_GUEST_WASM, \
             WEIR_CEL_GUEST_WASM, WEIR_DRAIN_ANNOTATION_GUEST_WASM and WEIR_HOOKS_ENGINE_WASM \
             to built components)"
        );
    }
    for builtin in &to_build {
        let file = format!("{}.wasm", builtin.package.replace('-', "_"));
        let wasm = target_dir.join("wasm32-wasip2/release").join(file);
        assert!(
            wasm.exists(),
            "the guest build did not produce {}",
            wasm.display()
        );
        println!("cargo:rustc-env={}={}", builtin.variable, wasm.display());
    }
}
