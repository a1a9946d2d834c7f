//! # weir-policy
//!
//! Write endpoint policies for [weir](../../README.md): WebAssembly components that decide, for one
//! Kubernetes Service at a time, what its Endpoints object must hold.
//!
//! The crate has three parts:
//! - [`types`]: the WIT contract's records (`Service`, `Pod`, `Endpoints`, `Decision`, ...),
//!   generated from `wit/v0.2/endpoints.wit`;
//! - [`steps`]: upstream kube-controller-manager's endpoint sync, split into steps (select,
//!   address, ports, pack, capacity, decide) that compile natively and to `wasm32-wasip2`;
//! - [`Policy`]: a trait whose methods default to those steps. A custom policy overrides one or
//!   two of them and is exported with [`export_policy!`].
//!
//! "Spec §N" in comments is a rule of `docs/upstream-behaviour.md`; deviations D1… are its §18.
//!
//! Helpers: [`meta`] (`pod.annotation("x")`, `service.label("y")`), [`log`] (lines in the
//! host's log), and [`testing`] (builders for native unit tests, so a policy is tested with a
//! plain `cargo test`).
//!
//! [`Address`] and [`Port`] are what the `address` and `ports` hooks hand out: they borrow the
//! pod's and the Service's strings until a policy edits them (`to_mut`), so a policy that only
//! changes readiness copies nothing.
//!
//! A whole policy, configuration included:
//!
//! ```
//! use weir_policy::{Context, Policy, PodAddress, types::Pod};
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
//!     fn address<'p>(&self, ctx: &Context, pod: &'p Pod) -> Option<PodAddress<'p>> {
//!         let mut address = weir_policy::steps::address::for_pod(ctx, pod)?;
//!         if pod.annotation(&self.annotation) == Some("true") {
//!             address.ready = false;
//!         }
//!         Some(address)
//!     }
//! }
//! // In the component crate (built for wasm32-wasip2): weir_policy::export_policy!(Drain);
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

pub mod address;
pub mod arena;
pub mod config;
pub mod ip;
pub mod log;
pub mod meta;
mod policy;
pub mod port;
pub mod steps;
pub mod testing;
pub mod well_known;

pub use address::Address;
pub use config::{ConfigError, parse_config};
pub use policy::{Capped, Context, DefaultPolicy, Entry, Output, PodAddress, Policy, reconcile};
pub use port::Port;

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
/// On `wasm32` it also installs [`arena::Arena`] as the global allocator (weir drops each
/// instance after one call), so the policy crate must not declare its own.
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

        // Each instance serves one call and is dropped: a bump arena is enough ([`arena`]).
        #[cfg(target_arch = "wasm32")]
        #[global_allocator]
        static __WEIR_POLICY_ALLOCATOR: $crate::arena::Arena = $crate::arena::Arena::new();
    };
}
