//! Reports what the sandbox lets a guest see. `reconcile` always fails with a JSON object:
//! `{"env": [...], "args": [...], "fs": "...", "wall_clock_secs": N, "monotonic_elapsed_ns": N}`.

use weir_policy::types::{Decision, Request};

struct Probe;

impl weir_policy::bindings::Guest for Probe {
    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }

    fn reconcile(_request: Request) -> Result<Decision, String> {
        let env: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
        let args: Vec<String> = std::env::args().collect();
        let fs = match std::fs::read_dir("/") {
            Ok(entries) => format!("ok: {} entries", entries.count()),
            Err(e) => format!("error: {e}"),
        };
        let cwd = match std::env::current_dir() {
            Ok(dir) => format!("ok: {}", dir.display()),
            Err(e) => format!("error: {e}"),
        };
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(u64::MAX);
        let started = std::time::Instant::now();
        let spin: u64 = (0..100_000u64).map(std::hint::black_box).sum();
        let elapsed = started.elapsed().as_nanos() as u64;
        Err(serde_json::json!({
            "env": env,
            "args": args,
            "fs": fs,
            "cwd": cwd,
            "wall_clock_secs": wall,
            "monotonic_elapsed_ns": elapsed,
            "spin": spin,
        })
        .to_string())
    }
}

weir_policy::bindings::export!(Probe);
