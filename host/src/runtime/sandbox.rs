//! The per-call store: WASI with nothing granted, limits on the whole store, and the log
//! import.

use std::time::{Duration, Instant};

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxView, WasiView};

use super::Limits;
use crate::model::{Level, weir::endpoints::log};

/// Most bytes of guest stderr kept, to explain a panic in the error of the call.
const STDERR_CAPACITY: usize = 16 * 1024;
/// Most log lines one call may write, so a chatty guest cannot flood the host's log.
const MAX_LOG_LINES: usize = 64;
/// Longest log line kept.
const MAX_LOG_LINE: usize = 2048;
/// Bytes one table element is counted as (a pointer-sized reference, rounded up to cover
/// wasmtime's bookkeeping), so tables draw from the same budget as memories.
const TABLE_ELEMENT_BYTES: usize = 16;
/// Most core instances, tables and memories one store may create. A component built by
/// `wasm-component-ld` has a handful of each (the module, the WASI adapter, shims); these
/// bound a crafted component that nests thousands.
pub(super) const MAX_INSTANCES: usize = 32;
pub(super) const MAX_TABLES: usize = 32;
pub(super) const MAX_MEMORIES: usize = 8;

/// State of one guest call.
pub struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    /// The cap on all linear memories and tables of the store together, in bytes.
    memory_cap: usize,
    /// Bytes the store's memories and tables hold now, as the limiter has granted them.
    reserved: usize,
    /// Set when the guest asked for more memory than the cap.
    pub(super) memory_exceeded: bool,
    /// When the call started; the epoch callback measures the deadline from here.
    pub(super) started: Instant,
    stderr: MemoryOutputPipe,
    key: String,
    log_lines: usize,
}

/// A clock frozen at the Unix epoch: guests must not depend on time, and this makes any that
/// try deterministic instead of flaky.
struct FrozenClock;

impl HostWallClock for FrozenClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl HostMonotonicClock for FrozenClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}

impl CallState {
    /// A sandbox for reconciling `key` within `limits`, starting now.
    pub fn new(key: &str, limits: Limits) -> Self {
        let stderr = MemoryOutputPipe::new(STDERR_CAPACITY);
        // No preopened directories, environment, arguments or network; frozen clocks and a
        // fixed random stream, so a guest is a pure function of its request.
        let wasi = WasiCtx::builder()
            .stderr(stderr.clone())
            .wall_clock(FrozenClock)
            .monotonic_clock(FrozenClock)
            .secure_random(wasmtime_wasi::Deterministic::new(vec![0x5e, 0xed]))
            .insecure_random(wasmtime_wasi::Deterministic::new(vec![0x5e, 0xed]))
            .insecure_random_seed(0)
            .allow_ip_name_lookup(false)
            .allow_tcp(false)
            .allow_udp(false)
            .build();
        CallState {
            wasi,
            table: ResourceTable::new(),
            memory_cap: limits.memory,
            reserved: 0,
            memory_exceeded: false,
            started: Instant::now(),
            stderr,
            key: key.to_string(),
            log_lines: 0,
        }
    }

    /// What the guest wrote to stderr (a Rust panic message, typically), trimmed.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.contents())
            .trim()
            .to_string()
    }
}

impl CallState {
    /// Accounts a memory or table going from `current` to `desired` bytes against the cap of
    /// the whole store, or traps (rather than failing the grow: a Rust guest would abort
    /// anyway, and a trap names the cause).
    fn grow(&mut self, what: &str, current: usize, desired: usize) -> wasmtime::Result<bool> {
        let total = (self.reserved - current.min(self.reserved)).saturating_add(desired);
        if total > self.memory_cap {
            self.memory_exceeded = true;
            wasmtime::bail!(
                "growing a {what} to {desired} bytes would bring the guest to {total} bytes, over the cap of {} bytes",
                self.memory_cap
            );
        }
        self.reserved = total;
        Ok(true)
    }
}

/// Bounds the whole store, not one memory: a component may have several memories and
/// tables, and each instance adds its own, so the cap is on their sum.
impl ResourceLimiter for CallState {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grow("memory", current, desired)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grow(
            "table",
            current.saturating_mul(TABLE_ELEMENT_BYTES),
            desired.saturating_mul(TABLE_ELEMENT_BYTES),
        )
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl log::Host for CallState {
    fn write(&mut self, level: Level, message: String) {
        self.log(level, message);
    }
}

impl CallState {
    /// Writes one guest log line, attributed to the key, within the per-call limits.
    pub(super) fn log(&mut self, level: Level, message: String) {
        self.log_lines += 1;
        if self.log_lines > MAX_LOG_LINES {
            return;
        }
        let mut message = message;
        if message.len() > MAX_LOG_LINE {
            let mut end = MAX_LOG_LINE;
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message.truncate(end);
        }
        let key = self.key.as_str();
        match level {
            Level::Debug => tracing::debug!(target: "weir::guest", key, "{message}"),
            Level::Info => tracing::info!(target: "weir::guest", key, "{message}"),
            Level::Warn => tracing::warn!(target: "weir::guest", key, "{message}"),
            Level::Error => tracing::error!(target: "weir::guest", key, "{message}"),
        }
    }
}

/// The `types` interface has no functions; the generated trait is empty.
impl crate::model::weir::endpoints::types::Host for CallState {}
