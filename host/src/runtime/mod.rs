//! Running guests: one wasmtime [`Engine`], components compiled once, a fresh instance per call
//! from a pre-instantiated template, with a deadline and a memory cap on every call.

mod active;
pub mod builtin;
pub mod cache;
mod guest;
pub mod health;
pub mod hooks;
pub mod limits;
mod sandbox;
mod v0_1;

use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, Store, UpdateDeadline};

use crate::model::{EndpointPolicy, EndpointPolicyPre};
pub use active::{Active, ActiveGuest};
use cache::CompileCache;
pub use guest::Guest;
use guest::{GuestInner, Pre, blocking, describe};
pub use limits::{Limits, LimitsError, Requested};
use sandbox::CallState;

/// The WIT packages this host implements, newest first; a guest targets one of them.
pub const WIT_PACKAGES: [&str; 2] = ["weir:endpoints@0.2.0", "weir:endpoints@0.1.0"];
/// The newest WIT package, the one new guests target.
pub const WIT_PACKAGE: &str = WIT_PACKAGES[0];
/// The world a guest implements (the same name in every version).
pub const WORLD: &str = "endpoint-policy";

/// The contract version a loaded guest speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum World {
    /// `weir:endpoints@0.1.0`: Endpoints only.
    V0_1,
    /// `weir:endpoints@0.2.0`: Endpoints and EndpointSlices, plus `validate-config`.
    V0_2,
}

impl World {
    /// The package name and version, for example `weir:endpoints@0.2.0`.
    pub fn package(self) -> &'static str {
        match self {
            World::V0_1 => WIT_PACKAGES[1],
            World::V0_2 => WIT_PACKAGES[0],
        }
    }

    /// Whether guests of this world compute EndpointSlices.
    pub fn has_slices(self) -> bool {
        self == World::V0_2
    }
}

impl std::fmt::Display for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} world {WORLD}", self.package())
    }
}
/// How often the epoch advances; deadlines are rounded up to whole ticks.
const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Most entries the compile cache keeps before evicting the least recently used. A guest's
/// compiled form is a few MiB; a controller sees a handful of guests over its life.
pub const CACHE_MAX_FILES: u64 = 256;
/// Most bytes the compile cache keeps before evicting the least recently used.
pub const CACHE_MAX_BYTES: u64 = 256 << 20;

/// How a runtime's compile cache has served lookups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// Components loaded from the cache.
    pub hits: usize,
    /// Components compiled (and stored).
    pub misses: usize,
}

pub use builtin::{Builtin, CEL_GUEST, DEFAULT_GUEST};

/// Why a component cannot become a guest.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The bytes are not a valid WebAssembly component.
    #[error("not a valid WebAssembly component: {0}")]
    Compile(String),
    /// The component targets another version of the contract.
    #[error(
        "component targets {found}, but this weir supports weir:endpoints@0.2.0 and weir:endpoints@0.1.0 only"
    )]
    UnsupportedVersion {
        /// The `weir:endpoints` version the component imports or exports.
        found: String,
    },
    /// The component does not implement the `endpoint-policy` world.
    #[error("component does not implement world {WORLD} of weir:endpoints@0.2.0 or @0.1.0: {0}")]
    WrongWorld(String),
    /// The component could not be instantiated within the limits.
    #[error("component fails to instantiate: {0}")]
    Instantiate(String),
    /// The engine could not be set up (for example, the compile cache directory is unusable).
    #[error("cannot set up the guest engine: {0}")]
    Engine(String),
    /// The component's own limits (its `weir-limits` section) are unreadable or beyond the
    /// operator's ceilings.
    #[error(transparent)]
    Limits(#[from] LimitsError),
}

/// Why one guest call produced no decision. Each fails only the key being reconciled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The guest returned an error.
    #[error("guest error: {0}")]
    Guest(String),
    /// The guest ran past its deadline.
    #[error("guest exceeded its deadline of {0:?}")]
    Timeout(Duration),
    /// The guest tried to use more memory than the cap.
    #[error("guest exceeded its memory cap of {0} bytes")]
    OutOfMemory(usize),
    /// The guest trapped (a panic, an abort, an out-of-bounds access, ...).
    #[error("guest trapped: {0}")]
    Trap(String),
}

impl CallError {
    /// Whether the guest itself misbehaved (trap, timeout, memory), as opposed to returning an
    /// error on purpose. Rollback after a swap counts these.
    pub fn is_fault(&self) -> bool {
        !matches!(self, CallError::Guest(_))
    }
}

