//! A loaded guest and its one call API: a [`Request`] in, a [`Decision`] out, in a fresh
//! instance under the deadline and memory cap. A 0.1.0 guest is served through
//! [`super::v0_1`], so every caller speaks the host's model only.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::{Store, Trap};

use super::sandbox::CallState;
use super::{CallError, CallTiming, Limits, Runtime, World, v0_1};
use crate::model::{Decision, EndpointPolicyPre, Request};

/// A pre-instantiated guest of either world.
pub(super) enum Pre {
    V0_1(v0_1::Pre),
    V0_2(EndpointPolicyPre<CallState>),
}

pub(super) struct GuestInner {
    pub(super) pre: Pre,
    pub(super) runtime: Runtime,
    pub(super) digest: String,
    pub(super) size: usize,
    /// The operator's defaults, raised to what the guest's `weir-limits` section asks for.
    pub(super) limits: Limits,
}

/// A loaded guest: cheap to clone, safe to call from many tasks at once. It keeps its
/// [`Runtime`] (and so the deadline machinery) alive.
#[derive(Clone)]
pub struct Guest {
    pub(super) inner: Arc<GuestInner>,
}

impl std::fmt::Debug for Guest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guest")
            .field("digest", &self.inner.digest)
            .field("size", &self.inner.size)
            .finish()
    }
}

impl Guest {
    /// SHA-256 of the component bytes.
    pub fn digest(&self) -> &str {
        &self.inner.digest
    }

    /// Size of the component in bytes.
    pub fn size(&self) -> usize {
        self.inner.size
    }

    /// The limits every call of this guest runs under: the operator's defaults, raised to what
    /// the guest asks for in its `weir-limits` section (within the ceilings).
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    /// Marks this guest as the active one in `metrics`.
    pub fn report_active(&self, metrics: &crate::metrics::Metrics) {
        let world = self.world();
        let name = format!("{}/{}", world.package(), super::WORLD);
        metrics.set_guest(&crate::metrics::GuestInfo {
            digest: self.digest(),
            world: &name,
            renders_slices: world.has_slices(),
        });
    }

    /// The contract version the guest speaks.
    pub fn world(&self) -> World {
        match self.inner.pre {
            Pre::V0_1(_) => World::V0_1,
            Pre::V0_2(_) => World::V0_2,
        }
    }

    /// Reconciles one request in a fresh instance, within the deadline and memory cap.
    /// Needs a tokio runtime with timers (the deadline is a tokio timeout).
    pub async fn call(&self, request: &Request) -> Result<Decision, CallError> {
        self.call_timed(request).await.0
    }

    /// Like [`Guest::call`], also reporting where the time went.
    pub async fn call_timed(&self, request: &Request) -> (Result<Decision, CallError>, CallTiming) {
        let runtime = &self.inner.runtime;
        let key = format!("{}/{}", request.namespace, request.name);
        match &self.inner.pre {
            Pre::V0_1(pre) => v0_1::call(runtime, self.limits(), pre, &key, request).await,
            Pre::V0_2(pre) => {
                let (result, timing) = runtime
                    .sandboxed(self.limits(), &key, async |store, instantiated| {
                        let instance = pre.instantiate_async(&mut *store).await?;
                        *instantiated = Some(Instant::now());
                        instance.call_reconcile(&mut *store, request).await
                    })
                    .await;
                (result.and_then(|r| r.map_err(CallError::Guest)), timing)
            }
        }
    }

    /// [`Guest::call`] for code that is not async (tests, tools). It blocks the calling
    /// thread until the call ends, so async code should await [`Guest::call`] instead.
    pub fn call_blocking(&self, request: &Request) -> Result<Decision, CallError> {
        blocking(self.call(request))
    }

    /// Checks a policy configuration with the guest's `validate-config` (0.2.0) in a fresh
    /// instance, under the same limits as a call. A 0.1.0 guest has no such export: its
    /// configuration is only checked by each `reconcile`, so this accepts it.
    pub async fn validate_config(&self, config: &str) -> Result<(), CallError> {
        let Pre::V0_2(pre) = &self.inner.pre else {
            return Ok(());
        };
        let (result, _) = self
            .inner
            .runtime
            .sandboxed(
                self.limits(),
                "weir/validate-config",
                async |store, instantiated| {
                    let instance = pre.instantiate_async(&mut *store).await?;
                    *instantiated = Some(Instant::now());
                    instance.call_validate_config(&mut *store, config).await
                },
            )
            .await;
        result?.map_err(CallError::Guest)
    }

    /// [`Guest::validate_config`] for code that is not async.
    pub fn validate_config_blocking(&self, config: &str) -> Result<(), CallError> {
        blocking(self.validate_config(config))
    }
}

/// Runs `future` to completion from synchronous code, inside an async runtime or not. Inside
/// one (where blocking on a second future would panic), it runs on a scoped thread of its own.
pub(super) fn blocking<F: std::future::Future<Output: Send> + Send>(future: F) -> F::Output {
    if tokio::runtime::Handle::try_current().is_err() {
        return wasmtime_wasi::runtime::in_tokio(future);
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| wasmtime_wasi::runtime::in_tokio(future))
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Turns a wasmtime error into the reason the call failed.
pub(super) fn describe(
    error: &wasmtime::Error,
    store: &Store<CallState>,
    limits: Limits,
) -> CallError {
    if error.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
        return CallError::Timeout(limits.deadline);
    }
    if store.data().memory_exceeded {
        return CallError::OutOfMemory(limits.memory);
    }
    let stderr = store.data().stderr();
    let mut message = format!("{error:#}");
    if !stderr.is_empty() {
        message = format!("{message}; guest stderr: {stderr}");
    }
    CallError::Trap(message)
}
