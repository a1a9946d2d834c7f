//! `--cache-dir`, wasmtime's compilation cache: a second engine on the same directory loads a
//! guest seen before without compiling it; unreadable entries are recompiled and rewritten,
//! never trusted; bytes that do not compile leave nothing behind.

mod support;

use std::path::{Path, PathBuf};

use support::{request, scratch_dir};
use weir::runtime::{CacheStats, DEFAULT_GUEST, Limits, Runtime};

fn cached_runtime(dir: &Path) -> Runtime {
    Runtime::with_cache_dir(Limits::default(), dir).expect("engine with a cache")
}

/// Every file under `dir`, recursively (wasmtime nests entries by compiler version).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// The compiled-guest entries, under `modules/` (wasmtime also keeps `.stats` files there for
/// eviction, and lock files of its cleanup worker at the top).
fn entries(dir: &Path) -> Vec<PathBuf> {
    files(dir)
        .into_iter()
        .filter(|p| p.starts_with(dir.join("modules")))
        .filter(|p| p.extension().is_none_or(|e| e != "stats"))
        .collect()
}

/// Loads the default guest through `runtime` and checks it reconciles like the uncached one.
fn assert_serves(runtime: &Runtime) {
    let guest = runtime.load(DEFAULT_GUEST).expect("load");
    let want = Runtime::new(Limits::default())
        .unwrap()
        .default_guest()
        .unwrap()
        .call_blocking(&request("ns", "web", 4, &[]));
    assert!(want.is_ok(), "{want:?}");
    assert_eq!(guest.call_blocking(&request("ns", "web", 4, &[])), want);
}

#[test]
fn a_second_engine_on_the_same_directory_loads_without_compiling() {
    let dir = scratch_dir("cache-hit").join("nested");
    let first = cached_runtime(&dir);
    assert_serves(&first);
    assert_eq!(first.cache_stats(), Some(CacheStats { hits: 0, misses: 1 }));
    assert_eq!(entries(&dir).len(), 1, "{:?}", files(&dir));

    // A restart: a new engine with the same settings finds the entry.
    let second = cached_runtime(&dir);
    assert_serves(&second);
    assert_eq!(
        second.cache_stats(),
        Some(CacheStats { hits: 1, misses: 0 })
    );
    assert_eq!(Runtime::new(Limits::default()).unwrap().cache_stats(), None);
}

#[test]
fn damaged_entries_are_recompiled_and_rewritten() {
    let dir = scratch_dir("cache-damaged");
    assert_serves(&cached_runtime(&dir));
    let [entry] = entries(&dir).try_into().expect("one entry");
    let good = std::fs::read(&entry).unwrap();
    let damages: [(&str, Vec<u8>); 3] = [
        ("truncated", good[..good.len() / 2].to_vec()),
        ("garbage", b"definitely not a compiled guest".to_vec()),
        ("empty", Vec::new()),
    ];
    for (what, bytes) in damages {
        std::fs::write(&entry, &bytes).unwrap();
        let runtime = cached_runtime(&dir);
        assert_serves(&runtime);
        assert_eq!(
            runtime.cache_stats(),
            Some(CacheStats { hits: 0, misses: 1 }),
            "{what}: a damaged entry must be a miss"
        );
        assert_eq!(
            std::fs::read(&entry).unwrap(),
            good,
            "{what}: not rewritten"
        );
        let next = cached_runtime(&dir);
        assert_serves(&next);
        assert_eq!(
            next.cache_stats(),
            Some(CacheStats { hits: 1, misses: 0 }),
            "{what}"
        );
    }
}

#[test]
fn bytes_that_are_not_a_component_are_refused_and_not_cached() {
    let dir = scratch_dir("cache-garbage");
    let runtime = cached_runtime(&dir);
    assert!(matches!(
        runtime.load(b"not wasm"),
        Err(weir::runtime::LoadError::Compile(_))
    ));
    assert!(entries(&dir).is_empty(), "{:?}", files(&dir));
}

#[test]
fn an_unusable_cache_directory_is_a_clear_error() {
    let dir = scratch_dir("cache-unusable");
    let file = dir.join("a-file");
    std::fs::write(&file, b"").unwrap();
    let error = Runtime::with_cache_dir(Limits::default(), &file.join("below"))
        .err()
        .expect("a directory under a file cannot be made");
    assert!(error.to_string().contains("a-file"), "{error}");
}