/// Time spent in each phase of one call.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallTiming {
    /// Creating the store and instantiating from the template.
    pub instantiate: Duration,
    /// Lowering the request, running `reconcile`, lifting the decision.
    pub call: Duration,
    /// Dropping the store, which resets the instance's pooled slot (its memory above all)
    /// for the next call. The worker pays it, so a call's cost includes it.
    pub release: Duration,
}

impl CallTiming {
    /// What the call cost the worker: instantiate, call and release together.
    pub fn total(&self) -> Duration {
        self.instantiate + self.call + self.release
    }
}

/// Instance slots of the pooling allocator of [`Runtime::new`]: the most guest calls one
/// runtime runs at once (more wait for a slot; the controller runs one per worker).
pub const POOL_SLOTS: u32 = 16;
/// Bytes of each pooled linear memory kept mapped between calls and reset with `memset`
/// instead of `madvise`: faulting a call's pages in afresh every time cost more than zeroing
/// them. It matches the 4 MiB initial memory guests are built with (`.cargo/config.toml`),
/// within which a 100-pod call of the default guest stays. With the pagemap scan (see
/// [`pooled`]) only the pages a call wrote are reset, so a larger value would keep more of a
/// big guest mapped; measured on the 18 MiB Python and 12 MiB JavaScript policies, 16 and
/// 32 MiB were no faster than 4, so the memory a slot holds between calls stays small.
const KEEP_RESIDENT: usize = 4 << 20;

/// The engine settings of [`Runtime::new`]: the pooling instance allocator, so that the fresh
/// instance of every call reuses a warm slot (memory, tables, async stack) instead of mapping
/// and faulting in new ones. Measured on a 100-pod call of the default guest: 54 page faults
/// and about 67 µs of CPU less per call. Where the kernel has the `PAGEMAP_SCAN` ioctl (Linux
/// 6.7 and later), the reset of a slot's memory finds the pages the call wrote and restores
/// only those, instead of zeroing the kept bytes whole and unmapping the rest: measured with
/// `weir bench` on 100 pods, the reset (`release`) took 47 → 10 µs for the default guest,
/// 0.6–1.0 → 0.2–0.3 ms for a Python policy and 0.6–0.9 → 0.1–0.2 ms for a JavaScript one,
/// and their next instantiate got cheaper too. Isolation is unchanged: wasmtime resets a slot's
/// memory and tables before reuse. The memory cap stays with the store's limiter; the pool's
/// own limit is only set no lower than it.
///
/// Public so that a benchmark or a deployment can add its own settings (a profiler, say) to
/// the engine [`Runtime::new`] builds, and pass the result to [`Runtime::with_config`].
pub fn pooled(limits: Limits) -> Config {
    let mut pool = wasmtime::PoolingAllocationConfig::new();
    // Room for the most memories and tables the store's limiter lets one call create, so a
    // guest is refused by the limiter (with its message), never by the pool.
    let (memories, tables) = (sandbox::MAX_MEMORIES as u32, sandbox::MAX_TABLES as u32);
    pool.total_component_instances(POOL_SLOTS)
        .total_core_instances(sandbox::MAX_INSTANCES as u32 * POOL_SLOTS)
        .total_memories(memories * POOL_SLOTS)
        .total_tables(tables * POOL_SLOTS)
        .total_stacks(POOL_SLOTS)
        // Room for the most a guest may ask for, not only the default.
        .max_memory_size(
            limits
                .memory
                .max(limits.max_memory)
                .clamp(64 << 20, 4 << 30),
        )
        .max_memories_per_module(memories)
        .max_tables_per_module(tables)
        .linear_memory_keep_resident(KEEP_RESIDENT)
        .pagemap_scan(wasmtime::Enabled::Auto)
        .table_keep_resident(64 << 10);
    let mut config = Config::new();
    config.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool));
    config
}

/// Advances the engine's epoch from a background thread while guest calls run, until dropped.
///
/// Between calls the thread waits on a condition variable instead of waking every tick: an
/// idle weir spent about 6 ms of CPU a second on the ticks alone (a release build, measured
/// with `/proc/PID/task/*/stat`). Deadlines need the epoch to move only while a call runs.
struct EpochTicker {
    shared: Arc<TickerShared>,
}

#[derive(Default)]
struct TickerShared {
    state: std::sync::Mutex<TickerState>,
    wake: std::sync::Condvar,
    /// Epoch increments so far.
    #[cfg(test)]
    ticks: std::sync::atomic::AtomicU64,
}

