//! Guest swap latency and per-call cost.
//!
//! `cargo bench -p weir --bench swap` prints Markdown tables:
//!
//! 1. "artifact on disk → active Guest" for a ~2 MB component (`tests/guests/big`): without
//!    the compile cache (read + compile + prepare) and with a warm one (read + deserialize +
//!    prepare);
//! 2. the cost of one call of the default guest on a 100-pod request, with wasmtime's default
//!    on-demand instance allocator and with the pooling allocator.
//!
//! Targets (issue 5): a swap ≤ 2 s without the cache and ≤ 100 ms with it.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use wasmtime::{Config, InstanceAllocationStrategy, PoolingAllocationConfig};
use weir::runtime::{Guest, Limits, Runtime};

/// Swaps measured per configuration.
const SWAPS: usize = 10;
/// Calls measured per allocator.
const CALLS: usize = 300;

fn main() {
    // `cargo bench` passes `--bench`; there are no filters to honour.
    let big = support::test_guest("big");
    let limits = Limits::default();
    let runtime = Runtime::new(limits).expect("engine");
    let size = std::fs::metadata(&big).expect("big guest").len();

    println!("## Swap: artifact on disk → active Guest ({size} bytes, {SWAPS} runs)\n");
    println!("| path | median | p90 | max |");
    println!("|---|---|---|---|");
    let cold = measure(SWAPS, || {
        let bytes = std::fs::read(&big).expect("read");
        runtime.load(&bytes).expect("load")
    });
    row("no cache: read + compile + prepare", &cold);

    let cache_dir = support::scratch_dir("bench-swap-cache");
    let cached = Runtime::with_cache_dir(limits, &cache_dir).expect("engine with a cache");
    let bytes = std::fs::read(&big).expect("read");
    cached.load(&bytes).expect("warm the cache");
    let warm = measure(SWAPS, || {
        let bytes = std::fs::read(&big).expect("read");
        cached.load(&bytes).expect("load")
    });
    let stats = cached.cache_stats().expect("a cache");
    assert_eq!(
        (stats.hits, stats.misses),
        (SWAPS, 1),
        "every timed load must be a cache hit"
    );
    row("warm cache: read + load cached code + prepare", &warm);
    println!();

    println!("## Per call: default guest, 100-pod request ({CALLS} calls)\n");
    println!(
        "| allocator | instantiate median | instantiate p90 | call median | total median | total p90 | 2 threads, calls/s |"
    );
    println!("|---|---|---|---|---|---|---|");
    let request = support::request("ns", "web", 100, &[]);
    for (name, config) in [
        ("on-demand (current)", Config::new()),
        ("pooling", pooling(limits)),
    ] {
        let runtime = Runtime::with_config(limits, config).expect("engine");
        let guest = runtime.default_guest().expect("default guest");
        per_call(name, &guest, &request);
    }
}

/// The pooling allocator sized for a controller: a few dozen concurrent instances, each with
/// at most the guest memory cap.
fn pooling(limits: Limits) -> Config {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(64)
        .total_core_instances(256)
        .total_memories(64)
        .total_tables(256)
        .max_memory_size(limits.memory);
    let mut config = Config::new();
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config
}

fn per_call(name: &str, guest: &Guest, request: &weir::model::Request) {
    for _ in 0..20 {
        guest.call_blocking(request).expect("warm-up call");
    }
    let mut instantiate = Vec::with_capacity(CALLS);
    let mut call = Vec::with_capacity(CALLS);
    let mut total = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let (result, timing) = wasmtime_wasi::runtime::in_tokio(guest.call_timed(request));
        result.expect("call");
        instantiate.push(timing.instantiate);
        call.push(timing.call);
        total.push(timing.instantiate + timing.call);
    }
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                for _ in 0..CALLS / 2 {
                    guest.call_blocking(request).expect("call");
                }
            });
        }
    });
    let throughput = CALLS as f64 / started.elapsed().as_secs_f64();
    let (i, c, t) = (stats(instantiate), stats(call), stats(total));
    println!(
        "| {name} | {} | {} | {} | {} | {} | {throughput:.0} |",
        show(i.0),
        show(i.1),
        show(c.0),
        show(t.0),
        show(t.1)
    );
}

fn measure(runs: usize, mut swap: impl FnMut() -> Guest) -> Vec<Duration> {
    (0..runs)
        .map(|_| {
            let started = Instant::now();
            let guest = swap();
            let elapsed = started.elapsed();
            drop(guest);
            elapsed
        })
        .collect()
}

/// Median, p90 and max.
fn stats(mut samples: Vec<Duration>) -> (Duration, Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.9), at(1.0))
}

fn row(name: &str, samples: &[Duration]) {
    let (median, p90, max) = stats(samples.to_vec());
    println!(
        "| {name} | {} | {} | {} |",
        show(median),
        show(p90),
        show(max)
    );
}

fn show(d: Duration) -> String {
    if d >= Duration::from_millis(10) {
        format!("{:.0} ms", d.as_secs_f64() * 1e3)
    } else if d >= Duration::from_millis(1) {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.0} µs", d.as_secs_f64() * 1e6)
    }
}
