//! The per-call store: WASI with nothing granted, memory limits, and the log import.

use std::time::Duration;

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxView, WasiView};

use super::bindings::{Level, weir::endpoints::log};

/// Most bytes of guest stderr kept, to explain a panic in the error of the call.
const STDERR_CAPACITY: usize = 16 * 1024;
/// Most log lines one call may write, so a chatty guest cannot flood the host's log.
const MAX_LOG_LINES: usize = 64;
/// Longest log line kept.
const MAX_LOG_LINE: usize = 2048;

/// State of one guest call.
pub struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    memory_cap: usize,
    /// Set when the guest asked for more memory than the cap.
    pub(super) memory_exceeded: bool,
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
    /// A sandbox for reconciling `key` with at most `memory` bytes of linear memory.
    pub fn new(key: &str, memory: usize) -> Self {
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
            memory_cap: memory,
            memory_exceeded: false,
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

impl ResourceLimiter for CallState {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_cap {
            // Trap rather than fail the grow: a Rust guest would abort anyway, and a trap
            // names the cause.
            self.memory_exceeded = true;
            wasmtime::bail!(
                "guest memory would grow to {desired} bytes, over the cap of {} bytes",
                self.memory_cap
            );
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }

    fn instances(&self) -> usize {
        16
    }

    fn tables(&self) -> usize {
        16
    }

    fn memories(&self) -> usize {
        4
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
impl super::bindings::weir::endpoints::types::Host for CallState {}