#[derive(Default)]
struct TickerState {
    /// Calls running now.
    calls: usize,
    /// The thread waits for a call.
    #[cfg(test)]
    idle: bool,
    stop: bool,
}

impl TickerShared {
    fn lock(&self) -> std::sync::MutexGuard<'_, TickerState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running call: the epoch advances while one exists.
struct Ticking(Arc<TickerShared>);

impl Drop for Ticking {
    fn drop(&mut self) {
        self.0.lock().calls -= 1;
    }
}

impl EpochTicker {
    fn start(engine: &Engine) -> Self {
        let shared = Arc::new(TickerShared::default());
        let weak = engine.weak();
        let ticker = shared.clone();
        std::thread::Builder::new()
            .name("weir-epoch".into())
            .spawn(move || {
                loop {
                    {
                        let mut state = ticker.lock();
                        while state.calls == 0 && !state.stop {
                            #[cfg(test)]
                            {
                                state.idle = true;
                            }
                            state = ticker.wake.wait(state).unwrap_or_else(|e| e.into_inner());
                        }
                        #[cfg(test)]
                        {
                            state.idle = false;
                        }
                        if state.stop {
                            return;
                        }
                    }
                    // A run of ticks, from the first call after an idle spell to the last.
                    let started = Instant::now();
                    let mut ticks: u128 = 0;
                    loop {
                        std::thread::sleep(EPOCH_TICK);
                        // Advance by the ticks that really elapsed, not one per wake-up: on
                        // busy cores this thread runs late, and counting wake-ups would stretch
                        // every deadline (measured: 200 ms became 515 ms while guests compiled).
                        let due = started.elapsed().as_nanos() / EPOCH_TICK.as_nanos();
                        let Some(engine) = weak.upgrade() else { return };
                        while ticks < due {
                            engine.increment_epoch();
                            ticks += 1;
                            #[cfg(test)]
                            ticker
                                .ticks
                                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        let state = ticker.lock();
                        if state.stop {
                            return;
                        }
                        if state.calls == 0 {
                            break;
                        }
                    }
                }
            })
            .expect("spawning the epoch thread");
        EpochTicker { shared }
    }

    /// Marks a call as running until the returned guard drops; the epoch advances meanwhile.
    fn running(&self) -> Ticking {
        let first = {
            let mut state = self.shared.lock();
            state.calls += 1;
            state.calls == 1
        };
        // Notified after the lock is released: the woken thread takes the lock at once, and
        // would otherwise wake only to wait for it, a second switch per call.
        if first {
            self.shared.wake.notify_one();
        }
        Ticking(self.shared.clone())
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
    }
}

/// What every guest of one engine shares: the engine, the linker, and the epoch ticker that
/// makes deadlines work. Every [`Guest`] holds it, so the ticker lives exactly as long as
/// something can still run a guest, whichever command loaded it.
struct Shared {
    engine: Engine,
    /// `--compiled-guests`: read only, consulted first.
    compiled: Option<CompileCache>,
    /// `--cache-dir`.
    cache: Option<CompileCache>,
    linker: Linker<CallState>,
    limits: Limits,
    /// One permit per pooled instance slot, so calls beyond the pool wait instead of failing.
    slots: tokio::sync::Semaphore,
    ticker: EpochTicker,
}

/// The wasmtime engine and linker shared by every guest.
#[derive(Clone)]
pub struct Runtime {
    shared: Arc<Shared>,
}

impl Runtime {
    /// An engine with epoch interruption, the given per-call limits and a pooling instance
    /// allocator of [`POOL_SLOTS`] slots, memories kept resident between calls.
    pub fn new(limits: Limits) -> Result<Self, LoadError> {
        Self::with_config(limits, pooled(limits))
    }

    /// Like [`Runtime::new`], keeping compiled guests in `dir` (`--cache-dir`) so that a
    /// restart, or a swap back to a guest seen before, skips Cranelift.
    ///
    /// The directory must be owned by weir's user and writable by no one else (it is created
    /// with mode 0700 when missing); an entry is loaded only when its integrity tag shows weir
    /// wrote it from the same guest bytes with a compatible engine, and is recompiled
    /// otherwise ([`cache`]). The least recently used entries past [`CACHE_MAX_FILES`] files
    /// or [`CACHE_MAX_BYTES`] bytes are evicted.
    pub fn with_cache_dir(limits: Limits, dir: &std::path::Path) -> Result<Self, LoadError> {
        let mut runtime = Self::build(limits, pooled(limits))?;
        let cache = CompileCache::open(dir, runtime.engine())?;
        Arc::get_mut(&mut runtime.shared)
            .expect("a runtime just built is not shared")
            .cache = Some(cache);
        Ok(runtime)
    }

