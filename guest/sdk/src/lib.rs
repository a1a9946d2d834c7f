//! # weir-policy
//!
//! Write endpoint policies for [weir](../../README.md): WebAssembly components that decide, for one
//! Kubernetes Service at a time, what its Endpoints and EndpointSlices hold.
//!
//! Upstream kube-controller-manager decides first; a policy changes its decisions through the
//! hooks of the [`Policy`] trait, each of which defaults to changing nothing:
//! [`include`](Policy::include) leaves a pod out, [`verdict`](Policy::verdict) changes one
//! pod's readiness, conditions or address, [`verdicts`](Policy::verdicts) sees every pod at
//! once, [`ports`](Policy::ports) chooses a pod's ports, and [`validate`](Policy::validate)
//! checks the configuration. [`export_policy!`] makes the type a component, and
//! [`arena_allocator!`] is the allocator weir's one-call instances want.
//!
//! Also here: [`types`] (the WIT contract's records: `Service`, `Pod`, `Decision`, ...),
//! accessors on them (`pod.annotation("x")`, `service.label("y")`, `pod.is_ready()`), the
//! logging macros ([`debug!`], [`info!`], [`warn!`], [`error!`]), and [`testing`] (builders
//! for native unit tests, so a policy is tested with a plain `cargo test`). [`batch`] runs a
//! policy that decides each pass in one call instead of pod by pod: weir's hooks engine
//! (`guest/engine`) drives policies written in other languages through it.
//!
//! "Spec §N" in comments is a rule of `docs/upstream-behaviour.md`; deviations D1… are its §18.
//!
//! A whole policy, configuration included:
//!
//! ```
//! use weir_policy::{Context, Policy, Verdict};
//!
//! /// Upstream behaviour, except that pods annotated `<annotation>: "true"` are not ready.
//! #[derive(serde::Deserialize)]
//! #[serde(rename_all = "camelCase", deny_unknown_fields, default)]
//! struct Drain {
//!     /// The annotation that marks a draining pod.
//!     annotation: String,
//! }
//!
//! impl Default for Drain {
//!     fn default() -> Self {
//!         Drain { annotation: "example.com/drain".into() }
//!     }
//! }
//!
//! impl Policy for Drain {
//!     fn verdict(&self, _ctx: &Context, verdict: &mut Verdict) {
//!         if verdict.pod.annotation(&self.annotation) == Some("true") {
//!             verdict.ready = false;
//!         }
//!     }
//! }
//! // In the component crate (built for wasm32-wasip2):
//! //     weir_policy::export_policy!(Drain);
//! //     weir_policy::arena_allocator!();
//!
//! // A native unit test:
//! use weir_policy::testing::{kv, pod, published, request, service};
//! let mut draining = pod("b", "10.0.0.2", true);
//! draining.annotations.push(kv("example.com/drain", "true"));
//! let req = request(service(), vec![pod("a", "10.0.0.1", true), draining]);
//! let policy: Drain = weir_policy::parse_config("").unwrap(); // empty config: the defaults
//! let decision = weir_policy::reconcile(&policy, &req).unwrap();
//! assert_eq!(published(&decision).ready, ["a"]);
//! assert_eq!(published(&decision).not_ready, ["b"]);
//! ```

mod address;
mod arena;
pub mod batch;
mod by_accessors;
mod config;
mod context;
mod drive;
pub mod ip;
pub mod log;
mod meta;
mod policy;
mod port;
mod steps;
pub mod testing;
mod verdict;
pub mod well_known;

pub use address::{Address, TargetRef};
pub use config::{ConfigError, parse_config};
pub use context::{Context, Output};
pub use drive::reconcile;
pub use ip::Family;
pub use policy::{DefaultPolicy, Policy};
pub use port::Port;
pub use verdict::Verdict;

/// Bindings generated from `wit/v0.2/endpoints.wit` (`weir:endpoints@0.2.0`). Policy code uses
/// them through [`types`].
#[allow(missing_docs, clippy::all, unsafe_code)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/v0.2",
        world: "endpoint-policy",
        additional_derives: [PartialEq, Eq, Hash],
        pub_export_macro: true,
        default_bindings_module: "weir_policy::bindings",
    });
}

/// The records of the WIT contract (`weir:endpoints/types`).
pub mod types {
    pub use crate::bindings::weir::endpoints::types::*;
}

/// Checks a configuration for policy `P` as the exported `validate-config` does: it parses
/// ([`parse_config`]) and passes [`Policy::validate`].
pub fn validate_config<P>(config: &str) -> Result<(), String>
where
    P: Policy + serde::de::DeserializeOwned + Default,
{
    let policy: P = parse_config(config)?;
    policy
        .validate()
        .map_err(|e| format!("invalid policy configuration: {e}"))
}

/// Exports a [`Policy`] type as a `weir:endpoints@0.2.0` component: its `validate-config`
/// and `reconcile` functions.
///
/// Use it once, in the `cdylib` crate built for `wasm32-wasip2`. The type is the policy's
/// configuration too: it implements `serde::Deserialize` and `Default`, and each request's
/// `config` is parsed into it ([`parse_config`]: empty config gives `Default`, a config that
/// does not fit is a clear error), then checked with [`Policy::validate`]. (The SDK speaks
/// 0.2.0 only; weir still runs components of the older Endpoints-only contract,
/// `weir:endpoints@0.1.0`, such as `tests/guests/v0-1-default`.)
///
/// The allocator is a separate choice: [`arena_allocator!`] next to it.
#[macro_export]
macro_rules! export_policy {
    ($policy:ty) => {
        #[doc(hidden)]
        struct __WeirPolicyExport;

        impl $crate::bindings::Guest for __WeirPolicyExport {
            fn validate_config(
                config: ::std::string::String,
            ) -> ::core::result::Result<(), ::std::string::String> {
                $crate::validate_config::<$policy>(&config)
            }

            fn reconcile(
                request: $crate::types::Request,
            ) -> ::core::result::Result<$crate::types::Decision, ::std::string::String> {
                let policy: $policy = $crate::parse_config(&request.config)?;
                $crate::reconcile(&policy, &request)
            }
        }

        $crate::bindings::export!(__WeirPolicyExport);
    };
}

/// Makes a bump arena the component's global allocator: allocating is an add, and nothing is
/// freed except the latest allocation. weir drops each guest instance after one call, so
/// memory freed during a call is never needed again, and the arena saves the bookkeeping of
/// Rust's default allocator (`dlmalloc`): the examples and built-in guests reconcile a
/// 100-pod Service measurably faster with it (`docs/performance.md`).
///
/// Write it once, next to [`export_policy!`], in a component whose instances serve one call
/// each (every weir guest). Leave it out to keep the default allocator, for example when the
/// component is also run by a host that reuses instances; a crate that declares its own
/// `#[global_allocator]` must not use it. It does nothing outside `wasm32`, so native tests
/// keep the system allocator.
///
/// ```
/// # #[derive(Default, serde::Deserialize)]
/// # struct DrainAnnotation {}
/// # impl weir_policy::Policy for DrainAnnotation {}
/// weir_policy::export_policy!(DrainAnnotation);
/// weir_policy::arena_allocator!();
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! arena_allocator {
    () => {
        #[cfg(target_arch = "wasm32")]
        #[global_allocator]
        static __WEIR_POLICY_ALLOCATOR: $crate::__private::Arena = $crate::__private::Arena::new();
    };
}

/// What the macros name; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::arena::Arena;
}
