//! `--cache-dir`: a second engine on the same directory loads a guest seen before without
//! compiling it; unreadable, foreign or tampered entries are recompiled and rewritten, never
//! run; a directory others may change is refused, by `weir run` too, before anything is loaded
//! from it; bytes that do not compile leave nothing behind. `--compiled-guests` (guests
//! compiled ahead of time): loaded before anything compiles, never written, refused when loose.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use support::{request, scratch_dir};
use weir::runtime::{CacheStats, DEFAULT_GUEST, Limits, Runtime};

/// A cache directory for one test that does not exist yet: weir makes it, private, whatever the
/// umask lets scratch directories be.
fn cache_dir(name: &str) -> PathBuf {
    scratch_dir(name).join("cache")
}

fn cached_runtime(dir: &Path) -> Runtime {
    Runtime::with_cache_dir(Limits::default(), dir).expect("engine with a cache")
}

/// Every file under `dir`, recursively.
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

/// The compiled-guest entries.
fn entries(dir: &Path) -> Vec<PathBuf> {
    files(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect()
}

/// Another guest: the default one with a custom section added, so other bytes (another
/// SHA-256, another entry) that compile and load, without building a guest.
fn other_guest() -> Vec<u8> {
    let name = b"weir-test-planted";
    let payload = b"not the pinned guest";
    let mut guest = DEFAULT_GUEST.to_vec();
    guest.push(0); // custom section
    guest.push((1 + name.len() + payload.len()) as u8);
    guest.push(name.len() as u8);
    guest.extend_from_slice(name);
    guest.extend_from_slice(payload);
    guest
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
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
    let dir = cache_dir("cache-hit").join("nested");
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
    let dir = cache_dir("cache-damaged");
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
    let dir = cache_dir("cache-garbage");
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

#[test]
fn entries_are_private_and_written_whole() {
    let dir = cache_dir("cache-private");
    assert_serves(&cached_runtime(&dir));
    assert_eq!(mode(&dir), 0o700, "a missing directory is made private");
    let [entry] = entries(&dir).try_into().expect("one entry");
    assert_eq!(mode(&entry), 0o600);
    // Nothing but the entry: the temporary file was renamed into place.
    assert_eq!(files(&dir).len(), 1, "{:?}", files(&dir));
}

#[test]
fn a_loose_directory_is_refused_with_the_fix() {
    let dir = cache_dir("cache-loose");
    assert_serves(&cached_runtime(&dir));
    // Someone else's compiled code, planted where the default guest's entry is.
    let [entry] = entries(&dir).try_into().expect("one entry");
    let planted = cache_dir("cache-loose-planted");
    cached_runtime(&planted).load(&other_guest()).unwrap();
    let [planted] = entries(&planted).try_into().expect("one entry");
    std::fs::copy(&planted, &entry).unwrap();
    for loose in [0o777, 0o770, 0o702] {
        chmod(&dir, loose);
        let error = Runtime::with_cache_dir(Limits::default(), &dir)
            .err()
            .unwrap_or_else(|| panic!("mode {loose:o}: a loose cache directory was accepted"))
            .to_string();
        for needle in [
            dir.display().to_string(),
            "writable by group or others".into(),
            format!("chmod go-w {}", dir.display()),
        ] {
            assert!(error.contains(&needle), "mode {loose:o}: {error}");
        }
    }
    chmod(&dir, 0o700);
    // Tightened, it serves the genuine guest: the planted entry is refused (see below).
    assert_serves(&cached_runtime(&dir));
}

/// Another guest's compiled code under the name of the pinned guest's entry: a valid artifact
/// for this engine, so only the entry's checksum over its name tells it apart. (A writer who
/// recomputes the checksum must be weir's user; the directory checks keep everyone else out.)
#[test]
fn another_guests_code_in_a_strict_directory_is_recompiled_not_run() {
    let dir = cache_dir("cache-swapped");
    assert_serves(&cached_runtime(&dir));
    let [genuine] = entries(&dir).try_into().expect("one entry");
    let genuine_bytes = std::fs::read(&genuine).unwrap();
    // The other guest's entry from the same cache (same key) and from another cache.
    let runtime = cached_runtime(&dir);
    runtime.load(&other_guest()).unwrap();
    let [same_cache] = entries(&dir)
        .into_iter()
        .filter(|p| *p != genuine)
        .collect::<Vec<_>>()
        .try_into()
        .expect("a second entry");
    let elsewhere = cache_dir("cache-swapped-elsewhere");
    cached_runtime(&elsewhere).load(&other_guest()).unwrap();
    let [other_cache] = entries(&elsewhere).try_into().expect("one entry");
    let mut flipped = genuine_bytes.clone();
    let last = flipped.len() - 100;
    flipped[last] ^= 0x40;

    for (what, planted) in [
        ("same cache", std::fs::read(&same_cache).unwrap()),
        ("other cache", std::fs::read(&other_cache).unwrap()),
        ("one bit of the code flipped", flipped),
    ] {
        std::fs::write(&genuine, &planted).unwrap();
        let runtime = cached_runtime(&dir);
        assert_serves(&runtime);
        assert_eq!(
            runtime.cache_stats(),
            Some(CacheStats { hits: 0, misses: 1 }),
            "{what}: a planted entry must be a miss"
        );
        assert_eq!(
            std::fs::read(&genuine).unwrap(),
            genuine_bytes,
            "{what}: not rewritten"
        );
    }
}

#[test]
fn a_symlinked_entry_is_not_followed() {
    let dir = cache_dir("cache-symlink");
    assert_serves(&cached_runtime(&dir));
    let [entry] = entries(&dir).try_into().expect("one entry");
    let target = dir.join("elsewhere");
    std::fs::rename(&entry, &target).unwrap();
    std::os::unix::fs::symlink(&target, &entry).unwrap();
    let runtime = cached_runtime(&dir);
    assert_serves(&runtime);
    assert_eq!(
        runtime.cache_stats(),
        Some(CacheStats { hits: 0, misses: 1 })
    );
    assert!(!std::fs::symlink_metadata(&entry).unwrap().is_symlink());
}

/// Issue 25's attack as an operator meets it: a tampered entry in a world-writable directory.
/// `weir run` refuses the directory with the fix and exits 2, before it loads a guest or asks
/// a cluster anything.
#[test]
fn weir_run_refuses_a_loose_directory_holding_a_tampered_entry() {
    use std::time::Duration;

    let dir = cache_dir("cache-run-loose");
    assert_serves(&cached_runtime(&dir));
    let [entry] = entries(&dir).try_into().expect("one entry");
    let mut tampered = std::fs::read(&entry).unwrap();
    let at = tampered.len() - 100;
    tampered[at] ^= 0x40;
    std::fs::write(&entry, &tampered).unwrap();
    chmod(&dir, 0o777);

    let no_kubeconfig = dir.with_file_name("no-kubeconfig");
    let (code, text) = support::weir_within(
        &["run", "--cache-dir", dir.to_str().unwrap()],
        &[("KUBECONFIG", no_kubeconfig.to_str().unwrap())],
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(2), "{text}");
    let dir = std::fs::canonicalize(&dir).unwrap();
    for needle in [
        format!("refusing {}", dir.display()),
        "writable by group or others".into(),
        format!("chmod go-w {}", dir.display()),
    ] {
        assert!(text.contains(&needle), "{needle:?} not in: {text}");
    }
    assert_eq!(std::fs::read(&entry).unwrap(), tampered, "weir wrote in it");
}

/// `--compiled-guests` with a `--cache-dir` beside it, as the image runs: the guest compiled
/// ahead of time serves, so nothing is compiled and the cache stays empty.
fn shipped_runtime(compiled: &Path, cache: &Path, limits: Limits) -> Runtime {
    Runtime::with_cache_dir(limits, cache)
        .expect("engine with a cache")
        .with_compiled_guests(compiled)
        .expect("compiled guests")
}

#[test]
fn a_guest_compiled_ahead_of_time_loads_without_compiling_whatever_the_limits() {
    let root = scratch_dir("compiled-ahead");
    let compiled = root.join("compiled");
    let entry = Runtime::new(Limits::default())
        .unwrap()
        .compile_ahead(DEFAULT_GUEST, &compiled)
        .expect("compile ahead");
    assert_eq!(entries(&compiled), vec![entry.clone()]);
    // Shipped to be read by another user than the one that built it.
    assert_eq!(mode(&compiled), 0o755);
    assert_eq!(mode(&entry), 0o644);

    // Other guest limits than the entry was compiled with: they do not shape the code.
    let limits = Limits {
        memory: 256 << 20,
        max_memory: 1024 << 20,
        ..Limits::default()
    };
    let cache = root.join("cache");
    let runtime = shipped_runtime(&compiled, &cache, limits);
    assert_serves(&runtime);
    assert_eq!(
        runtime.compiled_guests_stats(),
        Some(CacheStats { hits: 1, misses: 0 })
    );
    assert_eq!(
        runtime.cache_stats(),
        Some(CacheStats { hits: 0, misses: 0 })
    );
    assert!(entries(&cache).is_empty(), "compiled: {:?}", files(&cache));

    // A guest it holds no entry for goes on to the cache and is compiled there.
    runtime.load(&other_guest()).unwrap();
    assert_eq!(
        runtime.compiled_guests_stats(),
        Some(CacheStats { hits: 1, misses: 1 })
    );
    assert_eq!(entries(&cache).len(), 1, "{:?}", files(&cache));
    assert_eq!(
        entries(&compiled),
        vec![entry],
        "weir wrote in --compiled-guests"
    );
}

#[test]
fn a_shipped_entry_for_other_bytes_or_damaged_is_compiled_not_run_and_left_alone() {
    let root = scratch_dir("compiled-planted");
    let compiled = root.join("compiled");
    let runtime = Runtime::new(Limits::default()).unwrap();
    let genuine = runtime.compile_ahead(DEFAULT_GUEST, &compiled).unwrap();
    let genuine_bytes = std::fs::read(&genuine).unwrap();
    let other = runtime
        .compile_ahead(&other_guest(), &root.join("other"))
        .unwrap();
    let mut flipped = genuine_bytes.clone();
    let at = flipped.len() - 100;
    flipped[at] ^= 0x40;
    for (what, planted) in [
        ("another guest's entry", std::fs::read(&other).unwrap()),
        ("one bit of the code flipped", flipped),
        (
            "truncated",
            genuine_bytes[..genuine_bytes.len() / 2].to_vec(),
        ),
    ] {
        std::fs::write(&genuine, &planted).unwrap();
        let cache = root.join(format!("cache-{}", what.replace(' ', "-")));
        let runtime = shipped_runtime(&compiled, &cache, Limits::default());
        assert_serves(&runtime);
        assert_eq!(
            runtime.compiled_guests_stats(),
            Some(CacheStats { hits: 0, misses: 1 }),
            "{what}: a planted entry must be a miss"
        );
        assert_eq!(
            runtime.cache_stats(),
            Some(CacheStats { hits: 0, misses: 1 }),
            "{what}: compiled afresh"
        );
        assert_eq!(
            std::fs::read(&genuine).unwrap(),
            planted,
            "{what}: weir wrote in it"
        );
    }
}

#[test]
fn an_unusable_compiled_guests_directory_is_refused_with_the_reason() {
    let root = scratch_dir("compiled-unusable");
    let open = |dir: &Path| {
        Runtime::new(Limits::default())
            .unwrap()
            .with_compiled_guests(dir)
            .err()
            .unwrap_or_else(|| panic!("{} was accepted", dir.display()))
            .to_string()
    };
    // Missing: read only, so weir does not make it; a typo must not pass unnoticed.
    let missing = root.join("missing");
    let error = open(&missing);
    assert!(
        error.contains("--compiled-guests") && error.contains("missing"),
        "{error}"
    );
    assert!(!missing.exists(), "weir made it");

    let file = root.join("a-file");
    std::fs::write(&file, b"").unwrap();
    let error = open(&file);
    assert!(error.contains("not a directory"), "{error}");

    let loose = root.join("loose");
    Runtime::new(Limits::default())
        .unwrap()
        .compile_ahead(DEFAULT_GUEST, &loose)
        .unwrap();
    chmod(&loose, 0o757);
    let error = open(&loose);
    let loose = std::fs::canonicalize(&loose).unwrap();
    for needle in [
        format!("--compiled-guests: refusing {}", loose.display()),
        "writable by group or others".into(),
        format!("chmod go-w {}", loose.display()),
    ] {
        assert!(error.contains(&needle), "{needle:?} not in: {error}");
    }
    // Nor will weir write an entry there for others to load.
    let error = Runtime::new(Limits::default())
        .unwrap()
        .compile_ahead(DEFAULT_GUEST, &loose)
        .expect_err("compiling into a loose directory")
        .to_string();
    assert!(error.contains("writable by group or others"), "{error}");
}

/// A `--compiled-guests` that does not exist, or that others may write, stops `weir run` at
/// start (exit 2) with the reason, before it asks a cluster anything.
#[test]
fn weir_run_refuses_a_missing_or_loose_compiled_guests_directory() {
    use std::time::Duration;

    let root = scratch_dir("compiled-run-refused");
    let loose = root.join("loose");
    Runtime::new(Limits::default())
        .unwrap()
        .compile_ahead(DEFAULT_GUEST, &loose)
        .unwrap();
    chmod(&loose, 0o777);
    let no_kubeconfig = root.join("no-kubeconfig");
    for (dir, needle) in [
        (root.join("missing"), "missing".to_string()),
        (
            loose.clone(),
            format!(
                "chmod go-w {}",
                std::fs::canonicalize(&loose).unwrap().display()
            ),
        ),
    ] {
        let (code, text) = support::weir_within(
            &["run", "--compiled-guests", dir.to_str().unwrap()],
            &[("KUBECONFIG", no_kubeconfig.to_str().unwrap())],
            Duration::from_secs(60),
        );
        assert_eq!(code, Some(2), "{text}");
        assert!(text.contains("--compiled-guests"), "{text}");
        assert!(text.contains(&needle), "{needle:?} not in: {text}");
    }
}