    /// Lookups of the compile cache served from it and compiled afresh, since this runtime
    /// started; `None` without a cache.
    pub fn cache_stats(&self) -> Option<CacheStats> {
        self.shared.cache.as_ref().map(CompileCache::stats)
    }

    /// This runtime, loading guests compiled ahead of time from `dir` (`--compiled-guests`,
    /// written by [`Runtime::compile_ahead`]) before it consults its compile cache or compiles.
    /// weir never writes `dir`. It must exist, and it and its entries must be owned by root or
    /// weir's user and writable by no one else; an entry is loaded only when its checksum shows
    /// it was written for the same guest bytes and a compatible engine.
    ///
    /// Call it before the runtime is cloned.
    pub fn with_compiled_guests(mut self, dir: &std::path::Path) -> Result<Self, LoadError> {
        let compiled = CompileCache::open_shipped(dir, self.engine())?;
        Arc::get_mut(&mut self.shared)
            .ok_or_else(|| {
                LoadError::Engine("compiled guests are set before a runtime is shared".into())
            })?
            .compiled = Some(compiled);
        Ok(self)
    }

    /// Lookups of `--compiled-guests` that found the guest and that did not, since this
    /// runtime started; `None` without that directory.
    pub fn compiled_guests_stats(&self) -> Option<CacheStats> {
        self.shared.compiled.as_ref().map(CompileCache::stats)
    }

    /// Compiles `bytes` with this runtime's engine and writes the entry that
    /// [`Runtime::with_compiled_guests`] on `dir` loads (`weir guest compile`). A runtime loads
    /// it only if its engine has the same settings: the same weir on a CPU with the same
    /// features (the limits shape the instance pool, not the code). Returns the entry's path.
    pub fn compile_ahead(
        &self,
        bytes: &[u8],
        dir: &std::path::Path,
    ) -> Result<std::path::PathBuf, LoadError> {
        CompileCache::ship(dir, self.engine(), bytes)
    }

    /// Like [`Runtime::new`], with engine settings of the caller's (an instance allocator,
    /// for example). The component model and epoch interruption are switched on regardless,
    /// since guests and deadlines depend on them.
    pub fn with_config(limits: Limits, config: Config) -> Result<Self, LoadError> {
        Self::build(limits, config)
    }

    fn build(limits: Limits, mut config: Config) -> Result<Self, LoadError> {
        config.wasm_component_model(true).epoch_interruption(true);
        let engine = Engine::new(&config).map_err(|e| LoadError::Engine(format!("{e:#}")))?;
        let mut linker = Linker::new(&engine);
        // The async WASI: a guest blocked in `poll` (a sleep, a timer) awaits a future that
        // the call's timeout can drop, instead of parking a thread for real time.
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| LoadError::Engine(format!("{e:#}")))?;
        v0_1::add_to_linker(&mut linker).map_err(|e| LoadError::Instantiate(format!("{e:#}")))?;
        EndpointPolicy::add_to_linker::<_, wasmtime::component::HasSelf<CallState>>(
            &mut linker,
            |s| s,
        )
        .map_err(|e| LoadError::Instantiate(format!("{e:#}")))?;
        let ticker = EpochTicker::start(&engine);
        Ok(Runtime {
            shared: Arc::new(Shared {
                engine,
                compiled: None,
                cache: None,
                linker,
                limits,
                slots: tokio::sync::Semaphore::new(POOL_SLOTS as usize),
                ticker,
            }),
        })
    }

    /// The engine, for precompiling and cache keys.
    pub fn engine(&self) -> &Engine {
        &self.shared.engine
    }

    /// The per-call limits of a guest that asks for none of its own, and the ceilings.
    pub fn limits(&self) -> Limits {
        self.shared.limits
    }

    /// Compiles `bytes`, a component in binary form, or takes its compiled form from
    /// `--compiled-guests` or the compile cache.
    pub fn compile(&self, bytes: &[u8]) -> Result<Component, LoadError> {
        if let Some(component) = self
            .shared
            .compiled
            .as_ref()
            .and_then(|compiled| compiled.lookup(self.engine(), bytes))
        {
            return Ok(component);
        }
        match &self.shared.cache {
            Some(cache) => cache.load(self.engine(), bytes),
            None => Component::new(self.engine(), bytes)
                .map_err(|e| LoadError::Compile(format!("{e:#}"))),
        }
    }

