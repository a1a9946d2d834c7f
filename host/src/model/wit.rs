//! Host-side bindings of `wit/v0.2/endpoints.wit` (`weir:endpoints@0.2.0`): the contract that
//! carries EndpointSlices next to Endpoints. Every item is documented in the WIT file.
#![allow(missing_docs)] // generated code; the WIT file documents every item

wasmtime::component::bindgen!({
    path: "../wit/v0.2",
    world: "endpoint-policy",
    additional_derives: [PartialEq, Eq, Hash],
    // Exports are called with `call_async`, so a timeout can cancel a guest blocked in WASI
    // (see `Runtime::sandboxed`); the `log` import stays synchronous.
    exports: { default: async },
});

pub use self::weir::endpoints::log::Level;
pub use self::weir::endpoints::types::*;
