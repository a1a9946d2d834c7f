//! The precompiled-guest cache: hits skip compiling, damaged or foreign entries are never
//! trusted but recompiled and replaced.

mod support;

use support::{request, scratch_dir};
use weir::runtime::cache::{CacheOutcome, CompileCache, engine_hash};
use weir::runtime::{DEFAULT_GUEST, Limits, Runtime};

fn runtime() -> Runtime {
    Runtime::new(Limits::default()).expect("engine")
}

/// Prepares `component` as a guest and checks it reconciles like the uncached default guest.
fn assert_serves(runtime: &Runtime, component: wasmtime::component::Component) {
    let guest = runtime.prepare(component, DEFAULT_GUEST).expect("prepare");
    let want = runtime
        .default_guest()
        .unwrap()
        .call_blocking(&request("ns", "web", 4, &[]));
    assert!(want.is_ok(), "{want:?}");
    assert_eq!(guest.call_blocking(&request("ns", "web", 4, &[])), want);
}

#[test]
fn a_miss_stores_an_entry_and_the_next_lookup_is_a_hit() {
    let runtime = runtime();
    let cache = CompileCache::new(scratch_dir("cache-hit").join("nested"));
    let path = cache.entry_path(runtime.engine(), DEFAULT_GUEST);
    let name = path.file_name().unwrap().to_str().unwrap().to_string();
    assert_eq!(
        name,
        format!(
            "{}-{}.cwasm",
            weir::runtime::digest(DEFAULT_GUEST),
            engine_hash(runtime.engine())
        )
    );

    let first = cache.lookup(&runtime, DEFAULT_GUEST).unwrap();
    assert_eq!(first.outcome, CacheOutcome::Miss);
    assert!(path.is_file(), "no entry at {}", path.display());
    // Only the entry: the temporary file was renamed, not left behind.
    let files: Vec<_> = std::fs::read_dir(cache.dir()).unwrap().collect();
    assert_eq!(files.len(), 1, "{files:?}");

    let second = cache.lookup(&runtime, DEFAULT_GUEST).unwrap();
    assert_eq!(second.outcome, CacheOutcome::Hit);
    assert_serves(&runtime, second.component);

    // Through the runtime, with and without a cache.
    let cached = runtime.load_cached(DEFAULT_GUEST, Some(&cache)).unwrap();
    let uncached = runtime.load_cached(DEFAULT_GUEST, None).unwrap();
    assert_eq!(cached.digest(), uncached.digest());
}

#[test]
fn damaged_entries_are_detected_recompiled_and_replaced() {
    let runtime = runtime();
    let cache = CompileCache::new(scratch_dir("cache-damaged"));
    let path = cache.entry_path(runtime.engine(), DEFAULT_GUEST);
    assert_eq!(
        cache.lookup(&runtime, DEFAULT_GUEST).unwrap().outcome,
        CacheOutcome::Miss
    );
    let good = std::fs::read(&path).unwrap();

    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0xff;
    let mut other_source = good.clone();
    other_source[20] ^= 0x01; // inside the component digest of the header
    let damages: [(&str, Vec<u8>, &str); 5] = [
        ("flipped payload byte", flipped, "checksum"),
        ("truncated", good[..good.len() / 2].to_vec(), "checksum"),
        ("header only", good[..80].to_vec(), "checksum"),
        ("empty", Vec::new(), "bad header"),
        (
            "another component's entry",
            other_source,
            "another component",
        ),
    ];
    for (what, bytes, reason) in damages {
        std::fs::write(&path, &bytes).unwrap();
        let cached = cache.lookup(&runtime, DEFAULT_GUEST).unwrap();
        match &cached.outcome {
            CacheOutcome::Replaced(r) => assert!(r.contains(reason), "{what}: {r}"),
            other => panic!("{what}: expected Replaced, got {other:?}"),
        }
        assert_serves(&runtime, cached.component);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            good,
            "{what}: entry not rewritten"
        );
        assert_eq!(
            cache.lookup(&runtime, DEFAULT_GUEST).unwrap().outcome,
            CacheOutcome::Hit,
            "{what}"
        );
    }
}

#[test]
fn entries_of_another_engine_configuration_are_ignored() {
    let runtime = runtime();
    let mut config = wasmtime::Config::new();
    // A setting that changes the generated bounds checks, so artifacts of one engine are
    // invalid in the other (some settings, like the optimisation level, change the key but
    // not compatibility).
    config.memory_guard_size(64 << 10);
    let other = Runtime::with_config(Limits::default(), config).expect("engine");
    let cache = CompileCache::new(scratch_dir("cache-engines"));

    let ours = cache.entry_path(runtime.engine(), DEFAULT_GUEST);
    let theirs = cache.entry_path(other.engine(), DEFAULT_GUEST);
    assert_ne!(ours, theirs, "engines of different settings share a key");

    // The other engine's entry does not serve ours...
    assert_eq!(
        cache.lookup(&other, DEFAULT_GUEST).unwrap().outcome,
        CacheOutcome::Miss
    );
    assert_eq!(
        cache.lookup(&runtime, DEFAULT_GUEST).unwrap().outcome,
        CacheOutcome::Miss
    );
    // ...not even when it sits under our name with an intact header: wasmtime's own
    // compatibility check refuses it, and it is replaced.
    std::fs::copy(&theirs, &ours).unwrap();
    let cached = cache.lookup(&runtime, DEFAULT_GUEST).unwrap();
    match &cached.outcome {
        CacheOutcome::Replaced(r) => assert!(r.contains("incompatible"), "{r}"),
        other => panic!("expected Replaced, got {other:?}"),
    }
    assert_serves(&runtime, cached.component);
    assert_ne!(
        std::fs::read(&ours).unwrap(),
        std::fs::read(&theirs).unwrap()
    );
    assert_eq!(
        cache.lookup(&runtime, DEFAULT_GUEST).unwrap().outcome,
        CacheOutcome::Hit
    );
}

#[test]
fn bytes_that_are_not_a_component_are_refused_and_not_cached() {
    let runtime = runtime();
    let cache = CompileCache::new(scratch_dir("cache-garbage"));
    assert!(matches!(
        cache.load_or_compile(&runtime, b"not wasm"),
        Err(weir::runtime::LoadError::Compile(_))
    ));
    assert!(!cache.entry_path(runtime.engine(), b"not wasm").exists());
}