    /// Compiles, checks and pre-instantiates a guest, then instantiates it once within the
    /// limits, so a guest that cannot even start is refused here rather than on every call.
    ///
    /// Blocking (compiling takes a core for a while) and not callable from async code; in
    /// async code use [`Runtime::load_async`].
    pub fn load(&self, bytes: &[u8]) -> Result<Guest, LoadError> {
        let component = self.compile(bytes)?;
        self.prepare(component, bytes)
    }

    /// [`Runtime::load`] for async code: compiles (through the cache, if any) on the
    /// blocking pool, then checks the trial instantiation on the caller's task.
    pub async fn load_async(&self, bytes: Vec<u8>) -> Result<Guest, LoadError> {
        let runtime = self.clone();
        // Compiling takes a core for a while: keep it off the async runtime's threads.
        let (component, bytes) = tokio::task::spawn_blocking(move || {
            let component = runtime.compile(&bytes);
            (component, bytes)
        })
        .await
        .map_err(|e| LoadError::Compile(format!("compilation aborted: {e}")))?;
        self.prepare_async(component?, &bytes).await
    }

    /// The embedded default guest.
    pub fn default_guest(&self) -> Result<Guest, LoadError> {
        self.load(DEFAULT_GUEST)
    }

    /// Checks and pre-instantiates an already compiled component whose bytes are `bytes`.
    /// Blocking; see [`Runtime::load`].
    pub fn prepare(&self, component: Component, bytes: &[u8]) -> Result<Guest, LoadError> {
        blocking(self.prepare_async(component, bytes))
    }

    /// [`Runtime::prepare`] for async code.
    pub async fn prepare_async(
        &self,
        component: Component,
        bytes: &[u8],
    ) -> Result<Guest, LoadError> {
        let limits = match limits::requested(bytes)? {
            Some(requested) => self.limits().grant(&requested)?,
            None => self.limits(),
        };
        let world = check_world(self.engine(), &component)?;
        let pre = self
            .shared
            .linker
            .instantiate_pre(&component)
            .map_err(|e| LoadError::WrongWorld(format!("{e:#}")))?;
        let wrong = |e: wasmtime::Error| LoadError::WrongWorld(format!("{e:#}"));
        let pre = match world {
            World::V0_1 => Pre::V0_1(v0_1::pre(pre).map_err(wrong)?),
            World::V0_2 => Pre::V0_2(EndpointPolicyPre::new(pre).map_err(wrong)?),
        };
        let guest = Guest {
            inner: Arc::new(GuestInner {
                pre,
                runtime: self.clone(),
                digest: digest(bytes),
                size: bytes.len(),
                limits,
            }),
        };
        let (result, _) = self
            .sandboxed(limits, "weir/load-check", async |store, _| {
                match &guest.inner.pre {
                    Pre::V0_1(pre) => pre.instantiate_async(store).await.map(drop),
                    Pre::V0_2(pre) => pre.instantiate_async(store).await.map(drop),
                }
            })
            .await;
        result.map_err(|e| LoadError::Instantiate(e.to_string()))?;
        Ok(guest)
    }

    /// A store for one call about `key`, with the memory limits and the deadline armed.
    fn store(&self, limits: Limits, key: &str) -> Store<CallState> {
        let mut store = Store::new(self.engine(), CallState::new(key, limits));
        store.limiter(|state| state);
        // Check the clock at every epoch tick: past the deadline the guest traps; before it,
        // the guest yields to the executor, so a long computation shares the worker thread
        // and the call's timeout gets a chance to run.
        store.epoch_deadline_callback(move |store| {
            Ok(if store.data().started.elapsed() >= limits.deadline {
                UpdateDeadline::Interrupt
            } else {
                UpdateDeadline::Yield(1)
            })
        });
        store.set_epoch_deadline(1);
        store
    }

    /// Runs one guest call, `body`, in a fresh store under `limits` (the guest's own): the
    /// memory cap, and the deadline however the guest spends its time.
    ///
    /// Why async: a guest can block in WASI (a `poll` on a clock subscription is what
    /// `std::thread::sleep` becomes) as well as compute. Epoch interruption stops only
    /// computation; a blocking call would hold a thread for real time. Run on wasmtime's
    /// async support, a blocked guest is a pending future, and dropping it when the timeout
    /// fires cancels the call wherever it is. The same design lets the controller await
    /// calls on its workers instead of parking a `spawn_blocking` thread per call.
    ///
    /// `body` gets the store and the time instantiation finished, to set once the guest is
    /// instantiated; the second world's calls reuse this with their own bindings.
    pub(crate) async fn sandboxed<R>(
        &self,
        limits: Limits,
        key: &str,
        body: impl AsyncFnOnce(&mut Store<CallState>, &mut Option<Instant>) -> wasmtime::Result<R>,
    ) -> (Result<R, CallError>, CallTiming) {
        // Never closed, so acquiring only waits.
        let _slot = self.shared.slots.acquire().await.ok();
        let _ticking = self.shared.ticker.running();
        let mut store = self.store(limits, key);
        let started = store.data().started;
        let mut instantiated = None;
        let outcome =
            tokio::time::timeout(limits.deadline, body(&mut store, &mut instantiated)).await;
        let instantiated = instantiated.unwrap_or_else(Instant::now);
        let (instantiate, call) = (
            instantiated.saturating_duration_since(started),
            instantiated.elapsed(),
        );
        let result = match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(describe(&error, &store, limits)),
            Err(_elapsed) => Err(CallError::Timeout(limits.deadline)),
        };
        let releasing = Instant::now();
        drop(store);
        let timing = CallTiming {
            instantiate,
            call,
            release: releasing.elapsed(),
        };
        (result, timing)
    }
}

/// Which contract version the component speaks: 0.2.0 when it exports `validate-config`,
/// else 0.1.0. Refuses components that name another version of the contract, with a
/// message that says which; other mismatches are left to the linker's type check.
fn check_world(engine: &Engine, component: &Component) -> Result<World, LoadError> {
    let ty = component.component_type();
    let names = ty
        .imports(engine)
        .map(|(name, _)| name.to_string())
        .chain(ty.exports(engine).map(|(n, _)| n.to_string()));
    let mut named: Vec<World> = Vec::new();
    for name in names {
        if let Some(rest) = name.strip_prefix("weir:endpoints/") {
            let version = rest.split_once('@').map(|(_, v)| v).unwrap_or("");
            let world = match version {
                "0.1.0" => World::V0_1,
                "0.2.0" => World::V0_2,
                _ => {
                    return Err(LoadError::UnsupportedVersion {
                        found: format!("weir:endpoints@{version}"),
                    });
                }
            };
            if !named.contains(&world) {
                named.push(world);
            }
        }
    }
    if ty.exports(engine).all(|(name, _)| name != "reconcile") {
        return Err(LoadError::WrongWorld(
            "it exports no `reconcile` function".into(),
        ));
    }
    let exported = if ty
        .exports(engine)
        .any(|(name, _)| name == "validate-config")
    {
        World::V0_2
    } else {
        World::V0_1
    };
    // A component may name both versions: a 0.1.0 guest built with the SDK also carries
    // the 0.2.0 `types` interface (types only). Its exports decide; the linker checks the
    // rest.
    if named.len() == 1 && named[0] != exported {
        return Err(LoadError::WrongWorld(format!(
            "it names {} but its exports are those of {}",
            named[0].package(),
            exported.package()
        )));
    }
    Ok(exported)
}

/// The SHA-256 of a component's bytes, as lowercase hex.
pub fn digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod ticker_tests {
    use super::*;
    use std::sync::atomic::Ordering;

    /// Polls `done` every millisecond; fails after 10 s.
    fn poll_until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "{what}: not within 10 s");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn the_epoch_advances_while_calls_run_and_rests_between_them() {
        let engine = Engine::default();
        let ticker = EpochTicker::start(&engine);
        let shared = ticker.shared.clone();
        let ticks = || shared.ticks.load(Ordering::Relaxed);
        poll_until("the ticker waits for a call", || shared.lock().idle);
        std::thread::sleep(EPOCH_TICK * 10);
        assert_eq!(ticks(), 0, "ticks with no call running");

        let first = ticker.running();
        poll_until("a tick while a call runs", || ticks() > 0);
        let second = ticker.running();
        drop(first);
        let before = ticks();
        poll_until("ticks while the second call still runs", || {
            ticks() > before
        });
        drop(second);
        poll_until("the ticker waits again", || shared.lock().idle);
        let rested = ticks();
        std::thread::sleep(EPOCH_TICK * 10);
        assert_eq!(ticks(), rested, "ticks after the last call ended");

        // Dropping the ticker ends its thread, which then holds no reference of its own.
        drop(ticker);
        poll_until("the thread ends", || Arc::strong_count(&shared) == 1);
    }
}
